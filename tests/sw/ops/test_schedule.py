"""sw.ops.schedule: virtual threads, dependency tokens, stream splitting and the JIT reuse of kernels."""
import io

import numpy as np
import pytest

from sw import ops, runtime
from tests.conftest import CONFIGS, rand8


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


def test_vector_loads_skipped_while_the_region_holds_them(on, rng):
    """An epilogue with three vectors (bias, clip bounds): each acc region loads them for its first tile
    only, as long as the tiles keep them in the same rows from the same source; the results are exact."""
    q = on("default")
    from sw.isa import AluOp

    epi = ops.Epilogue(((AluOp.ADD, "v0"), (AluOp.MAX, "v1"), (AluOp.MIN, "v2"), (AluOp.SHR, 6)))
    x, w = rand8(rng, (1, 64, 28, 28)), rand8(rng, (64, 64, 3, 3))
    vectors = np.stack([rng.integers(-5000, 5000, 64), rng.integers(-9000, -1000, 64),
                        rng.integers(1000, 9000, 64)]).astype(np.int32)
    y, c = ops.conv2d(x, w, vectors, 1, 1, virtual_threads=2, tiles=(4, 4, 28, 4), epilogue=epi,
                      return_counters=True)
    np.testing.assert_array_equal(y, epi.reference(ops.conv2d_nchw(x, w, 1, 1), vectors, 1))
    assert c["tiles"] == 7
    row_bytes = q.cfg.BATCH * q.cfg.BLOCK_OUT * 4
    assert c["acc_load_nbytes"] == 2 * 3 * 4 * row_bytes        # 2 regions x 3 vectors x 4 channel blocks


def test_weights_the_half_holds_are_not_loaded_again(on, rng):
    """Tiles of all output channels with two reduction steps each: the steps alternate the wgt halves, so
    each half always gets the same weights; they are loaded once (one chunk per half), not once per tile."""
    on("default")
    x, w = rand8(rng, (1, 64, 28, 28)), rand8(rng, (64, 64, 3, 3))
    y, c = ops.conv2d(x, w, None, 1, 1, virtual_threads=2, tiles=(4, 4, 28, 2), return_counters=True)
    np.testing.assert_array_equal(y, ops.conv2d_ref(x, w, None, 1, 1))
    assert c["tiles"] == 7 and c["wgt_load_nbytes"] == w.size
    # one virtual thread: one half, and the two chunks take turns in it: loaded for every step
    _, c1 = ops.conv2d(x, w, None, 1, 1, virtual_threads=1, tiles=(4, 4, 28, 2), return_counters=True)
    assert c1["wgt_load_nbytes"] == 7 * w.size
