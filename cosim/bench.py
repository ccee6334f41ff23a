"""Co-simulation speed (``make bench``): simulated cycles per wall second on a long GEMM.

Compares this co-simulation (cocotb + Verilator, Python asleep during the run) with the same
Verilog in a plain Verilator C++ harness (the ceiling, :mod:`cosim.harness`), and reports their ratio.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

import numpy as np

from sw import runtime as rt
from sw.bench import long_gemm_kernel
from sw.config import load_config


def long_gemm(rows=None, k=16, o=16, repeats=1, seed=0):
    """One long GEMM instruction (rows x k x o blocks, reduction in the inner loop); returns counters and wall time."""
    q = rt.current()
    cfg = q.cfg
    rows = rows or min(cfg.INP_DEPTH // k, cfg.ACC_DEPTH // o, 128)
    rng = np.random.default_rng(seed)
    cmd = q.handle
    inp = rng.integers(-128, 128, size=(rows * k, cfg.INP_ELEM_BYTES), dtype=np.int8)
    wgt = rng.integers(-128, 128, size=(o * k, cfg.WGT_ELEM_BYTES), dtype=np.int8)
    hi, hw = rt.buffer_alloc(inp.nbytes), rt.buffer_alloc(wgt.nbytes)
    np.from_dlpack(rt.buffer_cpu_ptr(cmd, hi))[:] = inp.view(np.uint8).reshape(-1)
    np.from_dlpack(rt.buffer_cpu_ptr(cmd, hw))[:] = wgt.view(np.uint8).reshape(-1)
    kernel = long_gemm_kernel(rows, k, o)
    rt.load_2d(cmd, hi, 0, rows * k, 1, rows * k, 0, 0, 0, 0, 0, 2)
    rt.load_2d(cmd, hw, 0, o * k, 1, o * k, 0, 0, 0, 0, 0, 1)
    rt.dep_push(cmd, 1, 2)
    rt.dep_pop(cmd, 1, 2)
    for _ in range(repeats):
        rt.push_gemm_op(cmd, kernel, 0)
    t = time.perf_counter()
    counters = dict(rt.synchronize(cmd, 1 << 40))
    wall = time.perf_counter() - t
    rt.buffer_free(hi), rt.buffer_free(hw)
    return {"counters": counters, "wall": wall}


def cosim_speed(config=None, repeats=8):
    import cosim
    out = cosim.run(long_gemm, None, 16, 16, repeats, config=config)
    c = out["counters"]
    return {"cycles": c["cycles"], "wall": out["wall"], "cycles_per_s": c["cycles"] / out["wall"],
            "gemm_uops": c["gemm_counter"], "utilization": c["gemm_counter"] / c["cycles"]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=None)
    parser.add_argument("--repeats", type=int, default=8)
    parser.add_argument("--csv", default="build/bench_cosim.csv")
    args = parser.parse_args(argv)
    cfg = load_config(args.config)
    rows = []
    co = cosim_speed(cfg, args.repeats)
    rows.append({"simulator": "cocotb + Verilator (this cosim)", **co})
    try:
        from .harness import harness_speed
        ce = harness_speed(cfg, args.repeats)
        rows.append({"simulator": "plain Verilator C++ harness (ceiling)", **ce})
    except ImportError:
        ce = None
    print(f"config {cfg}: long GEMM, {co['gemm_uops']} micro-ops, {co['cycles']} cycles "
          f"(MAC utilization {co['utilization']:.1%})")
    print(f"{'simulator':40s} {'cycles':>10s} {'wall s':>8s} {'cycles/s':>12s}")
    for r in rows:
        print(f"{r['simulator']:40s} {r['cycles']:10d} {r['wall']:8.3f} {r['cycles_per_s']:12.0f}")
    if ce:
        print(f"ratio cosim / ceiling: {co['cycles_per_s'] / ce['cycles_per_s']:.2f}")
    Path(args.csv).parent.mkdir(parents=True, exist_ok=True)
    with open(args.csv, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return 0


if __name__ == "__main__":
    from cosim.bench import main as _main
    sys.exit(_main())
