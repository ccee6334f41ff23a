"""Profile-guided optimisation of a co-simulation model: gcc's ``-fprofile-generate`` / ``-fprofile-use``.

Opt-in (``VTA_COSIM_PGO=1``; ``make sim`` and ``make bench`` set it): the plain model of a config (no waveforms,
the DPI memory, no coverage) is copied, the C++ Verilator marks as the hot path (``VM_CLASSES_FAST``: the model's
evaluation, and ``sim_main.cpp``/``dram.cpp`` beside it) is compiled again instrumented, :func:`training` runs in
that simulator, and the same files are compiled a third time with the profile. The runtime library and the
model's initialisation code keep the plain model's objects, so the variant costs two compiles of the hot files
and the training run once per plain model (its effect on speed: docs/performance.md).

Tests and the coverage and waveform models keep the plain build: their runs are short and the variant would
only add its build time.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from .cache import STAMP, cached_build, digest
from .toolchain import BuildError, makefile_list, toolchain_env

if TYPE_CHECKING:
    from .build import Model

__all__ = ["PGO_ENV", "GENERATE", "USE", "wanted", "pgo_model", "training"]

PGO_ENV = "VTA_COSIM_PGO"
GENERATE = "-fprofile-generate -fprofile-update=single"
# -fprofile-partial-training: code the training never ran keeps -O3 (a network may use a path it did not)
USE = "-fprofile-use -fprofile-partial-training -Wno-missing-profile"


def wanted(waves: bool, mem: str, coverage: bool) -> bool:
    """Whether a run asks for the optimised variant: ``VTA_COSIM_PGO`` set, and the plain model's variant."""
    return os.environ.get(PGO_ENV, "0") not in ("", "0") and not waves and mem == "dpi" and not coverage


def _hot_objects(obj: Path) -> list:
    """The objects Verilator's makefile compiles with OPT_FAST: the model's hot path (``VM_CLASSES_FAST``, the
    DPI glue of ``VM_SUPPORT_FAST``) and the testbench's C++ (``VM_USER_CLASSES``)."""
    names = makefile_list(obj / "Vtop_classes.mk", "VM_CLASSES_FAST", "VM_SUPPORT_FAST")
    if not names:
        raise BuildError(f"{obj / 'Vtop_classes.mk'} lists no VM_CLASSES_FAST: cannot tell the hot path apart")
    return [f"{n}.o" for n in names + makefile_list(obj / "Vtop.mk", "VM_USER_CLASSES")]


def _remake(obj: Path, opt_fast: str, ldflags: str, log) -> None:
    """Compile the hot objects again with ``opt_fast`` and link (``ldflags``)."""
    for name in [*_hot_objects(obj), "Vtop__ALL.a", "Vtop__pch.h.fast.gch", "vta_tb"]:
        (obj / name).unlink(missing_ok=True)
    t = time.time()
    cmd = ["make", "-j", "2", "-f", "Vtop.mk", f"OPT_FAST={opt_fast}", f"USER_LDFLAGS={ldflags}"]
    log.write(" ".join(cmd) + "\n")
    log.flush()
    res = subprocess.run(cmd, cwd=obj, stdout=log, stderr=subprocess.STDOUT, env=toolchain_env())
    log.write(f"make: {time.time() - t:.1f} s\n")
    log.flush()
    if res.returncode:
        raise BuildError(f"the profile-guided build in {obj} failed (exit code {res.returncode}); see "
                         f"{obj.parent / 'build.log'}")


def pgo_model(plain: Model, train: Callable[[Model], object]) -> Model:
    """The profile-guided variant of the built model ``plain`` (a ``cosim.model.build.Model``), built once into
    the cache; ``train(model)`` runs :func:`training` in the instrumented model and must let it exit normally
    (gcc writes the profile when the process ends). Memoised per plain model, as :func:`build_model` is."""
    from .build import CACHE_DIR

    memo = (plain.build_dir, CACHE_DIR)
    done = _BUILT.get(memo)
    if done is not None and (done.build_dir / STAMP).exists():
        return done
    cfg = plain.cfg
    key = digest(plain.key, GENERATE, USE, Path(__file__).read_text())
    model = replace(plain, build_dir=CACHE_DIR / f"{cfg.name}-pgo-{key}", key=key)

    def build(d: Path) -> None:
        print(f"building the profile-guided variant of the model of config {cfg.name} once (about 20 s; log: "
              f"{d / 'build.log'}; {PGO_ENV}=0 uses the plain model)", file=sys.stderr, flush=True)
        for part in ("obj", "src"):
            shutil.rmtree(d / part, ignore_errors=True)
            shutil.copytree(plain.build_dir / part, d / part, symlinks=True)
        shutil.copyfile(plain.build_dir / "build.log", d / "build.log")
        for gcda in (d / "obj").glob("*.gcda"):
            gcda.unlink()
        with open(d / "build.log", "a") as log:
            _remake(d / "obj", GENERATE, "-fprofile-generate", log)
            t = time.time()
            train(model)
            log.write(f"training: {time.time() - t:.1f} s\n")
            if not any((d / "obj").glob("*.gcda")):
                raise BuildError(f"the training run of {d} wrote no profile")
            _remake(d / "obj", USE, "", log)

    seconds = cached_build(model.build_dir, build)
    _BUILT[memo] = replace(model, seconds=0.0)
    return replace(model, seconds=seconds or 0.0)


_BUILT: dict = {}


def training() -> int:
    """What the instrumented model runs (inside the simulation): a 3x3 conv with bias and a residual, a 1x1
    stride-2 conv and a dense layer, sized from the config (every config runs them); returns the GEMM
    micro-ops it ran."""
    from sw.ops.base import config
    from sw.testing import workloads

    cfg = config()
    c = 4 * max(cfg.BLOCK_IN, cfg.BLOCK_OUT)
    runs = [workloads.run_conv2d_workload(h=14, w=14, cin=c, cout=c, k=3, pad=1, stride=1, virtual_threads=2,
                                          residual=True),
            workloads.run_conv2d_workload(h=14, w=14, cin=c, cout=2 * c, k=1, pad=0, stride=2, virtual_threads=2),
            workloads.run_dense_workload(cfg.BATCH, 8 * cfg.BLOCK_IN, 8 * cfg.BLOCK_OUT, virtual_threads=2, bias=True)]
    bad = [i for i, r in enumerate(runs) if not r["ok"]]
    if bad:
        raise RuntimeError(f"the training runs {bad} of the profile-guided build differ from numpy")
    return sum(r["counters"]["gemm_counter"] for r in runs)
