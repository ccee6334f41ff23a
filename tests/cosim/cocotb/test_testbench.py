"""The testbench's checks that need no simulator: argument validation."""

import pytest

from cosim.cocotb import Testbench


@pytest.mark.parametrize("max_cycles", [0, -5, 2.5, True])
def test_bad_cycle_budget(max_cycles):
    with pytest.raises(ValueError, match=r"max_cycles = .*; allowed: an integer >= 1, or None"):
        Testbench(None, "small", max_cycles=max_cycles)


def test_using_it_outside_async_with_is_an_error():
    tb = Testbench(None, "small")
    with pytest.raises(RuntimeError, match="use it as `async with Testbench"):
        tb.inject_axi_error("read")
