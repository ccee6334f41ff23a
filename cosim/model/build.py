"""Build the Verilator model of one configuration, once, into a cache keyed by what went into it.

The key hashes the generated Verilog (:mod:`cosim.model.verilog`, itself cached by the hardware's Python
sources, so a warm build elaborates nothing), the testbench (``vta_tb.sv`` and its parameters), the
DPI memory, the build flags and the Verilator and cocotb versions: a change to any of them rebuilds,
and nothing else does (a docstring or a tool in ``hw/`` that leaves the Verilog unchanged rebuilds
nothing). Concurrent builds of the same key (pytest-xdist workers) wait on a file lock instead of
building twice.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from hw.lint import LINT_WAIVERS
from sw.config import Config, load_config

from . import variants
from . import verilog as _verilog
from .cache import cached_build, digest
from .testbench import TESTBENCH_SV, control_file, testbench_parameters
from .toolchain import CACHE_DIR, BuildError, ToolchainError, toolchain_env, verilate_and_make, verilator_root
from .verilog import Generated

__all__ = ["BuildError", "ToolchainError", "Model", "build_model", "model_key", "verilator_root", "toolchain_env", "lz4_dir",
           "CACHE_DIR", "BUILD_ARGS", "SIM_MAIN", "DRAM_CPP", "VBOARD_CPP", "verilate_testbench"]

ROOT = Path(__file__).resolve().parents[2]
DRAM_CPP = Path(__file__).resolve().parent / "dram.cpp"
VBOARD_CPP = Path(__file__).resolve().parent / "vboard.cpp"     # the virtual board's register page (cosim/sim/vboard.py)
TOPLEVEL = "vta_tb"
LZ4_MAKE_TARGET = "make venv"


@dataclass(frozen=True)
class Model:
    cfg: Config
    build_dir: Path
    waves: bool
    seconds: float          # build time (0 when it came from the cache)
    key: str = ""           # the cache key (hash of everything that went into the model)

    @property
    def executable(self) -> Path:
        return self.build_dir / "obj" / TOPLEVEL

    def lint(self) -> list:
        """Verilator's warnings about the accelerator's Verilog (``vta_top.v``) from this model's build."""
        log = (self.build_dir / "build.log").read_text(errors="replace")
        return [line for line in log.splitlines() if line.startswith("%") and "vta_top.v:" in line]

    @property
    def interface(self) -> dict:
        """Facts about the generated Verilog (register map, bus width): see :mod:`cosim.model.verilog`."""
        import json
        return json.loads((self.build_dir / "src" / "interface.json").read_text())


def _verilog_for(cfg: Config, src: bool = False) -> _verilog.Generated:
    return _verilog.generate(cfg, src)


# Verilator flags of the co-simulation model (cosim.perf.harness builds the ceiling with the same ones). The
# clock is toggled by sim_main.cpp (VTA_TB_CPP_CLOCK), so no --timing; -rdynamic lets ctypes find dram.cpp.
#
# Verilating the model is also the lint of the accelerator's Verilog: Verilator's default warnings are on (not
# fatal) and land in build.log, where Model.lint() reads those about vta_top.v (tests/hw/test_top.py fails
# on any), with the waivers of hw.lint.LINT_WAIVERS.
# The C++ of the model compiles with -O3 for this machine's CPU (-march=native; compare with
# `python -m cosim.perf.cosim_speed --ceiling-args`); the model cache key includes the CPU, so a cache copied to
# another machine builds again. Verilator splits the model's C++ into functions of --output-split-cfuncs
# statements: where the splits fall decides how well the C++ compiler optimises across them, no value is best for
# every design, and 5000 is the fastest of those tried (docs/CHANGELOG.md).
BUILD_ARGS = ["-Wno-fatal", *LINT_WAIVERS, "-CFLAGS", "-std=c++20", "-CFLAGS", "-O3", "-CFLAGS", "-march=native",
              "-LDFLAGS", "-rdynamic", "--output-split", "2000", "--output-split-cfuncs", "5000",
              "-O3", "--x-assign", "fast", "--x-initial", "fast", "-DVTA_TB_CPP_CLOCK"]
SIM_MAIN = Path(__file__).resolve().parent / "sim_main.cpp"
# Models whose speed is not the point compile without C++ optimisation, in about half the time: the traced
# model (its run time goes to writing the FST) and the AxiRam one (its run time goes to cocotbext-axi's
# Python coroutines). The plain and coverage models keep -O3. The traced model is also the debug model of user
# cocotb tests (cosim.cocotb): every signal readable (testbench.control_file's read_all).
DEBUG_OPT = "-O0"


def _compile_args(waves: bool, mem: str) -> list:
    """BUILD_ARGS with the C++ optimisation level of the variant."""
    if not waves and mem == "dpi":
        return list(BUILD_ARGS)
    i = BUILD_ARGS.index("-march=native")
    return BUILD_ARGS[:i - 2] + [DEBUG_OPT] + BUILD_ARGS[i + 1:]     # -O0 instead of "-O3 -CFLAGS -march=native"


def _cocotb_link_args() -> list:
    """Verilator flags that link cocotb's VPI library into the model."""
    try:
        import cocotb_tools.config
    except ImportError:
        raise ToolchainError("cocotb is not installed: run `make venv`") from None
    libs = cocotb_tools.config.libs_dir
    return ["--vpi", "-LDFLAGS", f"-Wl,-rpath,{libs} -L{libs} -lcocotbvpi_verilator"]


def lz4_dir() -> Path:
    """lz4 for Verilator's FST writer (``liblz4.a`` and headers), installed by the Makefile's venv step.

    Waveforms need it; tests never fetch anything, so a missing copy is a setup error naming the target.
    """
    root = verilator_root()
    for d in (Path(sys.prefix) / "lz4", root.parent / "lz4"):
        if (d / "liblz4.a").exists() and (d / "lz4.h").exists():
            return d
    raise ToolchainError(f"waveforms need lz4 for Verilator's FST writer, and {Path(sys.prefix) / 'lz4'} has no "
                         f"liblz4.a: run `{LZ4_MAKE_TARGET}` (the Makefile builds it from the lz4 sdist on PyPI)")


def host_cpu() -> str:
    """What ``-march=native`` compiles for: the CPU's model name and feature flags (Linux), else the platform."""
    import platform

    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.machine() + platform.processor()
    return "\n".join(sorted({line for line in lines if line.startswith(("model name", "flags"))}))


def model_key(cfg: Config, verilog_text: str, ports: str, args: Sequence[str], parameters: dict,
              read_all: bool = False) -> str:
    """The cache key of a model: everything the Verilator build reads, and nothing else."""
    return digest(verilog_text, ports, TESTBENCH_SV, control_file(read_all=read_all), DRAM_CPP, VBOARD_CPP, SIM_MAIN,
                  " ".join(args), repr(sorted(parameters.items())), str(verilator_root()), _cocotb_version(),
                  host_cpu() if "-march=native" in args else "")


def build_model(config: Config | str | None = None, waves: bool = False, mem: str = "dpi", coverage: bool = False) -> Model:
    """The model of ``config``, from the cache when what it is built from is unchanged (built otherwise).

    ``mem`` and ``coverage`` select a variant (:mod:`cosim.model.variants`): the memory model, code coverage."""
    cfg = load_config(config)
    gen = _verilog_for(cfg, src=coverage)      # a coverage model's Verilog keeps the Amaranth src attributes
    memo = (gen.directory, waves, mem, coverage, str(CACHE_DIR))
    if memo in _BUILT and (_BUILT[memo].build_dir / "BUILT").exists():
        return _BUILT[memo]
    model = _build_model(cfg, gen, waves, mem, coverage)
    _BUILT[memo] = dataclasses.replace(model, seconds=0.0)
    return model


_BUILT: dict = {}


def _build_model(cfg, gen, waves, mem="dpi", coverage=False) -> Model:
    text, ports, interface = gen.text(), gen.ports_header.read_text(), gen.interface
    params = testbench_parameters(interface)
    variant_args, variant_sources, variant_public = variants.build_parts(ports, mem, coverage)   # cosim/model/variants.py
    args = _compile_args(waves, mem) + _cocotb_link_args() + variant_args
    if waves:
        lz4 = lz4_dir()
        args += ["--trace-fst", "--trace-structs", "-CFLAGS", f"-I{lz4}", "-LDFLAGS", f"-L{lz4}"]
    key = model_key(cfg, text, ports, args, params, read_all=waves)
    build_dir = CACHE_DIR / f"{cfg.name}-{'fst-' if waves else ''}{variants.tag(mem, coverage)}{key}"
    what = ", ".join(["with FST waveform tracing" if waves else "without waveform tracing"]
                     + ([f"memory {mem}"] if mem != "dpi" else []) + (["code coverage"] if coverage else []))

    def build(build_dir: Path) -> None:
        print(f"building the Verilator model of config {cfg.name} ({what}) once; it is cached in {build_dir.parent} "
              f"(takes minutes; log: {build_dir / 'build.log'})", file=sys.stderr, flush=True)
        verilate_testbench(cfg, gen, build_dir, args, variant_public, variant_sources, read_all=waves)

    seconds = cached_build(build_dir, build)
    if seconds is not None:
        print(f"built the model of config {cfg.name} in {seconds:.0f} s", file=sys.stderr, flush=True)
    return Model(cfg, build_dir, waves, seconds or 0.0, key)


def _cocotb_version() -> str:
    """cocotb's version, from its installed metadata (importing cocotb would cost 0.17 s of every first call)."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("cocotb")
    except PackageNotFoundError:
        raise ToolchainError("cocotb is not installed: run `make venv`") from None


def verilate_testbench(cfg: Config, gen: Generated, build_dir: Path, args: Sequence[str], public: Iterable[str] = (),
                       sources: Iterable[str | Path] = (), main_cpp: Path = SIM_MAIN, output: str = TOPLEVEL,
                       read_all: bool = False) -> None:
    """Verilate and compile ``vta_tb`` around ``vta_top`` (the Verilog of ``gen``) with ``main_cpp``, dram.cpp and
    vboard.cpp into ``build_dir/obj/<output>``; the sources it reads are copied to ``build_dir/src``. Shared by the
    co-simulation models and the speed ceiling (:mod:`cosim.perf.harness`)."""
    src = build_dir / "src"
    src.mkdir(exist_ok=True)
    (src / "vta_top.v").write_text(gen.text())
    (src / "vta_ports.svh").write_text(gen.ports_header.read_text())
    (src / "interface.json").write_text((gen.directory / "interface.json").read_text())
    (src / "vta_tb.sv").write_text(TESTBENCH_SV.read_text())
    (src / "public.vlt").write_text(control_file(list(public), read_all=read_all))
    log = build_dir / "build.log"
    parameters = testbench_parameters(gen.interface)
    cmd = [str(verilator_root() / "bin" / "verilator"), "--cc", "--exe",
           "-Mdir", str(build_dir / "obj"), "--top-module", TOPLEVEL, "--prefix", "Vtop", "-o", output, *args,
           "--timescale", "1ns/1ps", f"-I{src}", *(f"-G{k}={v}" for k, v in parameters.items()),
           str(src / "vta_top.v"), str(src / "vta_tb.sv"), str(src / "public.vlt"), str(main_cpp), str(DRAM_CPP),
           str(VBOARD_CPP), *map(str, sources)]
    with open(log, "w") as fh:
        code = verilate_and_make(cmd, build_dir / "obj", "Vtop.mk", fh)
    if code:
        text = log.read_text(errors="replace")[-6000:]
        raise BuildError(f"building the Verilator model of config {cfg.name} failed (exit code {code}); "
                         f"the tools said (last lines of {log}):\n{text}")


if __name__ == "__main__":
    m = build_model(sys.argv[1] if len(sys.argv) > 1 else None)
    print(m)
