"""cocotb tests as a user writes them, some failing on purpose: tests/cosim/cocotb/test_runner.py runs them through
the runner and checks what cocotb reports (results.xml) for each."""

import re

import cocotb
from cocotb.triggers import RisingEdge, ValueChange
from cocotb.utils import get_sim_time

from cosim.cocotb import AxiResponseError, Testbench
from cosim.sim.rtl import CLOCK_PERIOD_STEPS
from sw import runtime
from sw.isa import MemId, Opcode, isa_for
from sw.testing import vta_tests


@cocotb.test()
async def test_clock_period(dut):
    """The clock period the testbench's timed waits assume is the model's."""
    async with Testbench(dut) as tb:
        await RisingEdge(tb.clk)
        t0 = get_sim_time("step")
        await RisingEdge(tb.clk)
        assert get_sim_time("step") - t0 == CLOCK_PERIOD_STEPS
        c0 = tb.cycle
        await tb.cycles(25)
        assert tb.cycle - c0 == 25


@cocotb.test()
async def test_an_injected_error_lives_for_one_run(dut):
    """After a run that took an injected error, a launch by hand is clean (the error is disarmed as the run ends)."""
    async with Testbench(dut) as tb:
        tb.inject_axi_error("write", beat=0, response="DECERR" if tb.mem == "dpi" else "SLVERR")
        try:
            await tb.run(vta_tests.vector_add)
        except AxiResponseError as err:
            assert err.registers is not None and err.registers["axi_error"] != 0
        else:
            raise AssertionError("the injected DECERR did not stop the run")
        isa = isa_for(tb.cfg)
        program = isa.words_to_array(isa.encode(**f) for f in [
            dict(opcode=Opcode.STORE, memory_type=MemId.OUT, sram_base=0, dram_base=0x4000 // tb.cfg.OUT_ELEM_BYTES,
                 y_size=1, x_size=1, x_stride=1, push_prev=1),
            dict(opcode=Opcode.LOAD, memory_type=MemId.UOP, pop_next=1), dict(opcode=Opcode.FINISH)])
        tb.dram[0x100:0x100 + program.size] = program
        for name, value in (("insn_count", 3), ("insn_addr", 0x100), ("control", 1)):
            await tb.write_reg(name, value)
        while (status := await tb.read_reg("status")) & 1:         # busy (polled: dut.irq is not public in --fast)
            await tb.cycles(50)
        assert status == 2 and await tb.read_reg("axi_error") == 0


@cocotb.test()
async def test_bad_launch_arguments_are_refused(dut):
    async with Testbench(dut) as tb:
        for args, message in (((3, 1), "insn_addr = 3; allowed: a multiple of 16"),
                              ((0, len(tb.dram)), "insn_count = .*; allowed: an integer in \\[0, "),
                              ((0, -1), "insn_count = -1")):
            try:
                await tb.launch(*args)
            except ValueError as err:
                assert re.match(message, str(err)), err
            else:
                raise AssertionError(f"launch{args} was accepted")
        for name, value, message in (("status", 1 << 32, "value = 4294967296 for register 'status'; allowed"),
                                     ("nowhere", 0, "register 'nowhere'; allowed: control, ")):
            try:
                await tb.write_reg(name, value)
            except (ValueError, KeyError) as err:
                assert message in str(err), err
            else:
                raise AssertionError(f"write_reg({name!r}, {value}) was accepted")
        try:
            tb.inject_fetch_fault("x")
        except ValueError as err:
            assert "fault = 'x'; allowed: alu-max-imm-as-min" in str(err), err
        else:
            raise AssertionError("an unknown fault was accepted")


def where_it_runs() -> dict:
    return {"target": type(runtime.current().target).__name__}


@cocotb.test()
async def test_check_names_the_difference(dut):
    """Fails: the RTL and the golden model return different values."""
    async with Testbench(dut) as tb:
        await tb.check(where_it_runs)


@cocotb.test()
async def test_failing_assertion(dut):
    """Fails: the report carries the accelerator's state."""
    async with Testbench(dut) as tb:
        await tb.write_reg("insn_count", 7)
        assert await tb.read_reg("insn_count") == 8


@cocotb.test()
async def test_waits_forever(dut):
    """Fails after its cycle budget instead of hanging; the next test still runs."""
    async with Testbench(dut, max_cycles=5000):
        await ValueChange(dut.vboard_quit)          # never changes in a cocotb test


@cocotb.test()
async def test_after_the_hang(dut):
    async with Testbench(dut) as tb:
        assert await tb.read_reg("status") == 0


@cocotb.test()
async def test_waits_forever_without_a_testbench(dut):
    """Fails when the simulation reaches its cycle limit (the runner's sim_cycles): the simulator ends, not hangs."""
    await ValueChange(dut.vboard_quit)
