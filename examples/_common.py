"""Shared helpers of the examples: argument parsing, the target they run on, and printing what they measured.

Every example has a module-level function that does its work on the current runtime and returns its
reports; ``--target fsim`` (default) calls it on the golden model, ``--target rtl`` hands it to
``cosim.run``, which runs the same function, unchanged, on the Verilated RTL.
"""

from __future__ import annotations

import argparse
import contextlib

from sw import runtime
from sw.fsim import COUNTER_NAMES


def parser(description) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--config", default=None,
                   help="a config name or JSON (default: VTA_CONFIG or configs/default.json; on the golden model "
                        "without it, the current runtime)")
    p.add_argument("--target", default="fsim", choices=["fsim", "rtl"],
                   help="fsim = the numpy golden model (default), rtl = the Verilated RTL through cosim.run "
                        "(builds the config's model once, about two minutes, then cached)")
    p.add_argument("--seed", type=int, default=0)
    return p


def parse(description, argv):
    return parser(description).parse_args(argv)


def target(config):
    """Run on a fresh golden model of ``config`` if given, else on the current runtime."""
    if config is None:
        return contextlib.nullcontext(runtime.current())
    return runtime.use_target(config)


def run_on(args, fn, *fn_args) -> list:
    """``fn(*fn_args)`` on the golden model or, with ``--target rtl``, on the RTL (``cosim.run``)."""
    if args.target == "rtl":
        import cosim
        return cosim.run(fn, *fn_args, config=args.config)
    with target(args.config):
        return fn(*fn_args)


def measured(title, ok, counters, macs=None) -> dict:
    """One report: what ran, whether it equalled numpy, its counters and the useful MACs (None: not a GEMM)."""
    cfg = runtime.current().cfg
    return {"title": f"{title} on {cfg}", "ok": bool(ok), "counters": dict(counters), "macs": macs,
            "macs_per_uop": cfg.BATCH * cfg.BLOCK_IN * cfg.BLOCK_OUT}


def show(reports) -> int:
    """Print each report (VTA's profiler counters, and cycles on the RTL); exit code 0 when all passed."""
    for r in reports:
        c = r["counters"]
        print(f"{r['title']}: check against numpy {'PASSED' if r['ok'] else 'FAILED'}")
        for k in (*COUNTER_NAMES, "cycles"):
            if k in c:
                print(f"    {k:20s} {c[k]}")
        if r["macs"] is not None and c.get("gemm_counter"):
            done = c["gemm_counter"] * r["macs_per_uop"]
            print(f"    useful MACs {r['macs']} of {done} issued ({100.0 * r['macs'] / done:.1f} %)")
            if c.get("cycles"):
                print(f"    MAC utilization {100.0 * r['macs'] / (c['cycles'] * r['macs_per_uop']):.1f} % "
                      f"of {c['cycles']} cycles")
    return 0 if all(r["ok"] for r in reports) else 1
