"""The post-processing unit's chain (hw.post.PostChain) alone in Amaranth's simulator against the golden
model's post_op: random and edge accumulators over the whole int32 range, per-tensor and per-channel operands,
with and without the residual, a row per cycle and operands changed between rows."""

import numpy as np
import pytest
from amaranth.sim import Simulator

from hw.post import PostChain
from sw.config import load_config
from sw.fsim.alu import post_op
from sw.isa import POST_PARAM_ROWS, POST_RESIDUAL_STEPS, POST_STAGES, AluOp
from tests.hw.bus_models import pack_rows, unpack_rows

CFG = load_config("small").with_changes(POST_UNIT=1)
LANES = CFG.BATCH * CFG.BLOCK_OUT
I32_MIN, I32_MAX = -2**31, 2**31 - 1
EDGES = [0, 1, -1, 2, -2, 127, -128, 255, -256, 2**30, -2**30, I32_MAX, I32_MIN, I32_MAX - 1, I32_MIN + 1,
         # rounding ties of the usual shifts, either sign
         *[(1 << s) * k + (1 << (s - 1)) for s in (1, 8, 15, 23) for k in (-3, -1, 0, 2)]]


def random_params(rng, per_channel: bool) -> np.ndarray:
    """(POST_PARAM_ROWS, LANES) operands of every kind a step meets (the chain's and the residual's): identities,
    requantization-like values, shifts beyond 31 either way, multipliers of every width, int32's ends."""
    pools = {AluOp.ADD: [0, 1 << 14, -(1 << 20), I32_MAX, I32_MIN, -128],
             AluOp.MAX: [I32_MIN, -128, 0, -(1 << 24), I32_MAX],
             AluOp.MIN: [I32_MAX, 127, 255, 1 << 24, I32_MIN],
             AluOp.MUL: [1, 32767, -32768, 181, 65535, 0x12345, -1, 0],
             AluOp.SHR: [0, 1, 8, 15, 23, 31, 32, 40, -1, -31, -33, I32_MIN, I32_MAX]}
    n = LANES if per_channel else 1
    rows = []
    for op in POST_STAGES + POST_RESIDUAL_STEPS:
        if rng.random() < 0.6:
            vals = np.array(pools[op], np.int64)[rng.integers(0, len(pools[op]), n)]
        else:
            vals = rng.integers(I32_MIN, I32_MAX, n, endpoint=True)
        rows.append(np.broadcast_to(vals, (LANES,)))
    return np.stack(rows)


async def _load(ctx, dut, params):
    for k, row in enumerate(pack_rows(params.astype(np.int32), np.int32)):
        ctx.set(dut.p_we, 1)
        ctx.set(dut.p_idx, k)
        ctx.set(dut.p_row, row)
        await ctx.tick()
    ctx.set(dut.p_we, 0)


def run_chain(batches):
    """Each batch (params, x rows, residual rows or None) streamed a row per cycle after its operands are
    written; returns the rows out, in order, and the tags seen."""
    dut = PostChain(CFG)
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    out, tags = [], []

    async def bench(ctx):
        for params, xs, rs in batches:
            await _load(ctx, dut, params)
            ctx.set(dut.use_r, rs is not None)
            words = pack_rows(xs.astype(np.int32), np.int32)
            rwords = pack_rows((rs if rs is not None else np.zeros_like(xs)).astype(np.int32), np.int32)
            pending = len(words)
            for j in range(len(words) + PostChain.latency + 1):
                if j < len(words):
                    ctx.set(dut.valid_in, 1)
                    ctx.set(dut.last_in, j == len(words) - 1)
                    ctx.set(dut.dst_in, j)
                    ctx.set(dut.x_in, words[j])
                    ctx.set(dut.r_in, rwords[j])
                else:
                    ctx.set(dut.valid_in, 0)
                await ctx.tick()
                if ctx.get(dut.valid):
                    out.append(ctx.get(dut.y))
                    tags.append((ctx.get(dut.dst), ctx.get(dut.last), j + 1 - ctx.get(dut.dst)))
                    pending -= 1
            assert pending == 0

    sim.add_testbench(bench)
    sim.run()
    return unpack_rows(out, np.int32, (LANES,)), tags


@pytest.mark.parametrize("residual", [False, True])
def test_chain_equals_post_op(residual):
    rng = np.random.default_rng(4600 + residual)
    batches, want = [], []
    for b in range(6):
        params = random_params(rng, per_channel=b % 2 == 1)
        n = 12
        xs = np.where(rng.random((n, LANES)) < 0.4, rng.choice(EDGES, (n, LANES)),
                      rng.integers(I32_MIN, I32_MAX, (n, LANES), endpoint=True)).astype(np.int64)
        rs = rng.integers(I32_MIN, I32_MAX, (n, LANES), endpoint=True) if residual else None
        batches.append((params, xs, rs))
        want.append(post_op(xs, params[:, None, :], rs))
    got, tags = run_chain(batches)
    np.testing.assert_array_equal(got, np.concatenate(want))
    # every row comes out `latency` cycles after it went in, with its tags
    assert {lat for _, _, lat in tags} == {PostChain.latency}
    assert [last for _, last, _ in tags] == ([0] * 11 + [1]) * 6


def test_identity_operands_pass_rows_through():
    ident = {AluOp.ADD: 0, AluOp.MUL: 1, AluOp.SHR: 0, AluOp.MAX: I32_MIN, AluOp.MIN: I32_MAX}
    params = np.repeat(np.array([ident[op] for op in POST_STAGES + POST_RESIDUAL_STEPS], np.int64)[:, None], LANES,
                       axis=1)
    xs = np.array(EDGES[:LANES * 2], np.int64).reshape(2, LANES)
    got, _ = run_chain([(params, xs, None)])
    np.testing.assert_array_equal(got, xs)
    # with identities everywhere, the residual is only added (wrapping)
    rs = xs[::-1, ::-1].copy()
    got, _ = run_chain([(params, xs, rs)])
    np.testing.assert_array_equal(got, ((xs + rs + 2**31) % 2**32) - 2**31)
    assert params.shape[0] == POST_PARAM_ROWS
