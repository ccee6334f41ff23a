"""Launcher (fpga.board.launcher): the register writes in order, polling control until finish, then status."""
import pytest
from amaranth.sim import Simulator

from fpga.board.launcher import Launcher
from sw.registers import REGISTERS

WRITES = [(REGISTERS["insn_count"], 7), (REGISTERS["insn_addr"], 0x100), (REGISTERS["control"], 1)]


def run_launcher(status, polls_to_finish=3, cycles=200):
    dut = Launcher(WRITES)
    bus = dut.bus
    seen = {"writes": [], "reads": []}

    async def slave(ctx):
        ctx.set(bus.awready, 1)
        ctx.set(bus.wready, 1)
        ctx.set(bus.arready, 1)
        bpend, rdata, polls = False, None, 0
        for _ in range(cycles):
            ctx.set(bus.bvalid, bpend)
            ctx.set(bus.rvalid, rdata is not None)
            ctx.set(bus.rdata, rdata or 0)
            if bpend and ctx.get(bus.bready):
                bpend = False
            elif ctx.get(bus.awvalid) and ctx.get(bus.wvalid):
                assert ctx.get(bus.wstrb) == 0xF
                seen["writes"].append((ctx.get(bus.awaddr), ctx.get(bus.wdata)))
                bpend = True
            if rdata is not None and ctx.get(bus.rready):
                rdata = None
            elif rdata is None and ctx.get(bus.arvalid):
                addr = ctx.get(bus.araddr)
                seen["reads"].append(addr)
                if addr == REGISTERS["control"]:
                    polls += 1
                    rdata = 0b10 if polls == polls_to_finish else 0
                else:
                    rdata = status
            seen["levels"] = (ctx.get(dut.launched), ctx.get(dut.finished), ctx.get(dut.error))
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(slave)
    sim.run()
    return seen


@pytest.mark.parametrize("status, error", [(0b010, 0), (0b110, 1)])
def test_launch_sequence(status, error):
    seen = run_launcher(status)
    assert seen["writes"] == WRITES
    assert seen["reads"] == [REGISTERS["control"]] * 3 + [REGISTERS["status"]]
    assert seen["levels"] == (1, 1, error)
