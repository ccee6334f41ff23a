"""The AXI4 memory master: DMA read clients and one DMA write client on one AXI4 port.

The AXI side follows the AXI naming convention (``awvalid``, ``araddr``, ...) so that the top level
can expose the members as ``m_axi_<name>`` and vendor tools infer the interface.
"""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import fifo, wiring
from amaranth.lib.wiring import In, Out

from sw.config import Config

from .interfaces import ADDR_BITS, DMA_BEATS_BITS, dma_read_signature, dma_write_signature

__all__ = ["axi4_signature", "axi4_lite_signature", "AxiMaster", "BUS_WIDTHS",
           "AXI_BURST_INCR", "AXI_CACHE_COHERENT", "AXI_BOUNDARY"]

BUS_WIDTHS = (64, 128, 256, 512)
AXI_BURST_INCR = 0b01
AXI_CACHE_COHERENT = 0b1111
AXI_BOUNDARY = 4096          # a burst never crosses a 4 KiB boundary (AXI spec A3.4.1)


def axi4_signature(data_width: int, addr_width: int = ADDR_BITS, id_width: int = 1) -> wiring.Signature:
    """An AXI4 port seen from the master (``Out`` = driven by the master)."""
    return wiring.Signature({
        "awvalid": Out(1), "awready": In(1), "awid": Out(id_width), "awaddr": Out(addr_width),
        "awlen": Out(8), "awsize": Out(3), "awburst": Out(2), "awcache": Out(4), "awprot": Out(3),
        "wvalid": Out(1), "wready": In(1), "wdata": Out(data_width), "wstrb": Out(data_width // 8),
        "wlast": Out(1),
        "bvalid": In(1), "bready": Out(1), "bid": In(id_width), "bresp": In(2),
        "arvalid": Out(1), "arready": In(1), "arid": Out(id_width), "araddr": Out(addr_width),
        "arlen": Out(8), "arsize": Out(3), "arburst": Out(2), "arcache": Out(4), "arprot": Out(3),
        "rvalid": In(1), "rready": Out(1), "rid": In(id_width), "rdata": In(data_width),
        "rresp": In(2), "rlast": In(1),
    })


def axi4_lite_signature(addr_width: int = 16, data_width: int = 32) -> wiring.Signature:
    """An AXI4-Lite port seen from the master (a slave uses ``In(axi4_lite_signature(...))``)."""
    return wiring.Signature({
        "awvalid": Out(1), "awready": In(1), "awaddr": Out(addr_width), "awprot": Out(3),
        "wvalid": Out(1), "wready": In(1), "wdata": Out(data_width), "wstrb": Out(data_width // 8),
        "bvalid": In(1), "bready": Out(1), "bresp": In(2),
        "arvalid": Out(1), "arready": In(1), "araddr": Out(addr_width), "arprot": Out(3),
        "rvalid": In(1), "rready": Out(1), "rdata": In(data_width), "rresp": In(2),
    })


def _check_int(owner, name, value, lo, hi):
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ValueError(f"{owner}: {name} must be an integer in [{lo}, {hi}], got {value!r}")


class _BurstSplitter:
    """Address and beats left of one client command, and the length of its next AXI burst.

    The next burst is ``min(left, max_burst, beats up to the next 4 KiB boundary)``. It is a
    register (``beats``, with ``final``: the burst ends the command), so the AR/AW fields leave
    straight from flip-flops (timing): ``load`` computes it from the new command, and after each
    ``advance`` it is recomputed in the next cycle (``fresh`` is low for that cycle).
    """

    def __init__(self, m, name, log_bytes, max_burst):
        self.addr = Signal(ADDR_BITS, name=f"{name}_addr")
        self.left = Signal(DMA_BEATS_BITS, name=f"{name}_left")
        self.beats = Signal(range(max_burst + 1), name=f"{name}_beats")
        self.final = Signal(name=f"{name}_final")
        self.fresh = Signal(name=f"{name}_fresh")
        self._log_bytes = log_bytes
        self._max_burst = max_burst
        with m.If(~self.fresh):
            m.d.sync += [*self._next(self.addr, self.left), self.fresh.eq(1)]

    def _next(self, addr, left):
        """Statements setting ``beats`` and ``final`` for a command at ``addr`` with ``left`` beats."""
        lb, max_burst = self._log_bytes, self._max_burst
        to_boundary = (AXI_BOUNDARY >> lb) - addr[lb:12]  # untoggled: burst-length
        beats = Mux((left <= max_burst) & (left <= to_boundary), left,  # untoggled: burst-length
                    Mux(to_boundary <= max_burst, to_boundary, max_burst))  # untoggled: burst-length
        return [self.beats.eq(beats), self.final.eq(beats == left)]

    def load(self, addr, beats):
        """Statements that start a new client command (address aligned down to the bus)."""
        lb = self._log_bytes
        aligned = Cat(Const(0, lb), addr[lb:])
        return [self.addr.eq(aligned), self.left.eq(beats), *self._next(aligned, beats), self.fresh.eq(1)]

    def advance(self):
        """Statements that move past the burst just issued."""
        return [self.addr.eq(self.addr + (self.beats << self._log_bytes)),
                self.left.eq(self.left - self.beats), self.fresh.eq(0)]


class AxiMaster(wiring.Component):
    """AXI4 master shared by the DMA clients of the accelerator.

    Reads: ``n_readers`` DMA read clients (``read[i]``, :func:`hw.interfaces.dma_read_signature`)
    arbitrated in fixed priority, client 0 highest, one whole command at a time. A command is split
    into INCR bursts of at most ``max_burst`` beats that never cross a 4 KiB boundary. Up to
    ``max_reads`` read bursts may be outstanding; one AXI ID is used, so data returns in order and a
    small FIFO of (client, last burst of the command) routes each R beat to its client. ``last`` is
    set on the final beat of each client command. A client that holds its ``data.ready`` low stalls
    the R channel for everybody behind it: clients should only ask for data they can take.

    Writes: one DMA write client (``write``). Each command is split in the same way; for each burst
    AW is sent first, then its W beats (data and WSTRB from the client, WLAST generated here), so
    the W channel never runs ahead of AW. Up to ``max_writes`` bursts may wait for their B
    response. ``write.done`` pulses once per command, the cycle after the B response of its last
    burst.

    Fixed attributes: AxSIZE = log2(bus bytes), AxBURST = INCR, AxCACHE = 0b1111, AxPROT = 0,
    AxID = 0. Addresses are bus-aligned (the low bits of ``cmd.addr`` are ignored); ``beats`` must
    be >= 1.

    ``error`` (out) latches a response other than OKAY on R or B; ``error_clear`` (in) clears it.
    ``error_info`` (out, 8) says which response the first such one was: bits 0-1 its RRESP/BRESP (2 SLVERR,
    3 DECERR, 1 EXOKAY), bit 2 set for a write (B), bits 4-7 the read client it belonged to;
    ``error_addr`` (out) is the address of that burst (its AR or AW address). Both are kept until
    ``error_clear``. The failing beat is still delivered to its client (a client cannot tell), and every
    other transfer completes as usual, so the bus is left with nothing outstanding.
    ``read_busy``/``write_busy`` (out) are high while a command is being split or has bursts in
    flight. ``read_beats[i]``/``write_beats`` (out, 32) count the words moved for each client since
    reset (free-running, wrapping; a word counts a cycle after it moves; :class:`hw.control.ControlRegs`
    reports their increase per run).

    Latency: a read command is accepted one cycle after ``cmd.valid`` at the earliest (the grant is
    decided a cycle ahead, so ``cmd.ready`` is a function of registers), when the one-entry command
    register is empty; it moves into the splitter in the next cycle when that is idle, and its
    first AR is valid the cycle after; R beats reach the client two cycles after
    they are accepted, through a three-entry register slice (``rready`` is its "not full", so no
    combinational path runs between the slave's R channel and the clients). Throughput: one beat per cycle
    on R and on W (one idle cycle per client command on AR/AW, and one between the bursts of a command).

    Parameters
    ----------
    cfg_or_bus_width : Config or int
        A :class:`sw.config.Config` (its ``BUS_WIDTH`` is used) or the data width, one of 64, 128,
        256, 512.
    n_readers : int
        Read clients, 1..16.
    max_burst : int
        Largest burst in beats, 1..256 (16 for AXI3-like targets).
    max_reads, max_writes : int
        Outstanding read bursts / write bursts awaiting B, 1..64.
    """

    def __init__(self, cfg_or_bus_width: Config | int, n_readers: int = 1, *, max_burst: int = 256,
                 max_reads: int = 4, max_writes: int = 4):
        bus_width = getattr(cfg_or_bus_width, "BUS_WIDTH", cfg_or_bus_width)
        if bus_width not in BUS_WIDTHS or isinstance(bus_width, bool):
            raise ValueError(f"AxiMaster: bus_width must be one of {', '.join(map(str, BUS_WIDTHS))}, "
                             f"got {bus_width!r}")
        _check_int("AxiMaster", "n_readers", n_readers, 1, 16)
        _check_int("AxiMaster", "max_burst", max_burst, 1, 256)
        _check_int("AxiMaster", "max_reads", max_reads, 1, 64)
        _check_int("AxiMaster", "max_writes", max_writes, 1, 64)
        self.bus_width = bus_width
        self.log_bytes = (bus_width // 8).bit_length() - 1
        self.n_readers = n_readers
        self.max_burst = max_burst
        self.max_reads = max_reads
        self.max_writes = max_writes
        super().__init__({
            "axi": Out(axi4_signature(bus_width)),
            "read": In(dma_read_signature(bus_width)).array(n_readers),
            "write": In(dma_write_signature(bus_width)),
            "error": Out(1),
            "error_info": Out(8),
            "error_addr": Out(ADDR_BITS),
            "error_clear": In(1),
            "read_busy": Out(1),
            "write_busy": Out(1),
            "read_beats": Out(32).array(n_readers),
            "write_beats": Out(32),
        })

    def elaborate(self, platform: object) -> Module:
        m = Module()
        axi = self.axi
        lb = self.log_bytes

        m.d.comb += [
            axi.arsize.eq(lb), axi.arburst.eq(AXI_BURST_INCR), axi.arcache.eq(AXI_CACHE_COHERENT),
            axi.arprot.eq(0), axi.arid.eq(0),
            axi.awsize.eq(lb), axi.awburst.eq(AXI_BURST_INCR), axi.awcache.eq(AXI_CACHE_COHERENT),
            axi.awprot.eq(0), axi.awid.eq(0),
        ]

        # ---------------------------------------------------------------- read: AR
        client_bits = max(1, (self.n_readers - 1).bit_length())
        # (buffered: the head, which routes each R beat, leaves a register)
        # each entry: (last burst of the command, client, burst address: for the error report)
        m.submodules.read_route = route = fifo.SyncFIFOBuffered(width=client_bits + 1 + ADDR_BITS,
                                                                depth=self.max_reads)
        rsplit = _BurstSplitter(m, "rd", lb, self.max_burst)
        rd_active = Signal()
        rd_client = Signal(client_bits)

        # Commands are taken into a one-entry register (``pend``) whenever it is empty, so a client's
        # ready is a register and the arbitration, not the burst arithmetic, follows its valid (timing).
        # The splitter loads from that register when it is idle.
        pend_valid = Signal()
        pend_addr = Signal(ADDR_BITS)
        pend_beats = Signal(DMA_BEATS_BITS)
        pend_client = Signal(client_bits)
        # Fixed priority, decided a cycle ahead into ``grant`` (the last assignment wins, so iterate
        # from the lowest priority up): a client's ready is then a function of registers only. A
        # client keeps its command valid until it is taken, so a grant still holds a cycle later; the
        # client taken in a cycle is left out of the next grant (its next command counts after that).
        grant = Signal(client_bits)
        any_valid = Signal()
        m.d.sync += any_valid.eq(0)
        for i in reversed(range(self.n_readers)):
            cmd = self.read[i].cmd
            with m.If(cmd.valid & ~cmd.ready):
                m.d.sync += [grant.eq(i), any_valid.eq(1)]
        for i in range(self.n_readers):
            m.d.comb += self.read[i].cmd.ready.eq(~pend_valid & any_valid & (grant == i))
        valids = Array(r.cmd.valid for r in self.read)
        addrs = Array(r.cmd.payload.addr for r in self.read)
        beats = Array(r.cmd.payload.beats for r in self.read)
        with m.If(~pend_valid & any_valid & valids[grant]):
            m.d.sync += [pend_valid.eq(1), pend_addr.eq(addrs[grant]), pend_beats.eq(beats[grant]),
                         pend_client.eq(grant)]
        with m.If(~rd_active & pend_valid):
            m.d.sync += [pend_valid.eq(0), rd_active.eq(1), rd_client.eq(pend_client),
                         *rsplit.load(pend_addr, pend_beats)]

        m.d.comb += [
            axi.arvalid.eq(rd_active & rsplit.fresh & route.w_rdy),
            axi.araddr.eq(rsplit.addr),
            axi.arlen.eq(rsplit.beats - 1),
            route.w_data.eq(Cat(rsplit.final, rd_client, rsplit.addr)),
        ]
        with m.If(axi.arvalid & axi.arready):
            m.d.comb += route.w_en.eq(1)
            m.d.sync += rsplit.advance()
            with m.If(rsplit.final):
                m.d.sync += rd_active.eq(0)

        # ---------------------------------------------------------------- read: R
        # A register slice: rready depends only on its fill level, so no path runs from
        # the slave's read data or valid through the clients' ready logic back to the slave.
        # (buffered, three entries for full rate: the beat and its flags leave a register)
        m.submodules.r_slice = r_slice = fifo.SyncFIFOBuffered(width=self.bus_width + 3, depth=3)
        m.d.comb += [
            axi.rready.eq(r_slice.w_rdy),
            r_slice.w_en.eq(axi.rvalid),
            r_slice.w_data.eq(Cat(axi.rdata, axi.rlast, axi.rresp)),
        ]
        r_valid = r_slice.r_rdy
        r_data = r_slice.r_data[:self.bus_width]
        r_last = r_slice.r_data[self.bus_width]
        r_resp = r_slice.r_data[self.bus_width + 1:]
        head_final = route.r_data[0]
        head_client = route.r_data[1:1 + client_bits]
        head_addr = route.r_data[1 + client_bits:]
        readies = Array(r.data.ready for r in self.read)
        for i, r in enumerate(self.read):
            m.d.comb += [
                r.data.payload.data.eq(r_data),
                r.data.payload.last.eq(r_last & head_final),
                r.data.valid.eq(r_valid & route.r_rdy & (head_client == i)),
            ]
        r_fire = Signal()
        m.d.comb += r_fire.eq(r_valid & route.r_rdy & readies[head_client])
        m.d.comb += [r_slice.r_en.eq(r_fire), route.r_en.eq(r_fire & r_last)]
        # (the counters count a cycle after the beat, from a register: the clients' ready is late)
        for i, r in enumerate(self.read):
            beat = Signal(name=f"rd_beat_{i}")
            m.d.sync += beat.eq(r.data.valid & r.data.ready)
            with m.If(beat):
                m.d.sync += self.read_beats[i].eq(self.read_beats[i] + 1)
        m.d.comb += self.read_busy.eq(pend_valid | rd_active | route.r_rdy)

        # ---------------------------------------------------------------- write: AW
        m.submodules.write_len = wlen = fifo.SyncFIFO(width=8, depth=self.max_writes)
        # each entry: (last burst of the command, burst address: for the error report)
        m.submodules.write_resp = wresp = fifo.SyncFIFO(width=1 + ADDR_BITS, depth=self.max_writes)
        wsplit = _BurstSplitter(m, "wr", lb, self.max_burst)
        wr_active = Signal()
        m.d.comb += self.write.cmd.ready.eq(~wr_active)
        with m.If(self.write.cmd.valid & ~wr_active):
            cmd = self.write.cmd.payload
            m.d.sync += [wr_active.eq(1), *wsplit.load(cmd.addr, cmd.beats)]
        m.d.comb += [
            axi.awvalid.eq(wr_active & wsplit.fresh & wlen.w_rdy & wresp.w_rdy),
            axi.awaddr.eq(wsplit.addr),
            axi.awlen.eq(wsplit.beats - 1),
            wlen.w_data.eq(wsplit.beats - 1),
            wresp.w_data.eq(Cat(wsplit.final, wsplit.addr)),
        ]
        with m.If(axi.awvalid & axi.awready):
            m.d.comb += [wlen.w_en.eq(1), wresp.w_en.eq(1)]
            m.d.sync += wsplit.advance()
            with m.If(wsplit.final):
                m.d.sync += wr_active.eq(0)

        # ---------------------------------------------------------------- write: W
        # The client's words pass through a register slice (three entries, buffered: full rate), so
        # its ready is a register and W leaves from flip-flops (timing).
        bb = self.bus_width // 8
        m.submodules.w_slice = w_slice = fifo.SyncFIFOBuffered(width=self.bus_width + bb, depth=3)
        m.d.comb += [
            w_slice.w_en.eq(self.write.data.valid),
            w_slice.w_data.eq(Cat(self.write.data.payload.data, self.write.data.payload.strb)),
            self.write.data.ready.eq(w_slice.w_rdy),
        ]
        w_active = Signal()
        w_count = Signal(8)     # beats left in the current burst, minus one
        m.d.comb += [
            axi.wvalid.eq(w_active & w_slice.r_rdy),
            axi.wdata.eq(w_slice.r_data[:self.bus_width]),
            axi.wstrb.eq(w_slice.r_data[self.bus_width:]),
            axi.wlast.eq(w_count == 0),
            w_slice.r_en.eq(w_active & axi.wready),
        ]
        w_fire = axi.wvalid & axi.wready
        w_beat = Signal()       # (counted a cycle later, from a register, as the reads)
        m.d.sync += w_beat.eq(w_fire)
        with m.If(w_beat):
            m.d.sync += self.write_beats.eq(self.write_beats + 1)
        w_burst_end = w_fire & (w_count == 0)
        with m.If(w_fire):
            m.d.sync += w_count.eq(w_count - 1)
        with m.If(w_burst_end):
            m.d.sync += w_active.eq(0)
        with m.If(wlen.r_rdy & (~w_active | w_burst_end)):
            m.d.comb += wlen.r_en.eq(1)
            m.d.sync += [w_active.eq(1), w_count.eq(wlen.r_data)]

        # ---------------------------------------------------------------- write: B
        m.d.comb += axi.bready.eq(wresp.r_rdy)
        b_fire = axi.bvalid & axi.bready
        m.d.comb += wresp.r_en.eq(b_fire)
        m.d.sync += self.write.done.eq(b_fire & wresp.r_data[0])
        m.d.comb += self.write_busy.eq(wr_active | wresp.r_rdy)

        # ---------------------------------------------------------------- errors
        r_err = r_fire & (r_resp != 0)
        b_err = b_fire & (axi.bresp != 0)
        with m.If(self.error_clear):
            m.d.sync += [self.error.eq(0), self.error_info.eq(0), self.error_addr.eq(0)]
        with m.Elif(r_err | b_err):
            m.d.sync += self.error.eq(1)
            with m.If(~self.error & r_err):
                m.d.sync += [self.error_info.eq(Cat(r_resp, Const(0, 2), head_client)), self.error_addr.eq(head_addr)]
            with m.Elif(~self.error):
                m.d.sync += [self.error_info.eq(Cat(axi.bresp, Const(1, 1))), self.error_addr.eq(wresp.r_data[1:])]
        return m
