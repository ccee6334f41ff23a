"""ControlRegs: AXI4-Lite register access, launch/finish handshake, counters, read-only registers."""

import random

import pytest
from amaranth.sim import Simulator

from hw.control import ControlRegs
from sw.config import load_config
from sw.registers import REGISTER_MAP, REGISTERS, ErrorCode, config_words, register_table_markdown, version_word
from tests.hw.bus_models import assert_value_error, axil_read, axil_write


def run(dut, bench):
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()


def test_vta_offsets():
    assert {k: REGISTERS[k] for k in ("control", "cycles", "insn_count", "insn_addr", "uop_addr",
                                      "inp_addr", "wgt_addr", "acc_addr", "out_addr", "acc_writes")} == {
        "control": 0x00, "cycles": 0x04, "insn_count": 0x08, "insn_addr": 0x0C, "uop_addr": 0x10,
        "inp_addr": 0x14, "wgt_addr": 0x18, "acc_addr": 0x1C, "out_addr": 0x20, "acc_writes": 0x24}
    assert REGISTERS["status"] == 0x40 and REGISTERS["version"] == 0x44
    table = register_table_markdown(load_config("default"))
    for r in REGISTER_MAP:
        assert f"`{r.name}`" in table
    assert table.count("\n") == len(REGISTER_MAP) + 1


def test_reset_values_and_constants():
    cfg = load_config("small")
    dut = ControlRegs(cfg)

    async def bench(ctx):
        c0, c1 = config_words(cfg)
        expect = {"version": version_word(cfg), "config0": c0, "config1": c1}
        for r in REGISTER_MAP:
            value = await axil_read(ctx, dut.bus, r.offset)
            assert value == expect.get(r.name, 0), r.name
        assert await axil_read(ctx, dut.bus, 0x3C) == 0          # unmapped
        assert c0 >> 24 & 0xF == cfg.LOG_BUS_WIDTH and c1 & 0xFF == cfg.LOG_UOP_BUFF_SIZE

    run(dut, bench)


def test_rw_registers_and_strobes():
    dut = ControlRegs()
    rng = random.Random(1)
    host = [r for r in REGISTER_MAP if r.kind == "host"]

    async def bench(ctx):
        values = {}
        for r in host:
            values[r.name] = rng.getrandbits(32)
            await axil_write(ctx, dut.bus, r.offset, values[r.name])
        for r in host:
            assert await axil_read(ctx, dut.bus, r.offset) == values[r.name]
            assert ctx.get(getattr(dut, r.name)) == values[r.name]
        # Byte strobes: only bytes 1 and 3 of insn_addr change.
        new = rng.getrandbits(32)
        await axil_write(ctx, dut.bus, REGISTERS["insn_addr"], new, strb=0b1010)
        old = values["insn_addr"]
        mask = 0xFF00FF00
        assert await axil_read(ctx, dut.bus, REGISTERS["insn_addr"]) == (new & mask) | (old & ~mask)

    run(dut, bench)


def test_read_only_registers():
    dut = ControlRegs(load_config("default"))

    async def bench(ctx):
        ctx.set(dut.tokens_g2s, 7)
        ctx.set(dut.queue_compute, 300)
        ctx.set(dut.insn_fetched, 123456)
        before = {r.name: await axil_read(ctx, dut.bus, r.offset) for r in REGISTER_MAP if r.access == "RO"}
        assert before["tokens_g2s"] == 7 and before["queue_compute"] == 300
        assert before["insn_fetched"] == 123456
        for r in REGISTER_MAP:
            if r.access == "RO":
                await axil_write(ctx, dut.bus, r.offset, 0xFFFFFFFF)
        after = {r.name: await axil_read(ctx, dut.bus, r.offset) for r in REGISTER_MAP if r.access == "RO"}
        assert after == before
        await axil_write(ctx, dut.bus, 0x3C, 0x1234)           # unmapped: ignored, OKAY

    run(dut, bench)


def test_launch_finish_and_counters():
    dut = ControlRegs()
    launches = []

    async def watch_launch(ctx):
        cycle = 0
        while True:
            _, _, launch = await ctx.tick().sample(dut.launch)
            cycle += 1
            if launch:
                launches.append(cycle)

    async def bench(ctx):
        await axil_write(ctx, dut.bus, REGISTERS["insn_count"], 5)
        ctx.set(dut.acc_writes, 999)
        ctx.set(dut.gemm_uops, 0xFFFFFFFC)
        await axil_write(ctx, dut.bus, REGISTERS["control"], 1)
        assert ctx.get(dut.running) == 1
        assert await axil_read(ctx, dut.bus, REGISTERS["control"]) == 0b01
        assert await axil_read(ctx, dut.bus, REGISTERS["status"]) == 0b001
        # Count some busy/stall/acc-write cycles.
        ctx.set(dut.fetch_busy, 1)
        for i in range(10):
            ctx.set(dut.acc_writes, 1000 + i)      # a free-running counter of the compute module
            ctx.set(dut.gemm_uops, (0xFFFFFFFE + 3 * i) & 0xFFFFFFFF)   # wraps
            await ctx.tick()
        ctx.set(dut.fetch_busy, 0)
        ctx.set(dut.store_stall, 1)
        await ctx.tick().repeat(3)
        ctx.set(dut.store_stall, 0)
        # A second launch while running is ignored.
        await axil_write(ctx, dut.bus, REGISTERS["control"], 1)
        c1 = await axil_read(ctx, dut.bus, REGISTERS["cycles"])
        c2 = await axil_read(ctx, dut.bus, REGISTERS["cycles"])
        assert c2 > c1 > 13
        ctx.set(dut.finish, 1)
        await ctx.tick()
        ctx.set(dut.finish, 0)
        assert ctx.get(dut.running) == 0
        assert await axil_read(ctx, dut.bus, REGISTERS["control"]) == 0b10
        assert await axil_read(ctx, dut.bus, REGISTERS["status"]) == 0b010
        latched = await axil_read(ctx, dut.bus, REGISTERS["cycles"])
        await ctx.tick().repeat(5)
        assert await axil_read(ctx, dut.bus, REGISTERS["cycles"]) == latched
        assert await axil_read(ctx, dut.bus, REGISTERS["fetch_busy"]) == 10
        assert await axil_read(ctx, dut.bus, REGISTERS["acc_writes"]) == 1009 - 999
        assert await axil_read(ctx, dut.bus, REGISTERS["gemm_counter"]) == 27 + 2
        assert await axil_read(ctx, dut.bus, REGISTERS["alu_counter"]) == 0
        assert await axil_read(ctx, dut.bus, REGISTERS["store_stall"]) == 3
        assert await axil_read(ctx, dut.bus, REGISTERS["fetch_stall"]) == 0
        # Counters do not count outside a run.
        ctx.set(dut.fetch_busy, 1)
        await ctx.tick().repeat(4)
        ctx.set(dut.fetch_busy, 0)
        assert await axil_read(ctx, dut.bus, REGISTERS["fetch_busy"]) == 10
        # Relaunch: counters and finish clear.
        await axil_write(ctx, dut.bus, REGISTERS["control"], 1)
        assert await axil_read(ctx, dut.bus, REGISTERS["control"]) == 0b01
        assert await axil_read(ctx, dut.bus, REGISTERS["fetch_busy"]) == 0
        assert await axil_read(ctx, dut.bus, REGISTERS["cycles"]) < 10
        ctx.set(dut.finish, 1)
        await ctx.tick()
        ctx.set(dut.finish, 0)
        await ctx.tick()
        assert len(launches) == 2

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.add_testbench(watch_launch, background=True)
    sim.run()


def test_error_ends_run():
    dut = ControlRegs()

    async def bench(ctx):
        await axil_write(ctx, dut.bus, REGISTERS["control"], 1)
        await ctx.tick().repeat(3)
        ctx.set(dut.error_code, ErrorCode.RESERVED_DEP_FLAG)
        await ctx.tick()
        ctx.set(dut.error_code, ErrorCode.AXI_ERROR)   # a later error does not replace the first
        await ctx.tick()
        ctx.set(dut.error_code, 0)
        assert ctx.get(dut.running) == 0
        assert await axil_read(ctx, dut.bus, REGISTERS["control"]) == 0b10
        status = await axil_read(ctx, dut.bus, REGISTERS["status"])
        assert status == 0b110 | ErrorCode.RESERVED_DEP_FLAG << 8
        # The host may clear the finish bit; a launch clears the error.
        await axil_write(ctx, dut.bus, REGISTERS["control"], 0)
        assert await axil_read(ctx, dut.bus, REGISTERS["control"]) == 0
        await axil_write(ctx, dut.bus, REGISTERS["control"], 1)
        assert await axil_read(ctx, dut.bus, REGISTERS["status"]) == 0b001

    run(dut, bench)


@pytest.mark.parametrize("addr_width", [7, 33, True])
def test_parameter_checks(addr_width):
    assert_value_error("addr_width", ControlRegs, addr_width=addr_width)


def test_counter_registers_carry_the_profiler_counter_names():
    """The RTL's counters reach the caller under their register names: VTA's profiler names, as the golden model's."""
    from sw.fsim import COUNTER_NAMES
    assert set(COUNTER_NAMES) <= set(REGISTERS)
