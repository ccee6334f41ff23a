"""AxiRam (fpga.board.ram): INCR bursts with write strobes, reads in address order, the check port."""
from amaranth.sim import Simulator

from fpga.board.ram import AxiRam


def run(dut, bench):
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


async def write_burst(ctx, bus, addr, words, strobes):
    ctx.set(bus.awaddr, addr)
    ctx.set(bus.awlen, len(words) - 1)
    ctx.set(bus.awid, 1)
    ctx.set(bus.awvalid, 1)
    await ctx.tick().until(bus.awready)
    ctx.set(bus.awvalid, 0)
    for i, (word, strb) in enumerate(zip(words, strobes)):
        ctx.set(bus.wdata, word)
        ctx.set(bus.wstrb, strb)
        ctx.set(bus.wlast, i == len(words) - 1)
        ctx.set(bus.wvalid, 1)
        await ctx.tick().until(bus.wready)
    ctx.set(bus.wvalid, 0)
    ctx.set(bus.bready, 1)
    await ctx.tick().until(bus.bvalid)
    assert (ctx.get(bus.bresp), ctx.get(bus.bid)) == (0, 1)
    ctx.set(bus.bready, 0)


async def read_burst(ctx, bus, addr, beats):
    ctx.set(bus.araddr, addr)
    ctx.set(bus.arlen, beats - 1)
    ctx.set(bus.arvalid, 1)
    await ctx.tick().until(bus.arready)
    ctx.set(bus.arvalid, 0)
    out = []
    for cycle in range(4 * beats):
        ready = cycle % 2 == 1                          # back-pressure on every other cycle
        ctx.set(bus.rready, ready)
        if ready and ctx.get(bus.rvalid):
            out.append((ctx.get(bus.rdata), ctx.get(bus.rlast), ctx.get(bus.rresp)))
        await ctx.tick()
        if len(out) == beats:
            break
    ctx.set(bus.rready, 0)
    return out


def test_axi_ram_bursts_strobes_and_check_port():
    init = bytes(range(32))
    ram = AxiRam(64, 64, init)
    w0 = int.from_bytes(init[0:8], "little")
    got = {}

    async def bench(ctx):
        bus = ram.axi
        await write_burst(ctx, bus, 8, [0x1111111111111111, 0x2222222222222222], [0xFF, 0x0F])
        got["read"] = await read_burst(ctx, bus, 0, 4)
        ctx.set(ram.check_addr, 2)
        await ctx.tick()
        got["check"] = ctx.get(ram.check_data)

    run(ram, bench)
    w3 = int.from_bytes(init[24:32], "little")
    w2 = (int.from_bytes(init[16:24], "little") & ~0xFFFFFFFF) | 0x22222222
    assert got["read"] == [(w0, 0, 0), (0x1111111111111111, 0, 0), (w2, 0, 0), (w3, 1, 0)]
    assert got["check"] == w2
