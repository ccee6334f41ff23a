"""The speed ceiling: the same Verilog and testbench in a minimal Verilator C++ main loop.

No cocotb, no VPI: ``harness_main.cpp`` toggles the clock and calls ``eval`` (like the co-simulation's
``sim_main.cpp``, without its VPI callbacks), and the build uses the co-simulation's flags. The program is prepared on
the golden model (same runtime, same addresses), its device memory is written to a file, and the
testbench's autorun launches it and prints the cycles; the harness reports the wall time of its loop.
"""

from __future__ import annotations

import re
import resource
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from sw import runtime
from sw.config import Config, load_config
from sw.fsim import FsimDevice

from ..model import verilog as _verilog
from ..model.build import BUILD_ARGS, CACHE_DIR, DRAM_CPP, VBOARD_CPP, verilate_testbench, verilator_root
from ..model.cache import cached_build, digest
from ..model.testbench import TESTBENCH_SV, control_file, testbench_parameters
from ..model.variants import MODEL_DIR
from .long_gemm import long_gemm

__all__ = ["build_harness", "harness_speed", "HARNESS_ARGS"]

MAIN_CPP = MODEL_DIR / "harness_main.cpp"
IMAGE_BYTES = 8 << 20
# the co-simulation's flags without -rdynamic (for ctypes; the co-simulation also adds cocotb's --vpi and library)
HARNESS_ARGS = [a for a in BUILD_ARGS if a not in ("-rdynamic", "-LDFLAGS")]


class _Recorder(FsimDevice):
    """The golden model, remembering device memory and the stream of the last run."""

    def run(self, insn_addr, insn_count, wait_cycles=None):
        self.last = (self.dram[:IMAGE_BYTES].copy(), insn_addr, insn_count)
        return super().run(insn_addr, insn_count, wait_cycles)


def build_harness(cfg: Config, extra_args: Sequence[str] = ()) -> Path:
    """The harness executable of ``cfg`` (cached like the co-simulation model); ``extra_args`` go to Verilator."""
    gen = _verilog.generate(cfg)
    args = HARNESS_ARGS + list(extra_args)
    key = digest(gen.text(), gen.ports_header, TESTBENCH_SV, control_file(), DRAM_CPP, VBOARD_CPP, MAIN_CPP,
                 " ".join(args), repr(sorted(testbench_parameters(gen.interface).items())), str(verilator_root()))
    out = CACHE_DIR / f"harness-{cfg.name}-{key}"
    cached_build(out, lambda out: verilate_testbench(cfg, gen, out, args, main_cpp=MAIN_CPP, output="vta_harness"))
    return out / "obj" / "vta_harness"


def harness_speed(config: Config | str | None = None, repeats: int = 8, extra_args: Sequence[str] = ()) -> dict:
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
