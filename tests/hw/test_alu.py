"""The tensor ALU against a numpy reference: every opcode, immediate and tensor operands, SHR edges; POST (the
post-processing unit inside the ALU) at full speed and on irregular kernels, with and without the residual."""

import numpy as np
import pytest
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.sim import Simulator

from hw.alu import Alu
from hw.sram import join_acc, make_memory
from sw.config import load_config
from sw.fsim.alu import post_op
from sw.isa import POST_PARAM_ROWS, AluOp, Opcode, isa_for
from tests.hw.bus_models import pack_rows, unpack_rows

SMALL = load_config("small")
MUL_CFG = SMALL.with_changes(ALU_MUL=1)
POST_CFG = SMALL.with_changes(POST_UNIT=1)


def alu_insn(**f):
    d = dict(opcode=Opcode.ALU, pop_prev=0, pop_next=0, push_prev=0, push_next=0, reset=0, uop_bgn=0,
             uop_end=1, iter_out=1, iter_in=1, dst_factor_out=0, dst_factor_in=0, src_factor_out=0,
             src_factor_in=0, alu_opcode=AluOp.ADD, use_imm=0, imm=0)
    d.update(f)
    return d


def wrap32(x):
    return ((np.asarray(x, dtype=np.int64) + (1 << 31)) % (1 << 32)) - (1 << 31)


def ref_op(op, a, b):
    a = a.astype(np.int64)
    b = np.broadcast_to(np.asarray(b, dtype=np.int64), a.shape)
    if op == AluOp.MIN:
        return np.minimum(a, b)
    if op == AluOp.MAX:
        return np.maximum(a, b)
    if op == AluOp.ADD:
        return wrap32(a + b)
    if op == AluOp.SHR:
        out = np.empty_like(a)
        for i, (x, s) in enumerate(zip(a.flat, b.flat)):
            x, s = int(x), int(s)
            out.flat[i] = x >> min(s, 31) if s >= 0 else int(wrap32(x << min(-s, 31)))
        return out
    if op == AluOp.MUL:
        return wrap32(a * b)
    raise ValueError(op)


def ref_alu(cfg, acc, uops, f):
    params = acc[f["imm"]:f["imm"] + POST_PARAM_ROWS].copy() if f["alu_opcode"] == AluOp.POST else None
    for i_out in range(f["iter_out"]):
        for i_in in range(f["iter_in"]):
            for u in range(f["uop_bgn"], f["uop_end"]):
                dst, src, _ = uops[u]
                d = (dst + i_out * f["dst_factor_out"] + i_in * f["dst_factor_in"]) % cfg.ACC_DEPTH
                s = (src + i_out * f["src_factor_out"] + i_in * f["src_factor_in"]) % cfg.ACC_DEPTH
                if params is not None:
                    acc[d] = post_op(acc[d], params, None if f["use_imm"] else acc[s])
                    continue
                b = f["imm"] if f["use_imm"] else acc[s]
                acc[d] = ref_op(f["alu_opcode"], acc[d], b)


def dst_rows_distinct(cfg, uops, f):
    """No micro-op of the loop nest writes the acc row (modulo the depth) the one just before it wrote
    (hw.footprint ``distinct``), by enumerating the nest."""
    rows = [(uops[u][0] + i * f["dst_factor_out"] + j * f["dst_factor_in"]) % cfg.ACC_DEPTH
            for i in range(f["iter_out"]) for j in range(f["iter_in"]) for u in range(f["uop_bgn"], f["uop_end"])]
    return all(a != b for a, b in zip(rows, rows[1:]))


def dst_rows_increasing(cfg, uops, f):
    """A one-micro-op kernel whose destination strictly increases without wrapping (hw.footprint
    ``increasing``), by enumerating the nest."""
    rows = [uops[f["uop_bgn"]][0] + i * f["dst_factor_out"] + j * f["dst_factor_in"]
            for i in range(f["iter_out"]) for j in range(f["iter_in"])]
    return (f["uop_end"] == f["uop_bgn"] + 1 and all(a < b for a, b in zip(rows, rows[1:]))
            and max(rows) < cfg.ACC_DEPTH)


def run_alu(cfg, insns, uops, acc, *, expect_error=False, src_apart=0):
    """Run ALU instructions on acc rows ``acc`` ([rows, BATCH, BLOCK_OUT]); check against numpy;
    return the cycles from each start to its done. ``src_apart``: the compute module's promise that no
    micro-op writes a row read as acc[s]; ``dst_distinct`` (hw.footprint ``distinct``) is computed here
    for each instruction, as the compute module's footprint scan gives it."""
    isa = isa_for(cfg)
    rows = len(acc)
    m = Module()
    m.submodules.dut = dut = Alu(cfg)
    m.submodules.uop_mem = uop_mem = make_memory(cfg, "uop", init=[isa.encode_uop(*u) for u in uops])
    m.submodules.acc_mem = acc_mem = make_memory(cfg, "acc", init=pack_rows(acc, np.int32))
    join_acc(m, dut, acc_mem)
    wiring.connect(m, dut.uop_rd, uop_mem.read_port())
    sim = Simulator(m)
    sim.add_clock(1e-6)
    cycles, errors, out = [], [], {}

    async def bench(ctx):
        for f in insns:
            ctx.set(dut.insn.as_value(), isa.encode(**f))
            ctx.set(dut.start, 1)
            ctx.set(dut.src_apart, src_apart)
            ctx.set(dut.dst_distinct, dst_rows_distinct(cfg, uops, f))
            ctx.set(dut.dst_increasing, dst_rows_increasing(cfg, uops, f))
            await ctx.tick()
            ctx.set(dut.start, 0)
            n = 1
            while not ctx.get(dut.done):
                await ctx.tick()
                n += 1
                assert n < 10000, "ALU did not finish"
            errors.append(ctx.get(dut.error))
            cycles.append(n)
        await ctx.tick()        # the last write passes the write register (hw.sram.join_acc)
        out["acc"] = [ctx.get(acc_mem.data[i]) for i in range(rows)]

    sim.add_testbench(bench)
    sim.run()
    ref = acc.astype(np.int64).copy()
    for f in insns:
        if not expect_error:
            ref_alu(cfg, ref, uops, f)
    got = unpack_rows(out["acc"], np.int32, (cfg.BATCH, cfg.BLOCK_OUT))
    np.testing.assert_array_equal(got, ref)
    assert errors == [int(expect_error)] * len(insns)
    return cycles


def random_acc(cfg, rows, seed):
    rng = np.random.default_rng(seed)
    acc = rng.integers(-(1 << 31), 1 << 31, (rows, cfg.BATCH, cfg.BLOCK_OUT), dtype=np.int64)
    acc[0, 0, :4] = [-(1 << 31), (1 << 31) - 1, 0, -1]
    return acc


OPS = [AluOp.MIN, AluOp.MAX, AluOp.ADD, AluOp.SHR, AluOp.MUL]


@pytest.mark.parametrize("op", OPS, ids=[o.name for o in OPS])
def test_immediate(op):
    cfg = MUL_CFG
    acc = random_acc(cfg, 16, int(op))
    uops = [(0, 0, 0), (3, 0, 0), (5, 0, 0)]
    imms = {AluOp.SHR: [0, 1, -1, 31, -31, 7, -9], AluOp.MUL: [3, -7, 32767, -32768]}.get(
        op, [0, 1, -1, 32767, -32768, 1234])
    insns = [alu_insn(alu_opcode=op, use_imm=1, imm=imm, uop_end=3, iter_in=2, dst_factor_in=1) for imm in imms]
    run_alu(cfg, insns, uops, acc)


@pytest.mark.parametrize("op", OPS, ids=[o.name for o in OPS])
def test_tensor(op):
    cfg = MUL_CFG
    acc = random_acc(cfg, 24, 10 + int(op))
    if op == AluOp.SHR:   # shift amounts at and beyond the edges, as tensor lanes
        amounts = np.array([0, 1, -1, 31, -31, 32, -32, 40, -40, 32767, -32768, -(1 << 31), (1 << 31) - 1, 5, -5, 16])
        acc[8:16] = amounts[np.arange(8 * cfg.BATCH * cfg.BLOCK_OUT) % len(amounts)].reshape(8, cfg.BATCH, -1)
    uops = [(0, 8, 0), (1, 9, 0), (2, 10, 0), (3, 11, 0)]
    insns = [alu_insn(alu_opcode=op, uop_end=4, iter_out=2, dst_factor_out=4, src_factor_out=4)]
    run_alu(cfg, insns, uops, acc)


def test_shr_immediate_beyond():
    """SHR by immediates beyond the 31 clamp: +40, -40, 32767, -32768."""
    acc = random_acc(SMALL, 4, 20)
    insns = [alu_insn(alu_opcode=AluOp.SHR, use_imm=1, imm=imm, uop_end=1) for imm in (40, -40, 32767, -32768)]
    insns += [alu_insn(alu_opcode=AluOp.SHR, use_imm=1, imm=imm, uop_end=1, uop_bgn=0, dst_factor_out=1, iter_out=3)
              for imm in (-3, 2)]
    run_alu(SMALL, insns, [(0, 0, 0)], acc)


def test_dependent_chain():
    """Back-to-back micro-ops on the same row and a tensor op reading the row just written."""
    acc = random_acc(SMALL, 8, 21)
    uops = [(2, 0, 0), (2, 0, 0), (3, 2, 0), (2, 3, 0)]
    insns = [alu_insn(alu_opcode=AluOp.ADD, use_imm=1, imm=5, uop_end=2, iter_in=3),
             alu_insn(alu_opcode=AluOp.ADD, uop_bgn=2, uop_end=4, iter_in=3)]
    run_alu(SMALL, insns, uops, acc)


def test_throughput():
    """Immediate: N micro-ops in N + 9 cycles; tensor operand: 2N + 8, SHR 3N + 7."""
    acc = random_acc(SMALL, 32, 22)
    acc[16:] %= 64
    uops = [(i, 31 - i, 0) for i in range(16)]
    insns = [alu_insn(use_imm=1, imm=3, uop_end=16), alu_insn(uop_end=16), alu_insn(alu_opcode=AluOp.SHR, uop_end=16)]
    assert run_alu(SMALL, insns, uops, acc) == [16 + 9, 2 * 16 + 8, 3 * 16 + 7]


def test_mul_not_built():
    """With ALU_MUL = 0, MUL (and an unknown opcode) does nothing and reports an error."""
    acc = random_acc(SMALL, 4, 23)
    insns = [alu_insn(alu_opcode=AluOp.MUL, use_imm=1, imm=3), alu_insn(alu_opcode=6, use_imm=1, imm=3)]
    run_alu(SMALL, insns, [(0, 0, 0)], acc, expect_error=True)


def test_batch2_config():
    cfg = load_config("batch2")
    acc = random_acc(cfg, 8, 24)
    run_alu(cfg, [alu_insn(alu_opcode=AluOp.MAX, uop_end=2), alu_insn(alu_opcode=AluOp.SHR, use_imm=1, imm=-2)],
            [(0, 4, 0), (1, 5, 0)], acc)


@pytest.mark.parametrize("use_imm", [1, 0], ids=["immediate", "tensor"])
def test_random_hazards(use_imm):
    """Random micro-ops on 4 rows, so reads and writes of the same row meet at every distance of
    the pipeline (forwarding, merging of later writes, transparent read)."""
    rng = np.random.default_rng(30 + use_imm)
    acc = random_acc(SMALL, 4, 25)
    acc[:] %= 1 << 12        # small values, so a chain of ADDs and SHRs stays informative
    uops = [(int(rng.integers(0, 4)), int(rng.integers(0, 4)), 0) for _ in range(24)]
    # the last operations keep the effect of a lost update visible (no clamping MIN/MAX at the end)
    ops = ([(AluOp.MAX, -7), (AluOp.MIN, 1 << 13), (AluOp.SHR, -1), (AluOp.ADD, 3), (AluOp.ADD, -1)] if use_imm
           else [(AluOp.ADD, 0), (AluOp.MAX, 0), (AluOp.MIN, 0), (AluOp.ADD, 0)])
    insns = [alu_insn(alu_opcode=op, use_imm=use_imm, imm=imm, uop_end=24) for op, imm in ops]
    run_alu(SMALL, insns, uops, acc)


@pytest.mark.parametrize("op", [AluOp.ADD, AluOp.SHR], ids=["ADD", "SHR"])
@pytest.mark.parametrize("dist", [1, 2, 3, 4])
def test_tensor_source_written_ahead(dist, op):
    """A tensor micro-op reads (as acc[s]) the row written by the micro-op ``dist`` ahead of it (SHR: its
    shift amounts; SHR's micro-ops are three cycles apart, the others' two)."""
    acc = random_acc(SMALL, 8, 26 + dist) % 1000
    if op == AluOp.SHR:     # row 0 (shifted right by 0-3 by row 6) gives row 7's shifts, left and right
        acc[0] = acc[0] % 41 - 20
        acc[6] %= 4
    uops = [(i, 7, 0) for i in range(dist)] + [(7, 0, 0)]
    uops = [(d, 0 if j == dist else 6, 0) for j, (d, _, _) in enumerate(uops)]
    run_alu(SMALL, [alu_insn(alu_opcode=op, uop_end=len(uops), iter_out=2, dst_factor_out=0)], uops, acc)


@pytest.mark.parametrize("dist", [1, 2, 3, 4, 5, 6])
def test_immediate_row_written_ahead(dist):
    """Immediate micro-ops whose row was last written by the micro-op ``dist`` ahead (rows cycle
    with period ``dist``): every stage of the merge of missed writes, and the SRAM after it (``dist``
    = 1: two cycles apart, the write ahead merged in S6)."""
    acc = random_acc(SMALL, 8, 40 + dist) % 1000
    uops = [(i % dist, 0, 0) for i in range(4 * dist)]
    cycles = run_alu(SMALL, [alu_insn(alu_opcode=AluOp.ADD, use_imm=1, imm=3, uop_end=len(uops))], uops, acc)
    # one micro-op per cycle when the one just ahead wrote another row, else two cycles apart
    assert cycles == [len(uops) + 9 if dist > 1 else 2 * len(uops) + 8]


@pytest.mark.parametrize("op", OPS, ids=[o.name for o in OPS])
def test_tensor_source_reused_through_the_inner_loop(op):
    """A per-channel vector over the rows of each channel block (one micro-op, src_factor_in = 0, source
    rows apart from the destination rows): the first micro-op of each inner iteration reads acc[s], the
    others reuse it, one per cycle: N + R + 8 cycles for R source rows. Inner loops of 1, 2, 3 and 7."""
    cfg = MUL_CFG
    acc = random_acc(cfg, 32, 60 + int(op))
    acc[24:] %= 40                       # the shift amounts and factors of SHR and MUL: small
    shapes = ((7, 3), (3, 5), (2, 4), (1, 6))
    insns = [alu_insn(alu_opcode=op, uop_end=1, iter_out=n_out, iter_in=n_in, dst_factor_out=n_in, dst_factor_in=1,
                      src_factor_out=1, src_factor_in=0) for n_in, n_out in shapes]
    uops = [(0, 24, 0)]                  # destinations 0-20, sources 24 and up: no instruction writes a source
    spaced = [3 * n_in * n_out + 7 if op == AluOp.SHR else 2 * n_in * n_out + 8 for n_in, n_out in shapes]
    reused = [n_in * n_out + n_out + 8 if n_in > 1 else s for (n_in, n_out), s in zip(shapes, spaced)]
    assert run_alu(cfg, insns, uops, acc, src_apart=1) == reused
    # the same instructions without the promise: two cycles per micro-op (SHR three), the same results
    assert run_alu(cfg, insns, uops, acc) == spaced


def test_reused_source_with_rows_written_back_to_back():
    """Reused X with the destination repeating (dst_factor_in = 0: each micro-op reads the row the one
    just ahead wrote) and the next channel block's first micro-op right after: forwarding and merging
    at one micro-op per cycle."""
    acc = random_acc(MUL_CFG, 16, 70) % 1000
    for op in (AluOp.ADD, AluOp.MAX, AluOp.MUL, AluOp.SHR):
        f = dict(alu_opcode=op, uop_end=1, iter_out=4, iter_in=5, dst_factor_out=1, dst_factor_in=0,
                 src_factor_out=1, src_factor_in=0)
        acc[8:12] = np.arange(1, 5)[:, None, None]
        run_alu(MUL_CFG, [alu_insn(**f)], [(0, 8, 0)], acc, src_apart=1)


def post_params(rng, rows, lanes):
    """(POST_PARAM_ROWS, BATCH, BLOCK_OUT) operands like a requantization's: clamps, multipliers, rounding
    constants, shifts, zero points, clips (per channel), the residual's rescale and offset, some stages at their
    identity."""
    lo = rng.integers(-(1 << 20), 0, lanes)
    p = {0: rng.integers(-1000, 1000, lanes), 1: lo, 2: lo + rng.integers(1 << 10, 1 << 21, lanes),
         3: rng.integers(1, 32768, lanes), 4: np.full(lanes, 1 << 14), 5: np.full(lanes, 15),
         6: rng.integers(-300, 300, lanes), 7: rng.integers(-(1 << 8), 1 << 8, lanes), 8: np.full(lanes, 8),
         9: np.ones(lanes), 10: rng.integers(-128, 128, lanes), 11: np.zeros(lanes),
         12: np.full(lanes, -128), 13: np.full(lanes, 127),
         14: rng.integers(-(1 << 20), 1 << 20, lanes), 15: rng.integers(-(1 << 16), 1 << 16, lanes)}
    return np.stack([np.asarray(p[k], np.int64) for k in range(POST_PARAM_ROWS)]).reshape(POST_PARAM_ROWS, *rows)


def post_acc(cfg, seed):
    acc = random_acc(cfg, 64, seed)
    rng = np.random.default_rng(seed)
    acc[:40] >>= rng.integers(0, 20, acc[:40].shape)         # accumulators of every magnitude
    acc[48:48 + POST_PARAM_ROWS] = post_params(rng, (cfg.BATCH, cfg.BLOCK_OUT), cfg.BATCH * cfg.BLOCK_OUT)
    return acc


@pytest.mark.parametrize("use_imm", [1, 0])
def test_post_full_speed(use_imm):
    """POST over 16 rows in two loop levels (one micro-op, rows increasing): a row per cycle, two with the
    residual (rows 20..35, apart from the destinations), after reading the 14 parameter rows."""
    cfg = POST_CFG
    acc = post_acc(cfg, 7 + use_imm)
    acc[20:36] = np.random.default_rng(3).integers(-128, 128, acc[20:36].shape)
    f = alu_insn(alu_opcode=AluOp.POST, use_imm=use_imm, imm=48, iter_out=2, iter_in=8, dst_factor_out=8,
                 dst_factor_in=1, src_factor_out=8, src_factor_in=1)
    (cycles,) = run_alu(cfg, [f], [(0, 20, 0)], acc, src_apart=1 - use_imm)
    rows = 16
    assert cycles <= POST_PARAM_ROWS + rows * (2 - use_imm) + 30


def test_post_irregular_kernels():
    """Kernels the unit cannot stream (several micro-ops, a row written twice, residual rows that are also
    destinations, parameter rows among the destinations): each micro-op waits for the one before; the
    results equal the sequential semantics (the parameters as they were at the start)."""
    cfg = POST_CFG
    acc = post_acc(cfg, 11)
    uops = [(0, 1, 0), (1, 0, 0), (0, 2, 0), (50, 3, 0)]
    insns = [alu_insn(alu_opcode=AluOp.POST, use_imm=0, imm=48, uop_end=4, iter_out=2, dst_factor_out=1,
                      src_factor_out=1),
             alu_insn(alu_opcode=AluOp.POST, use_imm=1, imm=48, uop_end=3, iter_in=3),
             alu_insn(alu_opcode=AluOp.POST, use_imm=0, imm=48, uop_bgn=1, uop_end=2, iter_in=4,
                      dst_factor_in=1, src_factor_in=1)]
    run_alu(cfg, insns, uops, acc)


def test_post_between_other_instructions():
    """POST after and before ordinary ALU instructions on the rows it reads and writes."""
    cfg = POST_CFG
    acc = post_acc(cfg, 12)
    insns = [alu_insn(alu_opcode=AluOp.ADD, use_imm=1, imm=-5, iter_in=8, dst_factor_in=1),
             alu_insn(alu_opcode=AluOp.POST, use_imm=1, imm=48, iter_in=8, dst_factor_in=1),
             alu_insn(alu_opcode=AluOp.SHR, use_imm=1, imm=1, iter_in=8, dst_factor_in=1),
             alu_insn(alu_opcode=AluOp.ADD, use_imm=1, imm=3, uop_bgn=1, uop_end=2),
             alu_insn(alu_opcode=AluOp.POST, use_imm=1, imm=48, iter_in=8, dst_factor_in=1)]
    run_alu(cfg, insns, [(0, 0, 0), (50, 0, 0)], acc)


def test_post_not_built():
    """On a config without the unit, POST does nothing and reports an error."""
    acc = random_acc(SMALL, 16, 5)
    run_alu(SMALL, [alu_insn(alu_opcode=AluOp.POST, use_imm=1, imm=0)], [(0, 0, 0)], acc, expect_error=True)
