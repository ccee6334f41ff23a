"""Differential regression: the same calls on the golden model and on the RTL, compared byte for byte.

Each check function runs one program through the runtime on whatever target is current and returns
its results plus a digest of every 4 KiB page of the first ``CHECK_BYTES`` of device memory (where
the runtime allocates: inputs, outputs, micro-ops and the instruction stream). The golden side runs
the same sequence of calls on one :class:`~sw.fsim.FsimDevice`, with a fresh runtime per call like
the RTL side, so both allocate the same addresses and keep SRAM state across calls the same way.

``compare(names, config)`` and ``fuzz(seeds, config)`` return a list of mismatch descriptions
(empty = bit-exact); ``python -m cosim.regress --fuzz N`` is ``make fuzz``.
"""

from __future__ import annotations

import argparse
import hashlib
import sys

import numpy as np

from sw import fuzz as fuzz_mod
from sw import programs, runtime
from sw.config import load_config
from sw.fsim import COUNTER_NAMES, FsimDevice

from . import funcov

CHECK_BYTES = 4 << 20
PAGE = 4096


def _pages(dram) -> list:
    view = np.asarray(dram[:CHECK_BYTES]).reshape(-1, PAGE)
    return [hashlib.blake2b(row.tobytes(), digest_size=8).hexdigest() for row in view]


def program_names(cfg) -> list:
    """The reference programs a config runs (MUL ones only where MUL is built; elsewhere it is rejected)."""
    return [n for n in programs.PROGRAMS if cfg.ALU_MUL or not n.startswith("alu[mul")]


def program_check(name: str) -> dict:
    fn, kwargs = programs.PROGRAMS[name]
    out = fn("python", **kwargs)
    out["pages"] = _pages(runtime.current().dram)
    return out


def fuzz_check(seed: int, n_ops: int = 24, bias=None) -> dict:
    out = fuzz_mod.random_program(seed, n_ops, bias=bias)
    out["pages"] = _pages(runtime.current().dram)
    return out


def run_golden(calls, config, dram_bytes=64 << 20):
    """The calls on one golden-model device, a fresh runtime each (as cosim.entry does on the RTL)."""
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


def compare(names, config, **cosim_options) -> list:
    import cosim
    calls = [(program_check, (name,), {}) for name in names]
    rtl = cosim.run_many(calls, config=config, **cosim_options)
    gold = run_golden(calls, config)
    return [d for name, g, r in zip(names, gold, rtl) for d in differences(f"{name} [{config}]", g, r)]


def fuzz(seeds, config, n_ops=24, bias=None, **cosim_options) -> list:
    import cosim
    calls = [(fuzz_check, (seed, n_ops, bias), {}) for seed in seeds]
    rtl = cosim.run_many(calls, config=config, **cosim_options)
    gold = run_golden(calls, config)
    return [d for seed, g, r in zip(seeds, gold, rtl) for d in differences(f"random program seed {seed} [{config}]", g, r)]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="differential tests: golden model against RTL")
    parser.add_argument("--fuzz", type=int, default=0, help="number of random programs")
    parser.add_argument("--start", type=int, default=0, help="first seed")
    parser.add_argument("--ops", type=int, default=24, help="operations per random program")
    parser.add_argument("--config", default=None)
    parser.add_argument("--batch", type=int, default=200, help="programs per simulator launch")
    parser.add_argument("--mem", default="dpi", choices=("dpi", "cocotbext"),
                        help="the accelerator's memory: the DPI DRAM, or cocotbext-axi's AxiRam with random pauses")
    args = parser.parse_args(argv)
    cfg = load_config(args.config)
    mem_options = {"mem": args.mem} if args.mem != "dpi" else {}        # cosim/axiram.py
    failures = []
    if args.fuzz:
        for first in range(args.start, args.start + args.fuzz, args.batch):
            seeds = list(range(first, min(first + args.batch, args.start + args.fuzz)))
            bias = funcov.steer() if first > args.start else None    # later batches steered toward the holes
            found = fuzz(seeds, cfg, args.ops, bias, **mem_options, **({"mem_seed": first} if mem_options else {}))
            failures += found
            print(f"seeds {seeds[0]}-{seeds[-1]}{f' (steered: {bias})' if bias else ''}: "
                  f"{'OK' if not found else f'{len(found)} mismatches'}", flush=True)
        print(funcov.report())
    else:
        failures = compare(program_names(cfg), cfg, **mem_options)
    for f in failures:
        print(f)
    print(f"{'FAIL' if failures else 'PASS'}: config {cfg.name}")
    return 1 if failures else 0


if __name__ == "__main__":
    # run the importable module's main, so that the functions sent to the simulator have a module name
    from cosim.regress import main as _main
    sys.exit(_main())
