"""The store module against a numpy reference: strides, narrow elements with strobes, tokens."""

import numpy as np
import pytest
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.sim import Simulator

from hw.sram import make_memory
from hw.store import Store
from sw.config import load_config
from sw.isa import MemId, Opcode, isa_for
from tests.hw.bus_models import DmaModel, pack_rows

SMALL = load_config("small")
OUT_BASE = 0x8000
DRAM_BYTES = 0x10000


def store_insn(**f):
    d = dict(opcode=Opcode.STORE, pop_prev=0, pop_next=0, push_prev=0, push_next=0, memory_type=MemId.OUT,
             sram_base=0, dram_base=0, y_size=1, x_size=1, x_stride=1, y_pad_0=0, y_pad_1=0, x_pad_0=0,
             x_pad_1=0)
    d.update(f)
    return d


def ref_store(dram, out, f, eb, base):
    for y in range(f["y_size"]):
        for x in range(f["x_size"]):
            src = f["sram_base"] + y * f["x_size"] + x
            addr = ((f["dram_base"] + y * f["x_stride"] + x) * eb) | base
            dram[addr:addr + eb] = out[src].view(np.uint8)


def run_store(cfg, insns, *, seed=0, g2s_at=1, stall=0.3):
    rng = np.random.default_rng(seed)
    isa = isa_for(cfg)
    eb = cfg.OUT_ELEM_BYTES
    dram = rng.integers(0, 256, DRAM_BYTES, dtype=np.uint8)
    expect = dram.copy()
    out = rng.integers(-128, 128, (cfg.ACC_DEPTH, eb), dtype=np.int64).astype(np.int8)
    m = Module()
    m.submodules.dut = dut = Store(cfg)
    m.submodules.out_mem = out_mem = make_memory(cfg, "out", init=pack_rows(out, np.int8))
    wiring.connect(m, dut.out_rd, out_mem.read_port())
    sim = Simulator(m)
    sim.add_clock(1e-6)
    dma = DmaModel(dram, cfg.BUS_WIDTH, seed=seed, stall=stall)
    dma.add_write(sim, dut.dma)
    log = {"pop": [], "push": [], "done": []}
    n_tokens = sum(f["pop_prev"] for f in insns)

    async def tokens(ctx):
        have, cycle = 0, 0
        async for _, _, pop, push, done in ctx.tick().sample(dut.g2s.pop, dut.s2g.push, dut.dma.done):
            cycle += 1
            for name, v in (("pop", pop), ("push", push), ("done", done)):
                if v:
                    log[name].append(cycle)
            if pop:
                assert have > 0, "popped an empty g2s queue"
                have -= 1
            if cycle == g2s_at:
                have += n_tokens
            ctx.set(dut.g2s.valid, have > 0)

    sim.add_process(tokens)

    async def bench(ctx):
        ctx.set(dut.out_base, OUT_BASE)
        for f in insns:
            ctx.set(dut.insn.payload, isa.encode(**f))
            ctx.set(dut.insn.valid, 1)
            await ctx.tick().until(dut.insn.ready)
        ctx.set(dut.insn.valid, 0)
        for _ in range(20000):
            await ctx.tick()
            if not ctx.get(dut.busy):
                break
        else:
            raise AssertionError("store did not finish")
        log["error"] = ctx.get(dut.error)

    sim.add_testbench(bench)
    sim.run()
    if not log["error"]:
        for f in insns:
            ref_store(expect, out, f, eb, OUT_BASE)
        np.testing.assert_array_equal(dram, expect)
    log["dma"] = dma.writes
    return log


def test_strides():
    insns = [store_insn(sram_base=3, dram_base=2, y_size=3, x_size=4, x_stride=6),
             store_insn(sram_base=40, dram_base=100, y_size=2, x_size=1, x_stride=1)]
    run_store(SMALL, insns, seed=1)


@pytest.mark.parametrize("bus_log", [7, 9])
def test_narrow_elements(bus_log):
    """8-byte OUT elements on a 128/512-bit bus: partial words with strobes, odd starts."""
    cfg = SMALL.with_changes(LOG_BUS_WIDTH=bus_log)
    insns = [store_insn(sram_base=1, dram_base=3, y_size=3, x_size=5, x_stride=9),
             store_insn(sram_base=50, dram_base=201, y_size=2, x_size=1, x_stride=3),
             store_insn(sram_base=60, dram_base=400, y_size=1, x_size=16, x_stride=16)]
    log = run_store(cfg, insns, seed=bus_log)
    bb = cfg.BUS_WIDTH // 8
    first = log["dma"][0]
    assert first == (OUT_BASE + (24 // bb) * bb, (24 % bb + 40 + bb - 1) // bb)


def test_wide_elements():
    """The batch2 config: 32-byte OUT elements, 4 bus words each."""
    cfg = load_config("batch2")
    run_store(cfg, [store_insn(sram_base=2, dram_base=5, y_size=2, x_size=3, x_stride=4)], seed=3)


def test_tokens_and_nop():
    insns = [store_insn(x_size=0, pop_prev=1, push_prev=1),
             store_insn(sram_base=4, dram_base=8, y_size=2, x_size=2, x_stride=3, pop_prev=1, push_prev=1)]
    log = run_store(SMALL, insns, g2s_at=30, seed=4)
    assert len(log["pop"]) == 2 and log["pop"][0] >= 30
    assert len(log["push"]) == 2 and log["push"][0] > log["pop"][0]
    # the second store pushes after both of its DMA acknowledgements
    assert len(log["done"]) == 2 and log["push"][1] > max(log["done"]) > log["pop"][1]


def test_bad_memory_type():
    log = run_store(SMALL, [store_insn(memory_type=MemId.ACC, pop_prev=1)])
    assert log["error"] == 1 and log["pop"] == []


@pytest.mark.parametrize("stall", [0.0, 0.3, 0.8])
@pytest.mark.parametrize("bus_log", [6, 7, 8, 9])
def test_random(bus_log, stall):
    """Random sizes, strides and offsets on every bus width (8-byte OUT elements)."""
    cfg = SMALL.with_changes(LOG_BUS_WIDTH=bus_log)
    rng = np.random.default_rng(200 + bus_log)
    insns = []
    for _ in range(5):
        x_size = int(rng.integers(1, 7))
        y_size = int(rng.integers(1, 4))
        x_stride = x_size + int(rng.integers(0, 4))
        insns.append(store_insn(sram_base=int(rng.integers(0, 400)), dram_base=int(rng.integers(0, 900)),
                                y_size=y_size, x_size=x_size, x_stride=x_stride))
    run_store(cfg, insns, seed=bus_log, stall=stall)
