"""The AXI4 master (:class:`hw.axi.AxiMaster`): handshakes, bursts, WLAST, outstanding limits, responses.

Parameterization: ``AxiMaster(64, n_readers=2, max_burst=4, max_reads=2, max_writes=2)``. Two readers exercise the
arbitration and the routing of R beats by client; bursts of 4 beats and limits of 2 keep the counterexamples short
while every rule still has its corner (a command split into several bursts, a burst cut at 4 KiB, both limits
reached); the logic is the same generic code for any width, burst size and limit. Client commands are assumed to be
1..8 beats, so one command is split into up to three bursts (two by ``max_burst``, a third by a 4 KiB boundary);
addresses are free 32-bit values, so every 4 KiB corner is reachable.

Environment (assumed): the clients hold ``cmd.valid`` and its payload until ``cmd.ready`` (the stream rule) and ask
for 1..8 beats; the slave answers only bursts it was asked for, R in order with RLAST on the last beat of each burst,
B only for a burst whose last W beat it took, and holds RVALID/BVALID with their payload until READY. Every READY of
the slave, the clients' ``data.ready``, the write data and ``error_clear`` are free in every cycle.

Method: BMC. k-induction would need invariants tying every FIFO of the block (the routing FIFO, the R and W register
slices, the W length and B FIFOs) to the harness's counters; the depth (20 cycles from reset) covers the longest
command (three bursts), both outstanding limits reached with beats in flight behind them, and the first burst of the
next command. The two properties that follow every burst and beat through a reference queue of the harness run to
smaller depths: ``axi-as-issued`` to 16 cycles (a three-burst command issued and the next one begun) and
``axi-responses`` to 14 (two commands' bursts answered back to back).
"""

from __future__ import annotations

from unittest import mock

from amaranth.hdl import Assume, Cat, Mux, Signal

from .. import axi as axi_mod
from ..axi import AxiMaster
from ..interfaces import ADDR_BITS
from .common import Check, Mutant, drive_inputs, held_until, internal

__all__ = ["CHECKS"]

BUS, READERS, MAX_BURST, MAX_READS, MAX_WRITES = 64, 2, 4, 2, 2
MAX_CMD = 8
LB = 3                     # log2(bytes per beat)


def _fifo(m, name, n, width, push, value, pop):
    """A harness FIFO of ``n`` entries (``[0]`` the oldest): ``push`` appends ``value``, ``pop`` drops the head;
    returns (entries, count). A push into a full FIFO is lost (the harness asserts the count stays below ``n``)."""
    ents = [Signal(width, name=f"{name}{i}") for i in range(n)]
    count = Signal(range(n + 1), name=f"{name}_count")
    with m.If(pop):
        m.d.sync += [ents[i].eq(ents[i + 1]) for i in range(n - 1)]
    slot = Signal(range(n + 1), name=f"{name}_slot")
    m.d.comb += slot.eq(count - pop)
    with m.If(push):
        for i in range(n):
            with m.If(slot == i):
                m.d.sync += ents[i].eq(value)
    m.d.sync += count.eq(Mux(push & (slot == n), n, count + push - pop))
    return ents, count


def _span(addr):
    """Beats of a burst at ``addr`` that fit before the next 4 KiB boundary."""
    return (4096 >> LB) - addr[LB:12]


def _ar_waits_for_r_room(axi, dm):
    # mutant: ARVALID also waits for room in the R register slice, so it can fall while AR waits for ARREADY
    r_slice, route = dm.submodules.r_slice, dm.submodules.read_route
    dm.d.comb += axi.axi.arvalid.eq(internal(dm, "rd_active") & internal(dm, "rd_fresh") & route.w_rdy & r_slice.w_rdy)


def _wdata_bypass(axi, dm):
    # mutant: WDATA straight from the client instead of the W slice's head (changes while W waits)
    dm.d.comb += axi.axi.wdata.eq(axi.write.data.payload.data)


def _wlast_early(axi, dm):
    # mutant: WLAST one beat early (``w_count == 1``)
    dm.d.comb += axi.axi.wlast.eq(internal(dm, "w_count") == 1)


def _ar_ignores_route_room(axi, dm):
    # mutant: ARVALID not gated by room in the routing FIFO (the read limit is not kept)
    dm.d.comb += axi.axi.arvalid.eq(internal(dm, "rd_active") & internal(dm, "rd_fresh"))


def _last_per_burst(axi, dm):
    # mutant: a client's ``last`` on the final beat of every burst, not of its command
    r_slice = dm.submodules.r_slice
    for r in axi.read:
        dm.d.comb += r.data.payload.last.eq(r_slice.r_data[BUS])


def _advance_one_beat(self):
    # mutant (replaces _BurstSplitter.advance while the block elaborates): the next burst starts one beat on
    return [self.addr.eq(self.addr + (1 << self._log_bytes)), self.left.eq(self.left - self.beats), self.fresh.eq(0)]


PATCHES = {"ar-waits-for-r-room": _ar_waits_for_r_room, "wdata-bypass": _wdata_bypass, "wlast-early": _wlast_early,
           "ar-ignores-route-room": _ar_ignores_route_room, "last-per-burst": _last_per_burst}


def build(h, m, prop, mutant):
    dut = AxiMaster(BUS, READERS, max_burst=MAX_BURST, max_reads=MAX_READS, max_writes=MAX_WRITES)
    with mock.patch.object(axi_mod, "AXI_BOUNDARY", 8192 if mutant == "boundary-8k" else axi_mod.AXI_BOUNDARY), \
            mock.patch.object(axi_mod._BurstSplitter, "advance",
                              _advance_one_beat if mutant == "advance-one-beat" else axi_mod._BurstSplitter.advance):
        h.block(m, dut, "axi", PATCHES.get(mutant))
    drive_inputs(h, m, dut, "m")
    a = dut.axi

    # ---------------------------------------------------------------- the clients' obligations
    def beats_of(payload):
        return payload.beats

    for i in range(READERS):
        cmd = dut.read[i].cmd
        m.d.comb += Assume((beats_of(cmd.payload) >= 1) & (beats_of(cmd.payload) <= MAX_CMD))
        held_until(h, m, cmd.valid, cmd.ready, [cmd.payload.as_value()], True)
    wcmd = dut.write.cmd
    m.d.comb += Assume((beats_of(wcmd.payload) >= 1) & (beats_of(wcmd.payload) <= MAX_CMD))
    held_until(h, m, wcmd.valid, wcmd.ready, [wcmd.payload.as_value()], True)

    # ---------------------------------------------------------------- the slave's obligations
    ar_fire, aw_fire = a.arvalid & a.arready, a.awvalid & a.awready
    r_fire, w_fire, b_fire = a.rvalid & a.rready, a.wvalid & a.wready, a.bvalid & a.bready
    # read bursts in flight (AR taken, RLAST not yet), their lengths, and the beat within the oldest
    r_lens, r_out = _fifo(m, "r_len", 3, 8, ar_fire, a.arlen, r_fire & a.rlast)
    r_beat = Signal(8, name="r_beat")
    with m.If(r_fire):
        m.d.sync += r_beat.eq(Mux(a.rlast, 0, r_beat + 1))
    m.d.comb += Assume(~a.rvalid | (r_out != 0))
    m.d.comb += Assume(a.rlast == (r_beat == r_lens[0]))
    held_until(h, m, a.rvalid, a.rready, [a.rdata, a.rlast, a.rresp], True)
    # write bursts announced on AW whose last W beat has not gone yet, their lengths, the beat within the oldest
    w_lens, w_open = _fifo(m, "w_len", 3, 8, aw_fire, a.awlen, w_fire & a.wlast)
    w_beat = Signal(8, name="w_beat")
    with m.If(w_fire):
        m.d.sync += w_beat.eq(Mux(a.wlast, 0, w_beat + 1))
    # bursts whose data went and whose B has not (the slave answers only those), and AWs not yet answered
    b_owed, aw_out = Signal(range(8), name="b_owed"), Signal(range(8), name="aw_outstanding")
    m.d.sync += [b_owed.eq(b_owed + (w_fire & a.wlast) - b_fire), aw_out.eq(aw_out + aw_fire - b_fire)]
    m.d.comb += Assume(~a.bvalid | (b_owed != 0))
    held_until(h, m, a.bvalid, a.bready, [a.bresp], True)

    if prop == "axi-handshake":
        held_until(h, m, a.arvalid, a.arready, [a.araddr, a.arlen, a.arsize, a.arburst], prop)
        held_until(h, m, a.awvalid, a.awready, [a.awaddr, a.awlen, a.awsize, a.awburst], prop)
        held_until(h, m, a.wvalid, a.wready, [a.wdata, a.wstrb, a.wlast], prop)

    elif prop == "axi-bursts":
        for valid, addr, length, size, burst in ((a.arvalid, a.araddr, a.arlen, a.arsize, a.arburst),
                                                 (a.awvalid, a.awaddr, a.awlen, a.awsize, a.awburst)):
            with m.If(valid):
                h.check(m, prop, (length < MAX_BURST) & (addr[:LB] == 0) & (size == LB) & (burst == 0b01)
                        & (length < _span(addr)))

    elif prop == "axi-as-issued":
        # every client command becomes consecutive bursts covering exactly its beats, each as long as the splitting
        # rule says: min(beats left, max_burst, beats to the 4 KiB boundary); no burst without a command
        # (commands are at most 8 beats, so 4 bits of beats suffice; a command is (beats, address) in 36 bits)
        def packed(payload):
            return Cat(payload.addr, payload.beats[:4])

        r_take = Signal(name="r_cmd_taken")
        r_new = Signal(ADDR_BITS + 4, name="r_cmd_new")
        for i in range(READERS):
            c = dut.read[i].cmd
            with m.If(c.valid & c.ready):
                m.d.comb += [r_take.eq(1), r_new.eq(packed(c.payload))]
        # (the read side holds two commands at most, the pending register and the splitter's; the write side one)
        for label, take, new, valid, fire, addr, length, n in (
                ("rd", r_take, r_new, a.arvalid, ar_fire, a.araddr, a.arlen, 3),
                ("wr", wcmd.valid & wcmd.ready, packed(wcmd.payload), a.awvalid, aw_fire, a.awaddr, a.awlen, 2)):
            head_addr = Signal(ADDR_BITS, name=f"{label}_head_addr")
            head_left = Signal(4, name=f"{label}_head_left")
            done = Signal(name=f"{label}_cmd_done")
            cmds, count = _fifo(m, f"{label}_cmd", n, ADDR_BITS + 4, take, new, done)
            fresh = Signal(init=1, name=f"{label}_head_fresh")  # the head has issued no burst yet
            cur_addr = Mux(fresh, cmds[0][LB:ADDR_BITS] << LB, head_addr)
            cur_left = Mux(fresh, cmds[0][ADDR_BITS:], head_left)
            beats = length + 1
            rule = Mux((cur_left <= MAX_BURST) & (cur_left <= _span(cur_addr)), cur_left,
                       Mux(_span(cur_addr) <= MAX_BURST, _span(cur_addr), MAX_BURST))
            h.check(m, prop, count < n)
            with m.If(valid):
                h.check(m, prop, (count != 0) & (addr == cur_addr) & (beats == rule))
            m.d.comb += done.eq(fire & (beats == cur_left))
            with m.If(fire):
                m.d.sync += [head_addr.eq(cur_addr + (beats << LB)), head_left.eq(cur_left - beats), fresh.eq(done)]

    elif prop == "axi-wlast":
        # W beats only inside a burst announced on AW (W never runs ahead), WLAST exactly on its last beat
        with m.If(a.wvalid):
            h.check(m, prop, (w_open != 0) & (a.wlast == (w_beat == w_lens[0])))
        h.check(m, prop, w_open < 3)

    elif prop == "axi-outstanding":
        # at most max_reads read bursts without their RLAST, at most max_writes write bursts without their B
        h.check(m, prop, (r_out <= MAX_READS) & (aw_out <= MAX_WRITES))

    elif prop == "axi-responses":
        # B is taken as soon as it is offered; every R beat goes to the client whose command it answers, in order,
        # with ``last`` exactly on the final beat of that command
        with m.If(a.bvalid):
            h.check(m, prop, a.bready)
        take = Signal(name="rd_taken")
        client = Signal(1, name="rd_taken_client")
        beats = Signal(24, name="rd_taken_beats")
        for i in range(READERS):
            c = dut.read[i].cmd
            with m.If(c.valid & c.ready):
                m.d.comb += [take.eq(1), client.eq(i), beats.eq(beats_of(c.payload))]
        delivered = Signal(24, name="rd_delivered")          # beats of the oldest command delivered so far
        got = Signal(name="rd_beat_delivered")
        is_last = Signal(name="rd_beat_last")
        for i in range(READERS):
            d = dut.read[i].data
            with m.If(d.valid & d.ready):
                m.d.comb += [got.eq(1), is_last.eq(d.payload.last)]
        # (commands accepted and not fully delivered: two in flight on AR behind the routing FIFO, one splitting, one
        # pending: four at most)
        cmds, count = _fifo(m, "rd_cmd", 5, 25, take, beats.shift_left(1) | client, got & is_last)
        head_client, head_beats = cmds[0][0], cmds[0][1:]
        with m.If(got):
            m.d.sync += delivered.eq(Mux(is_last, 0, delivered + 1))
        h.check(m, prop, count < 5)
        for i in range(READERS):
            d = dut.read[i].data
            with m.If(d.valid):
                h.check(m, prop, (count != 0) & (head_client == i) & (d.payload.last == (delivered + 1 == head_beats)))


CHECKS = [
    Check("axi-handshake", "axi-master", "ARVALID, AWVALID and WVALID held with their payload (address, length, "
          "size, burst; data, strobes, WLAST) until READY", "bmc", 20, 10,
          (Mutant("ar-waits-for-r-room", "ARVALID also waits for room in the R slice, so it can fall before "
                  "ARREADY", 14),
           Mutant("wdata-bypass", "WDATA taken from the client, not from the W slice", 8)),
          why_depth="see the module docstring", build=build),
    Check("axi-bursts", "axi-master", "every burst INCR, bus-sized, bus-aligned, at most max_burst beats and inside "
          "one 4 KiB page", "bmc", 20, 10,
          (Mutant("boundary-8k", "the splitter cuts bursts at 8 KiB instead of 4 KiB", 8),),
          why_depth="see the module docstring", build=build),
    Check("axi-as-issued", "axi-master", "each client command becomes consecutive bursts covering exactly its "
          "beats, ARLEN/AWLEN as the splitting rule says (min of beats left, max_burst, beats to 4 KiB); no burst "
          "without a command", "bmc", 16, 10,
          (Mutant("advance-one-beat", "the next burst of a command starts one beat on, not one burst on", 9),),
          why_depth="see the module docstring", build=build),
    Check("axi-wlast", "axi-master", "W beats only inside a burst announced on AW, WLAST exactly on its last beat",
          "bmc", 20, 10, (Mutant("wlast-early", "WLAST one beat early", 8),),
          why_depth="see the module docstring", build=build),
    Check("axi-outstanding", "axi-master", "at most max_reads (2) read bursts without RLAST and max_writes (2) "
          "write bursts without B", "bmc", 20, 10,
          (Mutant("ar-ignores-route-room", "ARVALID not gated by room in the routing FIFO", 10),),
          why_depth="see the module docstring", build=build),
    Check("axi-responses", "axi-master", "BREADY whenever B is offered; each R beat delivered to the client whose "
          "command it answers, in command order, with last on the command's final beat", "bmc", 14, 10,
          (Mutant("last-per-burst", "a client's last on every burst's final beat", 12),),
          why_depth="see the module docstring", build=build),
]
