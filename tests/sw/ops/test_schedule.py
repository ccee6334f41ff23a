"""sw.ops.schedule: virtual threads, dependency tokens, stream splitting and the JIT reuse of kernels."""
import io
import re

import numpy as np
import pytest

from sw import ops, runtime
from sw.isa import POST_PARAM_ROWS
from tests.conftest import CONFIGS, rand8
from tests.sw.ops import ALU_ONLY

# ---------------------------------------------------------------------- virtual threads, tokens, kernels

def dense_listing(q, x, w, b):
    """``ops.dense`` with two virtual threads, checked against numpy: (result, counters, the stream's listing)."""
    buf = io.StringIO()
    q.out, q.debug = buf, runtime.DEBUG_DUMP_INSN
    y, counters = ops.dense(x, w, b, virtual_threads=2, return_counters=True)
    q.debug = 0
    np.testing.assert_array_equal(y, ops.dense_ref(x, w, b))
    return y, counters, buf.getvalue().splitlines()


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


@pytest.mark.parametrize("config,rows", [(ALU_ONLY, 3), ("default", POST_PARAM_ROWS)])
def test_vector_loads_skipped_while_the_region_holds_them(on, rng, config, rows):
    """An epilogue with three vectors (bias, clip bounds): each acc region loads them for its first tile
    only, as long as the tiles keep them in the same rows from the same source; the results are exact. With the
    post-processing unit the steps are one POST pass, whose parameter rows per channel block are loaded likewise."""
    q = on(config)
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
    assert c["acc_load_nbytes"] == 2 * rows * 4 * row_bytes     # 2 regions x (3 vectors | 16 rows) x 4 blocks


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


def test_first_step_in_parts_tiles_started_at_the_bias_last_tile_in_parts(on, rng):
    """Two virtual threads: the operator's first step is queued in parts (the first carries the weights, each a
    step key of its own but the last, which holds the whole step's weights), a tile on a region an earlier
    tile finished starts at the bias (``MIN v0'`` instead of a reset and the ADD pass), and the last tile is
    finished in parts, each stored on its own. The results are exact, and the ALU does no more passes than
    with one virtual thread, where none of this happens."""
    from sw.isa import MemId
    from sw.ops.dense import _dense_tiles
    from sw.ops.epilogue import bias_init
    from sw.ops.plan import plan_dense
    from sw.ops.schedule import HEAD_PARTS, head_key

    q = on(ALU_ONLY)
    n, k, m = 192, 256, 96
    x, w, b = rand8(rng, (n, k)), rand8(rng, (m, k)), rng.integers(-(1 << 14), 1 << 14, m).astype(np.int32)
    epi = ops.Epilogue.vta(8, bias=True)
    plan = plan_dense(n, k // 16, m // 16, 2, epi, q.cfg)
    new, _ = bias_init(epi, np.zeros((m // 16, 1, 16), np.int32), k * 128 * 128)
    tiles = _dense_tiles(plan, q.cfg, 1, 2, 3, 4, new, True)
    keys = [st.buf for st in tiles[0].steps]
    assert keys[:HEAD_PARTS - 1] == [head_key(i) for i in range(HEAD_PARTS - 1)] and keys[HEAD_PARTS - 1] == 0
    wgt = [a for a in tiles[0].steps[0].loads if a.mem == MemId.WGT]
    assert len(wgt) == 1 and tiles[0].steps[HEAD_PARTS - 1].holds == tuple(wgt)
    assert all(t.init is not None for t in tiles) and tiles[-1].tail is not None and tiles[0].tail is None
    assert len(tiles[-1].tail(True)) > 1
    y, c2, dump = dense_listing(q, x, w, b)
    assert any(" MIN " in ln and "tensor" in ln for ln in dump)          # a tile started at the bias
    assert sum("STORE" in ln for ln in dump) > c2["tiles"]                # the last tile stored in parts
    y1, c1 = ops.dense(x, w, b, virtual_threads=1, return_counters=True)
    np.testing.assert_array_equal(y1, y)
    # one thread: GEMM resets and four passes; two: the first two tiles zeroed by the ALU, every other tile
    # started at the bias by one pass and finished by three
    assert c2["gemm_counter"] == c1["gemm_counter"]
    assert c2["alu_counter"] == c1["alu_counter"] + tiles[0].reset[1] + tiles[1].reset[1]


def test_with_post_passes_no_tile_starts_at_the_bias(on, rng):
    """With the post-processing unit VTA's requantization is one POST pass, which adds the bias at no cost: every
    tile starts at zero (no ``MIN v0'``), the pass runs once per channel block of each tile over its rows, and the
    results are exact with one virtual thread or two."""
    q = on("default")
    n, k, m = 192, 256, 96
    x, w, b = rand8(rng, (n, k)), rand8(rng, (m, k)), rng.integers(-(1 << 14), 1 << 14, m).astype(np.int32)
    y, c2, dump = dense_listing(q, x, w, b)
    assert not any(" MIN " in ln for ln in dump) and sum(" POST " in ln for ln in dump) == c2["post_insns"]
    # the unit's full speed: one micro-op, its destination rows increasing over one loop (the inner one)
    for ln in (ln for ln in dump if " POST " in ln):
        got = re.search(r"uop\[(\d+):(\d+)\] out=(\d+) in=(\d+) dst=\((\d+),(\d+)\)", ln)
        first, end, out, inner, _, df = map(int, got.groups())
        assert end - first == 1 and out == 1 and (inner == 1 or df >= 1), ln
    y1, c1 = ops.dense(x, w, b, virtual_threads=1, return_counters=True)
    np.testing.assert_array_equal(y1, y)
    assert c1["post_uops"] == c2["post_uops"] == n * m // 16          # one pass over every accumulator row


def test_alu_bound_residual_loads_go_amid_the_last_tiles_requantization(on):
    """A 1x1 conv over one input block with a residual add: its requantization outlasts its GEMMs, so each tile's
    residual loads follow its GEMMs one by one between the ALU instructions of the tile before (the compute
    module runs an ALU instruction of the other bank beside an acc load), not before its own requantization;
    the results are exact (the first tile's loads, with no tile before, included)."""
    from sw.testing import workloads

    q = on("default")
    buf = io.StringIO()
    q.out, q.debug = buf, runtime.DEBUG_DUMP_INSN
    r = workloads.run_conv2d_workload(None, None, 28, 28, 16, 64, 1, 0, 1, 2, True, None, 0, True)
    q.debug = 0
    assert r["ok"]
    kinds = [("R" if "ACC_8BIT" in ln else "G" if " GEMM " in ln else "A" if " ALU " in ln else "")
             for ln in buf.getvalue().splitlines()]
    seq = "".join(kinds)
    assert "RAR" in seq.replace("AAA", "A").replace("AA", "A")       # loads between ALU instructions
