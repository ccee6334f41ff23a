"""The ECP5 PLL (EHXPLLL): divider settings for a frequency, and the instance."""

from __future__ import annotations

from functools import cache

from amaranth.hdl import Instance, Signal

__all__ = ["pll_params", "ehxplll"]


def pll_params(freq_mhz: float, clkin_mhz: float = 25.0) -> dict:
    """EHXPLLL divider settings for ``freq_mhz`` from ``clkin_mhz`` (PFD >= 3.125 MHz, VCO 400-800 MHz,
    feedback from CLKOP). Picks the closest achievable frequency, then the VCO nearest 600 MHz; returns
    the dividers (``CLKI_DIV``, ``CLKFB_DIV``, ``CLKOP_DIV``, ``CLKOP_CPHASE``), the achieved frequency
    ``freq_mhz`` and the VCO's ``vco_mhz``."""
    return dict(_search(float(freq_mhz), float(clkin_mhz)))


@cache
def _search(freq_mhz: float, clkin_mhz: float) -> tuple:
    best = None
    for ref in range(1, 129):
        for fb in range(1, 81):
            for op in range(1, 129):
                fpfd = clkin_mhz / ref
                if not 3.125 <= fpfd <= 400:
                    continue
                out = fpfd * fb
                vco = out * op
                if not 400 <= vco <= 800:
                    continue
                score = (round(abs(out - freq_mhz), 6), abs(vco - 600))    # exact first, then a mid-range VCO
                if best is None or score < best[0]:
                    best = (score, ref, fb, op, out, vco)
    _, ref, fb, op, out, vco = best
    return (("CLKI_DIV", ref), ("CLKFB_DIV", fb), ("CLKOP_DIV", op), ("CLKOP_CPHASE", op // 2 - 1 if op > 1 else 0),
            ("freq_mhz", out), ("vco_mhz", vco))


def ehxplll(params: dict, clkin, clkout, locked, clkin_mhz: float = 25.0) -> Instance:
    """The EHXPLLL instance for ``params`` (:func:`pll_params`): ``clkin`` in, ``clkout`` (CLKOP, also the
    feedback) and ``locked`` out."""
    p = params
    return Instance(
        "EHXPLLL",
        p_PLLRST_ENA="DISABLED", p_INTFB_WAKE="DISABLED", p_STDBY_ENABLE="DISABLED",
        p_DPHASE_SOURCE="DISABLED", p_OUTDIVIDER_MUXA="DIVA", p_OUTDIVIDER_MUXB="DIVB",
        p_OUTDIVIDER_MUXC="DIVC", p_OUTDIVIDER_MUXD="DIVD",
        p_CLKI_DIV=p["CLKI_DIV"], p_CLKOP_ENABLE="ENABLED", p_CLKOP_DIV=p["CLKOP_DIV"],
        p_CLKOP_CPHASE=p["CLKOP_CPHASE"], p_CLKOP_FPHASE=0, p_FEEDBK_PATH="CLKOP",
        p_CLKFB_DIV=p["CLKFB_DIV"],
        i_RST=0, i_STDBY=0, i_CLKI=clkin, o_CLKOP=clkout, i_CLKFB=clkout, o_CLKINTFB=Signal(),
        i_PHASESEL0=0, i_PHASESEL1=0, i_PHASEDIR=1, i_PHASESTEP=1, i_PHASELOADREG=1,
        i_PLLWAKESYNC=0, i_ENCLKOP=0, o_LOCK=locked,
        a_FREQUENCY_PIN_CLKI=f"{clkin_mhz:g}", a_FREQUENCY_PIN_CLKOP=f"{p['freq_mhz']:g}", a_ICP_CURRENT="12",
        a_LPF_RESISTOR="8", a_MFG_ENABLE_FILTEROPAMP="1", a_MFG_GMCREF_SEL="2",
    )
