"""The default demo (``make sim``): VTA's get-started vector add and a blocked GEMM, checked against numpy.

    python -m apps.demo [--config configs/default.json] [--target rtl|fsim] [--demo default|digits] [--images N]
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from sw import programs, runtime
from sw.config import load_config

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


def run_digits(cfg, target_name: str, images: int = 360, out=sys.stdout) -> bool:
    """Classify ``images`` test digits with the int8 MLP and CNN (apps.digits); print accuracy and cycles."""
    from . import digits

    _, _, x_test, y_test = digits.load_data()
    x_q, y = digits.quantize_input(x_test[:images]), y_test[:images]
    print(f"config {cfg}; target {target_name}; {len(x_q)} test digits per network", file=out)
    models = [digits.model(name) for name in digits.NETS]
    calls = [(digits.run, (m.qnet, x_q), {}) for m in models]
    t = time.perf_counter()
    if target_name == "rtl":
        import cosim
        results = cosim.run_many(calls, config=cfg)
    else:
        with runtime.use_target(cfg):
            results = _golden(calls)
    dt = time.perf_counter() - t
    ok_all = True
    for m, (logits, c) in zip(models, results):
        ok = np.array_equal(logits, digits.reference(m.qnet, x_q))
        ok_all &= ok
        acc = digits.accuracy(digits.predict(logits), y)
        print(f"  {m.name}: {digits.describe(m.qnet)}", file=out)
        print(f"    accuracy {acc:.2%} on these {len(x_q)} (whole test set: float {m.float_accuracy:.2%}, "
              f"int8 {m.int8_accuracy:.2%}); equal to the int8 reference: {'PASS' if ok else 'FAIL'}", file=out)
        if c.get("cycles"):
            print(f"    cycles per image {c['cycles'] / len(x_q):.0f} (batch of {len(x_q)}; GEMM uops "
                  f"{c['gemm_counter']}, ALU uops {c['alu_counter']})", file=out)
    print(f"  about {dt:.1f} s", file=out)
    return ok_all


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=None, help="config JSON (default: $VTA_CONFIG or configs/default.json)")
    parser.add_argument("--target", default="rtl", choices=["rtl", "fsim"],
                        help="rtl = the Verilated accelerator (default), fsim = the numpy golden model")
    parser.add_argument("--demo", default="default", choices=["default", "digits"],
                        help="default = vector add and GEMM; digits = int8 digit classifiers (apps.digits)")
    parser.add_argument("--images", type=int, default=360,
                        help="test images per network for --demo digits (default: the whole test split, 360)")
    args = parser.parse_args(argv)
    cfg = load_config(args.config)
    if args.target == "rtl":
        print("Running on the RTL: Verilator model of the Amaranth design (built once per config, cached in "
              "build/cosim)", flush=True)
    if args.demo == "digits":
        ok = run_digits(cfg, args.target, args.images)
    else:
        ok = run_demos(cfg, args.target)
    print("ALL PASS" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
