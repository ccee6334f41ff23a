"""AXI4 protocol assertions on the accelerator's memory port (``axi_checker.sv`` + ``axi_checker.cpp``).

The checker is part of every co-simulation model (:func:`build_parts`, used by :mod:`cosim.build`): SystemVerilog
immediate assertions evaluated at each clock edge inside the simulator (Verilator ``--assert``), so Python is
never woken per cycle. A violation is recorded in C++ with its rule, channel and cycle; after each run
:func:`check_run` raises :class:`AxiProtocolError` naming them. Before each run :func:`begin_run` gives the
checker the byte ranges of the run's allocated buffers, so a write outside them is a violation too.

Each rule is proven to fire by :func:`run_case` on a small bench (``axi_checker_tb.sv``) whose scripted master
and slave break one rule per case (:data:`CASES`); that bench is built once and cached like the models.
"""

from __future__ import annotations

import ctypes
import fcntl
import hashlib
import os
import re
import subprocess
import threading
from contextlib import contextmanager
from pathlib import Path

from sw.pipeline import VTAError

__all__ = ["AxiProtocolError", "RULES", "CASES", "build_parts", "begin_run", "check_run", "raw_image", "violations",
           "stall_counts", "STALL_CHANNELS", "negative_bench", "run_case"]

HERE = Path(__file__).resolve().parent
CHECKER_SV = HERE / "axi_checker.sv"
CHECKER_CPP = HERE / "axi_checker.cpp"
BENCH_SV = HERE / "axi_checker_tb.sv"
DEFINE = "VTA_TB_AXI_CHECK"

RULES = ("valid_dropped", "payload_changed", "boundary_4k", "bad_size", "bad_burst", "bad_len", "wlast_early",
         "wlast_missing", "rlast_wrong", "unexpected_resp", "resp_not_taken", "write_outside")

# negative-test case of axi_checker_tb.sv -> the (rule, channel) violations it must report, and nothing else
CASES = {
    **{f"valid_dropped_{ch}": {("valid_dropped", ch)} for ch in ("AW", "W", "AR", "R", "B")},
    **{f"payload_changed_{ch}": {("payload_changed", ch)} for ch in ("AW", "W", "AR", "R", "B")},
    "boundary_4k_AW": {("boundary_4k", "AW")}, "boundary_4k_AR": {("boundary_4k", "AR")},
    "bad_size_AR": {("bad_size", "AR")}, "bad_size_AW": {("bad_size", "AW")},
    "bad_burst_AR": {("bad_burst", "AR")},
    "bad_len_AW": {("bad_burst", "AW"), ("bad_len", "AW")},       # a 3-beat WRAP burst: neither INCR nor legal
    "wlast_early": {("wlast_early", "W")}, "wlast_missing": {("wlast_missing", "W")},
    "rlast_wrong": {("rlast_wrong", "R")},
    "unexpected_resp_R": {("unexpected_resp", "R")}, "unexpected_resp_B": {("unexpected_resp", "B")},
    "resp_not_taken_R": {("resp_not_taken", "R")}, "resp_not_taken_B": {("resp_not_taken", "B")},
    "write_outside": {("write_outside", "W")},
    "clean": set(),
}


class AxiProtocolError(VTAError):
    """The accelerator's AXI4 traffic broke a protocol rule; the message names the rule, channel and cycle."""


def _digest(*paths) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(p.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def build_parts() -> tuple:
    """(Verilator arguments, source files) that add the checker to a co-simulation model.

    The arguments carry a digest of the checker's sources, so a model's cache key changes with them.
    """
    args = ["--assert", f"-D{DEFINE}", f"-DVTA_AXI_CHECKER_DIGEST={_digest(CHECKER_SV, CHECKER_CPP)}"]
    return args, [CHECKER_SV, CHECKER_CPP]


# ---------------------------------------------------------------------------------------------- run time
def _lib():
    lib = ctypes.CDLL(None)
    lib.vta_axi_violation_count.restype = ctypes.c_uint64
    lib.vta_axi_violation_message.restype = ctypes.c_char_p
    lib.vta_axi_violation_message.argtypes = [ctypes.c_uint64]
    lib.vta_axi_range_add.argtypes = [ctypes.c_uint64, ctypes.c_uint64]
    return lib


_RAW = threading.local()


@contextmanager
def raw_image():
    """Runs inside the block write a raw device-memory image that no runtime allocated (replays): the
    buffer rule is off for them; every other rule still holds."""
    _RAW.on = True
    try:
        yield
    finally:
        _RAW.on = False


def begin_run(device) -> None:
    """Clear the violations and give the checker the buffers the run may write.

    The buffers are those of the calling thread's runtime when it drives ``device`` (every allocated buffer,
    page-rounded, and those freed while queued work still holds them); without such a runtime (a raw launch)
    every address inside device memory is allowed.
    """
    from sw import runtime

    lib = _lib()
    lib.vta_axi_clear()
    q = runtime.current()
    raw = getattr(_RAW, "on", False)
    memory = getattr(q, "memory", None) if getattr(q, "target", None) is device and not raw else None
    lib.vta_axi_ranges_reset(int(memory is not None))
    if memory is None:
        return
    with memory._lock:
        bufs = list(memory.buffers.values()) + list(memory._held_freed.values())
    for buf in bufs:
        lib.vta_axi_range_add(buf.phys, buf.phys + buf.pages)          # pages: bytes of its whole pages


STALL_CHANNELS = ("AR", "R_paused", "AW", "W", "R_held", "B_held")


def stall_counts() -> dict | None:
    """Cycles each channel of the memory port has waited since the model started ({channel: cycles}; None
    outside an RTL model): AR, AW, W without READY from the memory, R paused by the memory inside a burst,
    R and B held by the accelerator (no READY). Differences of two readings give a program's backpressure."""
    lib = ctypes.CDLL(None)
    if not hasattr(lib, "vta_axi_stall_count"):
        return None
    lib.vta_axi_stall_count.restype = ctypes.c_uint64
    return {name: int(lib.vta_axi_stall_count(i)) for i, name in enumerate(STALL_CHANNELS)}


def violations() -> list:
    """The violations of the current run (at most 32 messages) and their total count."""
    lib = _lib()
    n = int(lib.vta_axi_violation_count())
    return [lib.vta_axi_violation_message(i).decode() for i in range(min(n, 32))], n


def check_run() -> None:
    """Raise :class:`AxiProtocolError` when the run broke an AXI rule."""
    messages, n = violations()
    if n:
        more = f"\n  ... and {n - len(messages)} more" if n > len(messages) else ""
        raise AxiProtocolError(f"the accelerator's AXI4 port broke the protocol {n} times:\n  " +
                               "\n  ".join(messages) + more)


# ---------------------------------------------------------------------------------------------- negative tests
def negative_bench() -> Path:
    """The executable of the checker's negative-test bench, built once per source digest (a few seconds)."""
    from .toolchain import CACHE_DIR, BuildError, verilate_and_make, verilator_root

    key = _digest(CHECKER_SV, CHECKER_CPP, BENCH_SV) + "-" + verilator_root().parent.name
    out = CACHE_DIR / f"axi-checker-{key}"
    exe = out / "obj" / "axi_checker_tb"
    out.mkdir(parents=True, exist_ok=True)
    with open(out / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (out / "BUILT").exists():
            return exe
        cmd = [str(verilator_root() / "bin" / "verilator"), "--cc", "--main", "--exe", "--timing", "--assert",
               "-Wno-fatal", "-Wno-lint", "-Wno-style", "-CFLAGS", "-std=c++20", "-Mdir", str(out / "obj"),
               "--top-module", "axi_checker_tb", "--prefix", "Vtop", "-o", "axi_checker_tb", str(BENCH_SV),
               str(CHECKER_SV), str(CHECKER_CPP)]
        with open(out / "build.log", "w") as log:
            code = verilate_and_make(cmd, out / "obj", "Vtop.mk", log)
        if code:
            raise BuildError(f"building the AXI checker bench failed:\n{(out / 'build.log').read_text()[-4000:]}")
        (out / "BUILT").write_text("ok\n")
    return exe


_LINE = re.compile(r"AXI violation (\w+) on channel (\w+) at cycle (\d+): (.*)")


def run_case(name: str) -> dict:
    """Run one case of the bench: ``{"violations": [(rule, channel, cycle, detail)], "marks": [cycle], "done"}``."""
    if name not in CASES:
        raise ValueError(f"unknown checker case {name!r}; the cases are {sorted(CASES)}")
    env = dict(os.environ, VTA_AXI_PRINT="1")
    res = subprocess.run([str(negative_bench()), f"+case={name}"], capture_output=True, text=True, env=env,
                         timeout=60)
    found = [(m[1], m[2], int(m[3]), m[4]) for m in _LINE.finditer(res.stdout)]
    marks = [int(x) for x in re.findall(r"^MARK (\d+)$", res.stdout, re.M)]
    return {"violations": found, "marks": marks, "done": f"DONE {name}" in res.stdout,
            "exit": res.returncode, "output": res.stdout + res.stderr}


def store_outside_buffers() -> dict:
    """A raw STORE to device memory no buffer holds (1 MiB up), run on the current target (for the tests).

    The hardware executes it; on a checked model the write is a ``write_outside`` violation, reported as the
    run's error (``{"error": "AxiProtocolError", "message": ...}``, see :mod:`cosim.faults`).
    """
    from .faults import _finish_after_store, _run_raw, _store
    return _run_raw([_store(0x100000 // 16), *_finish_after_store()])


if __name__ == "__main__":
    for case in CASES:
        r = run_case(case)
        print(f"{case:22s} {sorted({(v[0], v[1]) for v in r['violations']})} marks {r['marks']} "
              f"cycles {[v[2] for v in r['violations']]}")
