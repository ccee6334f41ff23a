"""The program of the co-simulation speed benchmark: one long GEMM, timed around its ``synchronize``.

It runs unchanged on any runtime target: the golden model (which records the device image for the
C++ ceiling of :mod:`cosim.perf.harness`) and the RTL (:mod:`cosim.perf.cosim_speed`).
"""

from __future__ import annotations

import time

import numpy as np

from sw import runtime as rt
from sw.testing.fsim_speed import long_gemm_kernel

__all__ = ["long_gemm"]


def long_gemm(rows: int | None = None, k: int = 16, o: int = 16, repeats: int = 1, seed: int = 0) -> dict:
    """One long GEMM instruction (rows x k x o blocks, reduction in the inner loop) ``repeats`` times.

    Returns the run's counters, and the wall and CPU seconds of the ``synchronize`` that ran it (the
    CPU time of this process, which holds the simulator: it is what a busy shared machine distorts least).
    """
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
    t, c = time.perf_counter(), time.process_time()
    counters = dict(rt.synchronize(cmd, 1 << 40))
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    rt.buffer_free(hi)
    rt.buffer_free(hw)
    return {"counters": counters, "wall": wall, "cpu": cpu}
