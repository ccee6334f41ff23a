"""sw.ops.elementwise: vadd, relu, bias and requantize against their numpy references, exactly."""
from dataclasses import replace

import numpy as np
import pytest

from sw import ops, runtime
from sw.isa import AluOp
from tests.conftest import CONFIGS, rand8, rand32


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("vt", [1, 2])
def test_elementwise(on, rng, config, vt):
    q = on(config)
    B, O = q.cfg.BATCH, q.cfg.BLOCK_OUT
    # more rows than the ACC SRAM holds, so every operator has to tile
    n = q.cfg.ACC_DEPTH + 37
    a, b = rand32(rng, (n, B, O)), rand32(rng, (n, B, O))
    y, c = ops.vadd(a, b, virtual_threads=vt, return_counters=True)
    np.testing.assert_array_equal(y, ops.vadd_ref(a, b))
    assert c["tiles"] > 1 and c["alu_counter"] == n
    assert c["out_store_nbytes"] == n * q.cfg.OUT_ELEM_BYTES
    r = rand32(rng, (n, B, O), -300, 300)
    np.testing.assert_array_equal(ops.relu(r, virtual_threads=vt), ops.relu_ref(r))
    bias = rand32(rng, (O,), -5000, 5000)
    np.testing.assert_array_equal(ops.add_bias(a, bias, virtual_threads=vt), ops.add_bias_ref(a, bias))
    for shift, with_bias, clip in ((8, False, True), (8, True, True), (3, True, False), (0, False, True)):
        x = rand32(rng, (n, B, O))
        bb = bias if with_bias else None
        np.testing.assert_array_equal(ops.requantize(x, shift, bb, clip, virtual_threads=vt),
                                      ops.requantize_ref(x, shift, bb, clip))


@pytest.mark.parametrize("config", CONFIGS)
def test_elementwise_2d_bias(on, rng, config):
    """Packed (rows, column blocks, BATCH, BLOCK_OUT) with a per-channel bias over the column blocks."""
    q = on(config)
    B, O = q.cfg.BATCH, q.cfg.BLOCK_OUT
    x = rand32(rng, (9, 13, B, O))
    bias = rand32(rng, (13 * O,), -5000, 5000)
    np.testing.assert_array_equal(ops.add_bias(x, bias, virtual_threads=2), ops.add_bias_ref(x, bias))
    np.testing.assert_array_equal(ops.requantize(x, 8, bias), ops.requantize_ref(x, 8, bias))
    packed = ops.pack_bias(bias, 13, q.cfg)
    np.testing.assert_array_equal(ops.add_bias(x, packed), ops.add_bias_ref(x, bias))


def test_vadd_matches_the_get_started_tutorial(on, rng):
    on("default")
    a = rand32(rng, (1, 64, 1, 16), -128, 128)
    b = rand32(rng, (1, 64, 1, 16), -128, 128)
    np.testing.assert_array_equal(ops.vadd(a, b), (a + b).astype(np.int8))



def test_bad_arguments(on, rng):
    on("default")
    a = rand32(rng, (4, 1, 16))
    with pytest.raises(ValueError, match="virtual_threads"):
        ops.vadd(a, a, virtual_threads=3)
    with pytest.raises(ValueError, match="packed layout"):
        ops.relu(np.zeros((4, 16), np.int32))
    with pytest.raises(ValueError, match="bias"):
        ops.dense(rand8(rng, (2, 16)), rand8(rng, (16, 16)), bias=np.zeros(5, np.int32))
    with pytest.raises(ValueError, match="shift"):
        ops.requantize(a, shift=40)


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("vt", [1, 2])
def test_sum_rescaled_of_three_operands(on, rng, config, vt):
    """Three int8 operands, each with its own steps, more rows than an acc half holds for them: several tiles. With
    the post-processing unit the lists of two steps or more (the first operand's, the sum's) are POST passes."""
    q = on(config)
    shape = (q.cfg.ACC_DEPTH // 2 + 5, q.cfg.BATCH, q.cfg.BLOCK_OUT)
    xs = [rng.integers(-128, 128, shape, dtype=np.int8) for _ in range(3)]
    def times(k):               # (a config without MUL multiplies by a power of two as a left shift)
        return (AluOp.MUL, k) if q.cfg.ALU_MUL else (AluOp.SHR, -int(np.log2(k)))

    pre = [[(AluOp.ADD, 5), times(256)], [(AluOp.ADD, -3)], [times(8)]]
    tail = [(AluOp.SHR, 9), (AluOp.MAX, -128), (AluOp.MIN, 127)]
    y, c = ops.sum_rescaled(xs, pre, tail, virtual_threads=vt, return_counters=True)
    a, b, d = (x.astype(np.int64) for x in xs)
    assert np.array_equal(y, np.clip(((a + 5) * 256 + (b - 3) + d * 8) >> 9, -128, 127))
    assert c["tiles"] > 1 and c["gemm_counter"] == 3 * xs[0].size // (q.cfg.BATCH * q.cfg.BLOCK_OUT)
    assert c.get("post_insns", 0) == 2 * c["tiles"] * q.cfg.POST_UNIT
    if q.cfg.POST_UNIT:                 # 6 ALU micro-ops per row instead of 9 (and the same values)
        with runtime.use_target(replace(q.cfg, POST_UNIT=0)):
            y_alu, c_alu = ops.sum_rescaled(xs, pre, tail, virtual_threads=vt, return_counters=True)
        assert np.array_equal(y, y_alu) and c["alu_counter"] < c_alu["alu_counter"] * 0.75


def test_sum_rescaled_refuses_what_it_cannot_add(on, rng):
    on("default")
    a = rng.integers(-128, 128, (4, 16), dtype=np.int8)
    with pytest.raises(ValueError, match="1 operands and 1 lists of their steps; sum_rescaled takes two or more"):
        ops.sum_rescaled([a], [[]])
    with pytest.raises(ValueError, match=r"operands have shapes \[\(4, 16\), \(2, 16\)\]"):
        ops.sum_rescaled([a, a[:2]], [[], []])
