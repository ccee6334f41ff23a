"""Instruction fetch: read the program by DMA, check each instruction and route it (docs/architecture.md §2.2)."""

from amaranth.hdl import Cat, Const, Module, Signal
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from sw.config import Config
from sw.isa import INS_WIDTH, MemId, Opcode, alu_opcodes, opcodes
from sw.registers import ERROR_CODE_BITS, ErrorCode

from .interfaces import ADDR_BITS, dma_read_signature
from .layouts import insn_layouts

__all__ = ["Fetch"]


class Fetch(wiring.Component):
    """Fetch ``insn_count`` instructions from ``insn_addr`` and route them to the command queues.

    On a ``start`` pulse, Fetch reads the 128-bit instructions through one DMA read client
    (``dma``). Bus words are assembled least significant word first (64-bit bus: two beats per
    instruction); on a bus wider than 128 bits one beat holds several instructions, and
    ``insn_addr`` then only needs 16-byte alignment (the leading slots of the first beat and the
    trailing slots of the last are dropped). Each instruction is checked, then pushed into one of
    three command queues (:class:`amaranth.lib.fifo.SyncFIFOBuffered`, ``queue_depth`` entries
    each, held inside Fetch), whose read sides are the output streams:

    * ``store_queue``: STORE;
    * ``load_queue``: LOAD with memory_type INP or WGT;
    * ``compute_queue``: every other LOAD (UOP, ACC, ACC_8BIT), GEMM, ALU, FINISH.

    Checks, in this order (first failure wins; :class:`sw.registers.ErrorCode`):

    1. ``BAD_OPCODE``: opcode 6..7, or 5 (DEPTHWISE) when the config has DEPTHWISE = 0;
    2. ``BAD_MEMORY_TYPE``: a LOAD/STORE with memory_type 6..7, a LOAD of OUT, or a STORE that is
       not a NOP (x_size != 0) of anything but OUT;
    3. ``RESERVED_DEP_FLAG``: pop_prev or push_prev on a load-module instruction (LOAD INP/WGT),
       pop_next or push_next on a STORE (docs/architecture.md §2.3);
    4. ``BAD_ALU_OPCODE``: ALU with alu_opcode 6..7, MUL (4) when the config has ALU_MUL = 0, or POST (5)
       when it has POST_UNIT = 0.

    A bad instruction is not routed: Fetch drives its code on ``error`` (cleared by the next
    ``start`` pulse, on the following cycle), stops requesting instructions, and drains the words already requested so
    that the
    shared AXI read channel is never blocked. The top level must treat a non-zero ``error`` as
    finish (:class:`hw.control.ControlRegs` does). ``insn_fetched`` counts the routed
    instructions, so after an error it is the index of the bad one.

    Memory requests never outrun the local staging buffer (``buffer_beats`` bus words): a DMA
    command of ``buffer_beats // 2`` beats is only issued when its words are sure to fit, so Fetch
    never applies back-pressure to the DMA data (a full command queue cannot stall the other DMA
    clients).

    Ports: ``start`` (in), ``insn_count``/``insn_addr`` (in, 32, sampled at start), ``dma``
    (DMA read client), ``load_queue``/``compute_queue``/``store_queue`` (out streams, 128-bit
    payload), ``load_level``/``compute_level``/``store_level`` (out, queue fill levels),
    ``busy`` (out: the run still has instructions to route), ``stall`` (out: busy and no
    instruction routed this cycle, i.e. waiting on memory or on a full queue), ``idle`` (out: no
    run and no DMA word outstanding; a start while not idle is held until idle), ``error`` (out,
    4), ``insn_fetched`` (out, 32).

    Latency: the first DMA command is offered 1 cycle after ``start``; an instruction is valid at
    the output of its queue 5 cycles after its last bus word is accepted (6 on buses wider than
    128 bits): staging FIFO, (word register,) decode queue (two entries), command queue; all FIFOs are
    buffered so they map to block RAM. Throughput: one instruction per cycle when the bus is 128
    bits or wider, one per two cycles on a 64-bit bus.

    Parameters
    ----------
    cfg : Config
        Gives BUS_WIDTH (64..512) and ALU_MUL.
    queue_depth : int
        Entries of each command queue, 2..65536 (default 512, as VTA).
    buffer_beats : int
        Bus words of the staging buffer, 2..512 (default 32); DMA commands are half of it.
    """

    def __init__(self, cfg: Config, *, queue_depth: int = 512, buffer_beats: int = 32):
        for name, value, lo, hi in (("queue_depth", queue_depth, 2, 65536),
                                    ("buffer_beats", buffer_beats, 2, 512)):
            if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
                raise ValueError(f"Fetch: {name} must be an integer in [{lo}, {hi}], got {value!r}")
        bus_width = cfg.BUS_WIDTH
        if bus_width not in (64, 128, 256, 512):
            raise ValueError(f"Fetch: cfg.BUS_WIDTH must be one of 64, 128, 256, 512, got {bus_width}")
        self.cfg = cfg
        self.bus_width = bus_width
        self.queue_depth = queue_depth
        self.buffer_beats = buffer_beats
        self.chunk_beats = buffer_beats // 2
        level = Out(range(queue_depth + 1))
        super().__init__({
            "start": In(1),
            "insn_count": In(32),
            "insn_addr": In(ADDR_BITS),
            "dma": Out(dma_read_signature(bus_width)),
            "load_queue": Out(stream.Signature(INS_WIDTH)),
            "compute_queue": Out(stream.Signature(INS_WIDTH)),
            "store_queue": Out(stream.Signature(INS_WIDTH)),
            "load_level": level,
            "compute_level": level,
            "store_level": level,
            "busy": Out(1),
            "stall": Out(1),
            "idle": Out(1),
            "error": Out(ERROR_CODE_BITS),
            "insn_fetched": Out(32),
        })

    def elaborate(self, platform: object) -> Module:
        m = Module()
        bus = self.bus_width
        log_bytes = (bus // 8).bit_length() - 1
        depth = self.buffer_beats
        chunk = self.chunk_beats

        # ---------------------------------------------------------------- command queues
        queues = {}
        for name in ("load", "compute", "store"):
            q = fifo.SyncFIFOBuffered(width=INS_WIDTH, depth=self.queue_depth)
            m.submodules[f"{name}_queue"] = q
            out = getattr(self, f"{name}_queue")
            m.d.comb += [
                out.valid.eq(q.r_rdy),
                out.payload.eq(q.r_data),
                q.r_en.eq(out.ready),
                getattr(self, f"{name}_level").eq(q.level),
            ]
            queues[name] = q

        # ---------------------------------------------------------------- run state
        running = Signal()          # instructions left to route
        discard = Signal()          # after an error: drop every word still arriving
        pending_start = Signal()
        req_addr = Signal(ADDR_BITS)
        beats_left = Signal(34)     # bus words still to request
        reserved = Signal(range(depth + 1))   # words requested and not yet taken from staging
        routed = Signal(32)
        count = Signal(32)

        m.submodules.staging = staging = fifo.SyncFIFOBuffered(width=bus, depth=depth)

        # ---------------------------------------------------------------- DMA requests
        req_beats = Signal(range(chunk + 1))
        with m.If(beats_left < chunk):
            m.d.comb += req_beats.eq(beats_left)
        with m.Else():
            m.d.comb += req_beats.eq(chunk)
        # A command, once offered, stays offered with the same payload until accepted (stream
        # rule), even if an error stops the run meanwhile.
        cmd_hold = Signal()
        beats_nz = Signal()         # beats_left != 0, as a register (timing)
        room = Signal(init=1)       # reserved <= depth - chunk: a command's words would fit (register)
        m.d.sync += cmd_hold.eq(self.dma.cmd.valid & ~self.dma.cmd.ready)
        m.d.comb += [
            self.dma.cmd.valid.eq(cmd_hold | (running & beats_nz & room)),
            self.dma.cmd.payload.addr.eq(req_addr),
            self.dma.cmd.payload.beats.eq(req_beats),
        ]
        requested = Signal(range(chunk + 1))
        with m.If(self.dma.cmd.valid & self.dma.cmd.ready):
            m.d.comb += requested.eq(req_beats)
            m.d.sync += [
                req_addr.eq(req_addr + (req_beats << log_bytes)),
                beats_left.eq(beats_left - req_beats),
                beats_nz.eq(beats_left != req_beats),
            ]

        m.d.comb += [
            staging.w_data.eq(self.dma.data.payload.data),
            staging.w_en.eq(self.dma.data.valid),
            # always ready: the requests never outrun the staging buffer (``reserved``), so it has
            # room for every word that arrives (a constant keeps the R channel's ready logic short)
            self.dma.data.ready.eq(1),
        ]
        reserved_next = reserved + requested - staging.r_en  # untoggled: staging-reserved
        m.d.sync += [reserved.eq(reserved_next), room.eq(reserved_next <= depth - chunk)]

        # ---------------------------------------------------------------- decode queue
        # Two entries, so whether the assembly may deliver (``free``) depends only on the fill level,
        # not on the checks and queue readiness of the instruction being routed (timing).
        # The checks run as an instruction enters the queue, and their verdict (error code, one-hot
        # destination) is queued with it, so routing at the head is a few gates (timing).
        entry = data.StructLayout({"insn": INS_WIDTH, "code": ERROR_CODE_BITS, "bad": 1,
                                   "to_load": 1, "to_compute": 1, "to_store": 1})
        m.submodules.decode_queue = decode_q = fifo.SyncFIFO(width=entry.size, depth=2)
        head = data.View(entry, decode_q.r_data)
        insn = head.insn
        insn_valid = decode_q.r_rdy
        taken = Signal()            # the head instruction is routed this cycle
        free = decode_q.w_rdy       # an assembled instruction can be delivered this cycle
        load_insn = Signal()
        next_insn = Signal(INS_WIDTH)
        tail = Signal(entry)
        m.d.comb += [decode_q.w_en.eq(load_insn), decode_q.w_data.eq(tail), tail.insn.eq(next_insn)]

        # ---------------------------------------------------------------- assembly
        if bus <= INS_WIDTH:
            ratio = INS_WIDTH // bus
            part = Signal(range(ratio))
            low = Signal(max(1, INS_WIDTH - bus), reset_less=True)
            final_part = part == ratio - 1
            with m.If(discard):
                m.d.comb += staging.r_en.eq(staging.r_rdy)
            with m.Elif(staging.r_rdy & (~final_part | free)):  # untoggled: fetch-room
                m.d.comb += staging.r_en.eq(1)
                with m.If(final_part):
                    m.d.comb += load_insn.eq(1)
                    m.d.sync += part.eq(0)
                with m.Else():
                    m.d.sync += [low.eq(staging.r_data), part.eq(part + 1)]
            # (always the candidate, so the checks below do not wait for the handshake: timing)
            m.d.comb += next_insn.eq(Cat(low, staging.r_data) if ratio > 1 else staging.r_data)
            skip_bits = 0
            assembling = part != 0
        else:
            per_beat = bus // INS_WIDTH
            skip_bits = per_beat.bit_length() - 1
            word = Signal(bus, reset_less=True)
            word_valid = Signal()
            assembling = word_valid
            slot = Signal(range(per_beat))
            skip_left = Signal(range(per_beat))   # leading slots of the first word to drop
            asm_left = Signal(32)                 # instructions still to assemble
            real = (skip_left == 0) & (asm_left != 0)
            advance = Signal()
            m.d.comb += advance.eq(word_valid & (~real | free))
            with m.If(advance):
                m.d.sync += slot.eq(slot + 1)
                with m.If(slot == per_beat - 1):
                    m.d.sync += word_valid.eq(0)
                with m.If(skip_left != 0):
                    m.d.sync += skip_left.eq(skip_left - 1)
                with m.Elif(asm_left != 0):
                    m.d.sync += asm_left.eq(asm_left - 1)
                    m.d.comb += load_insn.eq(1)
            m.d.comb += next_insn.eq(word.word_select(slot, INS_WIDTH))
            with m.If(discard):
                m.d.comb += [staging.r_en.eq(staging.r_rdy), load_insn.eq(0)]
                m.d.sync += word_valid.eq(0)
            with m.Elif(staging.r_rdy & (~word_valid | (advance & (slot == per_beat - 1)))):
                m.d.comb += staging.r_en.eq(1)
                m.d.sync += [word.eq(staging.r_data), word_valid.eq(1), slot.eq(0)]

        # ---------------------------------------------------------------- checks and routing
        layouts = insn_layouts(self.cfg)
        mem = data.View(layouts["mem"], next_insn)
        alu = data.View(layouts["alu"], next_insn)
        op = mem.opcode
        mt = mem.memory_type
        is_load = op == Opcode.LOAD
        is_store = op == Opcode.STORE
        to_load = is_load & ((mt == MemId.INP) | (mt == MemId.WGT))
        bad_opcode = ~op.matches(*opcodes(self.cfg))
        bad_memory_type = (is_load | is_store) & (
            (mt > max(MemId)) | (is_load & (mt == MemId.OUT))
            | (is_store & (mem.x_size != 0) & (mt != MemId.OUT)))
        bad_dep = ((to_load & (mem.pop_prev | mem.push_prev))
                   | (is_store & (mem.pop_next | mem.push_next)))
        bad_alu = (op == Opcode.ALU) & ~alu.alu_opcode.matches(*alu_opcodes(self.cfg))

        code = tail.code
        with m.If(bad_opcode):
            m.d.comb += code.eq(ErrorCode.BAD_OPCODE)
        with m.Elif(bad_memory_type):
            m.d.comb += code.eq(ErrorCode.BAD_MEMORY_TYPE)
        with m.Elif(bad_dep):
            m.d.comb += code.eq(ErrorCode.RESERVED_DEP_FLAG)
        with m.Elif(bad_alu):
            m.d.comb += code.eq(ErrorCode.BAD_ALU_OPCODE)

        # (the destination bits are all 0 for a bad instruction)
        ok = code == 0
        m.d.comb += [tail.bad.eq(~ok), tail.to_store.eq(ok & is_store), tail.to_load.eq(ok & to_load),
                     tail.to_compute.eq(ok & ~is_store & ~to_load)]
        for name, q in queues.items():
            m.d.comb += q.w_data.eq(insn)
            with m.If(insn_valid & ~discard & getattr(head, f"to_{name}") & q.w_rdy):
                m.d.comb += [q.w_en.eq(1), taken.eq(1)]

        with m.If(taken):
            m.d.sync += routed.eq(routed + 1)
            with m.If(routed + 1 == count):
                m.d.sync += running.eq(0)

        # after an error the decode queue is drained (its head is the bad instruction)
        m.d.comb += decode_q.r_en.eq(taken | discard)
        with m.If(insn_valid & ~discard & head.bad):
            m.d.sync += [
                self.error.eq(head.code), discard.eq(1), running.eq(0),
            ]
            if bus <= INS_WIDTH:
                m.d.sync += part.eq(0)

        # ---------------------------------------------------------------- start and end
        idle = Signal()
        quiet = ~running & ~cmd_hold & (reserved == 0) & ~insn_valid & ~assembling
        m.d.comb += idle.eq(quiet & ~pending_start & ~discard)  # untoggled: fetch-idle
        with m.If(discard & ~cmd_hold & (reserved == 0) & ~insn_valid):
            m.d.sync += discard.eq(0)

        go = Signal()
        with m.If(self.start):
            m.d.sync += [pending_start.eq(1), self.error.eq(0)]
        can_start = quiet & ~discard & (self.start | pending_start)
        m.d.comb += go.eq(can_start)
        with m.If(go):
            skip = self.insn_addr[4:log_bytes] if skip_bits else Const(0, 1)
            slots = self.insn_count + skip
            if bus <= INS_WIDTH:
                total_beats = self.insn_count * (INS_WIDTH // bus)
            else:
                total_beats = (slots + (bus // INS_WIDTH - 1)) >> skip_bits
            m.d.sync += [
                pending_start.eq(0),
                running.eq(self.insn_count != 0),
                self.error.eq(0),
                routed.eq(0),
                count.eq(self.insn_count),
                req_addr.eq(Cat(Const(0, log_bytes), self.insn_addr[log_bytes:])),
                beats_left.eq(total_beats),
                beats_nz.eq(total_beats != 0),
            ]
            if bus > INS_WIDTH:
                m.d.sync += [skip_left.eq(skip), asm_left.eq(self.insn_count), slot.eq(0)]

        m.d.comb += [
            self.busy.eq(running),
            self.stall.eq(running & ~taken),
            self.idle.eq(idle),
            self.insn_fetched.eq(routed),
        ]
        return m
