"""pool2d: the max or sum of each window on the tensor ALU, then an epilogue, against numpy."""

import numpy as np
import pytest

from sw import ops, runtime
from sw.isa import AluOp

REQUANT = ops.Epilogue(((AluOp.ADD, "v0"), (AluOp.MUL, 3), (AluOp.SHR, 5), (AluOp.MAX, -128), (AluOp.MIN, 127)))

# (input shape, kernel, stride, padding, pad value, mode, with the requantization): small kernels over large
# outputs (an instruction per tap), global windows (an instruction per output: the window in the loops),
# both strides, padding on every side or one, several tiles, the batch
CASES = [
    ((1, 20, 9, 9), 3, 2, 1, -128, "max", False),
    ((1, 64, 7, 7), 7, 1, 0, 0, "sum", True),
    ((2, 5, 6, 7), (2, 3), (2, 1), 0, 0, "max", False),
    ((1, 16, 5, 5), 3, 1, (1, 0, 2, 1), 3, "sum", True),
    ((1, 40, 3, 3), 3, 1, 0, 0, "max", False),
    ((1, 48, 28, 28), 3, 2, 1, -128, "max", True),
]


def pool_case(i: int, vt: int = 2):
    """Case ``i`` on the current target: (result, numpy, counters)."""
    shape, k, s, p, pv, mode, requant = CASES[i]
    rng = np.random.default_rng(i)
    x = rng.integers(-128, 128, shape, dtype=np.int8)
    v = rng.integers(-300, 300, shape[1]).astype(np.int32) if requant else None
    epi = REQUANT if requant else None
    y, counters = ops.pool2d(x, k, s, p, pv, mode, epi, v, virtual_threads=vt, return_counters=True)
    want = ops.pool2d_ref(x, k, s, p, pv, mode)
    want = want.astype(np.int8) if epi is None else epi.reference(want, v[None], 1)
    return y, want, counters


@pytest.mark.parametrize("vt", [1, 2])
@pytest.mark.parametrize("i", range(len(CASES)))
def test_pool_on_the_golden_model(i, vt):
    with runtime.use_target("default"):
        y, want, counters = pool_case(i, vt)
    assert y.dtype == np.int8 and np.array_equal(y, want)
    assert counters["alu_counter"] > 0


def test_one_instruction_per_channel_block_for_a_global_window():
    """A 7x7 window over a 7x7 input: the window lies in the micro-op loops, one ALU instruction per channel
    block (not 49), the 49 taps of each output written to one row in order."""
    with runtime.use_target("default") as q:
        x = np.ones((1, 64, 7, 7), np.int8)
        before = q.insns_run
        y = ops.pool2d(x, 7, mode="sum", epilogue=((AluOp.SHR, 0),))
        insns = q.insns_run - before
    assert np.array_equal(y, np.full((1, 64, 1, 1), 49, np.int8))
    assert insns < 40                       # 4 channel blocks: loads, zeroing, 4 sums, an epilogue step, a store


def test_tiles_when_the_input_does_not_fit_one():
    with runtime.use_target("small"):
        cfg = runtime.current_config()
        x = np.random.default_rng(0).integers(-128, 128, (1, 4 * cfg.BLOCK_OUT, 30, 30), dtype=np.int8)
        y, counters = ops.pool2d(x, 3, 1, 1, -128, "max", virtual_threads=2, return_counters=True)
    assert counters["tiles"] > 1
    assert np.array_equal(y, ops.pool2d_ref(x, 3, 1, 1, -128, "max").astype(np.int8))


def test_bad_arguments_name_the_field():
    x = np.zeros((1, 16, 4, 4), np.int8)
    with runtime.use_target("default"):
        with pytest.raises(ValueError, match="mode = 'avg'; allowed: 'max', 'sum'"):
            ops.pool2d(x, 2, mode="avg")
        with pytest.raises(ValueError, match=r"kernel = \(0, 2\); allowed: an integer >= 1"):
            ops.pool2d(x, (0, 2))
        with pytest.raises(ValueError, match=r"padding = \(1, 2\); allowed"):
            ops.pool2d(x, 2, padding=(1, 2))
        with pytest.raises(ValueError, match="pad_value = 200; allowed"):
            ops.pool2d(x, 2, padding=1, pad_value=200)
        with pytest.raises(ValueError, match="expected int8"):
            ops.pool2d(x.astype(np.int32), 2)
        with pytest.raises(ValueError, match="larger than the padded input"):
            ops.pool2d(x, 5)


@pytest.mark.rtl
def test_pools_on_the_rtl():
    """Every case in one simulator launch: the RTL's result is numpy's, its counters the golden model's."""
    import cosim

    calls = [(pool_case, (i,), {}) for i in range(len(CASES))]
    for i, (y, want, counters) in enumerate(cosim.run_many(calls, config="default")):
        assert np.array_equal(y, want), CASES[i]
        with runtime.use_target("default"):
            _, _, gold = pool_case(i)
        same = ("alu_counter", "acc_load_nbytes", "out_store_nbytes", "uop_load_nbytes")
        assert {k: counters[k] for k in same} == {k: gold[k] for k in same}
        assert counters["cycles"] > 0
