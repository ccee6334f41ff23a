"""Compacted ALU steps: fewer passes, the same int32 values on every accumulator of the stated interval."""

import numpy as np
import pytest

from sw.isa import AluOp
from sw.ops import Epilogue, compact

ADD, SHR, MIN, MAX, MUL = AluOp.ADD, AluOp.SHR, AluOp.MIN, AluOp.MAX, AluOp.MUL


def _samples(rng, lo, hi, n=4000):
    """Accumulators (n, C) over [lo, hi] per channel: both ends, their neighbours, random values, and values
    around multiples of 2^k (where rounding shifts change their result)."""
    lo, hi = np.atleast_1d(np.asarray(lo, np.int64)), np.atleast_1d(np.asarray(hi, np.int64))
    c = lo.size
    x = rng.integers(lo, hi + 1, size=(n, c), dtype=np.int64)
    grid = (rng.integers(lo >> 12, (hi >> 12) + 1, size=(n // 2, c)) << 12) + rng.integers(-2, 3, size=(n // 2, c))
    x[: n // 2] = np.clip(grid, lo, hi)
    x[:4] = [lo, np.minimum(lo + 1, hi), np.maximum(hi - 1, lo), hi]
    return x


def _same(steps, vectors, lo, hi, rng, residual=None):
    """Compact, and check the values on samples of [lo, hi] (and every int8 residual value); returns the new
    epilogue and vectors."""
    new, new_res, vecs = compact(steps, vectors, lo, hi, residual=residual)
    old = Epilogue(tuple(steps), 1, None if residual is None else tuple(residual))
    epi = Epilogue(tuple(new), 1, None if new_res is None else tuple(new_res))
    acc = _samples(rng, lo, hi)
    r = None
    if residual is not None:
        r = rng.integers(-128, 128, acc.shape)
        r[:256] = np.arange(-128, 128)[:, None]
    assert np.array_equal(old.apply(acc, vectors, 1, r), epi.apply(acc, vecs, 1, r))
    return epi, vecs


def test_a_rounding_shift_and_the_next_zero_point_become_one_add_and_one_shift(rng):
    # x * 23676 >> 15 rounded, the output zero point, then the next layer's "minus zero point"
    steps = [(MUL, 23676), (SHR, 15), (ADD, 128 - 5 * 256), (SHR, 8), (ADD, 5)]
    epi, vecs = _same(steps, None, -90000, 90000, rng)
    assert epi.steps == ((MUL, 23676), (ADD, "v0"), (SHR, 23))
    assert vecs.tolist() == [[1 << 22]]             # does not fit an immediate: a vector, one pass like one


def test_two_multiplies_become_one_and_a_bias_moves_behind_the_clip(rng):
    v = np.stack([rng.integers(-5000, 5000, 32), np.full(32, -300000), np.full(32, 300000)])
    steps = [(ADD, "v0"), (MAX, "v1"), (MIN, "v2"), (MUL, 1234), (ADD, 64), (SHR, 7), (MUL, 99), (MUL, 300)]
    epi, vecs = _same(steps, v, -400000 - v[0], 400000 - v[0], rng)
    # the bias joined the rounding constant after the multiply; the clip bounds moved by it
    assert [op for op, _ in epi.steps] == [MAX, MIN, MUL, ADD, SHR, MUL]
    assert np.array_equal(vecs[0], -300000 - v[0]) and np.array_equal(vecs[2], v[0] * 1234 + 64)
    assert epi.steps[-1] == (MUL, 29700)            # 99 * 300 fits an immediate


def test_a_move_that_could_leave_int32_is_not_made(rng):
    # SHR 1; ADD 2^14; SHR 1 would need x + 2^15 for x up to 2^31 - 1: left as written but for the shifts
    steps = [(SHR, 1), (ADD, 1 << 14), (SHR, 1)]
    hi = (1 << 31) - 1
    epi, _ = _same(steps, None, hi - (1 << 20), hi, rng)
    assert epi.steps == tuple(steps)
    # a smaller interval allows it
    epi, vecs = _same(steps, None, -(1 << 20), 1 << 20, rng)
    assert epi.steps == ((ADD, "v0"), (SHR, 2)) and vecs.tolist() == [[1 << 15]]
    # a clip bound the bias moves over would leave int32: the bias stays in front
    steps = [(ADD, 1000), (MAX, "v0"), (MUL, 3)]
    epi, _ = _same(steps, np.array([[-(1 << 31)]]), -(1 << 31), 0, rng)
    assert epi.steps[0] == (ADD, 1000)


def test_a_fused_residual_add_takes_its_constants_into_the_residual(rng):
    """The conv's requantization, both inputs' zero points and factors and the sum's requantization, as
    the ONNX importer fuses them: 25 -> 18 passes on ResNet-50's 1x1 expansions."""
    c = 48
    v = np.stack([rng.integers(-20000, 20000, c), np.full(c, -90000), np.full(c, 90000)])
    conv = [(ADD, "v0"), (MAX, "v1"), (MIN, "v2"), (MUL, 23676), (ADD, 64), (SHR, 7), (MUL, 107), (SHR, 15),
            (ADD, -1408), (SHR, 8)]
    steps = conv + [(ADD, 6), (MUL, 18289), (MUL, 54), (ADD, "r"), (SHR, 12), (ADD, -32640), (SHR, 8),
                    (MAX, -128), (MIN, 127)]
    residual = [(ADD, -6), (MUL, 30969), (MUL, 63)]
    old = Epilogue(tuple(steps), 1, tuple(residual))
    epi, vecs = _same(steps, v, -100000 - v[0], 100000 - v[0], rng, residual)
    assert (old.passes, epi.passes) == (25, 18)
    assert [op for op, _ in epi.residual] == [MUL, ADD]         # (r - z) m1 m2 + the sum's constants
    assert epi.steps[-3:] == ((SHR, 20), (MAX, -128), (MIN, 127))


def test_keep_leaves_the_leading_steps_and_their_vector_first(rng):
    v = np.stack([np.full(16, 7), np.arange(16)])
    steps = [(ADD, "v0"), (ADD, 3), (SHR, 2), (ADD, "v1"), (SHR, 1)]
    new, _, vecs = compact(steps, v, -1000, 1000, keep=1)
    assert new[0] == (ADD, "v0") and np.array_equal(vecs[0], v[0])     # a vector though uniform and small
    assert new[1:] == [(ADD, "v1"), (SHR, 3)]
    assert np.array_equal(vecs[1], 3 + 4 * np.arange(16))
    y = Epilogue(tuple(steps)).apply(np.arange(-1000, 1000, 7)[:, None] + np.zeros(16, int), v, 1)
    assert np.array_equal(y, Epilogue(tuple(new)).apply(np.arange(-1000, 1000, 7)[:, None] + np.zeros(16, int), vecs, 1))


@pytest.mark.parametrize("seed", range(6))
def test_requantizations_of_every_kind_keep_their_values(seed):
    """The importer's requantizations (per-tensor and per-channel, clipped or not, int8 and uint8, with a
    residual add or not) over many multipliers and zero points: never more passes, the same values."""
    from apps.onnx.numerics import QParams, requant_steps, requant_steps_per_channel, rescale_steps

    rng = np.random.default_rng(seed)
    c = 32
    for _ in range(12):
        dtype = ["int8", "uint8"][int(rng.integers(2))]
        zp = int(rng.integers(-128, 128)) if dtype == "int8" else int(rng.integers(0, 256))
        out = QParams(float(rng.uniform(0.01, 1)), zp, dtype)
        bound = int(rng.integers(1000, 1 << 24))
        v0 = rng.integers(-bound // 4, bound // 4, c)
        if rng.integers(2):
            steps, (_, more) = requant_steps(float(rng.uniform(1e-5, 0.02)), out, bound)
        else:
            steps, (_, more) = requant_steps_per_channel(rng.uniform(1e-5, 0.02, c), out, np.full(c, bound))
        v = np.stack([v0] + [np.broadcast_to(np.asarray(m, np.int64), (c,)) for m in more])
        residual = None
        if rng.integers(2) and dtype == "int8":
            factors, tail = rescale_steps([0.7, 0.4], [zp, 3], out)
            steps = list(steps) + [(ADD, -zp), (MUL, factors[0][0]), (MUL, factors[0][1]), (ADD, "r")] + list(tail)
            residual = [(ADD, -3), (MUL, factors[1][0]), (MUL, factors[1][1])]
        old = Epilogue(tuple(steps), 1, None if residual is None else tuple(residual))
        epi, _ = _same(steps, v, -bound - v0, bound - v0, rng, residual)
        assert epi.passes <= old.passes
