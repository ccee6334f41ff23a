"""sw.ops.dense: dense and GEMM against their numpy references, exactly, on the golden model of each config."""
import numpy as np
import pytest

from sw import ops
from tests.conftest import CONFIGS, rand8, rand32

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
    with pytest.raises(ops.TileError, match=r"accumulator \(ACC\) SRAM: needs 804 elements, 512 available"):
        ops.dense(x, w, bias, virtual_threads=2, tiles=(200, 10, 4, 2))
    with pytest.raises(ValueError, match=r"allowed: \(tn, tk, tm\) or \(tn, tk, tm, slots\)"):
        ops.dense(x, w, bias, tiles=(1, 2))
