"""The default demo (``make sim``): VTA's get-started vector add and a blocked GEMM, checked against numpy.

    python -m sw.demo [--config configs/default.json] [--target fsim]
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


def run_demos(cfg, target_name: str, out=sys.stdout) -> bool:
    ok_all = True
    print(f"config {cfg}; target {target_name}", file=out)
    for title, fn, kwargs in DEMOS:
        t = time.perf_counter()
        res = fn("python", **kwargs)
        dt = time.perf_counter() - t
        ok = res["result"].shape == res["expected"].shape and np.array_equal(res["result"], res["expected"])
        ok_all &= ok
        c = res["counters"]
        macs = c.get("gemm_counter", 0) * cfg.MACS_PER_CYCLE
        print(f"  {title}: {'PASS' if ok else 'FAIL'} (equal to numpy: {ok}); {dt * 1e3:.1f} ms", file=out)
        print("    counters: " + ", ".join(f"{k}={v}" for k, v in c.items()), file=out)
        if "cycles" in c and c["cycles"]:
            print(f"    cycles={c['cycles']}  MAC utilization={macs / (c['cycles'] * cfg.MACS_PER_CYCLE):.1%}",
                  file=out)
    return ok_all


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=None, help="config JSON (default: $VTA_CONFIG or configs/default.json)")
    parser.add_argument("--target", default="fsim", choices=["fsim"],
                        help="fsim = the numpy golden model (the RTL target arrives with co-simulation)")
    args = parser.parse_args(argv)
    cfg = load_config(args.config)
    print("Running on the golden model (sw.fsim); the RTL co-simulation target is not built yet.")
    with runtime.use_target(cfg):
        ok = run_demos(cfg, "fsim (numpy golden model)")
    print("ALL PASS" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
