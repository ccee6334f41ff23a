"""The differential check: one program's results and a digest of device memory, on either target.

Each check function runs one program through the runtime on whatever target is current and returns
its results plus a digest of every 4 KiB page of the first ``CHECK_BYTES`` of device memory (where
the runtime allocates: inputs, outputs, micro-ops and the instruction stream). :func:`run_golden`
runs the same calls on one golden-model device, a fresh runtime per call as on the RTL, and
:func:`differences` says how two results differ. Used by :mod:`cosim.verify.regress` (the reference
programs and random ones) and :mod:`cosim.verify.triage` (shards, replays and the minimizer).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sw import runtime
from sw.config import Config, load_config
from sw.fsim import COUNTER_NAMES, FsimDevice
from sw.runtime.runners import Call
from sw.testing import fuzz as fuzz_mod
from sw.testing import vta_tests as programs

from . import funcov
from .pages import CHECK_BYTES, PAGE, page_digests

__all__ = ["CHECK_BYTES", "PAGE", "program_names", "program_check", "fuzz_check", "run_golden", "differences"]



def program_names(cfg: Config) -> list:
    """The reference programs a config runs (MUL ones only where MUL is built, POST ones only where the
    post-processing unit is, DEPTHWISE ones only where the depthwise mode is; elsewhere the runtime rejects them)."""
    return [n for n in programs.PROGRAMS if (cfg.ALU_MUL or not n.startswith("alu[mul"))
            and (cfg.POST_UNIT or not n.startswith("post[")) and (cfg.DEPTHWISE or not n.startswith("depthwise"))]


def program_check(name: str) -> dict:
    fn, kwargs = programs.PROGRAMS[name]
    out = fn("python", **kwargs)
    out["pages"] = page_digests(runtime.current().dram)
    return out


def fuzz_check(seed: int, n_ops: int = 24, bias: dict[str, float] | None = None) -> dict:
    out = fuzz_mod.random_program(seed, n_ops, bias=bias)
    out["pages"] = page_digests(runtime.current().dram)
    return out


def run_golden(calls: Sequence[Call], config: Config | str | None, dram_bytes: int = 64 << 20) -> list:
    """The calls on one golden-model device, a fresh runtime each (as cosim.sim.entry does on the RTL)."""
    device = funcov.sampled(FsimDevice(load_config(config), dram_bytes=dram_bytes))   # functional coverage
    results = []
    for fn, args, kwargs in calls:
        q = runtime.CommandQueue(device)
        prev = runtime.set_current(q)
        try:
            results.append(fn(*args, **kwargs))
        finally:
            runtime.set_current(prev)
    return results


def differences(label: str, gold: dict, rtl: dict) -> list:
    """Why two results of the same call differ ([] when they are equal)."""
    out = []
    for key in ("result", "out"):
        if key in gold and not np.array_equal(gold[key], rtl[key]):
            bad = np.flatnonzero(np.asarray(gold[key]).reshape(-1) != np.asarray(rtl[key]).reshape(-1))
            out.append(f"{label}: {key} differs in {bad.size} elements, first at flat index {bad[0]}")
    if "expected" in rtl and not np.array_equal(rtl["result"], rtl["expected"]):
        out.append(f"{label}: the RTL result is not the numpy reference")
    for name in COUNTER_NAMES:
        if name in gold.get("counters", {}) and gold["counters"][name] != rtl["counters"].get(name):
            out.append(f"{label}: counter {name} golden {gold['counters'][name]} != rtl {rtl['counters'].get(name)}")
    pages = [i for i, (a, b) in enumerate(zip(gold["pages"], rtl["pages"])) if a != b]
    if pages:
        out.append(f"{label}: device memory differs in {len(pages)} pages, first at {pages[0] * PAGE:#x}")
    if out and "listing" in gold:
        out.append(f"{label}: the program was\n{gold['listing']}")
    return out
