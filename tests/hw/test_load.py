"""The load module (LOAD INP/WGT) and TensorLoad against a numpy reference, with a random-stall DRAM."""

import numpy as np
import pytest
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.sim import Simulator

from hw.load import Load, TensorLoad
from hw.sram import make_memory
from sw.config import load_config
from sw.isa import MemId, Opcode, isa_for
from tests.hw.bus_models import DmaModel

SMALL = load_config("small")
INP_BASE, WGT_BASE = 0x8000, 0x10000
DRAM_BYTES = 0x20000


def ref_load(sram, dram, f, eb, base):
    """numpy LOAD (docs/architecture.md §2.5): sram is a uint8 [depth, eb] array, updated in place."""
    if f["x_size"] == 0:
        return
    pitch = f["x_pad_0"] + f["x_size"] + f["x_pad_1"]
    s = f["sram_base"]
    sram[s:s + pitch * f["y_pad_0"]] = 0
    s += pitch * f["y_pad_0"]
    for y in range(f["y_size"]):
        sram[s:s + f["x_pad_0"]] = 0
        s += f["x_pad_0"]
        addr = ((f["dram_base"] + y * f["x_stride"]) * eb) | base
        sram[s:s + f["x_size"]] = dram[addr:addr + f["x_size"] * eb].reshape(-1, eb)
        s += f["x_size"]
        sram[s:s + f["x_pad_1"]] = 0
        s += f["x_pad_1"]
    sram[s:s + pitch * f["y_pad_1"]] = 0


def mem_insn(cfg, **f):
    d = dict(opcode=Opcode.LOAD, pop_prev=0, pop_next=0, push_prev=0, push_next=0, memory_type=MemId.INP,
             sram_base=0, dram_base=0, y_size=1, x_size=1, x_stride=1, y_pad_0=0, y_pad_1=0, x_pad_0=0,
             x_pad_1=0)
    d.update(f)
    return d


def sram_rows(mem_words, eb):
    return np.frombuffer(b"".join(int(w).to_bytes(eb, "little") for w in mem_words), np.uint8).reshape(-1, eb)


def run_load(cfg, insns, *, seed=0, tokens_at=None, stall=0.3):
    """Run ``insns`` (field dicts) through Load; g2l tokens: one per instruction, given at cycle
    ``tokens_at`` (None: from the start). Returns (inp rows, wgt rows, push cycles, write cycles,
    pop cycles, dram)."""
    rng = np.random.default_rng(seed)
    isa = isa_for(cfg)
    dram = rng.integers(0, 256, DRAM_BYTES, dtype=np.uint8)
    inp_init = [int(x) for x in rng.integers(1, 1 << 62, cfg.INP_DEPTH)]
    wgt_init = [int(x) for x in rng.integers(1, 1 << 62, cfg.WGT_DEPTH)]
    m = Module()
    m.submodules.dut = dut = Load(cfg)
    m.submodules.inp_mem = inp_mem = make_memory(cfg, "inp", init=inp_init)
    m.submodules.wgt_mem = wgt_mem = make_memory(cfg, "wgt", init=wgt_init)
    wiring.connect(m, dut.inp_wr, inp_mem.write_port())
    wiring.connect(m, dut.wgt_wr, wgt_mem.write_port())
    sim = Simulator(m)
    sim.add_clock(1e-6)
    dma = DmaModel(dram, cfg.BUS_WIDTH, seed=seed, stall=stall)
    dma.add_read(sim, dut.dma)
    log = {"push": [], "write": [], "pop": []}
    state = {"tokens": 0, "given": False}

    async def monitor(ctx):
        cycle = 0
        async for _, _, push, pop, ie, we in ctx.tick().sample(dut.l2g.push, dut.g2l.pop, dut.inp_wr.en,
                                                               dut.wgt_wr.en):
            cycle += 1
            if push:
                log["push"].append(cycle)
            if pop:
                log["pop"].append(cycle)
                assert state["tokens"] > 0, "popped an empty g2l queue"
                state["tokens"] -= 1
            if ie or we:
                log["write"].append(cycle)
            if not state["given"] and (tokens_at is None or cycle >= tokens_at):
                state["given"] = True
                state["tokens"] += sum(f["pop_next"] for f in insns)
            ctx.set(dut.g2l.valid, state["tokens"] > 0)

    sim.add_process(monitor)
    ctx_out = {}

    async def bench(ctx):
        ctx.set(dut.inp_base, INP_BASE)
        ctx.set(dut.wgt_base, WGT_BASE)
        for f in insns:
            ctx.set(dut.insn.payload, isa.encode(**f))
            ctx.set(dut.insn.valid, 1)
            await ctx.tick().until(dut.insn.ready)
        ctx.set(dut.insn.valid, 0)
        for _ in range(20000):
            await ctx.tick()
            if not ctx.get(dut.busy) and len(log["push"]) == sum(f["push_next"] for f in insns):
                break
        else:
            raise AssertionError("load did not finish")
        assert not ctx.get(dut.error)
        ctx_out["inp"] = [ctx.get(inp_mem.data[i]) for i in range(cfg.INP_DEPTH)]
        ctx_out["wgt"] = [ctx.get(wgt_mem.data[i]) for i in range(cfg.WGT_DEPTH)]

    sim.add_testbench(bench)
    sim.run()
    log["dma"] = dma.reads
    ref_inp = sram_rows(inp_init, cfg.INP_ELEM_BYTES).copy()
    ref_wgt = sram_rows(wgt_init, cfg.WGT_ELEM_BYTES).copy()
    for f in insns:
        if f["memory_type"] == MemId.INP:
            ref_load(ref_inp, dram, f, cfg.INP_ELEM_BYTES, INP_BASE)
        else:
            ref_load(ref_wgt, dram, f, cfg.WGT_ELEM_BYTES, WGT_BASE)
    np.testing.assert_array_equal(sram_rows(ctx_out["inp"], cfg.INP_ELEM_BYTES), ref_inp)
    np.testing.assert_array_equal(sram_rows(ctx_out["wgt"], cfg.WGT_ELEM_BYTES), ref_wgt)
    return log


PAD_CASES = {
    "plain": dict(),
    "y_pad_0": dict(y_pad_0=2),
    "y_pad_1": dict(y_pad_1=3),
    "x_pad_0": dict(x_pad_0=1),
    "x_pad_1": dict(x_pad_1=2),
    "all": dict(y_pad_0=1, y_pad_1=2, x_pad_0=3, x_pad_1=1),
}


@pytest.mark.parametrize("pad", list(PAD_CASES))
@pytest.mark.parametrize("mem", [MemId.INP, MemId.WGT])
def test_padding(pad, mem):
    f = mem_insn(SMALL, memory_type=mem, sram_base=5, dram_base=3, y_size=3, x_size=4, x_stride=7,
                 **PAD_CASES[pad])
    run_load(SMALL, [f], seed=list(PAD_CASES).index(pad))


@pytest.mark.parametrize("bus_log", [7, 8])
def test_narrow_elements(bus_log):
    """INP elements (8 bytes) narrower than a 128/256-bit bus: odd starts, strides, padding."""
    cfg = SMALL.with_changes(LOG_BUS_WIDTH=bus_log)
    insns = [
        mem_insn(cfg, sram_base=1, dram_base=3, y_size=4, x_size=5, x_stride=9, x_pad_0=1, x_pad_1=2),
        mem_insn(cfg, sram_base=100, dram_base=6, y_size=3, x_size=1, x_stride=3, y_pad_0=1),
        mem_insn(cfg, sram_base=200, dram_base=1, y_size=2, x_size=7, x_stride=7, y_pad_1=1),
        mem_insn(cfg, memory_type=MemId.WGT, sram_base=7, dram_base=1, y_size=2, x_size=3, x_stride=5,
                 x_pad_0=2, y_pad_0=1),
    ]
    run_load(cfg, insns, seed=bus_log)


@pytest.mark.parametrize("config", ["default", "batch2"])
def test_default_config_and_mix(config):
    """The default config (16-byte INP, 256-byte WGT on a 64-bit bus), batch2 (32-byte INP)."""
    cfg = load_config(config)
    insns = [
        mem_insn(cfg, sram_base=2, dram_base=5, y_size=2, x_size=3, x_stride=4, x_pad_1=1, y_pad_0=1),
        mem_insn(cfg, memory_type=MemId.WGT, sram_base=3, dram_base=2, y_size=2, x_size=1, x_stride=3),
    ]
    run_load(cfg, insns, seed=9)


def test_nop_and_tokens():
    """A NOP (x_size 0) only moves tokens; a LOAD waits for its g2l token and pushes l2g after its
    last SRAM write."""
    insns = [
        mem_insn(SMALL, x_size=0, pop_next=1, push_next=1, sram_base=3),
        mem_insn(SMALL, sram_base=8, dram_base=1, y_size=2, x_size=2, x_stride=2, pop_next=1, push_next=1),
        mem_insn(SMALL, memory_type=MemId.WGT, x_size=2, y_size=1, push_next=1),
    ]
    log = run_load(SMALL, insns, tokens_at=40, seed=3)
    assert len(log["pop"]) == 2 and len(log["push"]) == 3
    assert log["pop"][0] >= 40, "popped before the token was there"
    assert log["push"][0] >= log["pop"][0]
    # the second instruction's push comes after its last write, and that after its pop
    writes2 = [c for c in log["write"] if log["pop"][1] < c < log["push"][1]]
    assert len(writes2) == 4
    assert all(c < log["push"][1] for c in log["write"][:4])


def test_parameter_checks():
    with pytest.raises(ValueError, match="elem_bytes"):
        TensorLoad(SMALL, elem_bytes=3, depth=16)
    with pytest.raises(ValueError, match="depth"):
        TensorLoad(SMALL, elem_bytes=4, depth=0)


def test_dram_commands():
    """The DMA commands are the aligned bus words covering each row."""
    cfg = SMALL.with_changes(LOG_BUS_WIDTH=7)
    f = mem_insn(cfg, dram_base=3, y_size=2, x_size=4, x_stride=5)
    log = run_load(cfg, [f], seed=1)
    # row 0: byte 24 -> word at 16, offset 8, 8 + 32 bytes = 3 beats; row 1: byte 64, 2 beats
    assert log["dma"] == [(INP_BASE + 16, 3), (INP_BASE + 64, 2)]


@pytest.mark.parametrize("stall", [0.0, 0.3, 0.8])
@pytest.mark.parametrize("bus_log", [6, 7, 8, 9])
def test_random(bus_log, stall):
    """Random sizes, strides, offsets and padding for INP and WGT on every bus width."""
    cfg = SMALL.with_changes(LOG_BUS_WIDTH=bus_log)
    rng = np.random.default_rng(100 + bus_log)
    insns = []
    for i in range(6):
        mem = MemId.INP if i % 2 == 0 else MemId.WGT
        eb = cfg.INP_ELEM_BYTES if mem == MemId.INP else cfg.WGT_ELEM_BYTES
        x_size = int(rng.integers(1, 6))
        y_size = int(rng.integers(1, 4))
        x_stride = x_size + int(rng.integers(0, 4))
        dram_base = int(rng.integers(0, (0x8000 // eb) - y_size * x_stride))
        pads = {p: int(rng.integers(0, 3)) for p in ("y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1")}
        insns.append(mem_insn(cfg, memory_type=mem, sram_base=int(rng.integers(0, 200)), dram_base=dram_base,
                              y_size=y_size, x_size=x_size, x_stride=x_stride, **pads))
    run_load(cfg, insns, seed=bus_log, stall=stall)
