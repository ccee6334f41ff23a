"""An AXI4-Lite master running the runtime's launch sequence once: the board design's stand-in for the host."""

from __future__ import annotations

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import Out

from hw.axi import axi4_lite_signature
from hw.top import CTL_ADDR_BITS
from sw.registers import REGISTERS

__all__ = ["Launcher"]


class Launcher(wiring.Component):
    """An AXI4-Lite master doing the runtime's launch sequence once after reset: write ``writes``
    (offset, value) in order, then poll ``control`` until bit 1 (finish), then read ``status``.
    ``launched``, ``finished``, ``error`` (status bit 2) are levels."""

    def __init__(self, writes, addr_width: int = CTL_ADDR_BITS):
        self._writes = list(writes)
        super().__init__({
            "bus": Out(axi4_lite_signature(addr_width, 32)),
            "launched": Out(1), "finished": Out(1), "error": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        bus = self.bus
        n = len(self._writes)
        idx = Signal(range(n + 1))
        waddr, wdata = Signal(len(bus.awaddr)), Signal(32)
        with m.Switch(idx):
            for i, (a, v) in enumerate(self._writes):
                with m.Case(i):
                    m.d.comb += [waddr.eq(a), wdata.eq(v)]
        aw_done, w_done = Signal(), Signal()
        raddr = Signal(len(bus.araddr))
        m.d.comb += [bus.awaddr.eq(waddr), bus.wdata.eq(wdata), bus.wstrb.eq(0xF), bus.araddr.eq(raddr),
                     bus.awprot.eq(0), bus.arprot.eq(0)]
        with m.FSM():
            with m.State("WRITE"):
                m.d.comb += [bus.awvalid.eq(~aw_done), bus.wvalid.eq(~w_done)]
                with m.If(bus.awvalid & bus.awready):
                    m.d.sync += aw_done.eq(1)
                with m.If(bus.wvalid & bus.wready):
                    m.d.sync += w_done.eq(1)
                with m.If((aw_done | bus.awready) & (w_done | bus.wready)):
                    m.next = "BRESP"
            with m.State("BRESP"):
                m.d.comb += bus.bready.eq(1)
                with m.If(bus.bvalid):
                    m.d.sync += [aw_done.eq(0), w_done.eq(0), idx.eq(idx + 1)]
                    with m.If(idx == n - 1):
                        m.d.sync += [self.launched.eq(1), raddr.eq(REGISTERS["control"])]
                        m.next = "POLL"
                    with m.Else():
                        m.next = "WRITE"
            with m.State("POLL"):
                m.d.comb += bus.arvalid.eq(1)
                with m.If(bus.arready):
                    m.next = "POLL_R"
            with m.State("POLL_R"):
                m.d.comb += bus.rready.eq(1)
                with m.If(bus.rvalid):
                    with m.If(bus.rdata[1]):
                        m.d.sync += raddr.eq(REGISTERS["status"])
                        m.next = "STATUS"
                    with m.Else():
                        m.next = "POLL"
            with m.State("STATUS"):
                m.d.comb += bus.arvalid.eq(1)
                with m.If(bus.arready):
                    m.next = "STATUS_R"
            with m.State("STATUS_R"):
                m.d.comb += bus.rready.eq(1)
                with m.If(bus.rvalid):
                    m.d.sync += [self.finished.eq(1), self.error.eq(bus.rdata[2])]
                    m.next = "DONE"
            with m.State("DONE"):
                pass
        return m

