"""The speed ceiling: the same testbench and Verilog built into a plain Verilator C++ executable.

The program is prepared on the golden model (same runtime, same addresses), its device memory is
written to a file, and the harness loads it, launches the run from Verilog and reports the cycles and
the wall time of the simulation loop.
"""

from __future__ import annotations

import fcntl
import hashlib
import re
import subprocess
from pathlib import Path

from sw import runtime
from sw.config import load_config
from sw.fsim import FsimDevice

from .build import BUILD_ARGS, CACHE_DIR, DRAM_CPP, BuildError, _source_files, _verilog_for, toolchain_env, verilator_root
from .testbench import control_file, testbench_sv

MAIN_CPP = Path(__file__).resolve().parent / "harness_main.cpp"
IMAGE_BYTES = 8 << 20


class _Recorder(FsimDevice):
    """The golden model, remembering device memory and the stream of the last run."""

    def run(self, insn_addr, insn_count, wait_cycles=None):
        self.last = (self.dram[:IMAGE_BYTES].copy(), insn_addr, insn_count)
        return super().run(insn_addr, insn_count, wait_cycles)


def build_harness(cfg) -> Path:
    tb, vlt = testbench_sv(cfg.BUS_WIDTH), control_file()
    args = [a for a in BUILD_ARGS if a != "-rdynamic" and a != "-LDFLAGS"]
    h = hashlib.sha256()
    for part in [f.read_text() for f in _source_files()] + [repr(sorted(cfg.to_dict().items())), tb, vlt,
                                                           DRAM_CPP.read_text(), MAIN_CPP.read_text(), " ".join(args)]:
        h.update(part.encode())
    out = CACHE_DIR / f"harness-{cfg.name}-{h.hexdigest()[:16]}"
    out.mkdir(parents=True, exist_ok=True)
    exe = out / "obj" / "vta_harness"
    with open(out / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if exe.exists():
            return exe
        (out / "vta_top.v").write_text(_verilog_for(cfg))
        (out / "vta_tb.sv").write_text(tb)
        (out / "public.vlt").write_text(vlt)
        cmd = [str(verilator_root() / "bin" / "verilator"), "--cc", "--exe", "--build", "-j", "2", "-Mdir",
               str(out / "obj"), "--top-module", "vta_tb", "--prefix", "Vtop", "-o", "vta_harness", *args,
               "--timescale", "1ns/1ps", str(out / "vta_top.v"), str(out / "vta_tb.sv"), str(out / "public.vlt"),
               str(MAIN_CPP), str(DRAM_CPP)]
        res = subprocess.run(cmd, capture_output=True, text=True, env=toolchain_env())
        if res.returncode:
            raise BuildError(f"building the C++ harness failed:\n{(res.stdout + res.stderr)[-4000:]}")
    return exe


def harness_speed(config=None, repeats=8):
    from .bench import long_gemm
    cfg = load_config(config)
    dev = _Recorder(cfg, dram_bytes=64 << 20)
    with runtime.use_target(dev):
        long_gemm(None, 16, 16, repeats)
    image, insn_addr, insn_count = dev.last
    exe = build_harness(cfg)
    img = exe.parent / "image.bin"
    img.write_bytes(image.tobytes())
    res = subprocess.run([str(exe), f"+image={img}", f"+insn_addr={insn_addr}", f"+insn_count={insn_count}"],
                         capture_output=True, text=True)
    text = res.stdout + res.stderr
    m = re.search(r"why=(\d+) run_cycles=(\d+)", text)
    w = re.search(r"wall=([0-9.]+)", text)
    if res.returncode or not m or not w or m.group(1) != "1":
        raise RuntimeError(f"the C++ harness did not finish the run:\n{text[-2000:]}")
    cycles, wall = int(m.group(2)), float(w.group(1))
    return {"cycles": cycles, "wall": wall, "cycles_per_s": cycles / wall, "gemm_uops": 0, "utilization": 0.0}
