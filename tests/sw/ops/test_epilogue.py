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
    y = ops.conv2d(x, w, v, stride=stride, padding=pad, epilogue=STEPS, virtual_threads=vt)
    ref = _apply(ops.conv2d_nchw(x, w, stride, pad), STEPS, v, 1)
    assert np.array_equal(y, ref)
    assert len(np.unique(ref)) > 20


@pytest.mark.parametrize("vt", [1, 2])
def test_dense_epilogue(rng, vt):
    x = rng.integers(-128, 128, (5, 70), dtype=np.int8)
    w = rng.integers(-128, 128, (40, 70), dtype=np.int8)
    v = _vectors(rng, 40)
    assert np.array_equal(ops.dense(x, w, v, epilogue=STEPS, virtual_threads=vt), _apply(ops.gemm_ref(x, w), STEPS, v, 1))


def test_immediate_only_epilogue_without_vectors(rng):
    x = rng.integers(-128, 128, (3, 32), dtype=np.int8)
    w = rng.integers(-128, 128, (48, 32), dtype=np.int8)
    steps = [(AluOp.SHR, 6), (AluOp.ADD, -3), (AluOp.MAX, -128), (AluOp.MIN, 127)]
    assert np.array_equal(ops.dense(x, w, epilogue=steps), _apply(ops.gemm_ref(x, w), steps, None, 1))


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
    with pytest.raises(ValueError, match=r"epilogue step 0: immediate 40000; allowed \[-32768, 32767\]"):
        ops.dense(x, w, epilogue=[(AluOp.ADD, 40000)])
    with pytest.raises(ValueError, match=r"epilogue uses vectors v0..v1; 1 given"):
        ops.dense(x, w, np.zeros(48, np.int32), epilogue=[(AluOp.ADD, "v1")])
    with pytest.raises(ValueError, match="SHR takes an immediate"):
        ops.dense(x, w, np.zeros(48, np.int32), epilogue=[(AluOp.SHR, "v0")])
    with pytest.raises(ValueError, match=r"bias has shape \(2, 47\)"):
        ops.dense(x, w, np.zeros((2, 47), np.int32), epilogue=[(AluOp.ADD, "v0")])


def test_mul_refused_without_alu_mul(rng):
    x = rng.integers(-128, 128, (3, 32), dtype=np.int8)
    w = rng.integers(-128, 128, (24, 32), dtype=np.int8)
    with runtime.use_target(load_config("small")):
        with pytest.raises(ValueError, match="no ALU MUL"):
            ops.dense(x, w, epilogue=[(AluOp.MUL, 3)])


def test_reference_is_the_alu_semantics(rng):
    acc = rng.integers(-(1 << 31), 1 << 31, (3, 24, 5), dtype=np.int64).astype(np.int32)
    v = _vectors(rng, 24)
    assert np.array_equal(ops.Epilogue(STEPS).reference(acc, v), _apply(acc, STEPS, v, 1))


def test_vta_epilogue_is_vtas_requantization(rng):
    x = rng.integers(-128, 128, (4, 64), dtype=np.int8)
    w = rng.integers(-128, 128, (32, 64), dtype=np.int8)
    b = rng.integers(-1000, 1000, 32).astype(np.int32)
    epi = ops.Epilogue.vta(shift=5, bias=True)
    assert epi.steps == ((AluOp.SHR, 5), (AluOp.ADD, "v0"), (AluOp.MIN, 127), (AluOp.MAX, 0))
    assert np.array_equal(ops.dense(x, w, b, epilogue=epi), ops.dense(x, w, b, shift=5))
    assert np.array_equal(epi.reference(ops.gemm_ref(x, w), b[None]), ops.dense_ref(x, w, b, shift=5))


@pytest.mark.parametrize("planes", [2, 3, 4])
def test_conv2d_reads_back_planes(rng, planes):
    """k planes: the low 8k bits of each result after the steps, sign-extended (4: the exact int32)."""
    x = rng.integers(-128, 128, (1, 16, 7, 7), dtype=np.int8)
    w = rng.integers(-128, 128, (20, 16, 3, 3), dtype=np.int8)
    v = rng.integers(-(1 << 20), 1 << 20, (1, 20)).astype(np.int32)
    epi = ops.Epilogue(((AluOp.ADD, "v0"), (AluOp.SHR, 1)), planes)
    y = ops.conv2d(x, w, v, padding=1, epilogue=epi, virtual_threads=2)
    acc = ops.conv2d_nchw(x, w, 1, 1).astype(np.int64)
    bits = 8 * planes
    want = (((acc + v[0][None, :, None, None]) >> 1) << (64 - bits)) >> (64 - bits)
    assert y.dtype == np.int32 and np.array_equal(y, want)
    assert np.array_equal(epi.reference(ops.conv2d_nchw(x, w, 1, 1), v), want)


def test_exact_int32_conv2d_and_gemm(rng):
    x = rng.integers(-128, 128, (2, 40, 6, 6), dtype=np.int8)
    w = rng.integers(-128, 128, (18, 40, 1, 1), dtype=np.int8)
    exact = ops.Epilogue.exact_int32()
    assert np.array_equal(ops.conv2d(x, w, stride=2, epilogue=exact), ops.conv2d_nchw(x, w, 2, 0))
    d, m = rng.integers(-128, 128, (3, 50), dtype=np.int8), rng.integers(-128, 128, (30, 50), dtype=np.int8)
    assert np.array_equal(ops.gemm(d, m), ops.gemm_ref(d, m))


def test_epilogue_validation_names_the_field():
    with pytest.raises(ValueError, match=r"epilogue planes = 5; allowed \[1, 4\]"):
        ops.Epilogue((), 5)
    with pytest.raises(ValueError, match=r"epilogue step 1: op 'div'; allowed: .*MIN"):
        ops.Epilogue(((AluOp.ADD, 1), ("div", 3)))
    with pytest.raises(ValueError, match=r"shift = 40; allowed range \[0, 31\]"):
        ops.Epilogue.vta(shift=40)
    assert ops.Epilogue((("add", "v2"), ("max", 0))).vectors == 3
    # a vector step: one pass (its row read once per channel block); two planes: a copy and a shift more
    assert ops.Epilogue((("add", "v0"), ("shr", 3)), planes=2).passes == 2 + 3


RESIDUAL = ((AluOp.ADD, -3), (AluOp.MUL, 5))


@pytest.mark.parametrize("vt", [1, 2])
@pytest.mark.parametrize("stride,pad,o,vector", [(1, 1, 40, False), (2, 0, 24, True)])
def test_conv2d_with_a_residual(rng, vt, stride, pad, o, vector):
    """A residual (a skip connection) loaded beside each tile, finished by its own steps (immediates, or a
    per-channel vector only they use, loaded before them) and added: the same as numpy on the conv's
    accumulators and the residual."""
    x = rng.integers(-128, 128, (1, 20, 9, 9), dtype=np.int8)
    w = rng.integers(-128, 128, (o, 20, 3, 3), dtype=np.int8)
    v = _vectors(rng, o)
    mul = np.full(o, 5)
    if vector:                                  # per channel 1..9, in a vector the main steps never use
        mul = rng.integers(1, 10, o)
        v = np.concatenate([v, mul[None].astype(np.int32)])
    ho = (9 + 2 * pad - 3) // stride + 1
    r = rng.integers(-128, 128, (1, o, ho, ho), dtype=np.int8)
    residual = ((AluOp.ADD, -3), (AluOp.MUL, "v3")) if vector else RESIDUAL
    epi = ops.Epilogue(tuple(STEPS[:-2]) + ((AluOp.MUL, 3), (AluOp.ADD, "r"), (AluOp.SHR, 2), (AluOp.MAX, -128),
                                            (AluOp.MIN, 127)), 1, residual)
    y = ops.conv2d(x, w, v, stride=stride, padding=pad, epilogue=epi, residual=r, virtual_threads=vt)
    acc = ops.conv2d_nchw(x, w, stride, pad)
    ref = epi.reference(acc, v, 1, r)
    assert np.array_equal(y, ref)
    without = ops.Epilogue(tuple(STEPS[:-2]) + ((AluOp.MUL, 3), (AluOp.SHR, 2), (AluOp.MAX, -128), (AluOp.MIN, 127)))
    assert not np.array_equal(ref, without.reference(acc, v, 1))        # the residual moved the result
    # by hand: the conv's steps, plus the residual after its own steps, then the rounding shift and saturation
    before = ops.Epilogue(tuple(STEPS[:-2]) + ((AluOp.MUL, 3),)).apply(acc, v, 1).astype(np.int64)
    hand = np.clip((before + (r.astype(np.int64) - 3) * mul[None, :, None, None]) >> 2, -128, 127)
    assert np.array_equal(ref, hand)


def test_residual_epilogue_validation():
    with pytest.raises(ValueError, match="uses the residual 'r' but the epilogue has no residual"):
        ops.Epilogue(((AluOp.ADD, "r"),))
    with pytest.raises(ValueError, match="no step uses it"):
        ops.Epilogue(((AluOp.ADD, 1),), 1, ())
    with pytest.raises(ValueError, match="not the residual 'r' itself"):
        ops.Epilogue(((AluOp.ADD, "r"),), 1, ((AluOp.ADD, "r"),))
    assert ops.Epilogue(((AluOp.ADD, "r"),), 1, ((AluOp.MUL, "v2"),)).vectors == 3
    with pytest.raises(ValueError, match="needs planes = 1"):
        ops.Epilogue(((AluOp.ADD, "r"),), 2, ())
    with pytest.raises(ValueError, match="SHR takes an immediate"):
        ops.Epilogue(((AluOp.SHR, "r"),), 1, ())
    e = ops.Epilogue(((AluOp.ADD, "v0"), (AluOp.ADD, "r")), 1, RESIDUAL)
    assert (e.vectors, e.acc_rows(100, 2)) == (1, 100 + 2 + 100)
    assert e.passes == 1 + 2 + len(RESIDUAL) + ops.epilogue.RESIDUAL_LOAD_PASSES     # the residual's add: two
    with pytest.raises(ValueError, match=r"expected an int8 tensor of shape \(2, 3\)"):
        e.apply(np.zeros((2, 3), np.int32), np.zeros((1, 3), np.int32), 1)
    x = np.zeros((1, 16, 4, 4), np.int8)
    w = np.zeros((16, 16, 1, 1), np.int8)
    with pytest.raises(ValueError, match=r"residual has shape \(1, 16, 3, 3\); expected the output's"):
        ops.conv2d(x, w, np.zeros((1, 16), np.int32), epilogue=e, residual=np.zeros((1, 16, 3, 3), np.int8))
    with pytest.raises(ValueError, match="exactly when the epilogue has a residual"):
        ops.conv2d(x, w, np.zeros((1, 16), np.int32), epilogue=e)


LEAKY = ops.Epilogue(((AluOp.ADD, "v0"), (AluOp.SHR, 6), (AluOp.MUL, 10), (AluOp.MAX, "b"), (AluOp.ADD, 4),
                      (AluOp.SHR, 3), (AluOp.MAX, -128), (AluOp.MIN, 127)), branch=(2, ((AluOp.MUL, 1),)))


@pytest.mark.parametrize("vt", [1, 2])
def test_conv2d_with_a_branch(rng, vt):
    """A LeakyRelu's two slopes: the values copied into a second region, each side multiplied, the larger kept:
    max(10 x, x) >> 3 with x the rescaled accumulator."""
    x = rng.integers(-128, 128, (1, 20, 9, 9), dtype=np.int8)
    w = rng.integers(-128, 128, (24, 20, 3, 3), dtype=np.int8)
    v = rng.integers(-5000, 5000, (1, 24)).astype(np.int32)
    y = ops.conv2d(x, w, v, padding=1, epilogue=LEAKY, virtual_threads=vt)
    acc = ops.conv2d_nchw(x, w, 1, 1).astype(np.int64) + v[0][None, :, None, None]
    t = acc >> 6
    assert np.array_equal(y, np.clip((np.maximum(10 * t, t) + 4) >> 3, -128, 127))
    assert (t < 0).mean() > 0.2 and (t > 0).mean() > 0.2         # both slopes taken


def test_branch_validation_and_cost():
    with pytest.raises(ValueError, match="uses the branch 'b' but the epilogue has no branch"):
        ops.Epilogue(((AluOp.MAX, "b"),))
    with pytest.raises(ValueError, match="must be used by a later step"):
        ops.Epilogue(((AluOp.MAX, "b"), (AluOp.ADD, 1)), branch=(1, ()))
    with pytest.raises(ValueError, match=r"branch at step 3; allowed \[0, 1\]"):
        ops.Epilogue(((AluOp.ADD, 1), (AluOp.MAX, "b")), branch=(3, ()))
    with pytest.raises(ValueError, match="not 'r' or 'b'"):
        ops.Epilogue(((AluOp.ADD, 1), (AluOp.MAX, "b")), branch=(0, ((AluOp.ADD, "b"),)))
    with pytest.raises(ValueError, match="planes = 1 and no residual"):
        ops.Epilogue(((AluOp.ADD, 1), (AluOp.MAX, "b")), planes=2, branch=(0, ()))
    assert LEAKY.passes == 8 + 1 + 3 + 1              # the combining MAX reads a changing row; zero, copy, MUL
    assert LEAKY.acc_rows(100, 2) == 100 + 2 + 100
    assert LEAKY.cost_proxy.branch == (0, ((AluOp.ADD, 0),)) and LEAKY.cost_proxy.passes == LEAKY.passes


@pytest.mark.parametrize("shift,lo,hi", [(8, 0, 127), (6, -128, 127), (12, -100, 50)])
def test_bias_init_stores_the_same_bytes(rng, shift, lo, hi):
    """bias_init's form of VTA's requantization (``ADD v0'``, ``>> s``, the bounds minus c) stores the same
    low bytes on every accumulator the products can sum to, the interval ends and the rounding boundaries
    of the shift included; every v0' lies below its new lower bound, so ``MIN v0'`` on any row a tile of
    it finished sets the row to v0'."""
    from sw.ops.epilogue import bias_init

    epi = ops.Epilogue(((AluOp.SHR, shift), (AluOp.ADD, "v0"), (AluOp.MIN, hi), (AluOp.MAX, lo)))
    bound = 576 * 128 * 128                          # a 3x3 conv over 64 channels
    v = rng.integers(-(1 << 14), 1 << 14, 48).astype(np.int32)
    new, v2 = bias_init(epi, v, bound)
    assert new.steps[0] == (AluOp.ADD, "v0") and new.passes == epi.passes and new.planes == 1
    floor = max(x for op, x in new.steps if op == AluOp.MAX)
    assert v2.max() <= floor
    acc = rng.integers(-bound, bound + 1, (400, 48))
    edges = np.arange(-3, 4)[:, None] + (np.arange(-(1 << shift) * 3, (1 << shift) * 3, 1 << shift)[None, :]
                                         if shift else 0)
    acc = np.concatenate([acc, np.full((2, 48), -bound), np.full((2, 48), bound),
                          np.resize(edges.reshape(-1), (edges.size // 48 + 1) * 48).reshape(-1, 48)]).astype(np.int32)
    np.testing.assert_array_equal(new.reference(acc, v2[None], 1), epi.reference(acc, v[None], 1))
    # started at v0' by MIN from whatever a finished tile left, then accumulated: the same as ADD v0' after
    left = new.apply(acc[::-1].copy(), v2[None], 1)
    started = np.minimum(left, v2[None]) + acc
    np.testing.assert_array_equal(ops.Epilogue(new.steps[1:]).reference(started), epi.reference(acc, v[None], 1))


def test_bias_init_refuses_what_it_cannot_keep(rng):
    from sw.ops.epilogue import bias_init

    v = rng.integers(-1000, 1000, 16).astype(np.int32)
    vta = ops.Epilogue.vta(8, bias=True)
    assert bias_init(vta, v, 1 << 20) is not None
    assert bias_init(ops.Epilogue.vta(8, bias=False), None, 1 << 20) is None            # no bias
    assert bias_init(ops.Epilogue.vta(8, bias=True, clip=False), v, 1 << 20) is None    # no lower bound
    assert bias_init(ops.Epilogue(vta.steps, planes=2), v, 1 << 20) is None             # more than the low byte
    assert bias_init(ops.Epilogue(((AluOp.SHR, 8), (AluOp.ADD, "v0"), (AluOp.MUL, 3), (AluOp.MAX, 0))), v,
                     1 << 20) is None                                                   # not only a clip after
    assert bias_init(vta, v + (1 << 16), 1 << 20) is None       # a bias above its new lower bound
    assert bias_init(vta, v, 1 << 31) is None                   # accumulators plus the bias could leave int32
    # without a shift the bias must lie below the clip's lower bound
    assert bias_init(ops.Epilogue(((AluOp.ADD, "v0"), (AluOp.MIN, 127), (AluOp.MAX, 0))), v, 1 << 20) is None
