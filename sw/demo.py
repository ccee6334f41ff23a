"""The default demo (``make sim``): VTA's get-started vector add and a blocked GEMM, checked against numpy.

    python -m sw.demo [--config configs/default.json] [--target rtl|fsim]
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from . import programs, runtime
from .config import load_config

DEMOS = (
    ("vector add (get-started, 1x64 blocks)", programs.vector_add, {}),
    ("blocked GEMM (8x8 blocks x 8 reduction blocks, 2 virtual threads)", programs.gemm,
     {"virtual_threads": 2, "rows": 8, "cols": 8, "blocks": 8}),
)


def _golden(calls):
    return [fn(*args, **kwargs) for fn, args, kwargs in calls]


def run_demos(cfg, target_name: str, out=sys.stdout) -> bool:
    """Run the demos on the golden model ("fsim") or on the RTL ("rtl"); print and check each."""
    ok_all = True
    print(f"config {cfg}; target {target_name}", file=out)
    calls = [(fn, ("python",), kwargs) for _, fn, kwargs in DEMOS]
    t = time.perf_counter()
    if target_name == "rtl":
        import cosim
        results = cosim.run_many(calls, config=cfg)
    else:
        with runtime.use_target(cfg):
            results = _golden(calls)
    dt = (time.perf_counter() - t) / len(calls)
    for (title, _, _), res in zip(DEMOS, results):
        ok = res["result"].shape == res["expected"].shape and np.array_equal(res["result"], res["expected"])
        ok_all &= ok
        c = res["counters"]
        macs = c.get("gemm_counter", 0) * cfg.MACS_PER_CYCLE
        print(f"  {title}: {'PASS' if ok else 'FAIL'} (equal to numpy: {ok}); about {dt:.2f} s", file=out)
        print("    counters: " + ", ".join(f"{k}={v}" for k, v in c.items()), file=out)
        if c.get("cycles"):
            print(f"    cycles={c['cycles']}  GEMM uops={c['gemm_counter']}  ALU uops={c['alu_counter']}  "
                  f"MAC utilization={macs / (c['cycles'] * cfg.MACS_PER_CYCLE):.1%}", file=out)
    return ok_all


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=None, help="config JSON (default: $VTA_CONFIG or configs/default.json)")
    parser.add_argument("--target", default="rtl", choices=["rtl", "fsim"],
                        help="rtl = the Verilated accelerator (default), fsim = the numpy golden model")
    args = parser.parse_args(argv)
    cfg = load_config(args.config)
    if args.target == "rtl":
        print("Running on the RTL: Verilator model of the Amaranth design (built once per config, cached in "
              "build/cosim)", flush=True)
    ok = run_demos(cfg, args.target)
    print("ALL PASS" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
