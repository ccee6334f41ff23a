"""The speed ceiling: the same Verilog and testbench in a minimal Verilator C++ main loop.

No cocotb, no VPI: ``harness_main.cpp`` toggles the clock and calls ``eval`` (like the co-simulation's
``sim_main.cpp``, without its VPI callbacks), and the build uses the co-simulation's flags. The program is prepared on
the golden model (same runtime, same addresses), its device memory is written to a file, and the
testbench's autorun launches it and prints the cycles; the harness reports the wall time of its loop.
"""

from __future__ import annotations

import fcntl
import hashlib
import re
import resource
import subprocess
import tempfile
from pathlib import Path

from sw import runtime
from sw.config import load_config
from sw.fsim import FsimDevice

from . import verilog as _verilog
from .build import BUILD_ARGS, CACHE_DIR, DRAM_CPP, BuildError, verilator_root
from .toolchain import verilate_and_make
from .long_gemm import long_gemm
from .testbench import TESTBENCH_SV, control_file, testbench_parameters

__all__ = ["build_harness", "harness_speed", "HARNESS_ARGS"]

MAIN_CPP = Path(__file__).resolve().parent / "harness_main.cpp"
IMAGE_BYTES = 8 << 20
# the co-simulation's flags without -rdynamic (for ctypes; the co-simulation also adds cocotb's --vpi and library)
HARNESS_ARGS = [a for a in BUILD_ARGS if a not in ("-rdynamic", "-LDFLAGS")]


class _Recorder(FsimDevice):
    """The golden model, remembering device memory and the stream of the last run."""

    def run(self, insn_addr, insn_count, wait_cycles=None):
        self.last = (self.dram[:IMAGE_BYTES].copy(), insn_addr, insn_count)
        return super().run(insn_addr, insn_count, wait_cycles)


def build_harness(cfg, extra_args=()) -> Path:
    """The harness executable of ``cfg`` (cached like the co-simulation model); ``extra_args`` go to Verilator."""
    gen = _verilog.generate(cfg)
    text, ports = gen.text(), gen.ports_header.read_text()
    params = testbench_parameters(gen.interface)
    args = HARNESS_ARGS + list(extra_args)
    h = hashlib.sha256()
    for part in (text, ports, TESTBENCH_SV.read_text(), control_file(), DRAM_CPP.read_text(), MAIN_CPP.read_text(),
                 " ".join(args), repr(sorted(params.items())), str(verilator_root())):
        h.update(part.encode() + b"\0")
    out = CACHE_DIR / f"harness-{cfg.name}-{h.hexdigest()[:16]}"
    out.mkdir(parents=True, exist_ok=True)
    exe = out / "obj" / "vta_harness"
    with open(out / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if exe.exists():
            return exe
        (out / "vta_top.v").write_text(text)
        (out / "vta_ports.svh").write_text(ports)
        (out / "vta_tb.sv").write_text(TESTBENCH_SV.read_text())
        (out / "public.vlt").write_text(control_file())
        cmd = [str(verilator_root() / "bin" / "verilator"), "--cc", "--exe", "-Mdir",
               str(out / "obj"), "--top-module", "vta_tb", "--prefix", "Vtop", "-o", "vta_harness", *args,
               "--timescale", "1ns/1ps", f"-I{out}", *(f"-G{k}={v}" for k, v in params.items()),
               str(out / "vta_top.v"), str(out / "vta_tb.sv"), str(out / "public.vlt"), str(MAIN_CPP), str(DRAM_CPP)]
        with open(out / "build.log", "w") as log:
            code = verilate_and_make(cmd, out / "obj", "Vtop.mk", log)
        if code:
            raise BuildError(f"building the C++ harness failed:\n{(out / 'build.log').read_text()[-4000:]}")
    return exe


def harness_speed(config=None, repeats=8, extra_args=()):
    """Cycles, wall and CPU seconds of the long GEMM in the harness (built first when missing)."""
    cfg = load_config(config)
    dev = _Recorder(cfg, dram_bytes=64 << 20)
    with runtime.use_target(dev):
        long_gemm(None, 16, 16, repeats)
    image, insn_addr, insn_count = dev.last
    exe = build_harness(cfg, extra_args)
    with tempfile.TemporaryDirectory(prefix="vta-harness-") as tmp:
        img = Path(tmp) / "image.bin"
        img.write_bytes(image.tobytes())
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        res = subprocess.run([str(exe), f"+image={img}", f"+insn_addr={insn_addr}", f"+insn_count={insn_count}"],
                             capture_output=True, text=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    text = res.stdout + res.stderr
    m = re.search(r"why=(\d+) run_cycles=(\d+)", text)
    w = re.search(r"wall=([0-9.]+)", text)
    if res.returncode or not m or not w or m.group(1) != "1":
        raise RuntimeError(f"the C++ harness did not finish the run:\n{text[-2000:]}")
    cycles, wall = int(m.group(2)), float(w.group(1))
    # CPU seconds of the whole process (loading the image included: a slight underestimate of the ceiling)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return {"cycles": cycles, "wall": wall, "cpu": cpu, "cycles_per_s": cycles / wall, "cycles_per_cpu_s": cycles / cpu}
