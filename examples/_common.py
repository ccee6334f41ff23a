"""Shared helpers of the examples: argument parsing, the runtime they run on, and printing counters."""

from __future__ import annotations

import argparse
import contextlib

from sw import runtime


def parse(description, argv):
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--config", default=None,
                        help="a config JSON for a fresh golden model (default: the current runtime, which is "
                             "the golden model of VTA_CONFIG or configs/default.json, or the RTL inside cosim)")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def target(config):
    """Run on a fresh golden model of ``config`` if given, else on the current runtime."""
    if config is None:
        return contextlib.nullcontext(runtime.current())
    return runtime.use_target(config)


def report(title, ok, counters, macs=None, cfg=None):
    print(f"{title}: check against numpy {'PASSED' if ok else 'FAILED'}")
    for k in sorted(counters):
        print(f"    {k:20s} {counters[k]}")
    if macs is not None and cfg is not None and counters.get("gemm_counter"):
        done = counters["gemm_counter"] * cfg.BATCH * cfg.BLOCK_IN * cfg.BLOCK_OUT
        print(f"    useful MACs {macs} of {done} issued ({100.0 * macs / done:.1f} %)")
