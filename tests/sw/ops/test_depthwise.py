"""sw.ops.depthwise: depthwise convolutions on the DEPTHWISE mode, against numpy, exactly."""

import itertools

import numpy as np
import pytest

from sw import ops, runtime
from sw.config import load_config
from sw.isa import AluOp
from sw.ops import depthwise as dw

DEFAULT = load_config("default")
REQUANT = ops.Epilogue(((AluOp.ADD, "v0"), (AluOp.MUL, 3), (AluOp.SHR, 7), (AluOp.MAX, -128), (AluOp.MIN, 127)))

# (N, C, H, W, kh, kw, stride, padding, epilogue): strides 1 and 2, channels that leave a part-filled block, a
# batch of two, no padding, a kernel one column wide, a 2x2 kernel, the exact int32 result (four planes) over
# several tiles, a per-channel requantization
CASES = [
    (1, 32, 12, 11, 3, 3, 1, 1, "requant"),
    (1, 40, 9, 10, 3, 3, 2, 1, "vta"),
    (2, 16, 7, 7, 3, 3, 1, 0, "vta"),
    (1, 16, 9, 8, 3, 1, 1, 0, "requant"),
    (1, 24, 10, 6, 2, 2, 2, 1, "vta"),
    (1, 48, 40, 40, 3, 3, 1, 1, "exact"),
]


def depthwise_case(i: int, vt: int = 2):
    """Case ``i`` on the current target: (result, numpy's, counters)."""
    n, c, h, w, kh, kw, s, p, kind = CASES[i]
    rng = np.random.default_rng(i)
    x = rng.integers(-128, 128, (n, c, h, w), dtype=np.int8)
    wt = rng.integers(-128, 128, (c, 1, kh, kw), dtype=np.int8)
    acc = ops.conv2d_nchw(x, wt, s, p, groups=c)
    if kind == "exact":
        y, counters = ops.conv2d(x, wt, None, s, p, virtual_threads=vt, return_counters=True, groups=c,
                                 epilogue=ops.Epilogue.exact_int32())
        return y, acc, counters
    v = rng.integers(-3000, 3000, c).astype(np.int32)
    if kind == "vta":
        y, counters = ops.conv2d(x, wt, v, s, p, virtual_threads=vt, return_counters=True, groups=c)
        return y, np.clip((acc.astype(np.int64) >> 8) + v[None, :, None, None], 0, 127).astype(np.int8), counters
    y, counters = ops.conv2d(x, wt, v, s, p, virtual_threads=vt, return_counters=True, groups=c, epilogue=REQUANT)
    return y, REQUANT.reference(acc, v[None], 1), counters


def test_strip_rows():
    """The strip fits the window: (kw - 1) * hc + kh <= BLOCK_IN slots, hc = (r - 1) * stride + kh."""
    assert dw.strip_rows(3, 3, 1, DEFAULT) == 4          # 2 * 6 + 3 = 15 <= 16
    assert dw.strip_rows(3, 3, 2, DEFAULT) == 2          # 2 * 5 + 3 = 13; r = 3 would need 17
    assert dw.strip_rows(5, 5, 1, DEFAULT) == 0          # one 5x5 neighbourhood spans 25 slots
    assert dw.strip_rows(3, 1, 1, DEFAULT) == dw.MAX_STRIP_ROWS
    assert dw.strip_rows(3, 3, 1, load_config("small")) == 0     # no DEPTHWISE mode
    assert dw.window_slot(0, 0, 6, 3, 3) == 14 and dw.window_slot(2, 2, 6, 3, 3) == 0


@pytest.mark.parametrize("th, tw, k, s, r", [(6, 5, 3, 1, 4), (7, 3, 3, 2, 2), (4, 4, 2, 2, 3), (5, 2, 3, 1, 3)])
def test_each_output_is_last_written_by_its_whole_neighbourhood(th, tw, k, s, r):
    """Replaying the strips (bottom up, each a DEPTHWISE instruction whose window starts empty) with the window
    of inp offsets: the last write of every output sees exactly its k x k neighbourhood at the slots the packed
    weight puts its taps in, and nothing is written outside the outputs but the j0 spare rows before them."""
    shift, j0 = dw.column_shift(k, s)
    ih, iwp = (th - 1) * s + k, (tw - 1) * s + k + shift
    hc = (r - 1) * s + k
    last, execs = {}, 0
    for r0 in dw._strips(th, r):
        window: list = []
        for j in range(tw + j0):
            for d, src in dw.depthwise_uops(r0, tw, k, k, s, iwp, r):
                window = [src + s * j] + window[:15]
                last[d + j] = list(window)
                execs += 1
    assert execs == dw._tile_cost(th, tw, k, k, s, r)
    assert sorted(last) == list(range(-j0, th * tw))
    for (oy, ox), seen in zip(itertools.product(range(th), range(tw)), (last[d] for d in range(th * tw))):
        for ky, kx in itertools.product(range(k), range(k)):
            assert seen[dw.window_slot(ky, kx, hc, k, k)] == (oy * s + ky) * iwp + ox * s + kx + shift
    assert max(src for w in last.values() for src in w) < ih * iwp


def test_pack_depthwise_weight():
    wt = np.arange(20 * 9, dtype=np.int8).reshape(20, 1, 3, 3)
    packed = dw.pack_depthwise_weight(wt, 2, 6, DEFAULT)
    assert packed.shape == (2, 16, 16)
    lanes = packed.reshape(32, 16)
    assert lanes[5, 14] == wt[5, 0, 0, 0] and lanes[19, 0] == wt[19, 0, 2, 2] and lanes[19, 7] == wt[19, 0, 1, 1]
    assert not lanes[20:].any() and not lanes[:, [3, 4, 9, 10, 15]].any()


@pytest.mark.parametrize("vt", [1, 2])
@pytest.mark.parametrize("i", range(len(CASES)))
def test_depthwise_on_the_golden_model(i, vt):
    n, c, h, w, kh, kw, s, p, _ = CASES[i]
    plan, _ = dw.depthwise_choice(n, c, h, w, kh, kw, s, p, vt, ops.Epilogue.vta(), DEFAULT)
    assert plan is not None, "the planner keeps this case on the DEPTHWISE mode"
    with runtime.use_target("default"):
        y, want, _ = depthwise_case(i, vt)
    np.testing.assert_array_equal(y, want)


def test_depthwise_on_batch2():
    """Two batch rows per micro-op: each has its own lanes of the window."""
    with runtime.use_target("batch2"):
        for i in (0, 2):
            y, want, _ = depthwise_case(i)
            np.testing.assert_array_equal(y, want)


def test_the_planner_chooses():
    """The mode where it applies and pays; the block-diagonal GEMM where the window is too short for the kernel
    and on a config without the mode."""
    epi = ops.Epilogue.vta()
    plan, diag = dw.depthwise_choice(1, 144, 56, 56, 3, 3, 1, 1, 2, epi, DEFAULT)
    assert plan is not None and (plan.r, plan.hc) == (4, 6) and plan.cost < diag
    assert dw.depthwise_choice(1, 32, 9, 9, 5, 5, 1, 2, 2, epi, DEFAULT)[0] is None
    assert dw.depthwise_choice(1, 32, 9, 9, 3, 3, 1, 1, 2, epi, load_config("small"))[0] is None


@pytest.mark.rtl
def test_depthwise_on_the_rtl():
    """Every case in one simulator launch: the RTL's result is numpy's, its counters the golden model's."""
    import cosim

    calls = [(depthwise_case, (i,), {}) for i in range(len(CASES))]
    for i, (y, want, counters) in enumerate(cosim.run_many(calls, config="default")):
        np.testing.assert_array_equal(y, want, err_msg=str(CASES[i]))
        with runtime.use_target("default"):
            _, _, gold = depthwise_case(i)
        same = ("gemm_counter", "alu_counter", "inp_load_nbytes", "wgt_load_nbytes", "out_store_nbytes")
        assert {k: counters[k] for k in same} == {k: gold[k] for k in same}
