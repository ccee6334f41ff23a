"""The load module: LOAD INP / LOAD WGT instructions, and the generic 2-D tensor loader.

:class:`TensorLoad` runs one LOAD instruction for one memory type (element size fixed at build
time); :class:`Load` is the load module of the accelerator (two TensorLoads, INP and WGT, sharing
one DMA read client) and :class:`Compute` reuses TensorLoad for UOP, ACC and ACC_8BIT loads.
"""

from collections.abc import Sequence

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import fifo, memory, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from sw.config import Config
from sw.isa import INS_WIDTH, MemId

from .interfaces import ADDR_BITS, TokenPopSignature, TokenPushSignature, dma_read_signature
from .layouts import insn_layouts
from .sram import check_config, parameter_error, write_signature

__all__ = ["TensorLoad", "Load", "dma_read_mux"]


def _check_pow2(component, name, value, lo, hi):
    if not isinstance(value, int) or value < lo or value > hi or value & (value - 1):
        raise parameter_error(component, f"{name} must be a power of two in [{lo}, {hi}], not {value!r}")


class TensorLoad(wiring.Component):
    """Runs one LOAD (2-D strided DRAM read with zero padding) into one SRAM.

    Parameters: ``cfg`` (bus width and instruction layout), ``elem_bytes`` (bytes of one SRAM row
    of this memory type, a power of two), ``depth`` (rows of the SRAM).

    Pulse ``start`` for one cycle with ``insn`` (a memory instruction) and ``base`` (the base
    pointer of this memory type, a byte address ORed into every DRAM address) valid, and hold both
    for one more cycle: the loader registers the sums and flags it derives from the instruction in
    the cycle of ``start`` and takes everything in the cycle after, from a registered copy of ``start``
    (which fans out to every register of the loader; this way neither the caller's decision logic nor
    an adder runs in series with that fan-out). Row ``y`` is
    read from byte address ``((dram_base + y*x_stride) * elem_bytes) | base``; the DMA command reads
    the bus words covering the row (aligned start, offset = address mod bus bytes) and the loader
    extracts the elements (several per bus word when ``elem_bytes`` is smaller than the bus, or
    several bus words per element when it is larger). Commands for every row are issued ahead of
    the data. SRAM rows ``sram_base ..`` are written in order, one per cycle when data is there:
    ``y_pad_0`` zero rows, then for each DRAM row ``x_pad_0`` zeros, ``x_size`` elements, ``x_pad_1``
    zeros, then ``y_pad_1`` zero rows (row pitch = x_pad_0 + x_size + x_pad_1). ``done`` pulses
    for one cycle in the cycle after the last SRAM write (or three cycles after ``start`` for a NOP,
    x_size = 0). ``busy`` is high from the cycle after ``start`` until ``done``.

    Throughput: one SRAM row per cycle (elements no wider than the bus) or one bus word per cycle
    (wider elements), limited by the DMA. Latency: DMA latency + 3 cycles.

    Members: ``start`` In(1), ``insn`` In(mem layout), ``base`` In(32), ``busy`` Out(1),
    ``done`` Out(1), ``dma`` Out(DMA read client), ``wr`` In(WritePort.Signature) (driven).
    """

    def __init__(self, cfg: Config, *, elem_bytes: int, depth: int) -> None:
        check_config(cfg, self)
        _check_pow2(self, "elem_bytes", elem_bytes, 1, 1 << 16)
        _check_pow2(self, "depth", depth, 1, 1 << 16)
        self._cfg = cfg
        self._eb = elem_bytes
        self._depth = depth
        super().__init__({
            "start": In(1),
            "insn": In(insn_layouts(cfg)["mem"]),
            "base": In(ADDR_BITS),
            "busy": Out(1),
            "done": Out(1),
            "dma": Out(dma_read_signature(cfg.BUS_WIDTH)),
            "wr": In(memory.WritePort.Signature(addr_width=max(exact_log2(depth), 0),
                                                shape=elem_bytes * 8)),
        })

    def elaborate(self, platform: object) -> Module:
        m = Module()
        cfg = self._cfg
        bus = cfg.BUS_WIDTH
        bb = bus // 8
        eb = self._eb
        log_eb, log_bb = exact_log2(eb), exact_log2(bb)
        aw = exact_log2(self._depth)
        insn = self.insn

        # ---- the instruction, latched on start (reset-less: set at every start before use)
        x_size = Signal(16, reset_less=True)
        x_stride = Signal(16, reset_less=True)
        base = Signal(ADDR_BITS, reset_less=True)
        y_pad_0 = Signal(4, reset_less=True)
        x_pad_0 = Signal(4, reset_less=True)
        yd_hi = Signal(17, reset_less=True)         # y_pad_0 + y_size: first row after the data rows
        xd_hi = Signal(17, reset_less=True)         # x_pad_0 + x_size: first column after the data columns
        xd_last = Signal(17, reset_less=True)       # xd_hi - 1: the last data column
        col_last = Signal(18, reset_less=True)      # x_pad_0 + x_size + x_pad_1 - 1: the row pitch - 1
        row_last_i = Signal(18, reset_less=True)    # y_pad_0 + y_size + y_pad_1 - 1: the last row

        c_active = Signal()        # DMA commands still to issue
        c_left = Signal(16, reset_less=True)    # DMA commands after the next one
        c_last = Signal(reset_less=True)        # c_left == 0, as a register (timing: no compare after the ready)
        c_elem = Signal(ADDR_BITS, reset_less=True)  # DRAM element index of the row of the next command
        w_active = Signal()        # SRAM writes still to do
        # (row, column) of the position after the one being written: its flags are compared from
        # these registers (no adder in series with the compares)
        a_r = Signal(18, reset_less=True)
        a_c = Signal(18, reset_less=True)
        w_addr = Signal(max(aw, 1), reset_less=True)
        d_elem = Signal(ADDR_BITS, reset_less=True)  # DRAM element index of the row being written

        start = Signal()           # ``start``, one cycle later
        m.d.sync += start.eq(self.start)
        # What the loader derives from the instruction (sums, compares) is registered in the cycle of
        # ``self.start`` (every cycle: these registers have no enable), so ``start`` only copies
        # registers (timing: no adder between the instruction and the loader's state)
        def early(value, width=1):
            reg = Signal(width, reset_less=True)
            m.d.sync += reg.eq(value)
            return reg
        def sum_is_one(*terms):     # t0 + t1 + ... == 1 for unsigned terms, without adders
            return Cat(*((t == 1) & Cat(*(u == 0 for u in terms if u is not t)).all()  # untoggled: padding-alone
                         for t in terms)).any()  # untoggled: padding-alone
        e_yd_hi = early(insn.y_pad_0 + insn.y_size, 17)
        e_xd_hi = early(insn.x_pad_0 + insn.x_size, 17)
        e_xd_last = early(insn.x_pad_0 + insn.x_size - 1, 17)
        e_col_last = early(insn.x_pad_0 + insn.x_size + insn.x_pad_1 - 1, 18)
        e_row_last = early(insn.y_pad_0 + insn.y_size + insn.y_pad_1 - 1, 18)
        e_c_left = early(insn.y_size - 1, 16)
        e_c_last = early(insn.y_size == 1)
        e_nop = early((insn.x_size == 0) | ((insn.y_pad_0 == 0) & (insn.y_size == 0) & (insn.y_pad_1 == 0)))
        e_y_data = early(insn.y_size != 0)
        # the flags of position (0, 0)
        e_one_col = early(sum_is_one(insn.x_pad_0, insn.x_size, insn.x_pad_1))
        e_flags = {
            "data": early((insn.y_pad_0 == 0) & (insn.y_size != 0) & (insn.x_pad_0 == 0) & (insn.x_size != 0)),
            "first": early(insn.x_pad_0 == 0),
            "last": early(sum_is_one(insn.x_pad_0, insn.x_size)),
            "col_end": e_one_col,
            "row_end": early(sum_is_one(insn.y_pad_0, insn.y_size, insn.y_pad_1)),
        }
        m.d.sync += self.done.eq(0)
        with m.If(start):
            m.d.sync += [
                x_size.eq(insn.x_size), x_stride.eq(insn.x_stride),
                base.eq(self.base), y_pad_0.eq(insn.y_pad_0), x_pad_0.eq(insn.x_pad_0),
                yd_hi.eq(e_yd_hi), xd_hi.eq(e_xd_hi), xd_last.eq(e_xd_last), col_last.eq(e_col_last),
                row_last_i.eq(e_row_last), c_left.eq(e_c_left), c_last.eq(e_c_last),
                c_elem.eq(insn.dram_base), d_elem.eq(insn.dram_base),
                w_addr.eq(insn.sram_base),
            ]
            with m.If(e_nop):
                m.d.sync += self.done.eq(1)
            with m.Else():
                m.d.sync += [c_active.eq(e_y_data), w_active.eq(1)]
        m.d.comb += self.busy.eq(start | c_active | w_active)

        # ---- DMA commands, one per DRAM row
        c_byte = Signal(ADDR_BITS)
        m.d.comb += c_byte.eq((c_elem << log_eb)[:ADDR_BITS] | base)
        cmd = self.dma.cmd
        m.d.comb += cmd.valid.eq(c_active)
        m.d.comb += cmd.payload.addr.eq(Cat(Const(0, log_bb), c_byte[log_bb:]))
        if eb >= bb:
            m.d.comb += cmd.payload.beats.eq(x_size << (log_eb - log_bb))
        else:
            m.d.comb += cmd.payload.beats.eq(
                (c_byte[:log_bb] + (x_size << log_eb) + (bb - 1)) >> log_bb)  # untoggled: uop-row-bytes
        with m.If(cmd.valid & cmd.ready):
            m.d.sync += [c_left.eq(c_left - 1), c_last.eq(c_left == 1),  # untoggled: stride-carry
                         c_elem.eq(c_elem + x_stride)]  # untoggled: stride-carry
            with m.If(c_last):
                m.d.sync += c_active.eq(0)

        # ---- SRAM writes in order, zeros in the padding. The position flags are registers, set
        # on each write from the position after it, which (a_r, a_c) hold (for timing: registers
        # into the compares, and no compare chain between the counters and the write/ready logic).
        # ``data``: the position holds data, not padding (with a copy per 64 bits of the write data's
        # zero mux: fan-out)
        def position_flags(r, c):
            return {"data": (r >= y_pad_0) & (r < yd_hi) & (c >= x_pad_0) & (c < xd_hi),
                    "first": c == x_pad_0, "last": c == xd_last, "col_end": c == col_last,
                    "row_end": r == row_last_i}
        flag = {name: Signal(name=f"w_{name}") for name in ("first", "last", "col_end", "row_end")}
        data_copies = [Signal(name=f"w_data_copy{i}") for i in range(-(-eb * 8 // 64))]
        def set_flags(values):
            return [flag[k].eq(v) for k, v in values.items() if k != "data"] + [c.eq(values["data"]) for c in data_copies]
        with m.If(start):           # the flags of position (0, 0), and the position after it
            m.d.sync += set_flags(e_flags)
            m.d.sync += [a_r.eq(e_one_col), a_c.eq(~e_one_col)]
        is_data = data_copies[0]
        row_first = Signal()
        row_last = Signal()
        m.d.comb += [
            row_first.eq(flag["first"]),
            row_last.eq(flag["last"]),
        ]
        elem_valid = Signal()
        elem_data = Signal(eb * 8)
        write = Signal()
        m.d.comb += write.eq(w_active & (~is_data | elem_valid))
        consume = write & is_data
        m.d.comb += [
            self.wr.en.eq(write),
            self.wr.addr.eq(w_addr),
            self.wr.data.eq(Cat(*(elem_data[i * 64:(i + 1) * 64] & c.replicate(min(64, eb * 8 - i * 64))
                                  for i, c in enumerate(data_copies)))),
        ]
        with m.If(write):
            m.d.sync += set_flags(position_flags(a_r, a_c))
            m.d.sync += [w_addr.eq(w_addr + 1), a_c.eq(a_c + 1)]
            with m.If(a_c == col_last):
                m.d.sync += [a_c.eq(0), a_r.eq(a_r + 1)]
            with m.If(flag["col_end"] & flag["row_end"]):
                m.d.sync += [w_active.eq(0), self.done.eq(1)]
        with m.If(consume & row_last):
            m.d.sync += d_elem.eq(d_elem + x_stride)  # untoggled: stride-carry

        # ---- element extraction from the bus words. They wait in a two-entry FIFO, so ``data.ready``
        # is its "not full" (a register compare), and neither the DMA's R channel nor the SRAM write
        # sees a combinational path through the other (timing).
        data = self.dma.data
        m.submodules.words = words = fifo.SyncFIFO(width=bus, depth=2)
        m.d.comb += [data.ready.eq(words.w_rdy), words.w_en.eq(data.valid), words.w_data.eq(data.payload.data)]
        beat, beat_valid = words.r_data, words.r_rdy
        if eb < bb:
            k = bb // eb
            log_k = exact_log2(k)
            j = Signal(log_k)
            row_slot = ((d_elem << log_eb)[:ADDR_BITS] | base)[log_eb:log_bb]
            j_eff = Mux(row_first, row_slot, j)
            release = consume & ((j_eff == k - 1) | row_last)
            m.d.comb += [
                elem_valid.eq(beat_valid),
                elem_data.eq(beat.word_select(j_eff, eb * 8)),
                words.r_en.eq(release),
            ]
            with m.If(consume):
                m.d.sync += j.eq(j_eff + 1)
        else:
            r = eb // bb
            take = w_active & is_data          # the beats of an element are taken as they come
            m.d.comb += words.r_en.eq(take)
            if r == 1:
                m.d.comb += [elem_valid.eq(beat_valid), elem_data.eq(beat)]
            else:
                b = Signal(exact_log2(r))
                asm = Signal((r - 1) * bus, reset_less=True)   # earlier beats of the element, oldest in the low bits
                m.d.comb += [
                    elem_valid.eq(beat_valid & (b == r - 1)),
                    elem_data.eq(Cat(asm, beat)),
                ]
                with m.If(beat_valid & take):
                    m.d.sync += b.eq(b + 1)
                    if r == 2:
                        m.d.sync += asm.eq(beat)
                    else:
                        m.d.sync += asm.eq(Cat(asm[bus:], beat))
        return m


def dma_read_mux(m: Module, target: wiring.PureInterface, clients: Sequence[TensorLoad], sel: Signal) -> None:
    """Share one DMA read client ``target`` among ``clients`` (:class:`TensorLoad` s); ``sel`` (a
    Signal) picks the one allowed to talk. Switch ``sel`` only when the selected client is idle.

    ``data.ready`` is the AND of every client's: an idle TensorLoad has taken every word it asked
    for, so its word FIFO is empty and ready, and the AND equals the chosen one's ready without a
    mux by ``sel`` in the R channel's ready path (timing)."""
    m.d.comb += target.data.ready.eq(Cat(*(client.data.ready for client in clients)).all())
    for i, client in enumerate(clients):
        chosen = sel == i
        with m.If(chosen):
            m.d.comb += [
                target.cmd.valid.eq(client.cmd.valid),
                target.cmd.payload.eq(client.cmd.payload),
            ]
        m.d.comb += [
            client.cmd.ready.eq(target.cmd.ready & chosen),
            client.data.valid.eq(target.data.valid & chosen),
            client.data.payload.eq(target.data.payload),
        ]


class Load(wiring.Component):
    """The load module: runs LOAD INP and LOAD WGT instructions (docs/architecture.md §2.5, docs/architecture.md §2).

    Per instruction: take it from ``insn`` (a stream of 128-bit words), wait for a g2l token if
    ``pop_next`` (then pop it), run the load (a NOP when x_size = 0), then push an l2g token if
    ``push_next``, one cycle after the last SRAM write. Overhead: about 5 cycles per instruction
    around the TensorLoad (see :class:`TensorLoad` for its throughput). A memory type other than
    INP/WGT sets the sticky ``error`` and stops the module (a routing bug upstream).

    Members:
        ``insn``      In(stream of 128 bits)
        ``dma``       Out(DMA read client)
        ``inp_wr``    In(WritePort.Signature(addr_width=LOG_INP_DEPTH, shape=INP_MATRIX_WIDTH))
        ``wgt_wr``    In(WritePort.Signature(addr_width=LOG_WGT_DEPTH, shape=WGT_MATRIX_WIDTH))
        ``g2l``       Out(TokenPopSignature)   (pop_next)
        ``l2g``       Out(TokenPushSignature)  (push_next)
        ``inp_base``, ``wgt_base``  In(32)     base pointers (control registers)
        ``busy``      Out(1)  an instruction is in progress (including waiting for its token)
        ``stall``     Out(1)  waiting for a g2l token
        ``error``     Out(1)  sticky, a bad instruction reached the module
        ``clear``     In(1)   leave the error halt (clears ``error``; ignored unless halted), e.g. at launch
    """

    def __init__(self, cfg: Config) -> None:
        check_config(cfg, self)
        self._cfg = cfg
        super().__init__({
            "insn": In(stream.Signature(INS_WIDTH)),
            "dma": Out(dma_read_signature(cfg.BUS_WIDTH)),
            "inp_wr": In(write_signature(cfg, "inp")),
            "wgt_wr": In(write_signature(cfg, "wgt")),
            "g2l": Out(TokenPopSignature),
            "l2g": Out(TokenPushSignature),
            "inp_base": In(ADDR_BITS),
            "wgt_base": In(ADDR_BITS),
            "busy": Out(1),
            "stall": Out(1),
            "error": Out(1),
            "clear": In(1),
        })

    def elaborate(self, platform: object) -> Module:
        m = Module()
        cfg = self._cfg
        m.submodules.inp = inp = TensorLoad(cfg, elem_bytes=cfg.INP_ELEM_BYTES, depth=cfg.INP_DEPTH)
        m.submodules.wgt = wgt = TensorLoad(cfg, elem_bytes=cfg.WGT_ELEM_BYTES, depth=cfg.WGT_DEPTH)
        wiring.connect(m, inp.wr, wiring.flipped(self.inp_wr))
        wiring.connect(m, wgt.wr, wiring.flipped(self.wgt_wr))

        word = Signal(INS_WIDTH, reset_less=True)
        insn = insn_layouts(cfg)["mem"](word)
        sel = Signal()   # 0 inp, 1 wgt
        dma_read_mux(m, self.dma, [inp.dma, wgt.dma], sel)
        for t in (inp, wgt):
            m.d.comb += [t.insn.eq(word), t.base.eq(Mux(sel, self.wgt_base, self.inp_base))]

        with m.FSM(name="load_fsm"):
            with m.State("IDLE"):
                m.d.comb += self.insn.ready.eq(1)
                with m.If(self.insn.valid):
                    m.d.sync += word.eq(self.insn.payload)
                    m.next = "DECODE"
            with m.State("DECODE"):
                m.d.comb += self.busy.eq(1)
                with m.If((insn.memory_type != MemId.INP) & (insn.memory_type != MemId.WGT)):
                    m.d.sync += self.error.eq(1)
                    m.next = "HALT"
                with m.Else():
                    m.d.sync += sel.eq(insn.memory_type == MemId.WGT)
                    m.next = "POP"
            with m.State("POP"):
                m.d.comb += self.busy.eq(1)
                with m.If(insn.pop_next & ~self.g2l.valid):
                    m.d.comb += self.stall.eq(1)
                with m.Else():
                    m.d.comb += self.g2l.pop.eq(insn.pop_next)
                    m.d.comb += [inp.start.eq(~sel), wgt.start.eq(sel)]
                    m.next = "RUN"
            with m.State("RUN"):
                m.d.comb += self.busy.eq(1)
                with m.If(inp.done | wgt.done):
                    m.d.comb += self.l2g.push.eq(insn.push_next)
                    m.next = "IDLE"
            with m.State("HALT"):
                with m.If(self.clear):
                    m.d.sync += self.error.eq(0)
                    m.next = "IDLE"
        return m
