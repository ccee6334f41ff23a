"""The testbench's checks that need no simulator: comparisons and argument validation."""

import numpy as np
import pytest

from cosim.cocotb import Testbench, assert_same


def test_assert_same_names_the_first_difference():
    a = {"c": np.arange(6, dtype=np.int32).reshape(2, 3), "n": [1, (2, 3)]}
    assert_same(a, {"c": a["c"].copy(), "n": [1, (2, 3)]})
    b = {"c": a["c"].copy(), "n": [1, (2, 3)]}
    b["c"][1, 2] = 9
    with pytest.raises(AssertionError, match=r"\['c'\]: 1 of 6 elements differ; the first at \[1, 2\]: got 5, "
                                             r"expected 9"):
        assert_same(a, b)
    with pytest.raises(AssertionError, match=r"\['n'\]\[1\]\[0\]: got 2, expected 4"):
        assert_same(a, {"c": a["c"], "n": [1, (4, 3)]})
    with pytest.raises(AssertionError, match=r"value: got is int32\[2, 3\], expected int8\[2, 3\]"):
        assert_same(a["c"], a["c"].astype(np.int8))
    with pytest.raises(AssertionError, match="keys differ"):
        assert_same({"x": 1}, {"y": 1})


@pytest.mark.parametrize("max_cycles", [0, -5, 2.5, True])
def test_bad_cycle_budget(max_cycles):
    with pytest.raises(ValueError, match=r"max_cycles = .*; allowed: an integer >= 1, or None"):
        Testbench(None, "small", max_cycles=max_cycles)


def test_using_it_outside_async_with_is_an_error():
    tb = Testbench(None, "small")
    with pytest.raises(RuntimeError, match="use it as `async with Testbench"):
        tb.inject_axi_error("read")
