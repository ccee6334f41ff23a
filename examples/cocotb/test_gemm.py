"""A GEMM stream built by the runtime, run on the RTL and checked against the golden model.

The function under test uses the runtime's operators (:mod:`sw.ops`) as any host program does; ``tb.check`` runs
it on the simulated accelerator and on the numpy golden model of the same config and compares every value.

    .venv/bin/python -m cosim.cocotb examples/cocotb/test_gemm.py [--config configs/small.json]
"""

import cocotb
import numpy as np

from cosim.cocotb import Testbench
from sw import ops, runtime


def blocked_gemm(seed: int, n_blocks: int, k_blocks: int, m_blocks: int, virtual_threads: int) -> dict:
    """An exact int32 product of random int8 matrices sized in GEMM blocks, on the current runtime."""
    cfg = runtime.current().cfg
    rng = np.random.default_rng(seed)
    a = rng.integers(-128, 128, size=(n_blocks * cfg.BATCH, k_blocks * cfg.BLOCK_IN), dtype=np.int8)
    b = rng.integers(-128, 128, size=(m_blocks * cfg.BLOCK_OUT, k_blocks * cfg.BLOCK_IN), dtype=np.int8)
    c, counters = ops.gemm(a, b, virtual_threads=virtual_threads, return_counters=True)
    return {"c": c, "gemm_uops": counters["gemm_counter"]}


@cocotb.test()
async def test_gemm_matches_numpy(dut):
    """The RTL's product is the exact integer product."""
    async with Testbench(dut) as tb:
        out = await tb.run(blocked_gemm, seed=1, n_blocks=2, k_blocks=3, m_blocks=2, virtual_threads=1)
        cfg = tb.cfg
        rng = np.random.default_rng(1)
        a = rng.integers(-128, 128, size=(2 * cfg.BATCH, 3 * cfg.BLOCK_IN), dtype=np.int8)
        b = rng.integers(-128, 128, size=(2 * cfg.BLOCK_OUT, 3 * cfg.BLOCK_IN), dtype=np.int8)
        np.testing.assert_array_equal(out["c"], a.astype(np.int32) @ b.astype(np.int32).T)


@cocotb.test()
async def test_gemm_matches_the_golden_model(dut):
    """RTL and golden model agree bit for bit, micro-op counts included, with two virtual threads."""
    async with Testbench(dut) as tb:
        out = await tb.check(blocked_gemm, seed=2, n_blocks=3, k_blocks=4, m_blocks=2, virtual_threads=2)
        counters = await tb.counters()                   # the last run's counters, read from the registers
        tb.dut._log.info("%s int32 results equal; last run %d cycles", out["c"].shape, counters["cycles"])
