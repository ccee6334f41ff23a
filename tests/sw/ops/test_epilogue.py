"""ALU epilogues of conv2d / dense and the rescaled residual add, against numpy, on the golden model."""

import numpy as np
import pytest

from sw import ops, runtime
from sw.config import load_config
from sw.isa import AluOp

STEPS = [(AluOp.ADD, "v0"), (AluOp.MAX, "v1"), (AluOp.MIN, "v2"), (AluOp.MUL, 1234), (AluOp.ADD, 64),
         (AluOp.SHR, 7), (AluOp.MUL, 99), (AluOp.SHR, 8), (AluOp.ADD, 16384), (AluOp.SHR, 15), (AluOp.ADD, -7),
         (AluOp.MAX, -128), (AluOp.MIN, 127)]


def _apply(acc, steps, vectors, axis):
    y = acc.astype(np.int64)
    for op, v in steps:
        if isinstance(v, str):
            shape = [1] * y.ndim
            shape[axis] = -1
            v = vectors[int(v[1:])].astype(np.int64).reshape(shape)
        y = {AluOp.ADD: lambda a, b: a + b, AluOp.MUL: lambda a, b: a * b, AluOp.MIN: np.minimum,
             AluOp.MAX: np.maximum, AluOp.SHR: lambda a, b: a >> b}[op](y, v)
        y = y.astype(np.int32).astype(np.int64)
    return y.astype(np.int8)


def _vectors(rng, n):
    v = np.stack([rng.integers(-5000, 5000, n), np.full(n, -300000), np.full(n, 300000)]).astype(np.int32)
    return v


@pytest.mark.parametrize("vt", [1, 2])
@pytest.mark.parametrize("stride,pad", [(1, 1), (2, 0)])
def test_conv2d_epilogue(rng, vt, stride, pad):
    x = rng.integers(-128, 128, (1, 20, 9, 9), dtype=np.int8)
    w = rng.integers(-128, 128, (24, 20, 3, 3), dtype=np.int8)
    v = _vectors(rng, 24)
    y = ops.conv2d(x, w, v, stride=stride, padding=pad, alu=STEPS, virtual_threads=vt)
    ref = _apply(ops.conv2d_nchw(x, w, stride, pad), STEPS, v, 1)
    assert np.array_equal(y, ref)
    assert len(np.unique(ref)) > 20


@pytest.mark.parametrize("vt", [1, 2])
def test_dense_epilogue(rng, vt):
    x = rng.integers(-128, 128, (5, 70), dtype=np.int8)
    w = rng.integers(-128, 128, (40, 70), dtype=np.int8)
    v = _vectors(rng, 40)
    assert np.array_equal(ops.dense(x, w, v, alu=STEPS, virtual_threads=vt), _apply(ops.gemm_ref(x, w), STEPS, v, 1))


def test_immediate_only_epilogue_without_vectors(rng):
    x = rng.integers(-128, 128, (3, 32), dtype=np.int8)
    w = rng.integers(-128, 128, (48, 32), dtype=np.int8)
    steps = [(AluOp.SHR, 6), (AluOp.ADD, -3), (AluOp.MAX, -128), (AluOp.MIN, 127)]
    assert np.array_equal(ops.dense(x, w, alu=steps), _apply(ops.gemm_ref(x, w), steps, None, 1))


def test_add_rescaled(rng):
    a = rng.integers(-128, 128, (2, 3, 5, 7), dtype=np.int8)
    b = rng.integers(-128, 128, (2, 3, 5, 7), dtype=np.int8)
    y = ops.add_rescaled(a, b, [(AluOp.ADD, 5), (AluOp.MUL, 300)], [(AluOp.ADD, -3), (AluOp.MUL, 200)],
                         [(AluOp.SHR, 9), (AluOp.MAX, -128), (AluOp.MIN, 127)], virtual_threads=2)
    ref = np.clip(((a.astype(np.int64) + 5) * 300 + (b.astype(np.int64) - 3) * 200) >> 9, -128, 127)
    assert np.array_equal(y, ref)


def test_bad_epilogues_are_refused(rng):
    x = rng.integers(-128, 128, (3, 32), dtype=np.int8)
    w = rng.integers(-128, 128, (48, 32), dtype=np.int8)
    with pytest.raises(ValueError, match=r"alu\[0\]: immediate 40000; allowed \[-32768, 32767\]"):
        ops.dense(x, w, alu=[(AluOp.ADD, 40000)])
    with pytest.raises(ValueError, match=r"alu\[0\]: operand 'v1'; allowed"):
        ops.dense(x, w, np.zeros(48, np.int32), alu=[(AluOp.ADD, "v1")])
    with pytest.raises(ValueError, match="SHR takes an immediate"):
        ops.dense(x, w, np.zeros(48, np.int32), alu=[(AluOp.SHR, "v0")])
    with pytest.raises(ValueError, match=r"bias has shape \(2, 47\)"):
        ops.dense(x, w, np.zeros((2, 47), np.int32), alu=[(AluOp.ADD, "v0")])


def test_mul_refused_without_alu_mul(rng):
    x = rng.integers(-128, 128, (3, 32), dtype=np.int8)
    w = rng.integers(-128, 128, (24, 32), dtype=np.int8)
    with runtime.use_target(load_config("small")):
        with pytest.raises(ValueError, match="no ALU MUL"):
            ops.dense(x, w, alu=[(AluOp.MUL, 3)])
