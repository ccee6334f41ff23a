"""The ULX3S-85F board top: the PLL, a reset synchroniser, :class:`~fpga.board.soc.BoardSoC` and the LEDs.

Clock: the 25 MHz oscillator (``clk25``, pin G2) into an EHXPLLL to ``freq_mhz``; the whole design runs on
the PLL's output. Reset: held while the PLL is unlocked or button 1 (``button_fire``, active high) is
pressed, released synchronously, so the button re-runs the built-in program. LEDs 0-7: ``BoardSoC.leds``.
"""

from __future__ import annotations

from amaranth.hdl import Cat, ClockDomain, Const, Module, Mux, Signal
from amaranth.lib import io, wiring

from sw.cli import UsageError
from sw.config import load_config

from .pll import ehxplll, pll_params
from .soc import BoardSoC

__all__ = ["UlX3STop", "timing_target"]


def timing_target(pll_mhz: float, timing_mhz: float | None = None) -> float:
    """The clock nextpnr closes timing for: ``timing_mhz`` (above the PLL's ``pll_mhz``: a margin), or the
    PLL's frequency when None. A target below the PLL's frequency is a :class:`~sw.cli.UsageError`."""
    target = float(timing_mhz or pll_mhz)
    if target < pll_mhz:
        raise UsageError(f"timing target {target:g} MHz is below the PLL's {pll_mhz:g} MHz; "
                         f"allowed: >= the PLL frequency")
    return target


class UlX3STop(wiring.Component):
    """The ULX3S top (module doc). ``pll``: the PLL's settings (:func:`~fpga.board.pll.pll_params`);
    ``timing_mhz``: the clock nextpnr closes timing for (:func:`timing_target`; :func:`fpga.board.build.board_plan`
    writes it into the constraint file)."""

    def __init__(self, cfg, freq_mhz: float = 100.0, timing_mhz: float | None = None):
        self.cfg = load_config(cfg)
        self.pll = pll_params(freq_mhz)
        self.timing_mhz = timing_target(self.pll["freq_mhz"], timing_mhz)
        super().__init__({})

    def elaborate(self, platform):
        m = Module()
        m.submodules.clk25 = clk25 = io.Buffer("i", platform.request("clk25", dir="-"))
        clk, locked = Signal(name="pll_clk"), Signal(name="pll_locked")
        m.submodules.pll = ehxplll(self.pll, clk25.i, clk, locked)
        m.domains.sync = cd = ClockDomain("sync")
        m.d.comb += cd.clk.eq(clk)
        platform.add_clock_constraint(clk, self.pll["freq_mhz"] * 1e6)
        # reset: held while the PLL is unlocked or button 1 pressed, released synchronously
        m.submodules.button = btn = io.Buffer("i", platform.request("button_fire", 0, dir="-"))
        m.domains.por = por = ClockDomain("por", reset_less=True)
        m.d.comb += por.clk.eq(clk)
        rst_sr = Signal(4, init=0xF)
        m.d.por += rst_sr.eq(Mux(~locked | btn.i, 0xF, Cat(Const(0, 1), rst_sr[:-1])))
        m.d.comb += cd.rst.eq(rst_sr[-1])
        m.submodules.soc = soc = BoardSoC(self.cfg)
        for i in range(8):
            m.submodules[f"led{i}"] = led = io.Buffer("o", platform.request("led", i, dir="-"))
            m.d.comb += led.o.eq(soc.leds[i])
        return m
