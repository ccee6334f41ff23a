"""The acc footprint scanner: bounds of the acc rows a GEMM or ALU instruction (POST's parameter rows
included) touches, its bank, and the properties the ALU's speed depends on."""

import numpy as np
import pytest
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.sim import Simulator

from hw.footprint import AccFootprint
from hw.sram import make_memory
from sw.config import load_config
from sw.isa import POST_PARAM_ROWS, AluOp, isa_for
from tests.hw.test_alu import alu_insn, dst_rows_distinct, dst_rows_increasing
from tests.hw.test_gemm import gemm_insn

SMALL = load_config("small")
POST_CFG = SMALL.with_changes(POST_UNIT=1)


def scan(cfg, uops, f):
    """Run the scanner on instruction fields ``f`` over the micro-ops ``uops``; return its outputs
    and the cycles it took."""
    isa = isa_for(cfg)
    m = Module()
    m.submodules.dut = dut = AccFootprint(cfg)
    m.submodules.uop_mem = mem = make_memory(cfg, "uop", init=[isa.encode_uop(*u) for u in uops])
    wiring.connect(m, dut.uop_rd, mem.read_port())
    sim = Simulator(m)
    sim.add_clock(1e-6)
    out = {}

    async def bench(ctx):
        ctx.set(dut.insn, isa.encode(**f))
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        for cycle in range(1, 200):  # noqa: B007 - read after the loop
            await ctx.tick()
            if ctx.get(dut.done):
                break
        out.update(cycles=cycle, **{k: ctx.get(getattr(dut, k)) for k in ("empty", "single", "bank", "lo", "hi", "apart",
                                                                             "distinct", "increasing")})

    sim.add_testbench(bench)
    sim.run()
    return out


def ref_rows(cfg, uops, f, alu):
    """Every acc row the instruction touches (unwrapped), as the numpy golden model indexes them."""
    rows = []
    for i in range(f["iter_out"]):
        for j in range(f["iter_in"]):
            for u in range(f["uop_bgn"], f["uop_end"]):
                d, s, _ = uops[u]
                rows.append(d + i * f["dst_factor_out"] + j * f["dst_factor_in"])
                if alu and not f["use_imm"]:
                    rows.append(s + i * f["src_factor_out"] + j * f["src_factor_in"])
    return rows


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("kind", ["gemm", "alu_imm", "alu_tensor", "post_imm", "post_tensor"])
def test_bounds_cover_every_row(kind, seed):
    cfg = POST_CFG if kind.startswith("post") else SMALL
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 12)) if seed % 2 else 1          # one-micro-op kernels: ``increasing`` may hold
    hi_row = [40, 300, 500][seed % 3]
    uops = [(int(rng.integers(0, hi_row)), int(rng.integers(0, hi_row)), int(rng.integers(0, 64))) for _ in range(n)]
    loops = dict(uop_bgn=int(rng.integers(0, n)), uop_end=n, iter_out=int(rng.integers(1, 4)),
                 iter_in=int(rng.integers(1, 4)), dst_factor_out=int(rng.integers(0, 30)),
                 dst_factor_in=int(rng.integers(0, 5)), src_factor_out=int(rng.integers(0, 30)),
                 src_factor_in=int(rng.integers(0, 5)))
    if kind == "gemm":
        f = gemm_insn(**loops)
    elif kind.startswith("post"):
        f = alu_insn(alu_opcode=AluOp.POST, use_imm=int(kind == "post_imm"), imm=int(rng.integers(0, 480)),
                     **loops)
    else:
        f = alu_insn(alu_opcode=AluOp.ADD, use_imm=int(kind == "alu_imm"), imm=1, **loops)
    got = scan(cfg, uops, f)
    rows = ref_rows(cfg, uops, f, kind != "gemm")
    if kind.startswith("post"):
        rows += list(range(f["imm"], f["imm"] + POST_PARAM_ROWS))
    assert (got["lo"], got["hi"]) == (min(rows), max(rows))      # the bounds are exact here
    half = cfg.ACC_DEPTH // 2
    fits = max(rows) < cfg.ACC_DEPTH and min(rows) // half == max(rows) // half
    assert got["single"] == fits and not got["empty"]
    if fits:
        assert got["bank"] == min(rows) // half
    assert got["cycles"] <= max(f["uop_end"] - f["uop_bgn"], 2) + 4      # (the loop spans take 4 + 2 cycles)
    assert got["distinct"] == dst_rows_distinct(cfg, uops, f)
    assert got["increasing"] == dst_rows_increasing(cfg, uops, f)
    # apart (sound): a tensor operand whose source rows and destination rows cannot meet
    if got["apart"]:
        assert kind in ("alu_tensor", "post_tensor") and max(rows) < cfg.ACC_DEPTH
        assert not set(ref_rows(cfg, uops, f, False)) & set(ref_rows_src(uops, f))


def ref_rows_src(uops, f):
    return [s + i * f["src_factor_out"] + j * f["src_factor_in"] for i in range(f["iter_out"])
            for j in range(f["iter_in"]) for _, s, _ in uops[f["uop_bgn"]:f["uop_end"]]]


@pytest.mark.parametrize("case", ["apart", "below", "overlap", "wraps", "immediate"])
def test_source_apart_from_the_destination(case):
    """``apart``: the source rows of a tensor operand lie wholly above or below the destination rows
    (a vector beside the tile it is added to); not when they overlap, when a bound passes the last row
    (the hardware wraps) or with an immediate."""
    cfg = SMALL
    d0, s0, imm = {"apart": (0, 100, 0), "below": (50, 10, 0), "overlap": (0, 20, 0),
                   "wraps": (cfg.ACC_DEPTH - 30, 0, 0), "immediate": (0, 100, 1)}[case]
    f = alu_insn(alu_opcode=AluOp.ADD, use_imm=imm, uop_end=1, iter_out=4, iter_in=8, dst_factor_out=8,
                 dst_factor_in=1, src_factor_out=1, src_factor_in=0)
    got = scan(cfg, [(d0, s0, 0)], f)
    assert got["apart"] == (case in ("apart", "below"))


def test_wrapping_nest_is_not_single():
    """Rows past the last acc row wrap around in the hardware: such a nest is never single-bank."""
    cfg = SMALL
    uops = [(cfg.ACC_DEPTH - 2, 0, 0)]
    got = scan(cfg, uops, gemm_insn(iter_in=4, dst_factor_in=1))
    assert got["hi"] == cfg.ACC_DEPTH + 1 and not got["single"]


def test_empty_nest():
    got = scan(SMALL, [(3, 0, 0)], gemm_insn(uop_bgn=0, uop_end=1, iter_out=0))
    assert got["empty"] and not got["single"]
    got = scan(SMALL, [(3, 0, 0)], alu_insn(alu_opcode=AluOp.MIN, uop_bgn=1, uop_end=1))
    assert got["empty"] and not got["single"]


@pytest.mark.parametrize("case", ["kernel", "one_uop", "inner_wrap", "outer_wrap", "modulo", "distinct", "single"])
def test_consecutive_destinations(case):
    """``distinct``: no micro-op writes the row the one just before it wrote, within the kernel, across
    an inner and an outer iteration, and modulo the acc depth."""
    depth = SMALL.ACC_DEPTH
    uops, loops = {
        "kernel": ([(3, 0, 0), (5, 0, 0), (5, 0, 0)], dict(uop_end=3)),                  # u1, u2: row 5
        "one_uop": ([(4, 0, 0)], dict(iter_in=3, dst_factor_in=0)),                        # row 4 three times
        "inner_wrap": ([(3, 0, 0), (6, 0, 0)], dict(uop_end=2, iter_in=2, dst_factor_in=3)),    # 6, then 3 + 3
        "outer_wrap": ([(3, 0, 0), (6, 0, 0)], dict(uop_end=2, iter_out=2, iter_in=2, dst_factor_in=10,
                                                    dst_factor_out=13)),                  # 6 + 10, then 3 + 13
        "modulo": ([(depth - 1, 0, 0), (2, 0, 0)], dict(uop_end=2, iter_in=2, dst_factor_in=3)),   # 2, then D + 2
        "distinct": ([(3, 0, 0), (6, 0, 0)], dict(uop_end=2, iter_out=2, iter_in=2, dst_factor_in=1,
                                                  dst_factor_out=2)),                     # 3 6 4 7 5 8 6 9
        "single": ([(2, 0, 0)], {}),
    }[case]
    f = alu_insn(alu_opcode=AluOp.ADD, use_imm=1, imm=1, **loops)
    assert dst_rows_distinct(SMALL, uops, f) == (case in ("distinct", "single"))
    assert scan(SMALL, uops, f)["distinct"] == (case in ("distinct", "single"))
