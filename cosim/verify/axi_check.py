"""The AXI4 protocol checker proven to fire: a scripted bench that breaks each rule in turn.

The checker itself (``cosim/model/axi_checker.sv`` + ``axi_checker.cpp``) is part of every co-simulation model
and reports through :mod:`cosim.sim.axi_monitor`. Here :func:`run_case` runs one case of a small bench
(``cosim/model/axi_checker_tb.sv``) whose scripted master and slave break one rule per case (:data:`CASES`), and
returns the violations the checker reported with their cycles; the bench is built once and cached like the models.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from ..model.cache import cached_build, digest
from ..model.variants import CHECKER_CPP, CHECKER_SV, MODEL_DIR
from ..sim.axi_monitor import RULES

__all__ = ["RULES", "CASES", "BENCH_SV", "negative_bench", "run_case", "store_outside_buffers"]

BENCH_SV = MODEL_DIR / "axi_checker_tb.sv"

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


def negative_bench() -> Path:
    """The executable of the checker's negative-test bench, built once per source digest (a few seconds)."""
    from ..model.toolchain import CACHE_DIR, BuildError, verilate_and_make, verilator_root

    out = CACHE_DIR / f"axi-checker-{digest(CHECKER_SV, CHECKER_CPP, BENCH_SV, str(verilator_root()))}"

    def build(out: Path) -> None:
        cmd = [str(verilator_root() / "bin" / "verilator"), "--cc", "--main", "--exe", "--timing", "--assert",
               "-Wno-fatal", "-Wno-lint", "-Wno-style", "-CFLAGS", "-std=c++20", "-Mdir", str(out / "obj"),
               "--top-module", "axi_checker_tb", "--prefix", "Vtop", "-o", "axi_checker_tb", str(BENCH_SV),
               str(CHECKER_SV), str(CHECKER_CPP)]
        with open(out / "build.log", "w") as log:
            code = verilate_and_make(cmd, out / "obj", "Vtop.mk", log)
        if code:
            raise BuildError(f"building the AXI checker bench failed:\n{(out / 'build.log').read_text()[-4000:]}")

    cached_build(out, build)
    return out / "obj" / "axi_checker_tb"


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
    run's error (``{"error": "AxiProtocolError", "message": ...}``, see :mod:`cosim.verify.faults`).
    """
    from .raw import finish_after_store, run_raw, store_insn
    return run_raw([store_insn(0x100000 // 16), *finish_after_store()])


if __name__ == "__main__":
    for case in CASES:
        r = run_case(case)
        print(f"{case:22s} {sorted({(v[0], v[1]) for v in r['violations']})} marks {r['marks']} "
              f"cycles {[v[2] for v in r['violations']]}")
