"""Fixed-point requantization on VTA's ALU: precision, ranges and the operand rules."""

import math

import numpy as np
import pytest

from apps.onnx.numerics import (
    NumericsError,
    QParams,
    _search,
    requant_steps,
    rescale_reference,
    rescale_steps,
    steps_error,
)
from sw.isa import AluOp
from sw.ops.epilogue import IMM_MAX, Epilogue


def _exact(acc, M, zp, lo, hi):
    return np.clip(np.floor(acc * M + 0.5) + zp, lo, hi)


@pytest.mark.parametrize("M,zp,dtype", [(0.0070045, -128, "int8"), (0.0025771, 13, "int8"), (3.1e-5, 0, "int8"),
                                        (0.70131, -3, "int8"), (1.70937, 5, "int8"), (0.0123, 0, "uint8")])
def test_requantization_is_within_a_hair_of_exact(M, zp, dtype):
    out = QParams(1.0, zp, dtype)
    bound = 1 << 24
    steps, (off, clips) = requant_steps(M, out, bound)
    assert off == 0
    lo, hi = (-128, 127) if dtype == "int8" else (0, 255)
    rng = np.random.default_rng(0)
    acc = np.concatenate([rng.integers(-int(300 / M), int(300 / M), 200_000), [-bound, bound, 0]])
    vec = np.stack([np.zeros(1, np.int64)] + [np.full(1, c) for c in clips])
    ours = Epilogue(steps).apply(acc.reshape(1, -1), vec, 0).ravel()
    exact = _exact(acc, M, zp, lo, hi)
    d = np.abs(ours - exact)
    assert d.max() <= 1
    assert (d == 0).mean() >= 0.9999
    assert abs(steps_error(M, steps)) < 1e-5
    for _, operand in steps:
        assert isinstance(operand, str) or abs(operand) <= IMM_MAX


def test_without_mul_only_powers_of_two():
    steps, _ = requant_steps(2.0 ** -7, QParams(1.0, 0), 1 << 20, alu_mul=False)
    assert not any(op == AluOp.MUL for op, _ in steps)
    acc = np.arange(-5000, 5000)
    assert np.array_equal(Epilogue(steps).apply(acc[None], np.zeros((1, 1)), 0)[0],
                          np.clip(np.floor(acc / 128 + 0.5), -128, 127))
    with pytest.raises(NumericsError, match="not a power of two.*ALU_MUL = 0"):
        requant_steps(0.003, QParams(1.0, 0), 1 << 20, alu_mul=False)


def test_rescale_of_two_inputs():
    out = QParams(0.05, -128)
    factors, tail = rescale_steps([0.058 / 0.05, 0.032 / 0.05], [-8, -128], out)
    a = np.arange(-128, 128, dtype=np.int8)[:, None].repeat(256, 1)
    b = a.T.copy()
    ours = rescale_reference([a, b], [-8, -128], factors, tail)
    exact = np.clip(np.floor((a + 8.0) * 0.058 / 0.05 + (b + 128.0) * 0.032 / 0.05 + 0.5) - 128, -128, 127)
    d = np.abs(ours - exact)
    assert d.max() <= 1 and (d == 0).mean() >= 0.9999


def test_qparams_are_checked():
    with pytest.raises(ValueError, match="zero_point = 200; allowed \\[-128, 127\\]"):
        QParams(0.1, 200, "int8")
    with pytest.raises(ValueError, match="scale"):
        QParams(-1.0, 0)
    assert math.isclose(QParams(0.5, 3).scale, 0.5)


@pytest.mark.parametrize("M,zp", [(0.0070045, -128), (0.0025771, 13), (0.70131, -3)])
def test_clip_bounds_where_the_output_saturates_replace_the_saturation(M, zp):
    # the clip sits exactly where the (monotonic) fixed-point form reaches -128 and 127, so the saturation passes
    # go and every accumulator gives what clip-just-past, compute, saturate gave
    out = QParams(1.0, zp, "int8")
    bound = 1 << 24
    steps, (_, clips) = requant_steps(M, out, bound)
    assert steps[1][0] == AluOp.MAX and steps[2][0] == AluOp.MIN and steps[-1][0] != AluOp.MIN
    lo, hi = (clips if clips else (steps[1][1], steps[2][1]))
    middle = steps[3:]
    acc = np.concatenate([np.arange(lo - 5000, lo + 5000), np.arange(hi - 5000, hi + 5000),
                          np.random.default_rng(1).integers(-bound, bound, 100_000), [-bound, bound]])
    vec = np.stack([np.zeros(1, np.int64)] + [np.full(1, c) for c in clips])
    ours = Epilogue(steps).apply(acc.reshape(1, -1), vec, 0).ravel()
    old_lo, old_hi = math.floor((-128 - zp - 2) / M), math.ceil((127 - zp + 2) / M)
    saturating = Epilogue(middle + [(AluOp.MAX, -128), (AluOp.MIN, 127)])
    theirs = saturating.apply(np.clip(acc, old_lo, old_hi).reshape(1, -1), np.zeros((1, 1), np.int64), 0).ravel()
    assert np.array_equal(ours, theirs)
    assert ours.min() == -128 and ours.max() == 127


def _leaky_table(s1, z1, s2, z2, alpha):
    """onnxruntime's arithmetic for DequantizeLinear -> LeakyRelu -> QuantizeLinear on every int8 value."""
    q = np.arange(-128, 128)
    x = ((q - z1) * np.float32(s1)).astype(np.float32)
    y = np.where(x >= 0, x, np.float32(alpha) * x).astype(np.float32)
    return np.clip(np.rint(y / np.float32(s2)) + z2, -128, 127).astype(np.int8)


def test_table_steps_are_exact_wherever_they_are_found():
    """LeakyRelu tables of random scales and zero points (alpha 0.1, 0.2, 0: a ReLU, 1: a rescale): nearly all are
    ALU steps (two slopes in a copy, one clip, or one slope), each exactly the table on every int8 value; a
    sigmoid is not."""
    from apps.onnx.numerics import table_steps
    from sw.ops import with_operands

    rng = np.random.default_rng(0)
    found = 0
    for i in range(80):
        alpha = [0.1, 0.2, 0.0, 1.0][i % 4]
        s1, s2 = rng.uniform(0.01, 0.2, 2)
        z1, z2 = (int(v) for v in rng.integers(-60, 60, 2))
        table = _leaky_table(s1, z1, s2, z2, alpha)
        fit = table_steps(table, -128, 127, z1)
        if fit is None:
            continue
        found += 1
        pre, branch, post = fit
        assert (branch is None) == (alpha in (0.0, 1.0)), (alpha, fit)
        steps, v = with_operands(pre + post, np.zeros((1, 1), np.int64))
        if branch is not None:
            branch, v = with_operands(branch, v)
        epi = Epilogue(tuple(steps), branch=None if branch is None else (len(pre), tuple(branch)))
        assert np.array_equal(epi.reference(np.arange(-128, 128)[:, None], v, 1)[:, 0], table)
    assert found >= 72
    q = np.arange(-128, 128)
    sigmoid = np.clip(np.rint(1 / (1 + np.exp(-q / 20.0)) / 0.004) - 128, -128, 127)
    assert table_steps(sigmoid, -128, 127, 0) is None
    # a narrower interval (the values the conv can give) is easier: only it must match
    table = _leaky_table(0.05, 3, 0.043, -7, 0.1)
    assert table_steps(table, -20, 40, 3) is not None


def _search_one_at_a_time(M, T, qmin, qmax):
    """The requantization search written candidate by candidate: the definition numerics._search computes at once."""
    best = None
    for k in range(0, 24):
        r1 = (1 << (k - 1)) if k else 0
        m1max = min(32767, ((1 << 31) - 1 - r1) // max(T, 1))
        if m1max < 1:
            continue
        for m2 in range(1, 257):
            S = math.floor(math.log2(m1max * m2 / (M * 2.0 ** k)))
            if S < 0:
                continue
            S = min(S, 40)
            m1 = round(M * 2.0 ** (k + S) / m2)
            while m1 > m1max and S > 0:
                S -= 1
                m1 = round(M * 2.0 ** (k + S) / m2)
            if m1 < 1 or S > 30:
                continue
            if ((T * m1 + r1) // (1 << k) + 1) * m2 + ((1 << (S - 1)) if S else 0) >= 1 << 31:
                continue
            err = (0.5 * m2 / 2.0 ** S if k else 0.0) + (qmax - qmin + 2) * abs(m1 * m2 / 2.0 ** (k + S) - M) / M
            if best is None or err < best[0] - 1e-15:
                best = (err, k, S, m1, m2)
    return best


def test_the_search_chooses_as_one_candidate_at_a_time():
    rng = np.random.default_rng(11)
    cases = [(float(10 ** rng.uniform(-7, 1.5)), int(rng.choice([1, 255, 1 << 16, 1 << 24, 1 << 30])), q)
             for q in ((-128, 127), (0, 255)) for _ in range(60)] + [(2.0 ** -e, 1 << 20, (-128, 127)) for e in range(12)]
    for M, T, (lo, hi) in cases:
        assert _search(M, T, lo, hi) == _search_one_at_a_time(M, T, lo, hi), (M, T)
