"""The compute module end to end: LOAD UOP/ACC/ACC_8BIT, GEMM, ALU, FINISH, the OUT mirror, tokens."""

import numpy as np
import pytest
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.sim import Simulator

from hw.compute import Compute
from hw.sram import make_memory
from sw.config import load_config
from sw.isa import AluOp, MemId, Opcode, isa_for
from tests.hw.bus_models import DmaModel, pack_rows, unpack_rows
from tests.hw.test_alu import alu_insn, ref_alu
from tests.hw.test_gemm import gemm_insn, ref_gemm
from tests.hw.test_load import mem_insn, ref_load

pytestmark = pytest.mark.slow        # whole-module Amaranth simulations: seconds each

SMALL = load_config("small")
UOP_BASE, ACC_BASE = 0x4000, 0x8000
DRAM_BYTES = 0x10000


def set_rows(banks, rows):
    """Initial contents of a banked SRAM (acc or out: the rows split over the banks in order)."""
    n = len(rows) // len(banks)
    for b, mem in enumerate(banks):
        mem.init = rows[b * n:(b + 1) * n]


def get_rows(ctx, banks):
    """All rows of a banked SRAM, in row order."""
    return [ctx.get(mem.data[i]) for mem in banks for i in range(mem.depth)]


class RefCompute:
    """numpy model of the compute module's state: uop, acc, out (the mirror), counters."""

    def __init__(self, cfg, inp, wgt, out_init, dram):
        self.cfg, self.inp, self.wgt, self.dram = cfg, inp, wgt, dram
        self.uop = np.zeros((cfg.UOP_DEPTH, 4), np.uint8)
        self.acc = np.zeros((cfg.ACC_DEPTH, cfg.BATCH, cfg.BLOCK_OUT), np.int64)
        self.out = out_init.copy()
        self.acc_writes = self.gemm_uops = self.alu_uops = 0

    def written(self, rows):
        rows = np.asarray(rows) % self.cfg.ACC_DEPTH
        self.out[rows] = (self.acc[rows] & 0xFF).astype(np.uint8).view(np.int8)
        self.acc_writes += len(rows)

    def run(self, f):
        cfg = self.cfg
        lanes = cfg.BATCH * cfg.BLOCK_OUT
        if f["opcode"] == Opcode.LOAD:
            if f["x_size"] == 0:
                return
            n = (f["x_pad_0"] + f["x_size"] + f["x_pad_1"]) * (f["y_pad_0"] + f["y_size"] + f["y_pad_1"])
            rows = np.arange(f["sram_base"], f["sram_base"] + n)
            if f["memory_type"] == MemId.UOP:
                ref_load(self.uop, self.dram, f, 4, UOP_BASE)
                return
            eb = cfg.ACC_ELEM_BYTES if f["memory_type"] == MemId.ACC else lanes
            tmp = np.zeros((cfg.ACC_DEPTH, eb), np.uint8)
            ref_load(tmp, self.dram, f, eb, ACC_BASE)
            if f["memory_type"] == MemId.ACC:
                vals = tmp.view(np.int32)
            else:
                vals = tmp.view(np.int8)
            self.acc[rows] = vals[rows].reshape(-1, cfg.BATCH, cfg.BLOCK_OUT)
            self.written(rows)
            return
        if f["opcode"] == Opcode.FINISH:
            return
        words = self.uop.view(np.uint32)[:, 0]
        uops = list(zip(*isa_for(cfg).decode_uops(words)))
        rows = []
        for i_out in range(f["iter_out"]):
            for i_in in range(f["iter_in"]):
                for u in range(f["uop_bgn"], f["uop_end"]):
                    rows.append(uops[u][0] + i_out * f["dst_factor_out"] + i_in * f["dst_factor_in"])
        if f["opcode"] == Opcode.GEMM:
            ref_gemm(cfg, self.acc, self.inp, self.wgt, uops, f)
            if not f["reset"]:
                self.gemm_uops += len(rows)
        else:
            ref_alu(cfg, self.acc, uops, f)
            self.alu_uops += len(rows)
        self.written(rows)


def run_compute(cfg, insns, *, seed=0, l2g_at=0, s2g_at=0, stall=0.3, max_cycles=20000, dram_patch=None,
                uop_base=UOP_BASE, acc_base=ACC_BASE, check=True):
    """Run a program through Compute; tokens l2g/s2g become available at the given cycles (as many
    as the program pops). Returns the event log {name: [cycles]}; checks every SRAM against numpy."""
    rng = np.random.default_rng(seed)
    isa = isa_for(cfg)
    dram = rng.integers(0, 256, DRAM_BYTES, dtype=np.uint8)
    for addr, data in (dram_patch or {}).items():
        dram[addr:addr + len(data)] = data
    dram_copy = dram.copy()
    inp = rng.integers(-128, 128, (cfg.INP_DEPTH, cfg.BATCH, cfg.BLOCK_IN), dtype=np.int64)
    wgt = rng.integers(-128, 128, (cfg.WGT_DEPTH, cfg.BLOCK_OUT, cfg.BLOCK_IN), dtype=np.int64)
    out_init = rng.integers(-128, 128, (cfg.ACC_DEPTH, cfg.BATCH, cfg.BLOCK_OUT), dtype=np.int64)

    m = Module()
    m.submodules.dut = dut = Compute(cfg)
    m.submodules.inp_mem = inp_mem = make_memory(cfg, "inp", init=pack_rows(inp, np.int8))
    m.submodules.wgt_mem = wgt_mem = make_memory(cfg, "wgt", init=pack_rows(wgt, np.int8))
    set_rows(dut.out_banks, pack_rows(out_init, np.int8))
    wiring.connect(m, dut.inp_rd, inp_mem.read_port())
    wiring.connect(m, dut.wgt_rd, wgt_mem.read_port())
    sim = Simulator(m)
    sim.add_clock(1e-6)
    DmaModel(dram, cfg.BUS_WIDTH, seed=seed, stall=stall).add_read(sim, dut.dma)
    log = {k: [] for k in ("pop_l2g", "pop_s2g", "push_g2l", "push_g2s", "write", "finish", "gemm_busy",
                           "alu_busy")}
    n_l2g = sum(f.get("pop_prev", 0) for f in insns)
    n_s2g = sum(f.get("pop_next", 0) for f in insns)

    async def tokens(ctx):
        have = {"l2g": 0, "s2g": 0}
        cycle = 0
        writes = 0
        async for _, _, *vals in ctx.tick().sample(dut.l2g.pop, dut.s2g.pop, dut.g2l.push, dut.g2s.push,
                                                   dut.acc_writes, dut.finish, dut.gemm.busy, dut.alu.busy):
            cycle += 1
            for name, v in zip(("pop_l2g", "pop_s2g", "push_g2l", "push_g2s", "write", "finish",
                                "gemm_busy", "alu_busy"), vals):
                if name == "write":
                    # the counter shows a cycle's acc writes (up to one per bank) in the next cycle
                    log[name] += [cycle - 1] * (v - writes)
                    writes = v
                elif v:
                    log[name].append(cycle)
            for q, v in (("l2g", vals[0]), ("s2g", vals[1])):
                if v:
                    assert have[q] > 0, f"popped an empty {q} queue"
                    have[q] -= 1
            if cycle == max(l2g_at, 1):
                have["l2g"] += n_l2g
            if cycle == max(s2g_at, 1):
                have["s2g"] += n_s2g
            ctx.set(dut.l2g.valid, have["l2g"] > 0)
            ctx.set(dut.s2g.valid, have["s2g"] > 0)

    sim.add_process(tokens)
    res = {}

    async def bench(ctx):
        ctx.set(dut.uop_base, uop_base)
        ctx.set(dut.acc_base, acc_base)
        waited = 0
        for i, f in enumerate(insns):
            ctx.set(dut.insn.payload, isa.encode(**f))
            ctx.set(dut.insn.valid, 1)
            while True:         # (a bounded wait: a front end that never takes the instruction fails the test)
                _, _, ready = await ctx.tick().sample(dut.insn.ready)
                waited += 1
                if ready:
                    break
                if waited > max_cycles:
                    raise AssertionError(f"compute did not take instruction {i} within {max_cycles} cycles")
        ctx.set(dut.insn.valid, 0)
        for _ in range(max_cycles):
            await ctx.tick()
            if not ctx.get(dut.busy) or ctx.get(dut.error):
                break
        else:
            raise AssertionError("compute did not finish")
        await ctx.tick()
        for name in ("acc_writes", "gemm_uops", "alu_uops", "error"):
            res[name] = ctx.get(getattr(dut, name))
        res["acc"] = get_rows(ctx, dut.acc_banks)
        res["uop"] = [ctx.get(dut.uop_mem.data[i]) for i in range(cfg.UOP_DEPTH)]
        res["out"] = get_rows(ctx, dut.out_banks)

    sim.add_testbench(bench)
    sim.run()
    log.update(res)
    log.update(inp=inp, wgt=wgt, dram=dram_copy)
    if res["error"] or not check:
        return log
    ref = RefCompute(cfg, inp, wgt, out_init, dram)
    for f in insns:
        ref.run(f)
    np.testing.assert_array_equal(np.array(res["uop"], dtype=np.uint32), ref.uop.view(np.uint32)[:, 0])
    np.testing.assert_array_equal(unpack_rows(res["acc"], np.int32, (cfg.BATCH, cfg.BLOCK_OUT)),
                                  ref.acc)
    np.testing.assert_array_equal(unpack_rows(res["out"], np.int8, (cfg.BATCH, cfg.BLOCK_OUT)), ref.out)
    assert (res["acc_writes"], res["gemm_uops"], res["alu_uops"]) == (ref.acc_writes, ref.gemm_uops, ref.alu_uops)
    assert len(log["write"]) == ref.acc_writes
    return log


def uop_load(cfg, **f):
    return mem_insn(cfg, memory_type=MemId.UOP, **f)


def program(cfg):
    """LOAD UOP, LOAD ACC (padded), LOAD ACC_8BIT, GEMM reset, GEMM, ALU imm, ALU tensor, FINISH.
    The uops are taken from DRAM words 2.. of the uop region, written into DRAM by the caller."""
    return [
        uop_load(cfg, sram_base=0, dram_base=2, y_size=1, x_size=10, x_stride=10, pop_prev=1),
        mem_insn(cfg, memory_type=MemId.ACC, sram_base=0, dram_base=1, y_size=2, x_size=3, x_stride=4,
                 x_pad_0=1, y_pad_1=1),
        mem_insn(cfg, memory_type=MemId.ACC_8BIT, sram_base=20, dram_base=3, y_size=2, x_size=2,
                 x_stride=3, x_pad_1=1),
        gemm_insn(reset=1, uop_bgn=0, uop_end=4, push_prev=1),
        gemm_insn(uop_bgn=0, uop_end=6, iter_out=2, iter_in=2, dst_factor_out=1, src_factor_in=3,
                  wgt_factor_out=2, pop_next=1),
        alu_insn(alu_opcode=AluOp.SHR, use_imm=1, imm=2, uop_bgn=6, uop_end=8, iter_in=2, dst_factor_in=1),
        alu_insn(alu_opcode=AluOp.ADD, uop_bgn=8, uop_end=10, push_next=1),
        gemm_insn(opcode=Opcode.FINISH, uop_end=0, iter_out=0, iter_in=0),
    ]


UOPS = [(30, 0, 0), (31, 1, 1), (32, 2, 2), (33, 3, 3), (30, 4, 5), (0, 6, 7),
        (20, 0, 0), (1, 0, 0), (21, 30, 0), (2, 20, 0)]


def uop_bytes(cfg, uops):
    return np.array([isa_for(cfg).encode_uop(*u) for u in uops], dtype=np.uint32).view(np.uint8)


def test_program():
    cfg = SMALL
    log = run_compute(cfg, program(cfg), seed=5, l2g_at=30, s2g_at=120,
                      dram_patch={UOP_BASE + 8: uop_bytes(cfg, UOPS)})
    # tokens: the first instruction waited for l2g; GEMM #2 waited for s2g
    assert log["pop_l2g"] and log["pop_l2g"][0] >= 30
    assert all(c > log["pop_l2g"][0] for c in log["write"])
    assert len(log["pop_s2g"]) == 1 and log["pop_s2g"][0] >= 120
    # g2l pushed after the reset GEMM's last write, before the next GEMM's first write
    reset_writes = [c for c in log["write"] if c < log["push_g2l"][0]]
    assert len(log["push_g2l"]) == 1 and reset_writes and max(reset_writes) < log["push_g2l"][0]
    assert all(c > log["push_g2l"][0] for c in log["write"][len(reset_writes):])
    # g2s pushed after the very last write, then FINISH
    assert len(log["push_g2s"]) == 1 and log["push_g2s"][0] > max(log["write"])
    assert len(log["finish"]) == 1 and log["finish"][0] > log["push_g2s"][0]


@pytest.mark.parametrize("bus_log", [7, 9])
def test_loads_wide_bus(bus_log):
    """UOP (4 bytes), ACC_8BIT and ACC elements narrower than a 128- or 512-bit bus, with padding."""
    cfg = SMALL.with_changes(LOG_BUS_WIDTH=bus_log)
    insns = [
        uop_load(cfg, sram_base=3, dram_base=5, y_size=1, x_size=7, x_stride=7),
        mem_insn(cfg, memory_type=MemId.ACC, sram_base=2, dram_base=3, y_size=3, x_size=2, x_stride=5,
                 x_pad_1=1, y_pad_0=1),
        mem_insn(cfg, memory_type=MemId.ACC_8BIT, sram_base=40, dram_base=7, y_size=3, x_size=3,
                 x_stride=5, x_pad_0=2, y_pad_0=1, y_pad_1=1),
        alu_insn(alu_opcode=AluOp.MAX, use_imm=1, imm=-3, uop_bgn=3, uop_end=5),
    ]
    uops = [(2, 0, 0), (41, 0, 0)]
    run_compute(cfg, insns, seed=bus_log, dram_patch={UOP_BASE + 20: uop_bytes(cfg, uops)})


def test_nops_and_finish_tokens():
    """NOP loads (x_size 0) and FINISH only move tokens; pops come before, pushes after."""
    insns = [
        uop_load(SMALL, x_size=0, pop_prev=1, push_prev=1),
        mem_insn(SMALL, memory_type=MemId.ACC, x_size=0, pop_next=1, push_next=1),
        gemm_insn(opcode=Opcode.FINISH, uop_end=0, iter_out=0, iter_in=0, pop_prev=1, push_next=1),
    ]
    log = run_compute(SMALL, insns, l2g_at=20, s2g_at=50)
    assert log["write"] == []
    assert len(log["pop_l2g"]) == 2 and log["pop_l2g"][0] >= 20
    assert log["push_g2l"][0] > log["pop_l2g"][0]
    assert log["pop_s2g"][0] >= 50 and log["push_g2s"][0] > log["pop_s2g"][0]
    assert log["pop_l2g"][1] > log["push_g2s"][0]
    assert len(log["finish"]) == 1 and log["pop_l2g"][1] <= log["finish"][0] < log["push_g2s"][1]


def test_bad_instructions_halt_until_clear():
    """Each bad instruction sets ``error`` and halts the module without popping its tokens or writing
    acc; ``clear`` takes it out of the halt, and the next instruction runs."""
    cfg = SMALL
    isa = isa_for(cfg)
    bad = {
        "store": mem_insn(cfg, opcode=Opcode.STORE, memory_type=MemId.OUT, pop_prev=1),
        "mul": alu_insn(alu_opcode=AluOp.MUL, use_imm=1, imm=2, pop_prev=1),
        "load_inp": mem_insn(cfg, memory_type=MemId.INP, pop_prev=1),
        "opcode": dict(alu_insn(alu_opcode=7, pop_prev=1)),
    }
    m = Module()
    m.submodules.dut = dut = Compute(cfg)
    sim = Simulator(m)
    sim.add_clock(1e-6)
    pops, seen = [], {}

    async def watch(ctx):
        async for _, _, pop in ctx.tick().sample(dut.l2g.pop):
            pops.append(pop)

    async def bench(ctx):
        async def send(f):
            ctx.set(dut.insn.payload, isa.encode(**f))
            ctx.set(dut.insn.valid, 1)
            await ctx.tick().until(dut.insn.ready)
            ctx.set(dut.insn.valid, 0)
        ctx.set(dut.l2g.valid, 1)                 # a token is there to pop: a bad instruction must not
        for name, f in bad.items():
            await send(f)
            await ctx.tick().repeat(3)
            assert ctx.get(dut.error) and not ctx.get(dut.insn.ready), name
            assert not any(pops) and ctx.get(dut.acc_writes) == 0, name
            ctx.set(dut.clear, 1)
            await ctx.tick()
            ctx.set(dut.clear, 0)
            await ctx.tick()
            assert not ctx.get(dut.error), name
        await send(gemm_insn(opcode=Opcode.FINISH, uop_end=0, iter_out=0, iter_in=0))
        for _ in range(5):
            await ctx.tick()
            seen["finish"] = seen.get("finish", 0) | ctx.get(dut.finish)
        assert not ctx.get(dut.error)

    sim.add_process(watch)
    sim.add_testbench(bench)
    sim.run()
    assert seen["finish"]


# ---------------------------------------------------------------------------------------------
# GEMM and ALU side by side: instructions whose acc footprints lie in different banks (halves of
# the acc rows) overlap; anything else runs one after the other; pushes stay in program order.

def _dual_program(cfg, gemm_rows, alu_rows, alu_first=False, alu_tensor=False, pushes=False):
    """LOAD UOP, then a long GEMM over acc rows gemm_rows[0] + 0..23 and a long ALU over rows
    alu_rows[0] + 0..23 (in either order), then FINISH."""
    half = cfg.ACC_DEPTH // 2
    uops = [(gemm_rows, 3, 5), (gemm_rows + 1, 4, 6), (gemm_rows + 2, 5, 7),
            (alu_rows, alu_rows + 12 if alu_rows + 12 < 2 * half else alu_rows - 12, 0)]
    g = gemm_insn(uop_bgn=0, uop_end=3, iter_out=4, iter_in=2, dst_factor_out=6, dst_factor_in=3,
                  src_factor_out=1, wgt_factor_in=1, push_next=int(pushes))
    a = alu_insn(alu_opcode=AluOp.ADD, use_imm=int(not alu_tensor), imm=-7, uop_bgn=3, uop_end=4,
                 iter_out=6, iter_in=4, dst_factor_out=4, dst_factor_in=1, push_next=int(pushes))
    body = [a, g] if alu_first else [g, a]
    # (the acc load first: the uop load after it waits for it to end, so the body's units start together; a
    # unit of the other bank would otherwise run beside the acc load instead)
    insns = [mem_insn(cfg, memory_type=MemId.ACC, sram_base=gemm_rows, dram_base=1, y_size=1, x_size=24,
                      x_stride=24),
             uop_load(cfg, sram_base=0, dram_base=0, y_size=1, x_size=len(uops), x_stride=len(uops)),
             *body,
             gemm_insn(opcode=Opcode.FINISH, uop_end=0, iter_out=0, iter_in=0)]
    return insns, {UOP_BASE: uop_bytes(cfg, uops)}


def _overlap(log):
    return len(set(log["gemm_busy"]) & set(log["alu_busy"]))


@pytest.mark.parametrize("alu_first, alu_tensor", [(False, False), (True, True)])
def test_gemm_and_alu_overlap_in_different_banks(alu_first, alu_tensor):
    cfg = SMALL
    half = cfg.ACC_DEPTH // 2
    insns, patch = _dual_program(cfg, gemm_rows=10, alu_rows=half + 100, alu_first=alu_first, alu_tensor=alu_tensor)
    log = run_compute(cfg, insns, seed=3, dram_patch=patch)
    assert _overlap(log) >= 10
    # and the other way round: GEMM in the upper bank, ALU in the lower
    insns, patch = _dual_program(cfg, gemm_rows=half + 40, alu_rows=7, alu_first=alu_first, alu_tensor=alu_tensor)
    log = run_compute(cfg, insns, seed=4, dram_patch=patch)
    assert _overlap(log) >= 10


@pytest.mark.parametrize("alu_rows", [100, 8, 5])
def test_same_bank_runs_in_order(alu_rows):
    """Footprints in the same bank (disjoint rows, or rows the GEMM writes: the ALU must see the
    GEMM's results) never overlap."""
    cfg = SMALL
    insns, patch = _dual_program(cfg, gemm_rows=4, alu_rows=alu_rows, alu_tensor=True)
    log = run_compute(cfg, insns, seed=5, dram_patch=patch)
    assert _overlap(log) == 0


def test_footprint_across_banks_runs_alone():
    """A GEMM whose loop nest crosses the middle row runs alone even if the ALU's rows are far away."""
    cfg = SMALL
    half = cfg.ACC_DEPTH // 2
    insns, patch = _dual_program(cfg, gemm_rows=half - 20, alu_rows=half + 150)
    log = run_compute(cfg, insns, seed=6, dram_patch=patch)
    assert _overlap(log) == 0


def test_pushes_stay_in_program_order():
    """The ALU (younger, shorter) ends first but pushes after the GEMM: each g2s push follows the
    last write of every older instruction."""
    cfg = SMALL
    half = cfg.ACC_DEPTH // 2
    insns, patch = _dual_program(cfg, gemm_rows=0, alu_rows=half + 9, pushes=True)
    log = run_compute(cfg, insns, seed=7, dram_patch=patch)
    assert _overlap(log) >= 10
    assert len(log["push_g2s"]) == 2
    last_gemm_write = max(log["gemm_busy"])
    assert log["push_g2s"][0] >= last_gemm_write
    assert log["push_g2s"][1] > log["push_g2s"][0]
    assert max(log["write"]) < log["push_g2s"][1]


def test_alu_sequence_beside_one_gemm():
    """Several ALU instructions (the first with a push) run one after the other beside one long GEMM:
    an ALU instruction that ends before the older GEMM frees its unit at once, its push waits."""
    cfg = SMALL
    half = cfg.ACC_DEPTH // 2
    insns, patch = _dual_program(cfg, gemm_rows=0, alu_rows=half + 9, pushes=True)
    gemm, alu = insns[2], insns[3]
    alu2 = dict(alu, alu_opcode=AluOp.MAX, imm=3, push_next=0, iter_out=2)
    insns = insns[:2] + [dict(gemm, iter_out=8, dst_factor_out=3), alu, alu2] + insns[4:]
    log = run_compute(cfg, insns, seed=8, dram_patch=patch)
    gemm_busy = set(log["gemm_busy"])
    alu_busy = sorted(log["alu_busy"])
    assert all(c in gemm_busy for c in alu_busy[5:-5])       # both ALU instructions ran beside the GEMM
    assert len(log["push_g2s"]) == 2 and min(log["push_g2s"]) >= max(gemm_busy)


@pytest.mark.parametrize("overwrite", [False, True])
def test_uop_load_beside_a_running_gemm(overwrite):
    """A LOAD UOP into rows no running instruction reads (kernel staging) runs beside the GEMM; one
    that overwrites the GEMM's micro-ops waits for it (the results show which micro-ops it used)."""
    cfg = SMALL
    half = cfg.ACC_DEPTH // 2
    uops = [(0, 3, 5), (1, 4, 6), (2, 5, 7), (half + 3, 0, 0), (5, 1, 1), (6, 2, 2), (7, 3, 3)]
    dst = 1 if overwrite else 10
    insns = [uop_load(cfg, sram_base=0, dram_base=0, y_size=1, x_size=3, x_stride=3),
             gemm_insn(uop_bgn=0, uop_end=3, iter_out=30, iter_in=2, dst_factor_out=3, src_factor_out=1,
                       wgt_factor_in=1),
             uop_load(cfg, sram_base=dst, dram_base=3, y_size=1, x_size=4, x_stride=4),
             alu_insn(alu_opcode=AluOp.ADD, use_imm=1, imm=5, uop_bgn=dst, uop_end=dst + 1, iter_in=20,
                      dst_factor_in=1),
             gemm_insn(opcode=Opcode.FINISH, uop_end=0, iter_out=0, iter_in=0)]
    log = run_compute(cfg, insns, seed=9, dram_patch={UOP_BASE: uop_bytes(cfg, uops)})
    overlap = _overlap(log)
    assert (overlap == 0) if overwrite else (overlap >= 10)


@pytest.mark.parametrize("case", ["beside", "bank-end", "same-bank", "across", "across-by-one", "push", "alu",
                                  "alu-same-bank", "uop-load"])
def test_acc_load_beside_younger_gemms(case):
    """A LOAD ACC_8BIT that pushes nothing and writes rows of one bank (up to its last row: "bank-end") lets a
    younger GEMM or ALU instruction of the other bank run beside it; one of the same bank, a load across the
    middle row (by one row: "across-by-one") or with a push, and a younger LOAD (which shares the DMA port) wait
    for it to end (the results equal the in-order model in every case)."""
    cfg = SMALL
    half = cfg.ACC_DEPTH // 2
    rows = 24
    sram = {"same-bank": 40, "alu-same-bank": 40, "across": half - 12, "across-by-one": half - rows + 1,
            "bank-end": cfg.ACC_DEPTH - rows}.get(case, half + 40)
    uops = [(0, 3, 5), (1, 4, 6), (2, 5, 7), (half + 100, 0, 0)]
    load = mem_insn(cfg, memory_type=MemId.ACC_8BIT, sram_base=sram, dram_base=5, y_size=3, x_size=rows // 3,
                    x_stride=40, push_next=int(case == "push"))
    younger = gemm_insn(uop_bgn=0, uop_end=3, iter_out=8, iter_in=2, dst_factor_out=3, src_factor_out=1,
                        wgt_factor_in=1)
    if case.startswith("alu"):
        younger = alu_insn(alu_opcode=AluOp.ADD, use_imm=1, imm=9, uop_bgn=0, uop_end=3, iter_in=8,
                           dst_factor_in=3)
    if case == "across-by-one":     # (its last row is in the upper bank: so is the GEMM)
        younger = dict(younger, uop_bgn=3, uop_end=4)
    staging = [uop_load(cfg, sram_base=10, dram_base=0, y_size=1, x_size=3, x_stride=3)] if case == "uop-load" else []
    insns = [uop_load(cfg, sram_base=0, dram_base=0, y_size=1, x_size=len(uops), x_stride=len(uops)),
             load, *staging, younger, gemm_insn(opcode=Opcode.FINISH, uop_end=0, iter_out=0, iter_in=0)]
    log = run_compute(cfg, insns, seed=11, stall=0.0, dram_patch={UOP_BASE: uop_bytes(cfg, uops)})
    # the acc writes before the younger instruction starts are the load's: all of them unless it ran beside
    start = min(log["alu_busy" if case.startswith("alu") else "gemm_busy"])
    early = sum(c < start for c in log["write"])
    assert (early < rows - 3) if case in ("beside", "bank-end", "alu") else (early == rows)


def test_many_held_pushes_all_leave_after_the_older_gemm():
    """Twenty short ALU instructions with a g2s push each run beside one long GEMM: the pushes of
    those that end first are held, then leave one per cycle after the GEMM ends; none is lost."""
    cfg = SMALL
    half = cfg.ACC_DEPTH // 2
    insns, patch = _dual_program(cfg, gemm_rows=0, alu_rows=half + 9, pushes=True)
    gemm, alu = insns[2], insns[3]
    short = dict(alu, iter_out=1, iter_in=2, push_next=1)
    insns = insns[:2] + [dict(gemm, iter_out=30, dst_factor_out=1, push_next=0)] + [short] * 20 + insns[4:]
    log = run_compute(cfg, insns, seed=10, dram_patch=patch)
    assert len(log["push_g2s"]) == 20
    assert min(log["push_g2s"]) >= max(log["gemm_busy"])
    first = log["push_g2s"][0]
    assert log["push_g2s"][:10] == list(range(first, first + 10))      # at least ten were held
    assert all(b > a for a, b in zip(log["push_g2s"], log["push_g2s"][1:]))
