"""sw.ops: every operator against its numpy reference, exactly, on the golden model of each config."""
import io

import numpy as np
import pytest

from sw import ops, runtime
from sw.isa import MemId

from conftest import make_queue

CONFIGS = ("default", "small", "batch2")


@pytest.fixture
def on(request):
    """on(config, **queue_kwargs): make a fresh golden-model runtime current for the rest of the test."""
    made = []

    def make(config="default", **kwargs):
        q = make_queue(config, dram_bytes=64 << 20, **kwargs)
        made.append(runtime.set_current(q))
        return q
    yield make
    for previous in reversed(made):
        runtime.set_current(previous)


def rand8(rng, shape):
    return rng.integers(-128, 128, size=shape, dtype=np.int8)


def rand32(rng, shape, lo=-(1 << 20), hi=1 << 20):
    return rng.integers(lo, hi, size=shape, dtype=np.int32)


# ---------------------------------------------------------------------- element-wise
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
    q = on("default")
    a = rand32(rng, (1, 64, 1, 16), -128, 128)
    b = rand32(rng, (1, 64, 1, 16), -128, 128)
    np.testing.assert_array_equal(ops.vadd(a, b), (a + b).astype(np.int8))


# ---------------------------------------------------------------------- dense / GEMM
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
    q = on("batch2")
    x, w = rand8(rng, (6, 48)), rand8(rng, (64, 48))
    bias = rand32(rng, (64,), -1000, 1000)
    xp, wp = ops.pack_dense_data(x), ops.pack_dense_weight(w)
    assert xp.shape == (3, 3, 2, 16) and wp.shape == (4, 3, 16, 16)
    y = ops.dense_packed(xp, wp, ops.pack_bias(bias, 4))
    assert y.shape == (3, 4, 2, 16)
    np.testing.assert_array_equal(ops.unpack_dense_output(y, 6, 64), ops.dense_ref(x, w, bias))


# ---------------------------------------------------------------------- conv2d
@pytest.mark.parametrize("vt", [1, 2])
@pytest.mark.parametrize("layer", list(ops.RESNET18))
def test_resnet18_layer(on, layer, vt):
    """ResNet-18 C2-C11 (batch = BATCH) on the default config, with bias, 1 and 2 virtual threads."""
    on("default")
    r = ops.run_conv2d_workload(layer, virtual_threads=vt, seed=vt)
    assert r["ok"]
    assert r["counters"]["gemm_counter"] * 16 * 16 == r["macs"]


@pytest.mark.parametrize("config,layer", [("small", "C8"), ("small", "C10"), ("batch2", "C8"), ("batch2", "C11")])
def test_resnet18_layer_other_configs(on, config, layer):
    q = on(config)
    r = ops.run_conv2d_workload(layer, virtual_threads=2)
    assert r["ok"]
    assert r["counters"]["gemm_counter"] * q.cfg.MACS_PER_CYCLE == r["macs"]


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
    q = on("default")
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


# ---------------------------------------------------------------------- virtual threads, tokens, kernels
def _inp_sram_bases(q, fn):
    """Run fn with the instruction dump on; return the sram_base of every LOAD INP."""
    buf = io.StringIO()
    q.out, q.debug = buf, runtime.DEBUG_DUMP_INSN
    try:
        fn()
    finally:
        q.debug = 0
    bases = []
    for line in buf.getvalue().splitlines():
        if "LOAD   INP" in line and "sram=" in line:
            bases.append(int(line.split("sram=")[1].split()[0]))
    return bases


@pytest.mark.parametrize("config", CONFIGS)
def test_two_virtual_threads_same_result_and_work(on, rng, config):
    q = on(config)
    half = q.cfg.INP_DEPTH // 2
    x, w = rand8(rng, (64, 1024)), rand8(rng, (96, 1024))
    r = {}
    bases = {}
    for vt in (1, 2):
        bases[vt] = _inp_sram_bases(q, lambda: r.__setitem__(vt, ops.dense(x, w, virtual_threads=vt,
                                                                            return_counters=True)))
    np.testing.assert_array_equal(r[1][0], r[2][0])
    assert r[1][1]["gemm_counter"] == r[2][1]["gemm_counter"]
    assert all(b < half for b in bases[1])                       # one thread: the whole SRAM, from 0
    assert any(b >= half for b in bases[2]) and any(b < half for b in bases[2])   # two halves alternate
    xc, wc = rand8(rng, (q.cfg.BATCH, 32, 10, 10)), rand8(rng, (32, 32, 3, 3))
    np.testing.assert_array_equal(ops.conv2d(xc, wc, None, 1, 1, virtual_threads=1),
                                  ops.conv2d(xc, wc, None, 1, 1, virtual_threads=2))


def test_tokens_overlap_loads_with_compute(on, rng):
    """With 2 virtual threads the load module may run a whole step ahead of compute: in the token-level
    schedule some LOAD of step t+1 needs no token from the GEMM of step t."""
    q = on("default")
    buf = io.StringIO()
    q.out, q.debug = buf, runtime.DEBUG_DUMP_INSN
    ops.dense(rand8(rng, (64, 512)), rand8(rng, (64, 512)), tiles=(4, 4, 4), virtual_threads=2)
    q.debug = 0
    lines = [ln for ln in buf.getvalue().splitlines() if "LOAD   INP" in ln]
    # the first two input loads (one per SRAM half) wait for no WAR token; later ones do
    flags = [ln.split("[")[1][:4] for ln in lines]
    assert flags[0][1] == "-" and flags[1][1] == "-" and flags[2][1] == "n"


def test_stream_split_over_several_synchronize_calls(on, rng):
    """A small instruction queue: the operator synchronizes at tile boundaries, never mid-token."""
    q = on("small", max_insns=96)
    x, w = rand8(rng, (64, 64)), rand8(rng, (64, 64))
    y, c = ops.dense(x, w, virtual_threads=2, tiles=(2, 2, 2), return_counters=True)
    np.testing.assert_array_equal(y, ops.dense_ref(x, w))
    assert c["synchronize_calls"] > 1 and c["synchronize_calls"] == q.runs
    assert c["gemm_counter"] == 64 * 8 * 8      # small: 1x8x8 blocks


def test_kernels_recorded_once_and_reused(on, rng):
    q = on("default")
    x, w = rand8(rng, (1, 64, 56, 56)), rand8(rng, (64, 64, 3, 3))
    _, c = ops.conv2d(x, w, None, 1, 1, virtual_threads=2, return_counters=True)
    assert c["tiles"] > 4
    recorded = len(q.kernels)
    assert recorded <= 24                # per distinct tile shape and SRAM half, not per tile
    ops.conv2d(x, w, None, 1, 1, virtual_threads=2)
    assert len(q.kernels) == recorded    # a second call records nothing new


def test_counters_are_summed_and_exposed(on, rng):
    on("default")
    x, w = rand8(rng, (32, 64)), rand8(rng, (32, 64))
    y, c = ops.dense(x, w, return_counters=True)
    assert ops.last_counters == c
    assert c["gemm_counter"] == 32 * 4 * 2 and c["out_store_nbytes"] == 32 * 32
    assert c["inp_load_nbytes"] >= 32 * 64 and c["wgt_load_nbytes"] >= 32 * 64 and c["synchronize_calls"] == 1


def test_workloads():
    w = ops.workloads()
    for name in ["matrix_multiply_opt", "gemm_256", *[f"resnet18.C{i}" for i in range(2, 12)]]:
        fn, args = w[name]
        assert callable(fn) and fn.__module__ == "sw.ops" and isinstance(args, tuple)
    fn, args = w["matrix_multiply_opt"]
    assert args[:3] == (1, 1024, 1024)
    assert ops.workloads(1)["resnet18.C8"][1] == ("C8", 1)


def test_workload_runs(on):
    on("small")
    fn, args = ops.workloads()["gemm_256"]
    r = fn(*args)
    assert r["ok"] and r["macs"] == 256 ** 3 and r["counters"]["gemm_counter"] * 64 == r["macs"]
    fn, args = ops.workloads()["resnet18.C10"]
    assert fn(*args)["ok"]


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
