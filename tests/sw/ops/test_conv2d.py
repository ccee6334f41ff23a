"""sw.ops.conv2d: conv2d against its numpy reference, exactly, on the golden model of each config."""
import numpy as np
import pytest

from sw import ops
from tests.conftest import CONFIGS, rand8, rand32

# (N, C, H, W, O, k, pad, stride): channels and sizes that are not multiples of the blocks
CONV_SHAPES = [
    (1, 20, 9, 11, 19, 3, 1, 1),
    (3, 16, 8, 8, 24, 3, 1, 2),
    (1, 8, 5, 5, 8, 1, 0, 1),
    (2, 5, 7, 6, 3, 3, 0, 1),
    (1, 24, 12, 10, 16, 5, 2, 2),
    (1, 3, 1, 1, 4, 1, 0, 1),
]


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("vt", [1, 2])
def test_conv2d_shapes(on, rng, config, vt):
    on(config)
    for n, c, h, w, o, k, pad, stride in CONV_SHAPES:
        x, wt = rand8(rng, (n, c, h, w)), rand8(rng, (o, c, k, k))
        bias = rand32(rng, (o,), -(1 << 14), 1 << 14)
        got = ops.conv2d(x, wt, bias, stride, pad, virtual_threads=vt)
        np.testing.assert_array_equal(got, ops.conv2d_ref(x, wt, bias, stride, pad), err_msg=str((n, c, h, w, o, k)))
    x, wt = rand8(rng, (1, 16, 10, 9)), rand8(rng, (16, 16, 3, 3))
    np.testing.assert_array_equal(ops.conv2d(x, wt, None, 1, 1, shift=4, clip=False, virtual_threads=vt),
                                  ops.conv2d_ref(x, wt, None, 1, 1, shift=4, clip=False))


@pytest.mark.parametrize("config", CONFIGS)
def test_conv2d_small_resnet_like(on, rng, config):
    """A reduced ResNet layer on every config (the full C2-C11 run on default above)."""
    q = on(config)
    batch = q.cfg.BATCH
    x, wt = rand8(rng, (batch, 64, 14, 14)), rand8(rng, (64, 64, 3, 3))
    bias = rand32(rng, (64,), -(1 << 14), 1 << 14)
    for vt in (1, 2):
        y, c = ops.conv2d(x, wt, bias, 1, 1, virtual_threads=vt, return_counters=True)
        np.testing.assert_array_equal(y, ops.conv2d_ref(x, wt, bias, 1, 1))


def test_conv2d_explicit_tiles_cover_the_padding(on, rng):
    """Tiles narrower and shorter than the output: padding on every side of the inner tiles' loads."""
    on("default")
    x, wt = rand8(rng, (1, 32, 11, 13)), rand8(rng, (48, 32, 3, 3))
    ref = ops.conv2d_ref(x, wt, None, 1, 1)
    for tiles in [(1, 4, 5, 1), (3, 3, 2, 2), (2, 11, 13, 1), (1, 1, 3, 2)]:
        for vt in (1, 2):
            np.testing.assert_array_equal(ops.conv2d(x, wt, None, 1, 1, tiles=tiles, virtual_threads=vt), ref,
                                          err_msg=str(tiles))
    ref2 = ops.conv2d_ref(x, wt, None, 2, 1)
    np.testing.assert_array_equal(ops.conv2d(x, wt, None, 2, 1, tiles=(2, 2, 3, 1), virtual_threads=2), ref2)
    # two acc regions per virtual thread: a region reused three tiles later
    y, c = ops.conv2d(x, wt, None, 1, 1, tiles=(1, 4, 5, 1, 2), virtual_threads=2, return_counters=True)
    np.testing.assert_array_equal(y, ref)
    assert c["tiles"] == 27
    with pytest.raises(ValueError, match=r"slots = 2; allowed: 1 with virtual_threads = 1"):
        ops.conv2d(x, wt, None, 1, 1, tiles=(1, 4, 5, 1, 2), virtual_threads=1)
    with pytest.raises(ValueError, match=r"allowed: \(tm, th, tw, tc\) or \(tm, th, tw, tc, slots\)"):
        ops.conv2d(x, wt, None, 1, 1, tiles=(1, 4, 5))


def test_conv2d_untileable_is_a_clear_error(on, rng):
    q = on("small")
    x, wt = rand8(rng, (1, 8, 20, 20)), rand8(rng, (8, 8, 17, 17))
    with pytest.raises(ops.TileError, match=r"weight \(WGT\) SRAM: needs 289 elements, 256 available"):
        ops.conv2d(x, wt, None, 1, 0, virtual_threads=2)
    assert issubclass(ops.TileError, ValueError)
    with pytest.raises(ValueError, match="padding"):
        ops.conv2d(rand8(rng, (1, 8, 40, 40)), rand8(rng, (8, 8, 3, 3)), None, 1, 16)
    with pytest.raises(ops.TileError, match=r"accumulator \(ACC\) SRAM"):
        ops.conv2d(rand8(rng, (1, 8, 20, 20)), rand8(rng, (64, 8, 3, 3)), None, 1, 1, tiles=(8, 18, 18, 1))
    assert q.runs == 0


def test_conv2d_packed_api(on, rng):
    on("default")
    x, wt = rand8(rng, (1, 32, 6, 6)), rand8(rng, (32, 32, 3, 3))
    xp, wp = ops.pack_conv_data(x), ops.pack_conv_weight(wt)
    assert xp.shape == (1, 2, 6, 6, 1, 16) and wp.shape == (2, 2, 3, 3, 16, 16)
    y = ops.conv2d_packed(xp, wp, None, 1, 1)
    assert y.shape == (1, 2, 6, 6, 1, 16)
    np.testing.assert_array_equal(ops.unpack_conv_output(y, 1, 32), ops.conv2d_ref(x, wt, None, 1, 1))


def test_conv2d_nchw_reference():
    """The int32 reference agrees with a direct loop on a tiny case."""
    rng = np.random.default_rng(3)
    x, w = rand8(rng, (2, 3, 5, 4)), rand8(rng, (4, 3, 3, 2))
    got = ops.conv2d_nchw(x, w, stride=2, padding=1)
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    ho, wo = (5 + 2 - 3) // 2 + 1, (4 + 2 - 2) // 2 + 1
    ref = np.zeros((2, 4, ho, wo), dtype=np.int64)
    for i in range(ho):
        for j in range(wo):
            patch = xp[:, :, 2 * i:2 * i + 3, 2 * j:2 * j + 2]
            ref[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w.astype(np.int64))
    np.testing.assert_array_equal(got, ref.astype(np.int32))


# (N, C, H, W, O, groups, k, pad, stride): depthwise, whole-block groups, small groups packed into a block,
# channel counts that leave a part-filled block-group, a channel multiplier
GROUPED = [
    (1, 32, 8, 8, 32, 32, 3, 1, 1),
    (1, 48, 9, 7, 48, 48, 3, 1, 2),
    (2, 32, 6, 6, 64, 2, 3, 1, 1),
    (1, 24, 6, 6, 24, 24, 3, 1, 1),
    (1, 12, 7, 7, 12, 3, 3, 1, 1),
    (1, 30, 5, 5, 60, 30, 3, 1, 1),
    (1, 64, 4, 4, 64, 4, 1, 0, 1),
]


@pytest.mark.parametrize("config", CONFIGS)
def test_grouped_conv2d(on, rng, config):
    on(config)
    for n, c, h, w, o, g, k, pad, stride in GROUPED:
        x, wt = rand8(rng, (n, c, h, w)), rand8(rng, (o, c // g, k, k))
        bias = rand32(rng, (o,), -(1 << 14), 1 << 14)
        for vt in (1, 2):
            got = ops.conv2d(x, wt, bias, stride, pad, groups=g, virtual_threads=vt)
            want = np.clip((ops.conv2d_nchw(x, wt, stride, pad, groups=g).astype(np.int64) >> 8)
                           + bias[None, :, None, None], 0, 127).astype(np.int8)
            np.testing.assert_array_equal(got, want, err_msg=str((n, c, o, g, vt)))
        exact = ops.conv2d(x, wt, None, stride, pad, groups=g, epilogue=ops.Epilogue.exact_int32())
        np.testing.assert_array_equal(exact, ops.conv2d_nchw(x, wt, stride, pad, groups=g))


def test_block_groups_and_the_grouped_reference(on, rng):
    q = on("default")
    assert ops.block_groups(96, 96, 96, q.cfg) == (6, 16, 1, 1)       # depthwise: 16 channels per block
    assert ops.block_groups(64, 128, 2, q.cfg) == (2, 1, 2, 4)        # whole-block groups
    assert ops.block_groups(12, 12, 3, q.cfg) == (1, 3, 1, 1)         # three groups of 4 in one block
    x, wt = rand8(rng, (1, 6, 5, 5)), rand8(rng, (4, 3, 3, 3))
    got = ops.conv2d_nchw(x, wt, 1, 1, groups=2)
    np.testing.assert_array_equal(got[:, :2], ops.conv2d_nchw(x[:, :3], wt[:2], 1, 1))
    np.testing.assert_array_equal(got[:, 2:], ops.conv2d_nchw(x[:, 3:], wt[2:], 1, 1))
    with pytest.raises(ValueError, match="groups = 4 must divide the 6 input and 4 output channels"):
        ops.conv2d_nchw(x, wt, groups=4)
    with pytest.raises(ValueError, match=r"groups = 0; allowed: an integer >= 1"):
        ops.conv2d(x, wt, groups=0)
    # a depthwise conv of one output pixel: no block-diagonal tiling (3 output blocks per block-group), but the
    # DEPTHWISE mode has no such rule
    x1, w1 = rand8(rng, (1, 16, 1, 1)), rand8(rng, (16, 1, 1, 1))
    exact = ops.conv2d(x1, w1, groups=16, epilogue=ops.Epilogue.exact_int32())
    np.testing.assert_array_equal(exact, ops.conv2d_nchw(x1, w1, groups=16))
    on("small")
    with pytest.raises(ValueError, match="at least 3 output blocks per block-group"):
        ops.conv2d(x1, w1, groups=16)


def test_first_step_in_parts_of_output_blocks(on, rng):
    """With two virtual threads a conv whose GEMMs outlast its loads queues its first step in parts of output
    blocks: the first loads the input and its share of the weights, the others only theirs, in the step's own
    weight layout (so the last part holds the whole step's weights); the result is exact. A layer whose ALU
    work exceeds its GEMMs (a 1x1 conv of one input block) keeps the step whole."""
    from sw.isa import MemId
    from sw.ops.conv2d import _conv_tiles
    from sw.ops.plan import plan_conv2d
    from sw.ops.schedule import HEAD_PARTS, head_key

    q = on("default")
    epi = ops.Epilogue.vta(8, bias=True)

    def first_steps(cin, cout, h, k, pad):
        plan = plan_conv2d(1, cin // 16, cout // 16, h, h, k, k, 1, pad, 2, epi, q.cfg)
        shape = (1, cin // 16, cout // 16, h, h, k, k, 1, pad)
        return plan, _conv_tiles(plan, q.cfg, shape, 1, 2, 3, 4, epi)[0].steps

    plan, steps = first_steps(64, 96, 10, 3, 1)
    parts = min(plan.tm, HEAD_PARTS)
    assert [st.buf for st in steps[:parts]] == [head_key(i) for i in range(parts - 1)] + [0]
    assert all(any(a.mem == MemId.INP for a in st.loads) == (i == 0) for i, st in enumerate(steps[:parts]))
    wgt = [a for st in steps[:parts] for a in st.loads if a.mem == MemId.WGT]
    assert sum(a.y_size for a in wgt) == plan.tm and [a.sram for a in wgt] == sorted(a.sram for a in wgt)
    assert steps[parts - 1].holds[0].y_size == plan.tm
    assert first_steps(16, 64, 28, 1, 0)[1][0].buf == 0          # ALU-bound: one step
    x, w, b = rand8(rng, (1, 64, 10, 10)), rand8(rng, (96, 64, 3, 3)), rand32(rng, (96,), -(1 << 14), 1 << 14)
    np.testing.assert_array_equal(ops.conv2d(x, w, b, 1, 1, virtual_threads=2), ops.conv2d_ref(x, w, b, 1, 1))
