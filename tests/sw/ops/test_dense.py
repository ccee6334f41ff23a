"""sw.ops.dense: dense and GEMM against their numpy references, exactly, on the golden model of each config."""
import numpy as np
import pytest

from sw import ops
from sw.config import load_config
from sw.isa import AluOp
from sw.ops.dense import _vector_in_reduction, spare_lanes
from tests.conftest import CONFIGS, rand8, rand32

DEFAULT = load_config("default")          # BLOCK_IN 16

DENSE_SHAPES = [(1, 100, 37), (5, 33, 20), (33, 70, 45), (40, 200, 130)]


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("vt", [1, 2])
def test_dense_shapes(on, rng, config, vt):
    on(config)
    for n, k, m in DENSE_SHAPES:
        x, w = rand8(rng, (n, k)), rand8(rng, (m, k))
        bias = rand32(rng, (m,), -(1 << 14), 1 << 14)
        np.testing.assert_array_equal(ops.dense(x, w, bias, virtual_threads=vt), ops.dense_ref(x, w, bias))
        np.testing.assert_array_equal(ops.dense(x, w, virtual_threads=vt), ops.dense_ref(x, w))
        np.testing.assert_array_equal(ops.dense(x, w, shift=0, clip=False, virtual_threads=vt),
                                      ops.gemm_ref(x, w).astype(np.int8))
        np.testing.assert_array_equal(ops.gemm(x, w, virtual_threads=vt), ops.gemm_ref(x, w))


@pytest.mark.parametrize("config", CONFIGS)
def test_dense_tiles_over_every_axis(on, rng, config):
    """A layer bigger than every SRAM: several tiles along N, M and K on each config."""
    q = on(config)
    cfg = q.cfg
    n = cfg.BATCH * (cfg.INP_DEPTH // 8 + 3)
    k = cfg.BLOCK_IN * 24
    m = cfg.BLOCK_OUT * (cfg.WGT_DEPTH // 16 + 5)
    x, w = rand8(rng, (n, k)), rand8(rng, (m, k))
    for vt in (1, 2):
        y, c = ops.dense(x, w, virtual_threads=vt, return_counters=True)
        np.testing.assert_array_equal(y, ops.dense_ref(x, w))
        assert c["tiles"] > 1
        nb, kb, mb = -(-n // cfg.BATCH), -(-k // cfg.BLOCK_IN), -(-m // cfg.BLOCK_OUT)
        assert c["gemm_counter"] == nb * kb * mb


@pytest.mark.parametrize("vt", [1, 2])
def test_gemm_256(on, rng, vt):
    on("default")
    x, w = rand8(rng, (256, 256)), rand8(rng, (256, 256))
    y, c = ops.gemm(x, w, virtual_threads=vt, return_counters=True)
    np.testing.assert_array_equal(y, ops.gemm_ref(x, w))
    assert c["gemm_counter"] * 16 * 16 == 256 ** 3
    np.testing.assert_array_equal(ops.dense(x, w, virtual_threads=vt), ops.dense_ref(x, w))


@pytest.mark.parametrize("vt", [1, 2])
def test_matrix_multiply_opt(on, rng, vt):
    """VTA's matrix_multiply_opt: 1x1024 . 1024x1024 in blocks of 256 input and output channels."""
    on("default")
    x, w = rand8(rng, (1, 1024)), rand8(rng, (1024, 1024))
    y, c = ops.dense(x, w, virtual_threads=vt, tiles="blocks256", return_counters=True)
    np.testing.assert_array_equal(y, ops.dense_ref(x, w))
    assert c["tiles"] == 4 and c["gemm_counter"] == 64 * 64
    assert c["wgt_load_nbytes"] == 1024 * 1024 and c["inp_load_nbytes"] == 4 * 1024


@pytest.mark.parametrize("n,k,m", [(128, 128, 128), (16, 512, 1008)])
def test_dense_benchmark_shapes(on, rng, n, k, m):
    on("default")
    x, w = rand8(rng, (n, k)), rand8(rng, (m, k))
    np.testing.assert_array_equal(ops.dense(x, w, virtual_threads=2), ops.dense_ref(x, w))


def test_dense_explicit_tiles_and_limits(on, rng):
    q = on("small")
    x, w = rand8(rng, (20, 64)), rand8(rng, (40, 64))
    np.testing.assert_array_equal(ops.dense(x, w, tiles=(3, 2, 1), virtual_threads=2), ops.dense_ref(x, w))
    with pytest.raises(ops.TileError, match=r"weight \(WGT\) SRAM: needs 40 elements, 256 available|"
                                            r"weight \(WGT\) SRAM"):
        ops.dense(rand8(rng, (8, 8 * 300)), rand8(rng, (8 * 5, 8 * 300)), tiles=(1, 300, 5), virtual_threads=2)
    with pytest.raises(ValueError, match="tiles"):
        ops.dense(x, w, tiles=(100, 1, 1))
    assert q.cfg.WGT_DEPTH == 512


def test_packed_dense_api(on, rng):
    on("batch2")
    x, w = rand8(rng, (6, 48)), rand8(rng, (64, 48))
    bias = rand32(rng, (64,), -1000, 1000)
    xp, wp = ops.pack_dense_data(x), ops.pack_dense_weight(w)
    assert xp.shape == (3, 3, 2, 16) and wp.shape == (4, 3, 16, 16)
    y = ops.dense_packed(xp, wp, ops.pack_bias(bias, 4))
    assert y.shape == (3, 4, 2, 16)
    np.testing.assert_array_equal(ops.unpack_dense_output(y, 6, 64), ops.dense_ref(x, w, bias))


def test_two_acc_regions_per_thread(on, rng):
    """tiles (tn, tk, tm, slots): with two acc regions per virtual thread a tile's region is reused three
    tiles later; the result is the same. slots = 2 needs two virtual threads and tiles that fit half a region."""
    on("default")
    x, w = rand8(rng, (300, 160)), rand8(rng, (64, 160))
    bias = rand32(rng, (64,), -(1 << 14), 1 << 14)
    want = ops.dense_ref(x, w, bias)
    y, c = ops.dense(x, w, bias, virtual_threads=2, tiles=(40, 10, 4, 2), return_counters=True)
    np.testing.assert_array_equal(y, want)
    assert c["tiles"] == 9                                   # 300 / 40: 8 tiles, the last one halved
    with pytest.raises(ValueError, match=r"slots = 2; allowed: 1 with virtual_threads = 1"):
        ops.dense(x, w, bias, virtual_threads=1, tiles=(40, 10, 4, 2))
    # (800 accumulators, the 16 parameter rows per channel block of the requantization's one POST pass)
    with pytest.raises(ops.TileError, match=r"accumulator \(ACC\) SRAM: needs 864 elements, 512 available"):
        ops.dense(x, w, bias, virtual_threads=2, tiles=(200, 10, 4, 2))
    with pytest.raises(ValueError, match=r"allowed: \(tn, tk, tm\) or \(tn, tk, tm, slots\)"):
        ops.dense(x, w, bias, tiles=(1, 2))


FOLD_STEPS = ((AluOp.ADD, "v0"), (AluOp.MUL, 3406), (AluOp.ADD, 64), (AluOp.SHR, 7), (AluOp.MAX, "v1"),
              (AluOp.SHR, 5), (AluOp.MAX, -128), (AluOp.MIN, 127))


def test_a_leading_vector_add_moves_into_the_reduction(on, rng):
    """An RGB stem's GEMM (K = 3 x 7 x 7 = 147 of 160 lanes): v0 in [-30000, 30000] becomes weights in the
    spare lanes against constant columns; the epilogue loses its tensor add and renames v1 to v0; the
    result is the original epilogue's, bit for bit."""
    on("default")
    x, w = rand8(rng, (300, 147)), rand8(rng, (64, 147))
    vectors = np.stack([rng.integers(-30000, 30000, 64), rng.integers(-2000, 0, 64)]).astype(np.int32)
    vectors[0, :2] = (-30000, 30000)
    epi = ops.Epilogue(FOLD_STEPS)
    x2, w2, v2, epi2 = _vector_in_reduction(x, w, vectors, epi, DEFAULT)
    assert x2.shape[1] == 150 and np.all(x2[:, 147:] == [127, 127, 1])
    assert epi2.steps == ((AluOp.MUL, 3406), (AluOp.ADD, 64), (AluOp.SHR, 7), (AluOp.MAX, "v0"),
                          (AluOp.SHR, 5), (AluOp.MAX, -128), (AluOp.MIN, 127))
    np.testing.assert_array_equal(v2, vectors[1:])
    np.testing.assert_array_equal(w2[:, 147:].astype(np.int64) @ [127, 127, 1], vectors[0])
    want = epi.reference(ops.gemm_ref(x, w), vectors, 1)
    np.testing.assert_array_equal(ops.dense(x, w, vectors, epilogue=epi, virtual_threads=2), want)
    _, _, none, epi3 = _vector_in_reduction(x, w, vectors[:1], ops.Epilogue(FOLD_STEPS[:4]), DEFAULT)
    assert none is None and epi3.vectors == 0                               # v0 was the only vector


@pytest.mark.parametrize("case", ["no free lanes", "v0 too large", "v0 used again", "no vector add first", "no bias"])
def test_cases_that_keep_the_alu_add(rng, case):
    k, steps, v0 = 147, FOLD_STEPS, rng.integers(-3000, 3000, 64)
    if case == "no free lanes":
        k = 160
    elif case == "v0 too large":
        v0[0] = 13 * 127 * 127                    # 13 lanes of 127 and the 1: more than 160 - 147
    elif case == "v0 used again":
        steps = FOLD_STEPS + ((AluOp.ADD, "v0"),)
    elif case == "no vector add first":
        steps = FOLD_STEPS[1:]
    x, w = rand8(rng, (20, k)), rand8(rng, (64, k))
    vectors = None if case == "no bias" else np.stack([v0, v0]).astype(np.int32)
    epi = ops.Epilogue(steps)
    out = _vector_in_reduction(x, w, vectors, epi, DEFAULT)
    assert out[0] is x and out[1] is w and out[2] is vectors and out[3] is epi
    assert (spare_lanes(k, DEFAULT) >= 2) == (case != "no free lanes")     # the importer's test of the same
