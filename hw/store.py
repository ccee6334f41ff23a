"""The store module: STORE instructions, from the out SRAM to DRAM (docs/architecture.md §2.6)."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import fifo, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from sw.config import Config
from sw.isa import INS_WIDTH, MemId

from .interfaces import ADDR_BITS, TokenPopSignature, TokenPushSignature, dma_write_signature
from .layouts import insn_layouts
from .sram import check_config, read_signature

__all__ = ["Store"]

_FIFO_DEPTH = 4


class Store(wiring.Component):
    """The store module: runs STORE instructions (memory_type OUT).

    Per instruction: take it from ``insn``, wait for a g2s token if ``pop_prev`` (then pop it), copy
    ``out[sram_base + y*x_size + x]`` to DRAM element ``dram_base + y*x_stride + x`` for each row y
    and column x (DRAM byte address ``element * OUT_ELEM_BYTES | out_base``), and push an s2g token
    if ``push_prev`` once the DMA has acknowledged (``done``) every row. One DMA write command per
    row, covering the bus words of the row; an element narrower than the bus is placed in its
    bytes of the word and only those bytes are strobed, so neighbouring DRAM bytes are kept. The
    commands run ahead of the data. x_size = 0 (or y_size = 0) is a NOP that only moves tokens. A
    memory type other than OUT sets the sticky ``error`` and stops the module.

    Throughput: one out row per cycle when it fits in a bus word (one bus word per cycle when it is
    wider), limited by the DMA; the out SRAM read adds 2 cycles of latency (read, FIFO).

    Members:
        ``insn``     In(stream of 128 bits)
        ``out_rd``   In(ReadPort.Signature(addr_width=LOG_ACC_DEPTH, shape=OUT_MATRIX_WIDTH))
        ``dma``      Out(DMA write client)
        ``g2s``      Out(TokenPopSignature)   (pop_prev)
        ``s2g``      Out(TokenPushSignature)  (push_prev)
        ``out_base`` In(32)
        ``busy``     Out(1)  an instruction is in progress (including waiting for its token)
        ``stall``    Out(1)  waiting for a g2s token
        ``error``    Out(1)  sticky, a bad instruction stopped the module
        ``clear``    In(1)   leave the error halt (clears ``error``; ignored unless halted), e.g. at launch
    """

    def __init__(self, cfg: Config) -> None:
        check_config(cfg, self)
        self._cfg = cfg
        super().__init__({
            "insn": In(stream.Signature(INS_WIDTH)),
            "out_rd": In(read_signature(cfg, "out")),
            "dma": Out(dma_write_signature(cfg.BUS_WIDTH)),
            "g2s": Out(TokenPopSignature),
            "s2g": Out(TokenPushSignature),
            "out_base": In(ADDR_BITS),
            "busy": Out(1),
            "stall": Out(1),
            "error": Out(1),
            "clear": In(1),
        })

    def elaborate(self, platform: object) -> Module:
        m = Module()
        cfg = self._cfg
        bus = cfg.BUS_WIDTH
        bb = bus // 8
        eb = cfg.OUT_ELEM_BYTES
        ew = eb * 8
        log_eb, log_bb = exact_log2(eb), exact_log2(bb)
        aw = cfg.LOG_ACC_DEPTH

        word = Signal(INS_WIDTH, reset_less=True)
        insn = insn_layouts(cfg)["mem"](word)
        start = Signal()
        base = Signal(ADDR_BITS)

        # ---- DMA commands, one per row
        c_active = Signal()
        c_y = Signal(16)
        c_elem = Signal(ADDR_BITS)
        c_byte = Signal(ADDR_BITS)
        cmd = self.dma.cmd
        m.d.comb += [
            c_byte.eq((c_elem << log_eb)[:ADDR_BITS] | base),
            cmd.valid.eq(c_active),
            cmd.payload.addr.eq(Cat(Const(0, log_bb), c_byte[log_bb:])),
        ]
        if eb >= bb:
            m.d.comb += cmd.payload.beats.eq(insn.x_size << (log_eb - log_bb))
        else:
            m.d.comb += cmd.payload.beats.eq((c_byte[:log_bb] + (insn.x_size << log_eb) + (bb - 1)) >> log_bb)
        with m.If(start):
            m.d.sync += [c_active.eq(1), c_y.eq(0), c_elem.eq(insn.dram_base), base.eq(self.out_base)]
        with m.Elif(cmd.valid & cmd.ready):
            m.d.sync += [c_y.eq(c_y + 1), c_elem.eq(c_elem + insn.x_stride)]  # untoggled: store-count, stride-carry
            with m.If(c_y == insn.y_size - 1):
                m.d.sync += c_active.eq(0)

        # ---- out SRAM reads into a small FIFO (element, slot in the bus word, flush, last)
        slot_bits = max(exact_log2(bb // eb), 0) if eb < bb else 0
        m.submodules.fifo = q = fifo.SyncFIFO(width=ew + slot_bits + 2, depth=_FIFO_DEPTH)
        r_active = Signal()
        r_y, r_x = Signal(16), Signal(16)
        r_ptr = Signal(aw)
        r_elem = Signal(ADDR_BITS)
        pending = Signal()          # a read issued last cycle, entering the FIFO now
        m1_meta = Signal(slot_bits + 2)
        issue = Signal()
        # room: level + pending < _FIFO_DEPTH, kept as a register (updated from this cycle's
        # handshakes), and the row/column end flags are registers too (timing)
        room = Signal(init=1)
        row_end, last_row = Signal(), Signal()
        m.d.comb += issue.eq(r_active & room)
        # (both outcomes from registers; the FIFO's pop, which the bus drives late, only selects)
        held = Signal(range(_FIFO_DEPTH + 3))
        m.d.comb += held.eq(q.level + pending + issue)
        m.d.sync += room.eq(Mux(q.r_en & q.r_rdy, held <= _FIFO_DEPTH, held < _FIFO_DEPTH))
        if eb < bb:
            k = bb // eb
            j = Signal(slot_bits)
            row_slot = ((r_elem << log_eb)[:ADDR_BITS] | base)[log_eb:log_bb]
            j_eff = Mux(r_x == 0, row_slot, j)
            flush = (j_eff == k - 1) | row_end
            with m.If(issue):
                m.d.sync += j.eq(j_eff + 1)
            meta = Cat(j_eff, flush, row_end)
        else:
            meta = Cat(Const(1, 1), row_end)
        m.d.comb += [self.out_rd.en.eq(1), self.out_rd.addr.eq(r_ptr)]
        m.d.sync += [pending.eq(issue), m1_meta.eq(meta)]
        m.d.comb += [q.w_en.eq(pending), q.w_data.eq(Cat(self.out_rd.data, m1_meta))]
        with m.If(start):
            m.d.sync += [r_active.eq(1), r_y.eq(0), r_x.eq(0), r_ptr.eq(insn.sram_base),
                         r_elem.eq(insn.dram_base), row_end.eq(insn.x_size == 1), last_row.eq(insn.y_size == 1)]
        with m.Elif(issue):
            m.d.sync += [r_ptr.eq(r_ptr + 1), r_x.eq(r_x + 1), row_end.eq(r_x + 2 == insn.x_size)]  # untoggled: store-count
            with m.If(row_end):
                m.d.sync += [r_x.eq(0), r_y.eq(r_y + 1),  # untoggled: store-count, stride-carry
                             r_elem.eq(r_elem + insn.x_stride),  # untoggled: store-count, stride-carry
                             row_end.eq(insn.x_size == 1), last_row.eq(r_y + 2 == insn.y_size)]  # untoggled: store-count
                with m.If(last_row):
                    m.d.sync += r_active.eq(0)

        # ---- pack the elements into bus words
        head = q.r_data
        elem = head[:ew]
        h_slot = head[ew:ew + slot_bits]
        h_flush = head[ew + slot_bits]
        h_last = head[ew + slot_bits + 1]
        data = self.dma.data
        if eb < bb:
            k = bb // eb
            wbuf = Signal(bus, reset_less=True)
            wstrb = Signal(bb)
            merged = Cat(*(Mux(h_slot == i, elem, wbuf[i * ew:(i + 1) * ew]) for i in range(k)))
            merged_strb = Cat(*(Mux(h_slot == i, Const((1 << eb) - 1, eb), wstrb[i * eb:(i + 1) * eb])
                                for i in range(k)))
            m.d.comb += [
                data.valid.eq(q.r_rdy & h_flush),
                data.payload.data.eq(merged),
                data.payload.strb.eq(merged_strb),
                data.payload.last.eq(h_last),
                q.r_en.eq(q.r_rdy & (~h_flush | data.ready)),
            ]
            with m.If(q.r_en):
                with m.If(h_flush):
                    m.d.sync += wstrb.eq(0)
                with m.Else():
                    m.d.sync += [wbuf.eq(merged), wstrb.eq(merged_strb)]
        else:
            r = eb // bb
            b = Signal(max(exact_log2(r), 1))
            m.d.comb += [
                data.valid.eq(q.r_rdy),
                data.payload.data.eq(elem.word_select(b, bus) if r > 1 else elem),
                data.payload.strb.eq((1 << bb) - 1),
                data.payload.last.eq(h_last & (b == r - 1)),
                q.r_en.eq(data.valid & data.ready & (b == r - 1)),
            ]
            if r > 1:
                with m.If(data.valid & data.ready):
                    m.d.sync += b.eq(b + 1)

        # ---- DMA acknowledgements
        acks = Signal(16)
        with m.If(start):
            m.d.sync += acks.eq(0)
        with m.Elif(self.dma.done):
            m.d.sync += acks.eq(acks + 1)  # untoggled: store-count

        go = Signal()
        m.d.sync += go.eq(0)
        m.d.comb += start.eq(go)
        with m.FSM(name="store_fsm"):
            with m.State("IDLE"):
                m.d.comb += self.insn.ready.eq(1)
                with m.If(self.insn.valid):
                    m.d.sync += word.eq(self.insn.payload)
                    m.next = "DECODE"
            with m.State("DECODE"):
                m.d.comb += self.busy.eq(1)
                with m.If((insn.memory_type != MemId.OUT) & (insn.x_size != 0)):  # untoggled: module-error
                    m.d.sync += self.error.eq(1)
                    m.next = "HALT"
                with m.Else():
                    m.next = "POP"
            with m.State("POP"):
                m.d.comb += self.busy.eq(1)
                with m.If(insn.pop_prev & ~self.g2s.valid):
                    m.d.comb += self.stall.eq(1)
                with m.Else():
                    m.d.comb += self.g2s.pop.eq(insn.pop_prev)
                    with m.If((insn.x_size == 0) | (insn.y_size == 0)):
                        m.next = "PUSH"
                    with m.Else():
                        # the run starts in the next cycle, from a register (timing: start fans
                        # out to the counters); RUN waits for it before counting acks
                        m.d.sync += go.eq(1)
                        m.next = "RUN"
            with m.State("RUN"):
                m.d.comb += self.busy.eq(1)
                with m.If(~start & (acks == insn.y_size)):
                    m.next = "PUSH"
            with m.State("PUSH"):
                m.d.comb += [self.busy.eq(1), self.s2g.push.eq(insn.push_prev)]
                m.next = "IDLE"
            with m.State("HALT"):
                with m.If(self.clear):
                    m.d.sync += self.error.eq(0)
                    m.next = "IDLE"
        return m
