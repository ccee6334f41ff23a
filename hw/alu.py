"""The tensor ALU: runs one ALU instruction over the micro-op loop nest (docs/architecture.md §2.8)."""

from collections.abc import Sequence

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from sw.config import Config
from sw.isa import POST_PARAM_ROWS, AluOp, alu_opcodes

from .gemm import UopSequencer
from .lanes import shift_amount
from .layouts import insn_layouts, uop_layout
from .post import PostChain
from .sram import and_or, check_config, fan_out, merge_history, merge_rows, merge_select, read_signature, write_signature

__all__ = ["Alu", "alu_lane", "shift_amount"]


def alu_lane(m: Module, ops: Sequence[dict[str, Value]], a: Value, b: Value, left: Sequence[Value],
             amount: Sequence[Value], less: Sequence[Value], a_pre: Value) -> Value:
    """The result of one accumulator lane of MIN, MAX, ADD or SHR applied to signed ``a`` and ``b``. ``ops``:
    one-hot registers ``{"max", "add", "shr"}`` (none set: MIN); ``(left, amount)`` =
    :func:`shift_amount` of ``b`` (computed a stage earlier). MUL is not here (see :class:`Alu`).
    Every control is a list of equal copies, one per equal slice of the result (low bits first): each
    copy drives only its slice's logic (fan-out, timing).

    ``less``: per slice, ``a < b`` (signed), compared a stage earlier (a register): the lane holds no
    compare (timing). ``a_pre``: SHR's operand, ``a`` already shifted a stage earlier (in the direction
    ``left``) by the high bits of the amount; ``amount`` holds only the low bits (timing: the lane holds
    the last levels of the shifter)."""
    sa = a.as_signed()
    sb = b.as_signed()
    w = len(a)
    n = len(ops)
    sw = w // n
    total = (sa + sb)[:w]
    parts = []
    for j in range(n):
        bits = slice(j * sw, (j + 1) * sw)
        take_a = Signal(name=f"take_a_{j}")
        m.d.comb += take_a.eq(less[j] ^ ops[j]["max"])
        minmax = Mux(take_a, sa, sb)[bits]
        sp = a_pre.as_signed()
        shifted = Mux(left[j], (sp << amount[j])[:w], (sp >> amount[j])[:w])[bits]
        parts.append(Mux(ops[j]["add"], total[bits], Mux(ops[j]["shr"], shifted, minmax)))
    return Cat(*parts)


class Alu(wiring.Component):
    """The tensor ALU: for each micro-op of the loop nest, ``acc[d] = op(acc[d], X)`` on
    BATCH*BLOCK_OUT int32 lanes, X = the sign-extended immediate (``use_imm``) or ``acc[s]``.
    Opcodes MIN, MAX (signed), ADD (wraps), SHR (s >= 0: arithmetic right shift by min(s, 31);
    s < 0: left shift by min(-s, 31), wrapping) and, when ``cfg.ALU_MUL`` is 1, MUL (low 32 bits).
    Another opcode (or MUL when it is not built) does nothing and pulses ``error`` with ``done``.

    POST (when ``cfg.POST_UNIT`` is 1): first its POST_PARAM_ROWS parameter rows from imm on are read through the
    acc read port into the chain's operand registers (``preload``); then each micro-op's acc[d] (and, with
    a tensor operand, acc[s] as the residual) leaves C into :class:`~hw.post.PostChain` and is written from
    its end, ``PostChain.latency`` cycles after C. Micro-ops follow each other as for an immediate (or a
    tensor operand) when ``dst_increasing`` is high at ``start`` (hw.footprint ``increasing``: no row is
    written twice) and, with a tensor operand, ``src_apart``; otherwise each waits until no micro-op is in
    the pipeline (the row it reads is then written).

    Pipeline (for FPGA timing every SRAM read lands in a register before any logic, as a block RAM's
    clock-to-out is long): S0 read uop; S1 register the uop row; S2 add the loop offsets
    into the index registers; S3 read acc[s] (tensor operand only); S4 read acc[d]; S5 register
    acc[s] (its raw read was registered in S4) and its SHR shift amount; S6 register acc[d] (raw
    read registered in S5), X with SHR's shift amount, MIN/MAX's compare of the two, and acc[d]
    shifted by the amount's high bits (SHR's first levels); C = S7 compute and register the result;
    W = S8 write acc[d].

    Throughput: an immediate operand runs one micro-op per cycle when ``dst_distinct`` is high at
    ``start`` (the compute module's footprint found that no micro-op writes the row the one just
    before it wrote), otherwise one every two cycles; a tensor operand one every two cycles (one
    acc read port; SHR one every three), except when the source row repeats: with ``src_apart`` and
    ``dst_distinct`` high at ``start`` (the footprint also found that no micro-op writes a row
    another reads as acc[s]), a one-micro-op kernel and ``src_factor_in`` = 0, acc[s] is the same row
    through each inner iteration, so only the first of them reads it (two cycles) and the others
    reuse X (one cycle: a per-channel vector over the rows of its channel block).

    Hazards: the acc memory takes writes through a register and its read port is not transparent
    (hw/sram.py, :func:`~hw.sram.join_acc`), so a row read at t holds the writes presented up to
    t-2; those presented later are merged in while the row waits in its registers (acc[s] at S5,
    acc[d] at S6, the latest write winning; acc[s] again at S6 from the write presented then:
    a tensor operand's micro-op two cycles ahead). The write of the micro-op just ahead (in W while
    this one is in C) is never needed: micro-ops one cycle apart write different rows (above). So
    there are no hazards at any distance, and C computes from registers alone (timing: no
    forwarding loop C -> C).

    Latency: ``done`` N + 9 cycles after ``start`` for N micro-ops one per cycle, 2N + 8 two
    cycles apart (3N + 7 three apart), N + R + 8 with a reused operand (R = iter_out: the rows
    read) (:attr:`latency` = 8: the first acc write comes ``latency`` cycles after the start of its
    micro-op's S0).

    Members: ``start``, ``src_apart``, ``dst_distinct``, ``dst_increasing`` In(1), ``insn`` In(alu layout), ``busy``,
    ``done``, ``error``, ``uop_fire`` Out(1), driven memory ports ``uop_rd``, ``acc_rd``
    (In(ReadPort.Signature)), ``acc_wr`` (In(WritePort.Signature)).
    """

    latency = 8

    def __init__(self, cfg: Config) -> None:
        check_config(cfg, self)
        self._cfg = cfg
        super().__init__({
            "start": In(1),
            "src_apart": In(1),
            "dst_distinct": In(1),
            "dst_increasing": In(1),
            "insn": In(insn_layouts(cfg)["alu"]),
            "busy": Out(1),
            "done": Out(1),
            "error": Out(1),
            "uop_fire": Out(1),
            "uop_rd": In(read_signature(cfg, "uop")),
            "acc_rd": In(read_signature(cfg, "acc")),
            "acc_wr": In(write_signature(cfg, "acc")),
        })

    @staticmethod
    def supported(cfg: Config, opcode: int) -> bool:
        return opcode in alu_opcodes(cfg)

    def elaborate(self, platform: object) -> Module:
        m = Module()
        cfg = self._cfg
        insn = self.insn
        aw = cfg.LOG_ACC_DEPTH
        m.submodules.seq = seq = UopSequencer(cfg)
        m.d.comb += [
            seq.uop_bgn.eq(insn.uop_bgn), seq.uop_end.eq(insn.uop_end),
            seq.iter_out.eq(insn.iter_out), seq.iter_in.eq(insn.iter_in),
        ]
        for name in ("dst", "src"):
            m.d.comb += [getattr(seq, f"{name}_factor_out").eq(getattr(insn, f"{name}_factor_out")),
                         getattr(seq, f"{name}_factor_in").eq(getattr(insn, f"{name}_factor_in"))]

        use_imm = Signal()
        lane_w = cfg.ACC_WIDTH
        imm = Signal(signed(lane_w))
        active = Signal()
        # ``spaced``: a micro-op every two cycles (``phase`` counts them): a tensor operand (one acc read
        # port), or an immediate whose micro-ops may write the row the one just ahead wrote (without
        # ``dst_distinct``: then that write reaches acc[d] through the merge of S6, and C never takes
        # its operand from the write ahead: timing). Three for SHR with a tensor operand (``slow``:
        # then the row written by the micro-op ahead reaches acc[s] through the merge of S5, so X's
        # shift amount is computed there, never from the write presented in S6: timing)
        phase = Signal(2)
        spaced = Signal()
        slow = Signal()
        last_phase = Signal()
        m.d.comb += last_phase.eq(phase == Mux(slow, 2, 1))
        ok = Signal()
        op_in = insn.alu_opcode
        m.d.comb += ok.eq(op_in.matches(*alu_opcodes(cfg)))
        m.d.comb += seq.start.eq(self.start & ok)
        # POST (the post-processing unit, hw.post): ``preload`` while its parameter rows are read, ``pk`` the
        # row; ``post_fast``: its micro-ops may follow each other (the footprint found every destination row
        # distinct and, with a residual, the residual rows apart from them); otherwise each one waits for the
        # one before it to be written
        is_post, preload, post_fast = Signal(), Signal(), Signal()
        pk = Signal(range(POST_PARAM_ROWS))
        m.d.sync += [self.done.eq(0), self.error.eq(0)]
        # ``may_step`` = ~spaced | (phase == 0), kept as a register (the step fans out to the sequencer);
        # SHR's shift of the immediate is computed once, at the start
        may_step = Signal()
        # ``reuse``: a tensor operand whose row repeats through each inner iteration (see above); then
        # a micro-op steps every cycle, except the first of an inner iteration (it reads acc[s]: a
        # cycle apart from the read of acc[d] of the one before), and only it takes X
        reuse = Signal()
        stepped = Signal()
        imm_in = Signal(signed(lane_w))
        m.d.comb += imm_in.eq(insn.imm)
        imm_left, imm_amount = Signal(), Signal(cfg.LOG_ACC_WIDTH)
        with m.If(self.start):
            if cfg.POST_UNIT:
                m.d.sync += [is_post.eq(op_in == AluOp.POST), pk.eq(0),
                             post_fast.eq(self.dst_increasing & (insn.use_imm | self.src_apart))]
            m.d.sync += [use_imm.eq(insn.use_imm), imm.eq(insn.imm), phase.eq(0), may_step.eq(1),
                         spaced.eq(~insn.use_imm | ~self.dst_distinct),
                         slow.eq(~insn.use_imm & (op_in == AluOp.SHR)),
                         reuse.eq(self.src_apart & self.dst_distinct & ~insn.use_imm & (insn.src_factor_in == 0)
                                  & (insn.uop_end == insn.uop_bgn + 1) & (insn.iter_in > 1))]
            m.d.sync += Cat(imm_left, imm_amount).eq(Cat(*shift_amount(imm_in.as_unsigned())))
            with m.If(~ok):  # unreachable: alu-opcode
                m.d.sync += [self.done.eq(1), self.error.eq(1)]
            with m.Elif((insn.uop_end <= insn.uop_bgn) | (insn.iter_out == 0) | (insn.iter_in == 0)):
                m.d.sync += self.done.eq(1)
            with m.Else():
                m.d.sync += [active.eq(1), preload.eq(op_in == AluOp.POST if cfg.POST_UNIT else 0)]
        with m.Elif(seq.valid & spaced):
            m.d.sync += [phase.eq(Mux(last_phase, 0, phase + 1)), may_step.eq(last_phase)]
        with m.If(preload):
            m.d.sync += pk.eq(pk + 1)
            with m.If(pk == POST_PARAM_ROWS - 1):
                m.d.sync += preload.eq(0)
        post_wait = Signal()            # an irregular POST: a micro-op is still in the pipeline
        step = Signal()
        m.d.comb += step.eq(seq.valid & Mux(reuse, ~seq.first_in | ~stepped, may_step) & ~preload & ~post_wait)
        m.d.sync += stepped.eq(step)
        m.d.comb += seq.step.eq(step)

        for port in (self.uop_rd, self.acc_rd):
            m.d.comb += port.en.eq(1)

        W = 8               # (C, the compute stage, is S7)
        # (valid and dst run two stages past W: the merge of missed writes looks at W+1 and W+2)
        valid = {k: Signal(name=f"s{k}_valid") for k in range(1, W + 3)}
        last = {k: Signal(name=f"s{k}_last") for k in range(1, W + 1)}
        dst = {k: Signal(aw, name=f"s{k}_d") for k in range(3, W + 3)}
        src = {k: Signal(aw, name=f"s{k}_s") for k in range(3, 6)}
        for k in range(2, W + 3):
            m.d.sync += valid[k].eq(valid[k - 1])
        for k in range(2, W + 1):
            m.d.sync += last[k].eq(last[k - 1])
        for k in range(4, W + 3):
            m.d.sync += dst[k].eq(dst[k - 1])
        for k in range(4, 6):
            m.d.sync += src[k].eq(src[k - 1])
        # the micro-op reads acc[s] (always, but for the reused ones of an inner iteration)
        reads = {k: Signal(name=f"s{k}_reads") for k in range(1, 7)}
        for k in range(2, 7):
            m.d.sync += reads[k].eq(reads[k - 1])

        # S0: read the uop; the loop offsets go along
        m.d.comb += self.uop_rd.addr.eq(seq.uop)
        o1_d, o1_s = Signal.like(seq.dst), Signal.like(seq.src)
        m.d.sync += [valid[1].eq(step), last[1].eq(seq.last), o1_d.eq(seq.dst), o1_s.eq(seq.src),
                     reads[1].eq(~reuse | seq.first_in)]
        # S1: register the uop row
        uop_q = Signal(len(self.uop_rd.data), reset_less=True)
        o2_d, o2_s = Signal.like(o1_d), Signal.like(o1_s)
        m.d.sync += [uop_q.eq(self.uop_rd.data), o2_d.eq(o1_d), o2_s.eq(o1_s)]
        # S2: add the offsets into the index registers
        uop = uop_layout(cfg)(uop_q)
        src2 = Signal(aw)           # (the source row as S2 computes it; S3 holds it in ``src[3]``)
        m.d.comb += src2.eq(uop.src_idx + o2_s)  # untoggled: sram-index
        m.d.sync += [dst[3].eq(uop.dst_idx + o2_d), src[3].eq(src2)]
        # S3 reads acc[s] (tensor operand), S4 acc[d]; with a tensor operand the two never coincide.
        # The read address is a register, chosen a cycle ahead (from what S3 and S4 will hold).
        rd_addr = Signal(aw)
        m.d.sync += rd_addr.eq(Mux(valid[2] & ~use_imm & reads[2], src2, dst[3]))
        with m.If(preload):
            m.d.sync += rd_addr.eq(imm[:aw] + pk)
        m.d.comb += self.acc_rd.addr.eq(rd_addr)
        acc_w = cfg.ACC_MATRIX_WIDTH
        lanes_n = cfg.BATCH * cfg.BLOCK_OUT
        raw_q = Signal(acc_w, reset_less=True)      # the row read in the cycle before
        wr_q = Signal(acc_w, reset_less=True)       # the result of C, written in W
        # A write reaches the SRAM a cycle after it is presented (the owner's write register) and
        # the read is not transparent: a row read at t holds the writes presented up to t-2. The
        # ones it missed are merged from ``hist`` (wr_q now and 1, 2, 3 cycles before).
        hist = merge_history(m, wr_q, 3, "alu_wr")
        m.d.sync += raw_q.eq(self.acc_rd.data)
        # S5: register acc[s], read at S3, with the writes presented at S2 .. S5 merged in (compared
        # at S2 with the micro-ops then in W-3 .. W, which present them; the selects reach the lanes
        # through a register tree)
        src_row = Signal(acc_w, reset_less=True)
        writers = [(valid[k], dst[k]) for k in (W - 3, W - 2, W - 1, W)]
        s_sel = merge_select(m, "alu_src_merge", lanes_n, src2, writers, tree=True)
        src_next = Signal(acc_w)
        m.d.comb += src_next.eq(merge_rows(s_sel, [*hist, raw_q], lanes_n))
        m.d.sync += src_row.eq(src_next)
        # SHR's shift amount of each lane of acc[s], beside it
        src_sh = [Signal(1 + cfg.LOG_ACC_WIDTH, name=f"src_sh_{i}", reset_less=True) for i in range(lanes_n)]
        for i, sh in enumerate(src_sh):
            m.d.sync += sh.eq(Cat(*shift_amount(src_next[i * lane_w:(i + 1) * lane_w])))
        # S6: register acc[d], read at S4, with the writes presented at S3 .. S6 merged in (compared
        # at S3 with the same stages); X (the immediate, acc[s], or the write presented now when it
        # is to acc[s]: a tensor operand's micro-op one ahead), SHR's shift amount of X and
        # acc[d] < X into registers.
        a_row = Signal(acc_w, reset_less=True)
        d_sel = merge_select(m, "alu_dst_merge", lanes_n, dst[3], writers, tree=True)
        b_q = [Signal(lane_w, name=f"x_{i}", reset_less=True) for i in range(lanes_n)]
        # C's controls have a copy per slice of a lane (``k`` slices), each driving only that slice's
        # logic (fan-out, timing): the shift, MIN/MAX's compare and the opcode (the first copy of the
        # shift is also X's, kept by a micro-op that keeps X)
        k = 4 if lane_w % 4 == 0 else 1
        left_c = [[Signal(name=f"shl_{i}_copy{j}", reset_less=True) for j in range(k)] for i in range(lanes_n)]
        amt_c = [[Signal(cfg.LOG_ACC_WIDTH, name=f"sh_{i}_copy{j}", reset_less=True) for j in range(k)]
                 for i in range(lanes_n)]
        # The lanes sit beside their acc slices, which an FPGA spreads over the die: what the ALU's
        # control sends them crosses a register tree (hw.sram.fan_out) with no logic on the way
        # (timing): the instruction's constants (the first micro-op reaches S6 seven cycles after
        # ``start``), and the micro-op's flags, computed two stages ahead.
        imm_c = fan_out(m, imm, lanes_n, "imm")
        imm_sh_c = fan_out(m, Cat(imm_left, imm_amount), lanes_n, "imm_sh")
        use_imm_c = fan_out(m, use_imm, lanes_n, "use_imm")
        # which X to take, one-hot per lane (imm, the write presented in S6, acc[s]; none: keep X), from
        # the flags of the micro-op in S3 (it reads acc[s]; the one in W-3 writes that row)
        flags = fan_out(m, Cat(valid[W - 3] & (dst[W - 3] == src[3]), reads[3]), lanes_n, "x_flags")
        x_sel = [Signal(3, name=f"x_sel_copy{i}", reset_less=True) for i in range(lanes_n)]
        for i, (x, (late, rd)) in enumerate(zip(x_sel, flags)):
            m.d.sync += x.eq(Cat(use_imm_c[i], ~use_imm_c[i] & late, ~use_imm_c[i] & ~late & rd))
        # MIN/MAX's compare of acc[d] with X, on the values going into a_row and X (C holds no compare)
        less_q = [[Signal(name=f"lt_{i}_copy{j}", reset_less=True) for j in range(k)] for i in range(lanes_n)]
        fine = min(3, cfg.LOG_ACC_WIDTH)
        a_pre = [Signal(lane_w, name=f"a_pre_{i}", reset_less=True) for i in range(lanes_n)]
        a_next = Signal(acc_w)
        m.d.comb += a_next.eq(merge_rows(d_sel, [*hist, raw_q], lanes_n))
        m.d.sync += a_row.eq(a_next)
        for i in range(lanes_n):
            lane = slice(i * lane_w, (i + 1) * lane_w)
            x_next = Signal(lane_w, name=f"x_{i}_next")
            m.d.comb += x_next.eq(and_or([(x_sel[i][0], imm_c[i]), (x_sel[i][1], wr_q[lane]),
                                          (x_sel[i][2], src_row[lane]), (~x_sel[i].any(), b_q[i])], lane_w))
            less_next = Signal(name=f"lt_{i}_next")
            m.d.comb += less_next.eq(a_next[lane].as_signed() < x_next.as_signed())
            m.d.sync += [b_q[i].eq(x_next), *(c.eq(less_next) for c in less_q[i])]
            # (no shift for X from the write presented now: that happens only with a tensor operand's
            # micro-op two cycles ahead, and SHR spaces its tensor micro-ops three apart)
            shift_next = and_or([(x_sel[i][0], imm_sh_c[i]), (x_sel[i][2], src_sh[i]),
                                 (~x_sel[i].any(), Cat(left_c[i][0], amt_c[i][0]))], 1 + cfg.LOG_ACC_WIDTH)
            m.d.sync += [Cat(left_c[i][j], amt_c[i][j]).eq(shift_next) for j in range(k)]
            # SHR's first levels: acc[d] shifted by the amount's bits above ``fine`` (C does the rest)
            coarse = Cat(Const(0, fine), shift_next[1 + fine:])
            m.d.sync += a_pre[i].eq(Mux(shift_next[0], a_next[lane] << coarse, a_next[lane].as_signed() >> coarse))
        # the one-hot opcode, set at the start, and a copy per quarter lane of C
        op_names = ("max", "add", "shr", "mul")
        op_set = {name: Signal(name=f"op_{name}") for name in op_names}
        with m.If(self.start):
            m.d.sync += [op_set[name].eq(op_in == getattr(AluOp, name.upper())) for name in op_names]
        op_copies = fan_out(m, Cat(*op_set.values()), lanes_n * k, "op")
        slice_ops = [dict(zip(op_names, c)) for c in op_copies]
        # C: compute from registers and register the result. No micro-op here takes its row from the
        # one just ahead (now in W): an immediate's micro-ops run one per cycle only with
        # ``dst_distinct``, and otherwise two cycles apart, as a tensor operand's, so that write
        # reaches a_row through S6's merge. So the lanes compute from registers only.
        lanes = []
        for i in range(lanes_n):
            lane = slice(i * lane_w, (i + 1) * lane_w)
            row_ops = slice_ops[i * k:(i + 1) * k]
            res = alu_lane(m, row_ops, a_row[lane], b_q[i], left_c[i], [a[:fine] for a in amt_c[i]], less_q[i],
                           a_pre[i])
            if cfg.ALU_MUL:     # one multiplier per lane
                res = Mux(row_ops[0]["mul"], (a_row[lane].as_signed() * b_q[i].as_signed())[:lane_w], res)
            lanes.append(res[:lane_w])
        m.d.sync += wr_q.eq(Cat(*lanes))
        # W: write acc[d] (POST: from the end of the post-processing chain instead)
        wr_en, wr_addr, wr_data, wr_last = valid[W], dst[W], wr_q, last[W]
        if cfg.POST_UNIT:
            m.submodules.post = post = PostChain(cfg)
            # the parameter rows reach ``raw_q`` three cycles after ``preload`` addresses them
            tag_v = [Signal(name=f"post_param{j}_valid") for j in range(3)]
            tag_k = [Signal(range(POST_PARAM_ROWS), name=f"post_param{j}_row") for j in range(3)]
            m.d.sync += [tag_v[0].eq(preload), tag_k[0].eq(pk)]
            m.d.sync += [tag_v[j].eq(tag_v[j - 1]) for j in range(1, 3)]
            m.d.sync += [tag_k[j].eq(tag_k[j - 1]) for j in range(1, 3)]
            C = W - 1
            m.d.comb += [
                post.p_we.eq(tag_v[2]), post.p_idx.eq(tag_k[2]), post.p_row.eq(raw_q),
                post.valid_in.eq(valid[C] & is_post), post.last_in.eq(last[C]), post.dst_in.eq(dst[C]),
                post.x_in.eq(a_row), post.r_in.eq(Cat(*b_q)), post.use_r.eq(~use_imm),
                post_wait.eq(is_post & ~post_fast & (Cat(*(valid[k] for k in range(1, W + 1))).any() | post.busy)),
            ]
            wr_en = Mux(is_post, post.valid, valid[W])
            wr_addr = Mux(is_post, post.dst, dst[W])
            wr_data = Mux(is_post, post.y, wr_q)
            wr_last = Mux(is_post, post.last, last[W])
        m.d.comb += [
            self.acc_wr.en.eq(wr_en),
            self.acc_wr.addr.eq(wr_addr),
            self.acc_wr.data.eq(wr_data),
            self.uop_fire.eq(wr_en),
        ]
        with m.If(wr_en & wr_last):
            m.d.sync += [self.done.eq(1), active.eq(0)]
        m.d.comb += self.busy.eq(active)
        return m
