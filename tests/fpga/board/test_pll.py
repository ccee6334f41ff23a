"""The ECP5 PLL settings (fpga.board.pll)."""
import pytest

from fpga.board.pll import pll_params


@pytest.mark.parametrize("mhz", [100, 75, 125, 50])
def test_pll_params(mhz):
    p = pll_params(mhz)
    assert abs(p["freq_mhz"] - mhz) < 1e-6 and 400 <= p["vco_mhz"] <= 800
    assert 25 / p["CLKI_DIV"] * p["CLKFB_DIV"] == pytest.approx(mhz)
