"""hw.sram: every datapath component refuses a config that is not a Config (check_config; the full-design
lint and the RTL regression cover their conversion to Verilog); fan_out's register tree. The merge helpers
are proved through the GEMM's and the ALU's hazard tests."""

import pytest

from hw.alu import Alu
from hw.compute import Compute
from hw.gemm import Gemm
from hw.load import Load
from hw.store import Store
from sw.config import load_config

COMPONENTS = {"load": Load, "store": Store, "gemm": Gemm, "alu": Alu, "compute": Compute}


@pytest.mark.parametrize("name", list(COMPONENTS))
def test_bad_config(name):
    with pytest.raises(ValueError, match="cfg must be a sw.config.Config"):
        COMPONENTS[name]({"LOG_BATCH": 0})


def test_bad_sram_name():
    from hw.sram import make_memory
    with pytest.raises(ValueError, match="SRAM name"):
        make_memory(load_config("small"), "foo")


def test_fan_out_copies_two_cycles_later():
    from amaranth.hdl import Module, Signal
    from amaranth.sim import Simulator

    from hw.sram import fan_out
    m = Module()
    value = Signal(5)
    copies = fan_out(m, value, 6, "x")
    assert len(copies) == 6 and all(c.name.startswith("x_copy") for c in copies)     # kept apart by the FPGA build
    sim = Simulator(m)
    sim.add_clock(1e-6)
    seq = [3, 17, 0, 31, 8, 8, 1, 22]
    seen = []

    async def bench(ctx):
        for v in seq + [0, 0]:
            ctx.set(value, v)
            await ctx.tick()
            seen.append([ctx.get(c) for c in copies])

    sim.add_testbench(bench)
    sim.run()
    assert [row[0] for row in seen[1:1 + len(seq)]] == seq            # two ticks after it is set
    assert all(len(set(row)) == 1 for row in seen)                    # every copy the same
