"""The AXI4-Lite slave of the control registers (:class:`hw.control.ControlRegs`).

Parameterization: ``ControlRegs(small config, addr_width=8)``. Eight address bits hold the whole register map
(0x00-0xC4) and unmapped words on both sides of it (0x28-0x3C, 0xC8-0xFC); the decoder compares every address bit
above the two byte-offset bits, so a wider bus only adds more unmapped words. The small config only sets the
``version``/``config0``/``config1`` constants (non-zero, so a read that lands on them shows).

Environment (assumed): the master holds AWVALID, WVALID and ARVALID with their payload until READY (AXI A3.2.1).
Everything else is free in every cycle: the master's BREADY/RREADY, and every input of the block (``finish``,
``error_code``, the counter enables, event counters and snapshots). Everything is proved by k-induction.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Mux, Signal

from sw.registers import REGISTER_MAP, config_words, version_word

from ..control import ControlRegs
from .common import Check, Mutant, drive_inputs, held_until, past

__all__ = ["CHECKS"]

ADDR_WIDTH = 8
HOST = [r for r in REGISTER_MAP if r.kind == "host"]


def _config():
    from sw.config import load_config
    return load_config("small")


def _answers_twice(regs, dm):
    # mutant: BVALID rises again for one more cycle after its handshake (a second response to one write)
    bus, again = regs.bus, Signal(name="again")
    dm.d.sync += again.eq(0)
    with dm.If(bus.bvalid & bus.bready & ~again):
        dm.d.sync += [bus.bvalid.eq(1), again.eq(1)]


def _rvalid_pulse(regs, dm):
    # mutant: RVALID is a one-cycle pulse, whether or not the master took it
    with dm.If(regs.bus.rvalid):
        dm.d.sync += regs.bus.rvalid.eq(0)


# mutants of the address decoder: the block sees an address with one bit cleared (an incomplete decode), so a
# write to a read-only or unmapped word lands in a register, or a read of an unmapped word returns one
DECODE = {"write-decode-ignores-bit6": (("bus", "awaddr"), 0x40), "read-decode-ignores-bit7": (("bus", "araddr"), 0x80)}


def build(h, m, prop, mutant):
    cfg = _config()
    regs = ControlRegs(cfg, addr_width=ADDR_WIDTH)
    h.block(m, regs, "regs", {"answers-twice": _answers_twice, "rvalid-pulse": _rvalid_pulse}.get(mutant))
    override = {}
    if mutant in DECODE:
        path, bit = DECODE[mutant]
        override[path] = lambda s, bit=bit: s & ~Const(bit, ADDR_WIDTH)
    ins = drive_inputs(h, m, regs, "s", override)
    bus = regs.bus
    # the master's side, as the master sees it (the block may see a mutated address)
    awvalid, awaddr = ins[("bus", "awvalid")], ins[("bus", "awaddr")]
    wvalid, wdata, wstrb = ins[("bus", "wvalid")], ins[("bus", "wdata")], ins[("bus", "wstrb")]
    arvalid, araddr = ins[("bus", "arvalid")], ins[("bus", "araddr")]
    bready, rready = ins[("bus", "bready")], ins[("bus", "rready")]
    held_until(h, m, awvalid, bus.awready, [awaddr], True)
    held_until(h, m, wvalid, bus.wready, [wdata, wstrb], True)
    held_until(h, m, arvalid, bus.arready, [araddr], True)

    aw_fire, w_fire, ar_fire = awvalid & bus.awready, wvalid & bus.wready, arvalid & bus.arready
    b_fire, r_fire = bus.bvalid & bready, bus.rvalid & rready

    if prop == "lite-one-response":
        # requests accepted minus responses taken, per channel: one transaction at a time (the docstring), and a
        # response exactly while one waits, so every request gets one response and none comes unasked; all OKAY
        aw_n, w_n, r_n = (Signal(range(4), name=n) for n in ("aw_waiting", "w_waiting", "ar_waiting"))
        m.d.sync += [aw_n.eq(aw_n + aw_fire - b_fire), w_n.eq(w_n + w_fire - b_fire), r_n.eq(r_n + ar_fire - r_fire)]
        h.check(m, prop + ":helper", aw_n == w_n)          # (induction: this slave takes AW and W together)
        h.check(m, prop, (aw_n <= 1) & (w_n <= 1) & (r_n <= 1))
        h.check(m, prop, (bus.bvalid == ((aw_n == 1) & (w_n == 1))) & (bus.rvalid == (r_n == 1)))
        h.check(m, prop, (bus.bresp == 0) & (bus.rresp == 0))

    elif prop == "lite-stable":
        # a response, once offered, stays with the same payload until taken
        held_until(h, m, bus.bvalid, bready, [bus.bresp], prop)
        held_until(h, m, bus.rvalid, rready, [bus.rdata, bus.rresp], prop)

    elif prop == "lite-writes":
        # a reference register file of the host registers, written byte by byte from the accepted writes at their
        # own offsets only: a write to an unmapped or read-only word changes none of them; a launch comes only from
        # a write of 1 to control bit 0 (byte 0 enabled) while no run is going
        write = aw_fire & w_fire
        word = awaddr[2:]
        for r in HOST:
            shadow = Signal(32, init=r.reset, name=f"shadow_{r.name}")
            with m.If(write & (word == r.offset >> 2)):
                m.d.sync += shadow.eq(Cat(Mux(wstrb[i], wdata[8 * i:8 * i + 8], shadow[8 * i:8 * i + 8])
                                          for i in range(4)))
            h.check(m, prop, getattr(regs, r.name) == shadow)
        h.check(m, prop, regs.launch == past(m, write & (word == 0) & wstrb[0] & wdata[0] & ~regs.running))

    elif prop == "lite-reads":
        # what a read answers, fixed at its AR handshake: 0 for an unmapped word; a host register's value; an
        # input's snapshot; the build's constants; reserved bits of control and status as 0 (counters: any value)
        value, mask = Signal(32, name="read_expect"), Signal(32, name="read_mask")
        consts = {"version": version_word(cfg), "config0": config_words(cfg)[0], "config1": config_words(cfg)[1]}
        with m.Switch(araddr[2:]):
            for r in REGISTER_MAP:
                with m.Case(r.offset >> 2):
                    if r.kind == "host":
                        m.d.comb += [value.eq(getattr(regs, r.name)), mask.eq(0xFFFFFFFF)]
                    elif r.kind == "input":
                        m.d.comb += [value.eq(getattr(regs, r.port)), mask.eq(0xFFFFFFFF)]
                    elif r.kind == "const":
                        m.d.comb += [value.eq(consts[r.name]), mask.eq(0xFFFFFFFF)]
                    elif r.kind == "control":
                        m.d.comb += [value.eq(0), mask.eq(0xFFFFFFFC)]
                    elif r.kind == "status":
                        m.d.comb += [value.eq(0), mask.eq(0xFFFFF0F8)]
                    else:
                        m.d.comb += [value.eq(0), mask.eq(0)]
            with m.Default():
                m.d.comb += [value.eq(0), mask.eq(0xFFFFFFFF)]
        want, care = Signal(32, name="read_want"), Signal(32, name="read_care")
        with m.If(ar_fire):
            m.d.sync += [want.eq(value), care.eq(mask)]
        with m.If(bus.rvalid):
            h.check(m, prop, (bus.rdata & care) == (want & care))


CHECKS = [
    Check("lite-one-response", "axi-lite", "one B per accepted write and one R per accepted read, never one "
          "unasked, one transaction per channel at a time, every response OKAY", "prove", 4, 6,
          (Mutant("answers-twice", "BVALID raised again for a cycle after its handshake", 5),),
          build=build),
    Check("lite-stable", "axi-lite", "BVALID/BRESP and RVALID/RDATA/RRESP held until BREADY/RREADY", "prove", 4, 6,
          (Mutant("rvalid-pulse", "RVALID a one-cycle pulse", 5),), build=build),
    Check("lite-writes", "axi-lite", "the host registers follow the accepted writes to their own offsets (byte "
          "strobes applied); writes to unmapped and read-only words change nothing; a launch only from a write of "
          "1 to control while idle", "prove", 4, 6,
          (Mutant("write-decode-ignores-bit6", "the write decoder ignores address bit 6 (a write to config0 at "
                  "0x48 lands in insn_count at 0x08)", 4),), build=build),
    Check("lite-reads", "axi-lite", "a read returns 0 for an unmapped word, the register's value for host "
          "registers, snapshots and constants, 0 in the reserved bits of control and status", "prove", 4, 6,
          (Mutant("read-decode-ignores-bit7", "the read decoder ignores address bit 7 (a read of unmapped 0xC8 "
                  "returns config0)", 4),), build=build),
]
