"""The GEMM core against a numpy reference: loop nest, reset, accumulation hazards, throughput."""

import numpy as np
import pytest
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.sim import Simulator

from hw.gemm import Gemm
from hw.sram import join_acc, make_memory
from sw.config import load_config
from sw.isa import Opcode, isa_for
from tests.hw.bus_models import pack_rows, unpack_rows

SMALL = load_config("small")
SMALL_DW = SMALL.with_changes(DEPTHWISE=1)


def gemm_insn(**f):
    d = dict(opcode=Opcode.GEMM, pop_prev=0, pop_next=0, push_prev=0, push_next=0, reset=0, uop_bgn=0,
             uop_end=1, iter_out=1, iter_in=1, dst_factor_out=0, dst_factor_in=0, src_factor_out=0,
             src_factor_in=0, wgt_factor_out=0, wgt_factor_in=0)
    d.update(f)
    return d


def ref_gemm(cfg, acc, inp, wgt, uops, f):
    window = np.zeros((cfg.BLOCK_IN, cfg.BATCH, cfg.BLOCK_IN), np.int64)     # DEPTHWISE: slot k read k ago
    for i_out in range(f["iter_out"]):
        for i_in in range(f["iter_in"]):
            for u in range(f["uop_bgn"], f["uop_end"]):
                dst, src, w = uops[u]
                d = (dst + i_out * f["dst_factor_out"] + i_in * f["dst_factor_in"]) % cfg.ACC_DEPTH
                s = (src + i_out * f["src_factor_out"] + i_in * f["src_factor_in"]) % cfg.INP_DEPTH
                w = (w + i_out * f["wgt_factor_out"] + i_in * f["wgt_factor_in"]) % cfg.WGT_DEPTH
                window = np.concatenate([inp[s][None], window[:-1]])
                if f["reset"]:
                    acc[d] = 0
                elif f["opcode"] == Opcode.DEPTHWISE:
                    acc[d] = np.einsum("kbj,jk->bj", window, wgt[w].astype(np.int64))
                else:
                    prod = inp[s].astype(np.int64) @ wgt[w].astype(np.int64).T
                    acc[d] = ((acc[d] + prod + (1 << 31)) % (1 << 32)) - (1 << 31)


def run_gemm(cfg, insns, uops, *, seed=0, acc_rows=64, big=False):
    """Run GEMM instructions on random inp/wgt/acc; check acc against numpy; return the cycles from
    each start to its done."""
    rng = np.random.default_rng(seed)
    isa = isa_for(cfg)
    n_inp, n_wgt = min(cfg.INP_DEPTH, 64), min(cfg.WGT_DEPTH, 64)
    inp = rng.integers(-128, 128, (n_inp, cfg.BATCH, cfg.BLOCK_IN), dtype=np.int64)
    wgt = rng.integers(-128, 128, (n_wgt, cfg.BLOCK_OUT, cfg.BLOCK_IN), dtype=np.int64)
    if big:   # extreme values so the int32 accumulation wraps
        inp[:] = -128
        wgt[:] = -128
    lo = -(1 << 31) if big else -(1 << 20)
    acc = rng.integers(lo, -lo, (acc_rows, cfg.BATCH, cfg.BLOCK_OUT), dtype=np.int64)
    uop_words = [isa.encode_uop(*u) for u in uops]

    m = Module()
    m.submodules.dut = dut = Gemm(cfg)
    m.submodules.uop_mem = uop_mem = make_memory(cfg, "uop", init=uop_words)
    m.submodules.inp_mem = inp_mem = make_memory(cfg, "inp", init=pack_rows(inp, np.int8))
    m.submodules.wgt_mem = wgt_mem = make_memory(cfg, "wgt", init=pack_rows(wgt, np.int8))
    m.submodules.acc_mem = acc_mem = make_memory(cfg, "acc", init=pack_rows(acc, np.int32))
    join_acc(m, dut, acc_mem)
    wiring.connect(m, dut.uop_rd, uop_mem.read_port())
    wiring.connect(m, dut.inp_rd, inp_mem.read_port())
    wiring.connect(m, dut.wgt_rd, wgt_mem.read_port())
    sim = Simulator(m)
    sim.add_clock(1e-6)
    cycles = []
    out = {}

    async def bench(ctx):
        for f in insns:
            ctx.set(dut.insn.as_value(), isa.encode(**f))
            ctx.set(dut.start, 1)
            await ctx.tick()
            ctx.set(dut.start, 0)
            n = 1
            while not ctx.get(dut.done):
                await ctx.tick()
                n += 1
                assert n < 10000, "GEMM did not finish"
            cycles.append(n)
            assert ctx.get(dut.busy) == 0
        await ctx.tick()        # the last write passes the write register (hw.sram.join_acc)
        out["acc"] = [ctx.get(acc_mem.data[i]) for i in range(acc_rows)]

    sim.add_testbench(bench)
    sim.run()
    ref = acc.copy()
    for f in insns:
        ref_gemm(cfg, ref, inp, wgt, uops, f)
    got = unpack_rows(out["acc"], np.int32, (cfg.BATCH, cfg.BLOCK_OUT))
    np.testing.assert_array_equal(got, ref)
    return cycles


def test_random_loops():
    """Random micro-ops over both loop levels with every factor non-zero."""
    rng = np.random.default_rng(1)
    uops = [(int(rng.integers(0, 8)), int(rng.integers(0, 16)), int(rng.integers(0, 16))) for _ in range(5)]
    f = gemm_insn(uop_bgn=1, uop_end=5, iter_out=3, iter_in=2, dst_factor_out=16, dst_factor_in=8,
                  src_factor_out=12, src_factor_in=5, wgt_factor_out=7, wgt_factor_in=3)
    run_gemm(SMALL, [f], uops, seed=1)


def test_reset():
    uops = [(3, 0, 0), (7, 1, 1), (12, 2, 2)]
    insns = [gemm_insn(reset=1, uop_end=3, iter_in=2, dst_factor_in=1),
             gemm_insn(uop_end=3, iter_out=2, dst_factor_out=1, src_factor_out=2)]
    run_gemm(SMALL, insns, uops, seed=2)


def test_accumulate_same_row():
    """Micro-ops writing the same acc row 3 apart, 2 apart and back to back all accumulate."""
    uops = [(5, 0, 0), (6, 1, 1), (7, 2, 2), (5, 3, 3), (5, 4, 4), (6, 5, 5), (6, 6, 6), (5, 7, 7)]
    insns = [gemm_insn(uop_end=8, iter_in=3, src_factor_in=8, wgt_factor_in=8)]
    run_gemm(SMALL, insns, uops, seed=3)


def test_wraparound():
    uops = [(0, 0, 0)]
    run_gemm(SMALL, [gemm_insn(iter_out=20)], uops, seed=4, big=True)


def test_throughput():
    """N micro-ops take N + 11 cycles from start to done (II = 1)."""
    uops = [(i % 16, i % 32, i % 32) for i in range(32)]
    cycles = run_gemm(SMALL, [gemm_insn(uop_end=32), gemm_insn(uop_end=16, iter_out=2, iter_in=2,
                                                               dst_factor_in=16)], uops, seed=5)
    assert cycles == [32 + 11, 64 + 11]


def test_empty_nest():
    cycles = run_gemm(SMALL, [gemm_insn(uop_bgn=2, uop_end=2), gemm_insn(iter_in=0)], [(0, 0, 0)] * 3)
    assert cycles == [1, 1]


def test_default_config():
    cfg = load_config("default")
    uops = [(0, 1, 2), (1, 3, 0), (0, 2, 1)]
    run_gemm(cfg, [gemm_insn(uop_end=3, iter_out=2, dst_factor_out=2, src_factor_out=1, wgt_factor_out=1)],
             uops, seed=6, acc_rows=8)


def test_batch2_config():
    cfg = load_config("batch2")
    uops = [(0, 1, 2), (1, 3, 0)]
    run_gemm(cfg, [gemm_insn(uop_end=2, iter_in=2, dst_factor_in=2, src_factor_in=1)], uops, seed=7, acc_rows=8)


def test_random_hazards():
    """Random micro-ops on 4 acc rows, so consecutive writes of the same row meet at every distance
    of the pipeline (forwarding, merging of later writes, transparent read)."""
    rng = np.random.default_rng(6)
    uops = [(int(rng.integers(0, 4)), int(rng.integers(0, 32)), int(rng.integers(0, 32))) for _ in range(40)]
    insns = [gemm_insn(uop_end=40, iter_in=2, src_factor_in=1), gemm_insn(uop_bgn=3, uop_end=20, reset=1),
             gemm_insn(uop_end=40)]
    run_gemm(SMALL, insns, uops, seed=6)


def test_registered_mul_fabric_is_exact_two_cycles_later():
    """registered_mul off an ECP5: operands registered, then the product (signed and unsigned)."""
    from amaranth.hdl import Signal

    from hw.gemm import registered_mul
    rng = np.random.default_rng(11)
    for signed_operands, (wa, wb) in ((True, (8, 8)), (False, (14, 11))):
        m = Module()
        a, b = Signal(wa), Signal(wb)
        prod = registered_mul(m, None, a, b, "p", signed_operands=signed_operands)
        sim = Simulator(m)
        sim.add_clock(1e-6)
        lo_a, hi_a = (-(1 << (wa - 1)), 1 << (wa - 1)) if signed_operands else (0, 1 << wa)
        lo_b, hi_b = (-(1 << (wb - 1)), 1 << (wb - 1)) if signed_operands else (0, 1 << wb)
        xs = list(zip(rng.integers(lo_a, hi_a, 20), rng.integers(lo_b, hi_b, 20)))

        async def bench(ctx):
            got = []
            for i in range(len(xs) + 2):
                if i < len(xs):
                    ctx.set(a, int(xs[i][0]) & ((1 << wa) - 1))
                    ctx.set(b, int(xs[i][1]) & ((1 << wb) - 1))
                await ctx.tick()
                got.append(ctx.get(prod))
            assert got[1:len(xs) + 1] == [int(x) * int(y) for x, y in xs]

        sim.add_testbench(bench)
        sim.run()


def test_registered_mul_on_ecp5_is_a_registered_mult18x18d():
    from amaranth.hdl import Fragment, Instance, Signal

    from hw.gemm import registered_mul

    class Ecp5:
        family = "ecp5"

    m = Module()
    a, b = Signal(8), Signal(8)
    prod = registered_mul(m, Ecp5(), a, b, "p")
    frag = Fragment.get(m, None)
    dsps = [sub for sub, _name, _src in frag.subfragments if isinstance(sub, Instance)]
    assert len(dsps) == 1 and dsps[0].type == "MULT18X18D"
    params = dsps[0].parameters
    assert params["REG_INPUTA_CLK"] == params["REG_INPUTB_CLK"] == params["REG_OUTPUT_CLK"] == "CLK0"
    assert params["REG_PIPELINE_CLK"] == "NONE" and len(prod) == 16 and prod.shape().signed
    m2 = Module()
    with pytest.raises(ValueError, match="18x18"):
        registered_mul(m2, None, Signal(19), Signal(8), "q")
    Fragment.get(m2, None)


def test_depthwise_window_and_overwrite():
    """DEPTHWISE: each lane dots its own channel of the last BLOCK_IN inp rows read (zero before the
    instruction's first) with its taps and overwrites the acc row; GEMMs around it keep accumulating, and
    the window starts empty again at the next DEPTHWISE. Rows repeat at every pipeline distance."""
    rng = np.random.default_rng(11)
    uops = [(int(rng.integers(0, 6)), int(rng.integers(0, 32)), int(rng.integers(0, 32))) for _ in range(24)]
    dw = dict(opcode=Opcode.DEPTHWISE)
    insns = [gemm_insn(uop_end=24), gemm_insn(**dw, uop_end=24, iter_in=2, src_factor_in=1, dst_factor_in=3),
             gemm_insn(uop_bgn=4, uop_end=20), gemm_insn(**dw, uop_bgn=2, uop_end=5),
             gemm_insn(**dw, reset=1, uop_end=3), gemm_insn(**dw, uop_end=24, iter_out=2, wgt_factor_out=1)]
    cycles = run_gemm(SMALL_DW, insns, uops, seed=11)
    assert cycles[1] == 48 + 11               # II = 1 as GEMM


def test_depthwise_default_and_batch2():
    """The 16-lane core and two batch rows: each batch row has its own window lanes."""
    for name, seed in (("default", 12), ("batch2", 13)):
        cfg = load_config(name).with_changes(DEPTHWISE=1)
        uops = [(i % 3, (7 * i) % 20, i % 2) for i in range(20)]
        run_gemm(cfg, [gemm_insn(opcode=Opcode.DEPTHWISE, uop_end=20, iter_out=2, src_factor_out=1)], uops,
                 seed=seed, acc_rows=8)
