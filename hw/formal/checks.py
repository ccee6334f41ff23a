"""The properties: one harness per block, each property a name, a method and a mutant that breaks it.

Conventions: the harness drives every input of the block from a free input of its own (``free``), assumes the
reset low (the initial state is the registers' init values), and adds ``Assert``s; ``past(m, x)`` is ``x`` one cycle
earlier and ``m.started`` is low in the first cycle. A mutant either injects a fault at the block's boundary (an
output XORed or ORed with a free input ``fault``: a block that breaks the rule in some reachable state) or builds
the block with a wrong parameter; each mutant must make its property fail.
"""

from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Assert, Assume, Const, Elaboratable, Module, Mux, ResetSignal, Signal, Value
from amaranth.lib import wiring

from ..axi import AxiMaster
from ..control import ControlRegs
from ..fetch import Fetch
from ..interfaces import ADDR_BITS
from ..isa import insn_layouts
from ..queues import TokenQueue
from ..registers import REGISTER_MAP

__all__ = ["Check", "CHECKS", "harness"]


@dataclass(frozen=True)
class Check:
    """A property: ``block``, what it states, ``method`` ("prove": k-induction, or "bmc") to ``depth`` cycles
    (``fast_depth`` in the test suite's run), and the mutant that must make it fail."""
    name: str
    block: str
    states: str
    method: str
    depth: int
    fast_depth: int
    mutant: str
    why_depth: str = ""
    mutant_depth: int = 0          # BMC depth of the mutant's counterexample search (default: ``fast_depth``)


class _Harness(Elaboratable):
    def __init__(self, build):
        self.build = build
        self.ports = []

    def free(self, shape, name):
        s = Signal(shape, name=name)
        self.ports.append(s)
        return s

    def elaborate(self, platform):
        m = Module()
        m.d.comb += Assume(~ResetSignal())
        started = Signal(name="started")
        m.d.sync += started.eq(1)
        m.started = started
        self.build(self, m)
        return m


def past(m, value, name=None):
    """``value`` one cycle earlier (its init value in the first cycle). The register lives in a module of its own, so
    a call inside ``with m.If(...)`` still samples every cycle."""
    s = Signal.like(value, name=name or f"past_{getattr(value, 'name', 'x')}") if isinstance(value, Signal) else \
        Signal(value.shape(), name=name or "past_x")
    holder = Module()
    holder.d.sync += s.eq(value)
    m.submodules += holder
    return s


def drive_inputs(h, m, dut, prefix):
    """Every input port of ``dut`` from a free input of the harness; returns {path: free signal}."""
    out = {}
    for path, member, value in dut.signature.flatten(dut):
        if member.flow == wiring.In:
            name = prefix + "_" + "_".join(str(p) for p in path)
            raw = Value.cast(value)
            s = h.free(len(raw), name)
            m.d.comb += raw.eq(s)
            out[path] = s
    return out


# ---------------------------------------------------------------------------------------------- token queues
def _queue(h, m, prop, mutant):
    # the mutant: a queue one deeper than the limit it must keep (4 instead of 255, so the counterexample is short)
    depth, limit = (5, 4) if mutant == "one-too-deep" else (255, 255)
    m.submodules.q = q = TokenQueue(depth)
    ins = drive_inputs(h, m, q, "q")
    push, pop, clear = ins[("producer", "push")], ins[("consumer", "pop")], ins[("clear",)]
    # the reference: a count that cannot saturate silently (wide), and the overflow flag
    ref = Signal(range(1024), name="ref_count")
    ref_over = Signal(name="ref_overflow")
    taken = pop & (ref != 0)
    with m.If(clear):
        m.d.sync += [ref.eq(0), ref_over.eq(0)]
    with m.Elif(push & ~taken):
        with m.If(ref == depth):
            m.d.sync += ref_over.eq(1)
        with m.Else():
            m.d.sync += ref.eq(ref + 1)
    with m.Elif(taken & ~push):
        m.d.sync += ref.eq(ref - 1)
    count = q.count ^ (h.free(1, "fault") if mutant == "count-fault" else Const(0, 1))
    if prop == "queue-count":
        m.d.comb += Assert((count == ref) & (q.overflow == ref_over) & (q.consumer.valid == (ref != 0)))
    elif prop == "queue-limit":
        m.d.comb += Assert(q.count <= limit)


# ---------------------------------------------------------------------------------------------- AXI4-Lite slave
def _lite(h, m, prop, mutant):
    m.submodules.regs = regs = ControlRegs(None, addr_width=8)
    ins = drive_inputs(h, m, regs, "s")
    bus = regs.bus
    fault = h.free(1, "fault") if mutant else Const(0)
    bvalid = bus.bvalid | (fault if mutant == "extra-b" else Const(0, 1))
    rdata = bus.rdata ^ (fault if mutant == "rdata-unstable" else Const(0, 1))
    insn_count = regs.insn_count ^ (fault if mutant == "ro-write-lands" else Const(0, 1))
    # the master's obligations: AW, W and AR held with their payload until READY
    for valid, ready, payload in ((("bus", "awvalid"), bus.awready, [("bus", "awaddr")]),
                                  (("bus", "wvalid"), bus.wready, [("bus", "wdata"), ("bus", "wstrb")]),
                                  (("bus", "arvalid"), bus.arready, [("bus", "araddr")])):
        v = ins[valid]
        with m.If(m.started & past(m, v) & ~past(m, ready)):
            m.d.comb += Assume(v)
            for p in payload:
                m.d.comb += Assume(ins[p] == past(m, ins[p]))
    b_pending = Signal(2, name="b_pending")     # write requests accepted minus B responses taken
    r_pending = Signal(2, name="r_pending")
    aw_fire = bus.awvalid & bus.awready & bus.wvalid & bus.wready
    m.d.sync += b_pending.eq(b_pending + aw_fire - (bvalid & bus.bready))
    m.d.sync += r_pending.eq(r_pending + (bus.arvalid & bus.arready) - (bus.rvalid & bus.rready))
    if prop == "lite-one-response":
        # one response per request: a B (an R) exactly while one write (read) waits for it
        m.d.comb += Assert((b_pending <= 1) & (r_pending <= 1) & (bvalid == (b_pending == 1))
                           & (bus.rvalid == (r_pending == 1)) & (bus.bresp == 0) & (bus.rresp == 0))
    elif prop == "lite-stable":
        with m.If(m.started & past(m, bvalid) & ~past(m, bus.bready)):
            m.d.comb += Assert(bvalid)
        with m.If(m.started & past(m, bus.rvalid) & ~past(m, bus.rready)):
            m.d.comb += Assert(bus.rvalid & (rdata == past(m, rdata)))
    elif prop == "lite-ignored-writes":
        # a host register changes only when a write to its own offset is accepted
        offset = next(r.offset for r in REGISTER_MAP if r.name == "insn_count")
        wrote = past(m, aw_fire & (bus.awaddr[2:] == offset >> 2) & (bus.wstrb != 0))
        with m.If(m.started & ~wrote):
            m.d.comb += Assert(insn_count == past(m, insn_count))


# ---------------------------------------------------------------------------------------------- fetch
def _fetch(h, m, prop, mutant):
    from sw.config import load_config

    # the small config has no ALU MUL; the mutant's decoder is built for one that has (default)
    cfg = load_config("default" if mutant == "mul-config" else "small")
    m.submodules.f = f = Fetch(cfg, queue_depth=2, buffer_beats=2)
    drive_inputs(h, m, f, "f")
    layouts = insn_layouts(cfg)
    ok = {}
    for name in ("load_queue", "compute_queue", "store_queue"):
        q = getattr(f, name)
        ins, alu = layouts["mem"](q.payload), layouts["alu"](q.payload)
        op, mem = ins.opcode, ins.memory_type
        if name == "store_queue":
            good = (op == 1) & ((mem == 4) | ((ins.x_size == 0) & (mem <= 5))) & ~ins.pop_next & ~ins.push_next
        elif name == "load_queue":
            good = (op == 0) & ((mem == 1) | (mem == 2)) & ~ins.pop_prev & ~ins.push_prev
        else:
            good = (((op == 0) & ((mem == 0) | (mem == 3) | (mem == 5))) | (op == 2) | (op == 3)
                    | ((op == 4) & (alu.alu_opcode <= 3)))         # ALU: MIN, MAX, ADD, SHR; no MUL on this config
        ok[name] = (q.valid, good)
    if prop == "fetch-routing":
        for valid, good in ok.values():
            m.d.comb += Assert(~valid | good)


# ---------------------------------------------------------------------------------------------- AXI4 master
def _burst_fifo(m, lens, count, issue, length, done, name):
    """The lengths of the ``count`` bursts in flight, oldest in ``lens[0]``: ``issue`` appends ``length``, ``done``
    retires the oldest; ``count`` follows."""
    with m.If(done):
        m.d.sync += [lens[i].eq(lens[i + 1]) for i in range(len(lens) - 1)]
    slot = Signal(range(len(lens) + 1), name=f"{name}_slot")
    m.d.comb += slot.eq(count - done)
    with m.If(issue):
        for i in range(len(lens)):
            with m.If(slot == i):
                m.d.sync += lens[i].eq(length)
    m.d.sync += count.eq(count + issue - done)


def _master(h, m, prop, mutant):
    reads = 3 if mutant == "reads-3" else 2
    m.submodules.axi = axi = AxiMaster(64, 2, max_burst=4, max_reads=reads, max_writes=2)
    ins = drive_inputs(h, m, axi, "m")
    a = axi.axi
    fault = h.free(1, "fault") if mutant not in (None, "reads-3") else Const(0)
    arvalid = a.arvalid & ~(fault if mutant == "drop-arvalid" else Const(0, 1))
    araddr = a.araddr | (Mux(fault, 0xFF8, 0) if mutant == "cross-4k" else Const(0, 1))   # a burst near 4 KiB's end
    wlast = a.wlast ^ (fault if mutant == "wlast-fault" else Const(0, 1))
    # the clients' obligations: a command held with its payload until taken, 1..8 beats
    for i in range(2):
        v, p = ins[("read", i, "cmd", "valid")], ins[("read", i, "cmd", "payload")]
        m.d.comb += Assume((p[ADDR_BITS:] >= 1) & (p[ADDR_BITS:] <= 8))
        with m.If(m.started & past(m, v) & ~past(m, axi.read[i].cmd.ready)):
            m.d.comb += Assume(v & (p == past(m, p)))
    v, p = ins[("write", "cmd", "valid")], ins[("write", "cmd", "payload")]
    m.d.comb += Assume((p[ADDR_BITS:] >= 1) & (p[ADDR_BITS:] <= 8))
    with m.If(m.started & past(m, v) & ~past(m, axi.write.cmd.ready)):
        m.d.comb += Assume(v & (p == past(m, p)))
    # the slave's: R only for an outstanding burst, RLAST on its last beat; B only for a burst whose data went
    r_out = Signal(range(8), name="r_outstanding")
    r_beat = Signal(4, name="r_beat")
    r_lens = [Signal(4, name=f"r_len{i}") for i in range(3)]
    ar_fire = arvalid & a.arready
    r_fire = a.rvalid & a.rready
    m.d.comb += Assume(~a.rvalid | (r_out != 0))
    m.d.comb += Assume(a.rlast == (r_beat == r_lens[0]))
    with m.If(r_fire):
        m.d.sync += r_beat.eq(Mux(a.rlast, 0, r_beat + 1))
    _burst_fifo(m, r_lens, r_out, ar_fire, a.arlen, r_fire & a.rlast, "r")
    b_owed = Signal(range(8), name="b_owed")     # bursts whose last W beat went, not answered yet
    w_fire = a.wvalid & a.wready
    b_fire = a.bvalid & a.bready
    m.d.comb += Assume(~a.bvalid | (b_owed != 0))
    m.d.sync += b_owed.eq(b_owed + (w_fire & a.wlast) - b_fire)
    aw_out = Signal(range(8), name="aw_outstanding")    # AW accepted, B not yet taken
    m.d.sync += aw_out.eq(aw_out + (a.awvalid & a.awready) - b_fire)
    w_beat = Signal(4, name="w_beat")
    w_lens = [Signal(8, name=f"w_len{i}") for i in range(3)]
    w_bursts = Signal(range(8), name="w_bursts_open")    # AW accepted, its last W beat not yet sent
    with m.If(w_fire):
        m.d.sync += w_beat.eq(Mux(wlast, 0, w_beat + 1))
    _burst_fifo(m, w_lens, w_bursts, a.awvalid & a.awready, a.awlen, w_fire & wlast, "w")
    if prop == "axi-valid-stable":
        for valid, ready, payload in ((arvalid, a.arready, [araddr, a.arlen]), (a.awvalid, a.awready, [a.awaddr, a.awlen]),
                                      (a.wvalid, a.wready, [a.wdata, a.wstrb, wlast])):
            with m.If(m.started & past(m, valid) & ~past(m, ready)):
                m.d.comb += Assert(valid)
                for p in payload:
                    m.d.comb += Assert(p == past(m, p))
    elif prop == "axi-bursts":
        # INCR bursts of at most max_burst beats that never cross a 4 KiB boundary
        for valid, addr, length in ((arvalid, araddr, a.arlen), (a.awvalid, a.awaddr, a.awlen)):
            with m.If(valid):
                m.d.comb += Assert((length <= 3) & ((addr[:12] + ((length + 1) << 3)) <= 4096))
    elif prop == "axi-wlast":
        # W only inside an announced burst, WLAST exactly on its last beat
        with m.If(a.wvalid):
            m.d.comb += Assert((w_bursts != 0) & (wlast == (w_beat == w_lens[0])))
    elif prop == "axi-outstanding":
        # at most max_reads read bursts and max_writes write bursts in flight; every response taken
        m.d.comb += Assert((r_out <= 2) & (aw_out <= 2))


BUILDERS = {"queues": _queue, "axi-lite": _lite, "fetch": _fetch, "axi-master": _master}

CHECKS = [
    Check("queue-count", "queues", "the count follows a saturating semaphore (never below zero, never above the "
          "depth, a push into a full queue dropped and flagged, valid iff not empty)", "prove", 8, 4, "count-fault"),
    Check("queue-limit", "queues", "the count of the 255-deep queue never exceeds 255 (VTA's 8-bit semaphore)",
          "prove", 8, 4, "one-too-deep", mutant_depth=8),
    Check("lite-one-response", "axi-lite", "one B per accepted write and one R per accepted read, each OKAY",
          "prove", 8, 4, "extra-b"),
    Check("lite-stable", "axi-lite", "BVALID, RVALID and RDATA held until taken", "prove", 8, 4, "rdata-unstable"),
    Check("lite-ignored-writes", "axi-lite", "a register changes only on a write to its offset (unmapped and "
          "read-only writes ignored)", "prove", 8, 4, "ro-write-lands"),
    Check("fetch-routing", "fetch", "each routed instruction is in the one queue of its module; bad ones (opcodes "
          "5-7, memory types, reserved flags, ALU opcodes, MUL without ALU_MUL) are never routed", "bmc", 24, 12,
          "mul-config", "an instruction reaches a queue's output 7 cycles after its first bus beat (2 beats, staging, "
          "decode, queue); 24 cycles route three back to back and fill the 2-entry queues"),
    Check("axi-valid-stable", "axi-master", "ARVALID, AWVALID, WVALID held with their payload until READY", "bmc",
          20, 10, "drop-arvalid", "commands of up to 8 beats from two readers and the writer, split into bursts of "
          "up to 4: 20 cycles issue the outstanding limit of both channels and complete bursts behind it"),
    Check("axi-bursts", "axi-master", "bursts of at most max_burst beats that never cross 4 KiB", "bmc", 20, 10,
          "cross-4k", "as axi-valid-stable"),
    Check("axi-wlast", "axi-master", "W beats only inside an issued AW burst, WLAST exactly on its last beat", "bmc",
          20, 10, "wlast-fault", "as axi-valid-stable"),
    Check("axi-outstanding", "axi-master", "at most max_reads (2) read and max_writes (2) write bursts outstanding",
          "bmc", 20, 10, "reads-3", "as axi-valid-stable"),
]


def harness(check: Check, mutant: bool = False):
    """(elaboratable, ports) of ``check``'s harness, with its mutant when ``mutant``."""
    h = _Harness(lambda h, m: BUILDERS[check.block](h, m, check.name, check.mutant if mutant else None))
    return h
