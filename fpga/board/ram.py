"""An AXI4 slave block RAM: the board design's stand-in for DRAM."""

from __future__ import annotations

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from hw.axi import axi4_signature

__all__ = ["AxiRam"]


class AxiRam(wiring.Component):
    """An AXI4 slave block RAM (INCR bursts, one transaction at a time, write strobes), ``size`` bytes,
    addresses wrapping at ``size``. ``check_addr``/``check_data``: a second read port (one cycle latency)."""

    def __init__(self, data_width: int = 64, size: int = 4096, init: bytes = b""):
        self._dw, self._size = data_width, size
        nb = data_width // 8
        self._depth = size // nb
        words = [int.from_bytes(init[i:i + nb], "little") for i in range(0, len(init), nb)][:self._depth]
        self._init = words
        super().__init__({
            "axi": In(axi4_signature(data_width)),
            "check_addr": In(range(self._depth)), "check_data": Out(data_width),
        })

    def elaborate(self, platform):
        m = Module()
        nb = self._dw // 8
        shift = (nb - 1).bit_length()
        m.submodules.mem = mem = Memory(shape=self._dw, depth=self._depth, init=self._init)
        wr = mem.write_port(granularity=8)
        rd = mem.read_port()
        chk = mem.read_port()
        bus = self.axi
        m.d.comb += [chk.addr.eq(self.check_addr), self.check_data.eq(chk.data)]
        aw = len(rd.addr)
        ra, wa = Signal(aw), Signal(aw)
        left = Signal(9)
        rid, wid = Signal.like(bus.arid), Signal.like(bus.awid)
        rvalid, rlast = Signal(), Signal()
        m.d.comb += [bus.rvalid.eq(rvalid), bus.rlast.eq(rlast), bus.rdata.eq(rd.data), bus.rid.eq(rid),
                     bus.rresp.eq(0), bus.bresp.eq(0), bus.bid.eq(wid), rd.addr.eq(ra),
                     wr.addr.eq(wa), wr.data.eq(bus.wdata)]
        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += rd.en.eq(0)
                with m.If(bus.arvalid):
                    m.d.comb += bus.arready.eq(1)
                    m.d.sync += [ra.eq(bus.araddr[shift:]), left.eq(bus.arlen + 1), rid.eq(bus.arid)]
                    m.next = "READ"
                with m.Elif(bus.awvalid):
                    m.d.comb += bus.awready.eq(1)
                    m.d.sync += [wa.eq(bus.awaddr[shift:]), wid.eq(bus.awid)]
                    m.next = "WRITE"
            with m.State("READ"):
                adv = ~rvalid | bus.rready
                m.d.comb += rd.en.eq(adv)
                with m.If(adv):
                    with m.If(left != 0):
                        m.d.sync += [rvalid.eq(1), rlast.eq(left == 1), ra.eq(ra + 1), left.eq(left - 1)]
                    with m.Else():
                        m.d.sync += [rvalid.eq(0), rlast.eq(0)]
                        m.next = "IDLE"
            with m.State("WRITE"):
                m.d.comb += [rd.en.eq(0), bus.wready.eq(1)]
                with m.If(bus.wvalid):
                    m.d.comb += wr.en.eq(bus.wstrb)
                    m.d.sync += wa.eq(wa + 1)
                    with m.If(bus.wlast):
                        m.next = "RESP"
            with m.State("RESP"):
                m.d.comb += [rd.en.eq(0), bus.bvalid.eq(1)]
                with m.If(bus.bready):
                    m.next = "IDLE"
        return m

