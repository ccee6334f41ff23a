"""ALU epilogues of conv2d / dense and the rescaled residual add, against numpy, on the golden model."""

import numpy as np
import pytest

from sw import ops, runtime
from sw.config import load_config
from sw.isa import POST_PARAM_ROWS, AluOp
from sw.ops.kernels import POST_INSN_CYCLES
from tests.sw.ops import ALU_ONLY

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
    # an epilogue with POST passes starts at zero: its chain adds the bias at no cost
    assert bias_init(vta.lowered(load_config("default"), 49, 4), v, 1 << 20) is None


# ---------------------------------------------------------------------- the post-processing unit (POST passes)
ADD, SHR, MIN, MAX, MUL = AluOp.ADD, AluOp.SHR, AluOp.MIN, AluOp.MAX, AluOp.MUL
CFG = load_config("default")


def post_vectors(rng, o):
    """v0 a bias, v1/v2 clip bounds beyond an immediate, v3 a per-channel multiplier of 15 bits, v4 one multiplier
    beyond an immediate on every channel, v5 per-channel multipliers beyond 16 bits."""
    return np.stack([rng.integers(-5000, 5000, o), np.full(o, -300000), np.full(o, 300000), rng.integers(1, 30000, o),
                     np.full(o, 40000), rng.choice([65537, 65539, 65543], o)]).astype(np.int32)


# every kind of epilogue the zoo uses, by name: (steps, residual, branch, planes), and whether POST passes run it
KINDS = {
    "vta": (ops.Epilogue.vta(6, bias=True).steps, None, None, 1, True),
    "per-tensor": (tuple(STEPS), None, None, 1, True),
    "per-channel": (((MAX, -30000), (MIN, 30000), (MUL, "v3"), (ADD, "v0"), (SHR, 9), (MUL, 77), (ADD, 1 << 12),
                     (SHR, 20), (MAX, -128), (MIN, 127)), None, None, 1, True),
    # the residual's steps not an in-order part of the unit's (MUL, ADD): a pass of their own over its rows
    "residual": (((ADD, "v0"), (SHR, 12), (MUL, "v4"), (ADD, "r"), (SHR, 18), (MAX, -128), (MIN, 127)),
                 ((ADD, -3), (MUL, "v4")), None, 1, True),
    # ResNet's requantization and add: the residual's MUL and ADD in the pass that adds it
    "residual-fused": (((MAX, "v1"), (MIN, "v2"), (MUL, "v3"), (ADD, "v0"), (SHR, 9), (MUL, "v4"), (ADD, "r"),
                        (SHR, 18), (MAX, -128), (MIN, 127)), ((MUL, "v5"), (ADD, "v0")), None, 1, True),
    # the residual's add alone (its pass would take one step): an ALU instruction between two passes; the
    # residual's own steps a pass with a vector, one POST instruction per channel block of its rows
    "residual-alu": (((ADD, "v0"), (SHR, 8), (MAX, -100), (ADD, "r"), (ADD, 3), (SHR, 1), (MIN, 127)),
                     ((ADD, -3), (MUL, "v3")), None, 1, True),
    "leaky": (LEAKY.steps, None, LEAKY.branch, 1, True),
    "planes": (((ADD, "v0"), (SHR, 1), (MAX, "v1")), None, None, 2, False),
    "wide": (((ADD, "v0"), (SHR, 10), (MUL, "v5"), (ADD, 16384), (SHR, 19), (MAX, -128), (MIN, 127)), None, None, 1,
             True),
}


def _kind(name):
    steps, residual, branch, planes, post = KINDS[name]
    return ops.Epilogue(steps, planes, residual, branch), post


@pytest.mark.parametrize("name", [k for k in KINDS if not k.startswith("residual")])
def test_dense_epilogues_with_post_passes(rng, name):
    """On a config with the post-processing unit each kind equals its numpy reference bit for bit and the same
    operator without the unit; the ALU does fewer micro-ops where POST passes run it."""
    epi, post = _kind(name)
    x = rng.integers(-128, 128, (64, 70), dtype=np.int8)
    w = rng.integers(-128, 128, (40, 70), dtype=np.int8)
    v = post_vectors(rng, 40)
    y, c = ops.dense(x, w, v, epilogue=epi, virtual_threads=2, return_counters=True)
    np.testing.assert_array_equal(y, epi.reference(ops.gemm_ref(x, w), v, 1))
    with runtime.use_target(ALU_ONLY):
        y_alu, c_alu = ops.dense(x, w, v, epilogue=epi, virtual_threads=2, return_counters=True)
    np.testing.assert_array_equal(y, y_alu)
    assert (c.get("post_insns", 0) > 0) == post and "post_insns" not in c_alu
    assert (c["alu_counter"] < c_alu["alu_counter"]) == post
    assert len(np.unique(y)) > 20


@pytest.mark.parametrize("vt", [1, 2])
@pytest.mark.parametrize("name", list(KINDS))
def test_conv2d_epilogues_with_post_passes(rng, name, vt):
    epi, post = _kind(name)
    x = rng.integers(-128, 128, (1, 20, 9, 9), dtype=np.int8)
    w = rng.integers(-128, 128, (40, 20, 3, 3), dtype=np.int8)
    v = post_vectors(rng, 40)
    r = rng.integers(-128, 128, (1, 40, 9, 9), dtype=np.int8) if epi.residual is not None else None
    y, c = ops.conv2d(x, w, v, padding=1, epilogue=epi, residual=r, virtual_threads=vt, return_counters=True)
    np.testing.assert_array_equal(y, epi.reference(ops.conv2d_nchw(x, w, 1, 1), v, 1, r))
    with runtime.use_target(ALU_ONLY):
        y_alu, c_alu = ops.conv2d(x, w, v, padding=1, epilogue=epi, residual=r, virtual_threads=vt,
                                  return_counters=True)
    np.testing.assert_array_equal(y, y_alu)
    assert (c.get("post_insns", 0) > 0) == post and (c["alu_counter"] < c_alu["alu_counter"]) == post
    assert len(np.unique(y)) > 20


def test_a_pool_epilogue_with_post_passes(rng):
    """An average's requantization after the window sums: one POST pass on each tile."""
    x = rng.integers(-128, 128, (1, 40, 12, 12), dtype=np.int8)
    epi = ops.Epilogue(((ADD, "v0"), (MUL, 3), (SHR, 4), (MAX, -128), (MIN, 127)))
    v = rng.integers(-100, 100, (1, 40)).astype(np.int32)
    y, c = ops.pool2d(x, 2, 2, mode="sum", epilogue=epi, vectors=v, return_counters=True)
    np.testing.assert_array_equal(y, epi.reference(ops.pool2d_ref(x, 2, 2, mode="sum"), v, 1))
    with runtime.use_target(ALU_ONLY):
        np.testing.assert_array_equal(ops.pool2d(x, 2, 2, mode="sum", epilogue=epi, vectors=v), y)
    assert c["post_insns"] > 0


def test_post_counters(rng):
    """An immediate-only epilogue: one POST instruction per tile over its rows, a cycle each and the fixed cost."""
    x = rng.integers(-128, 128, (1, 16, 14, 14), dtype=np.int8)
    w = rng.integers(-128, 128, (48, 16, 3, 3), dtype=np.int8)
    epi = ops.Epilogue(((SHR, 9), (ADD, -3), (MAX, -128), (MIN, 127)))
    y, c = ops.conv2d(x, w, padding=1, epilogue=epi, virtual_threads=1, return_counters=True)
    np.testing.assert_array_equal(y, epi.reference(ops.conv2d_nchw(x, w, 1, 1)))
    assert c["post_insns"] == c["tiles"] and c["post_uops"] == c["alu_counter"] == 3 * 14 * 14
    assert c["post_cycles"] == c["post_uops"] + POST_INSN_CYCLES * c["post_insns"]


def test_dense_at_batch_one_keeps_vector_steps_on_the_alu(rng):
    """One accumulator row per channel block: a POST instruction and its parameters' load per block cost more than
    the ALU's steps; an immediate-only pass, one instruction for the tile, pays over 16 channel blocks."""
    x = rng.integers(-128, 128, (1, 64), dtype=np.int8)
    w = rng.integers(-128, 128, (256, 64), dtype=np.int8)
    v = post_vectors(rng, 256)
    imm = ops.Epilogue(((SHR, 9), (ADD, -3), (MAX, -128), (MIN, 127)))
    for epi, post in ((_kind("vta")[0], False), (_kind("per-channel")[0], False), (imm, True)):
        y, c = ops.dense(x, w, v, epilogue=epi, return_counters=True)
        np.testing.assert_array_equal(y, epi.reference(ops.gemm_ref(x, w), v, 1))
        assert ("post_insns" in c) == post and (epi.lowered(CFG, 1, 16).post is not None) == post


def test_lowered_cuts_the_steps_into_passes(rng):
    epi = ops.Epilogue(tuple(STEPS))               # (tiles of 2 channel blocks of 14 x 14 rows)
    low = epi.lowered(CFG, 196, 2)
    assert low.post == (((0, 10), (10, 13)), (), False) and low.steps == epi.steps and epi.lowered(ALU_ONLY, 196, 2) is epi
    assert low.lowered(CFG, 196, 2) is low                                # already lowered
    assert [(p.vector, p.residual) for p in low.post_passes] == [(True, False), (False, False)]
    assert low.passes == 2 and low.alu_vectors == 0 and low.post_insns(2) == 3
    assert low.acc_rows(100, 2) == 100 + 3 * POST_PARAM_ROWS
    assert low.alu_cycles(100, 2) == 2 * 100 + 3 * POST_INSN_CYCLES and low.insn_cycles(2) == 3 * POST_INSN_CYCLES
    # VTA's clip (MIN 127; MAX 0) in the unit's order: one pass
    vta = ops.Epilogue.vta(8, bias=True).lowered(CFG, 196, 4)
    assert vta.steps == ((SHR, 8), (ADD, "v0"), (MAX, 0), (MIN, 127)) and vta.post == (((0, 4),), (), False)
    # the residual's steps (ADD, then MUL) not the unit's residual steps: a pass of their own over its rows
    res, _ = _kind("residual")
    low = res.lowered(CFG, 196, 2)
    assert low.steps == res.steps and low.residual == res.residual and not low.fused
    assert low.post == (((0, 7),), ((0, 2),), False) and low.vectors == 5
    assert low.passes == 2 + 1 + ops.epilogue.RESIDUAL_LOAD_PASSES        # the residual's pass, then the one adding it
    # (MUL, ADD): in the pass that adds the residual, their operands in its rows 14 and 15
    low = _kind("residual-fused")[0].lowered(CFG, 196, 2)
    assert low.post == (((0, 10),), (), True) and low.fused and low.post_insns(2) == 2 and low.alu_vectors == 0
    assert [p.residual_at for p in low.post_passes] == [(0, 1)]
    assert low.passes == 2 + ops.epilogue.RESIDUAL_LOAD_PASSES and low.acc_rows(100, 2) == 100 + 2 * 16 + 100
    # a MUL by per-channel multipliers beyond 16 bits: a MUL stage like any other
    low = _kind("wide")[0].lowered(CFG, 196, 2)
    assert low.post == (((0, 7),), (), False) and low.alu_vectors == 0 and low.passes == 1
    assert low.acc_rows(100, 2) == 100 + 2 * POST_PARAM_ROWS
    low = _kind("residual-alu")[0].lowered(CFG, 196, 2)
    assert low.post == (((0, 3), (4, 7)), ((0, 2),), False) and low.alu_vectors == 0
    assert low.post_insns(2) == 2 + 1 + 2
    # the branch: no pass across its copy; its steps and the combining MAX on the ALU
    low = LEAKY.lowered(CFG, 196, 2)
    assert low.post == (((0, 2), (4, 8)), (), False) and low.branch == LEAKY.branch
    assert low.passes == 1 + 1 + 2 + 1 + 3 + 1
    # more planes, or nothing that pays: the ALU's lowering
    assert ops.Epilogue(epi.steps, 2).lowered(CFG, 196, 2).post is None
    assert ops.Epilogue(((ADD, "v0"),)).lowered(CFG, 196, 2).post is None


def test_resnet50_expansion_epilogue_is_one_post_pass(rng):
    """ResNet-50's fused expansion conv + add: its steps and its residual's MUL and ADD, one POST instruction per
    channel block reading the residual (use_imm = 0), its parameters' loads, and no other ALU instruction."""
    steps = ((MAX, "v0"), (MIN, "v1"), (MUL, 23676), (ADD, "v2"), (SHR, 7), (MUL, 107), (ADD, "v3"), (SHR, 23),
             (MUL, "v4"), (ADD, "r"), (SHR, 20), (MAX, -128), (MIN, 127))
    epi = ops.Epilogue(steps, 1, ((MUL, "v5"), (ADD, "v6")))
    low = epi.lowered(CFG, 196, 2)
    assert low.post == (((0, 13),), (), True) and low.steps == steps and low.residual == epi.residual
    assert low.post_passes == (ops.epilogue.PostPass("steps", 0, 13, (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13),
                                                     True, True, (0, 1)),)
    v = rng.integers(-(1 << 31), 1 << 31, (7, 2, 1, 16), dtype=np.int64).astype(np.int32)
    packed = low.pack(v, 2, CFG)
    assert packed.shape == (7 * 2 + 2 * POST_PARAM_ROWS, 1, 16)
    blocks = packed[7 * 2:].reshape(2, POST_PARAM_ROWS, 1, 16)
    np.testing.assert_array_equal(blocks[:, 14], v[5])
    np.testing.assert_array_equal(blocks[:, 15], v[6])
    operands = ops.epilogue.TileOperands(0, 2, 0, 2)
    acts = low.actions(0, 196, 2, ((2, 98, 0), (98, 1, 1)), operands, load_residual=lambda row: [])
    alus = [a for a in acts if not isinstance(a, ops.kernels.Load)]
    assert len(alus) == 2 and all(a.post and a.passes == 2 and a.reads_residual for a in alus)
    assert len(acts) == 3                           # the parameters' load, then a POST per channel block


def test_post_validation_names_the_field():
    with pytest.raises(ValueError, match=r"epilogue post = \(\(0, 1\),\); expected \(ranges of the steps"):
        ops.Epilogue(((ADD, 1), (SHR, 2)), post=((0, 1),))
    with pytest.raises(ValueError, match=r"range \(1, 3\) of the steps; allowed: \(start, end\) with 0 <= start < "
                                         r"end <= 2"):
        ops.Epilogue(((ADD, 1), (SHR, 2)), post=(((1, 3),), ()))
    with pytest.raises(ValueError, match=r"steps \[0, 4\) is not one pass of the post-processing unit \(an "
                                         r"in-order part of ADD MAX MIN MUL"):
        ops.Epilogue(((SHR, 1),) * 4, post=(((0, 4),), ()))            # the chain has three SHR stages
    with pytest.raises(ValueError, match=r"steps \[1, 3\) span the branch's step 2"):
        ops.Epilogue(LEAKY.steps, branch=LEAKY.branch, post=(((1, 3),), ()))
    with pytest.raises(ValueError, match=r"takes planes = 1 \(got 2\)"):
        ops.Epilogue(((ADD, 1), (SHR, 2)), 2, post=(((0, 2),), ()))
    with pytest.raises(ValueError, match="residual \\[0, 4\\) is not one pass"):
        ops.Epilogue(((ADD, "r"),), 1, ((SHR, 1),) * 4, post=((), ((0, 4),)))
    with pytest.raises(ValueError, match=r"a fused residual needs a pass of the steps that adds it"):
        ops.Epilogue(((ADD, 1), (ADD, "r")), 1, ((ADD, -3), (MUL, 5)), post=(((0, 2),), (), True))
    with pytest.raises(ValueError, match=r"a fused residual needs a pass of the steps that adds it"):
        ops.Epilogue(((ADD, 1), (SHR, 1), (ADD, "r")), 1, ((MUL, 5),), post=(((0, 2),), (), True))
    fused = ops.Epilogue(((ADD, 1), (ADD, "r")), 1, ((MUL, 5), (ADD, 2)), post=(((0, 2),), (), True))
    assert fused.fused and fused.post_passes[0].residual_at == (0, 1)
    with pytest.raises(ValueError, match=r"epilogue step 0: op <AluOp.POST: 5>; allowed: MIN, MAX, ADD, SHR, MUL$"):
        ops.Epilogue(((AluOp.POST, 0),))
    epi = ops.Epilogue(((ADD, 1), (SHR, 2)), post=(((0, 2),), ()))
    with pytest.raises(ValueError, match="POST passes on config default-alu, which has no post-processing unit"):
        epi.check(ALU_ONLY, 0)


def test_the_cost_proxy_of_post_passes(rng):
    for name in KINDS:
        epi = _kind(name)[0].lowered(CFG, 49, 2)
        proxy = epi.cost_proxy
        assert proxy.cost_proxy == proxy and proxy.post == epi.post
        for rows, tm in ((98, 2), (49 * 8, 8)):
            assert (proxy.passes, proxy.acc_rows(rows, tm), proxy.alu_cycles(rows, tm), proxy.insn_cycles(tm)) == \
                (epi.passes, epi.acc_rows(rows, tm), epi.alu_cycles(rows, tm), epi.insn_cycles(tm))
    # two requantizations that differ in their constants only share a proxy
    a = ops.Epilogue.vta(8, bias=True).lowered(CFG, 49, 4)
    b = ops.Epilogue.vta(5, bias=True).lowered(CFG, 49, 4)
    assert a.cost_proxy == b.cost_proxy != ops.Epilogue.vta(8, bias=True).cost_proxy
