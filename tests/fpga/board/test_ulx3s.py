"""The ULX3S board top's timing target (fpga.board.ulx3s); the top itself is elaborated by the build plan
(tests/fpga/board/test_build.py)."""
import pytest

from fpga.board.ulx3s import timing_target
from sw.cli import UsageError


def test_timing_target_at_or_above_the_pll():
    """``--timing``: nextpnr closes timing for a clock at or above the PLL's (the PLL's by default); a target
    below the PLL's frequency is refused."""
    assert timing_target(95.0, 100) == 100.0
    assert timing_target(95.0) == 95.0
    assert timing_target(95.0, 95) == 95.0
    with pytest.raises(UsageError, match=r"^timing target 90 MHz is below the PLL's 95 MHz; allowed: >= the PLL"):
        timing_target(95.0, 90)
