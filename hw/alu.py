"""The tensor ALU: runs one ALU instruction over the micro-op loop nest (reference §3.4, DESIGN §2)."""

from amaranth.hdl import Cat, Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from sw.isa import AluOp
from .gemm import UopSequencer
from .isa import insn_layouts, uop_layout
from .sram import check_config, read_signature, write_signature

__all__ = ["Alu", "alu_lane", "shift_amount"]


def shift_amount(b):
    """SHR's shift of a 32-bit lane by signed ``b``: ``(left, amount)``. b >= 0: right (arithmetic) by
    min(b, 31); b < 0: left by min(-b, 31). Built from bit tests and a 5-bit negation (no 32-bit
    compare), for timing."""
    lo, hi, sign = b[:5], b[5:31], b[31]
    small_neg = hi.all() & lo.any()              # b in [-31, -1]
    amount = Mux(sign, Mux(small_neg, (-lo)[:5], 31), Mux(hi.any(), 31, lo))
    return sign, amount


def alu_lane(m, ops, a, b, left, amount):
    """The result of one 32-bit lane of MIN, MAX, ADD or SHR applied to signed ``a`` and ``b``. ``ops``:
    one-hot registers ``{"max", "add", "shr"}`` (none set: MIN); ``(left, amount)`` =
    :func:`shift_amount` of ``b`` (computed a stage earlier). MUL is not here (see :class:`Alu`)."""
    sa = a.as_signed()
    sb = b.as_signed()
    take_a = Signal()
    m.d.comb += take_a.eq((sa < sb) ^ ops["max"])
    minmax = Mux(take_a, sa, sb)
    shifted = Mux(left, (sa << amount)[:32], (sa >> amount)[:32])
    res = Signal(32)
    m.d.comb += res.eq(Mux(ops["add"], (sa + sb)[:32], Mux(ops["shr"], shifted, minmax)))
    return res


class Alu(wiring.Component):
    """The tensor ALU: for each micro-op of the loop nest, ``acc[d] = op(acc[d], X)`` on
    BATCH*BLOCK_OUT int32 lanes, X = the sign-extended immediate (``use_imm``) or ``acc[s]``.
    Opcodes MIN, MAX (signed), ADD (wraps), SHR (s >= 0: arithmetic right shift by min(s, 31);
    s < 0: left shift by min(-s, 31), wrapping) and, when ``cfg.ALU_MUL`` is 1, MUL (low 32 bits).
    Another opcode (or MUL when it is not built) does nothing and pulses ``error`` with ``done``.

    Pipeline (for FPGA timing every SRAM read lands in a register before any logic, an ECP5 DP16KD
    has about 6 ns clock-to-out): S0 read uop; S1 register the uop row; S2 add the loop offsets
    into the index registers; S3 read acc[s] (tensor operand only); S4 read acc[d]; S5 register
    acc[s] (its raw read was registered in S4); S6 register acc[d] (raw read registered in S5) and
    X with SHR's shift amount; C = S7 compute and register the result; W = S8 write acc[d].
    An immediate operand runs one micro-op per cycle, a tensor operand one every two cycles (one
    acc read port).

    Hazards: the acc read port must be *transparent* to the acc write port (the owner of the acc
    memory provides ``read_port(transparent_for=...)``), so a write in the cycle of a read is in
    the data; the writes of later cycles are merged in while a row waits in its registers (acc[d]
    in S6, acc[s] in S5 and S6), and the write of the micro-op just ahead (in W while this one is
    in C) is forwarded: the lanes are computed both from that write and from the registered row and
    the match selects the result (so the match's fan-out is not in series with the lane logic).
    So there are no hazards at any distance.

    Latency: ``done`` N + 9 cycles after ``start`` for N micro-ops with an immediate, 2N + 8
    with a tensor operand (:attr:`latency` = 8: the first acc write comes ``latency`` cycles after
    the start of its micro-op's S0).

    Members: ``start`` In(1), ``insn`` In(alu layout), ``busy``, ``done``, ``error``, ``uop_fire``
    Out(1), driven memory ports ``uop_rd``, ``acc_rd`` (In(ReadPort.Signature)), ``acc_wr``
    (In(WritePort.Signature)).
    """

    latency = 8

    def __init__(self, cfg):
        check_config(cfg, self)
        self._cfg = cfg
        super().__init__({
            "start": In(1),
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
    def supported(cfg, opcode):
        return opcode in (AluOp.MIN, AluOp.MAX, AluOp.ADD, AluOp.SHR) or (opcode == AluOp.MUL and cfg.ALU_MUL)

    def elaborate(self, platform):
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
        imm = Signal(signed(32))
        active = Signal()
        toggle = Signal()
        ok = Signal()
        op_in = insn.alu_opcode
        m.d.comb += ok.eq((op_in == AluOp.MIN) | (op_in == AluOp.MAX) | (op_in == AluOp.ADD) |
                          (op_in == AluOp.SHR) | ((op_in == AluOp.MUL) & bool(cfg.ALU_MUL)))
        m.d.comb += seq.start.eq(self.start & ok)
        m.d.sync += [self.done.eq(0), self.error.eq(0)]
        with m.If(self.start):
            m.d.sync += [use_imm.eq(insn.use_imm), imm.eq(insn.imm), toggle.eq(0)]
            with m.If(~ok):
                m.d.sync += [self.done.eq(1), self.error.eq(1)]
            with m.Elif((insn.uop_end <= insn.uop_bgn) | (insn.iter_out == 0) | (insn.iter_in == 0)):
                m.d.sync += self.done.eq(1)
            with m.Else():
                m.d.sync += active.eq(1)
        with m.Elif(seq.valid & ~use_imm):
            m.d.sync += toggle.eq(~toggle)
        step = seq.valid & (use_imm | ~toggle)
        m.d.comb += seq.step.eq(step)

        for port in (self.uop_rd, self.acc_rd):
            m.d.comb += port.en.eq(1)

        C, W = 7, 8
        valid = {k: Signal(name=f"s{k}_valid") for k in range(1, W + 1)}
        last = {k: Signal(name=f"s{k}_last") for k in range(1, W + 1)}
        dst = {k: Signal(aw, name=f"s{k}_d") for k in range(3, W + 1)}
        src = {k: Signal(aw, name=f"s{k}_s") for k in range(3, 6)}
        for k in range(2, W + 1):
            m.d.sync += [valid[k].eq(valid[k - 1]), last[k].eq(last[k - 1])]
        for k in range(4, W + 1):
            m.d.sync += dst[k].eq(dst[k - 1])
        for k in range(4, 6):
            m.d.sync += src[k].eq(src[k - 1])

        # S0: read the uop; the loop offsets go along
        m.d.comb += self.uop_rd.addr.eq(seq.uop)
        o1_d, o1_s = Signal.like(seq.dst), Signal.like(seq.src)
        m.d.sync += [valid[1].eq(step), last[1].eq(seq.last), o1_d.eq(seq.dst), o1_s.eq(seq.src)]
        # S1: register the uop row
        uop_q = Signal(len(self.uop_rd.data))
        o2_d, o2_s = Signal.like(o1_d), Signal.like(o1_s)
        m.d.sync += [uop_q.eq(self.uop_rd.data), o2_d.eq(o1_d), o2_s.eq(o1_s)]
        # S2: add the offsets into the index registers
        uop = uop_layout(cfg)(uop_q)
        m.d.sync += [dst[3].eq(uop.dst_idx + o2_d), src[3].eq(uop.src_idx + o2_s)]
        # S3 reads acc[s] (tensor operand), S4 acc[d]; with a tensor operand the two never coincide
        with m.If(valid[3] & ~use_imm):
            m.d.comb += self.acc_rd.addr.eq(src[3])
        with m.Else():
            m.d.comb += self.acc_rd.addr.eq(dst[4])
        acc_w = cfg.ACC_MATRIX_WIDTH
        raw_q = Signal(acc_w)       # the row read in the cycle before
        wr_q = Signal(acc_w)        # the result of C, written in W
        wr_q2 = Signal(acc_w)       # the result written in the cycle before
        m.d.sync += [raw_q.eq(self.acc_rd.data), wr_q2.eq(wr_q)]

        def merged(reg, now, prev):
            """``reg`` <= the raw row, or the write now in W (``now``) or of the cycle before (``prev``)."""
            with m.If(now):
                m.d.sync += reg.eq(wr_q)
            with m.Elif(prev):
                m.d.sync += reg.eq(wr_q2)
            with m.Else():
                m.d.sync += reg.eq(raw_q)

        # match flags, registered one cycle before they select
        s_prev, s_late, d_now, d_prev = (Signal(name=n) for n in ("s_prev", "s_late", "d_now", "d_prev"))
        m.d.sync += [
            s_prev.eq(valid[W] & (dst[W] == src[4])),       # for S5: acc[s] written the cycle before
            s_late.eq(valid[C] & (dst[C] == src[5])),       # for S6: acc[s] written now
            d_now.eq(valid[C] & (dst[C] == dst[5])),        # for S6: acc[d] written now
            d_prev.eq(valid[W] & (dst[W] == dst[5])),       # for S6: acc[d] written the cycle before
        ]
        # S5: register acc[s] (micro-ops are two cycles apart with a tensor operand, so none is in C
        # while this one is in S4 and none writes acc in S5)
        src_row = Signal(acc_w)
        m.d.sync += src_row.eq(Mux(s_prev, wr_q2, raw_q))
        # S6: register acc[d]; X (immediate or acc[s]) and SHR's shift amounts into registers. The
        # candidates are computed for both sources of acc[s] (the write now in W or the registered
        # row), and the match flag selects at the end, so its fan-out is not in series with the logic.
        a_row = Signal(acc_w)
        merged(a_row, d_now, d_prev)
        lanes_n = cfg.BATCH * cfg.BLOCK_OUT
        b_q = [Signal(32, name=f"x_{i}") for i in range(lanes_n)]
        left_q = [Signal(name=f"shl_{i}") for i in range(lanes_n)]
        amt_q = [Signal(5, name=f"sh_{i}") for i in range(lanes_n)]
        # (copies of the shift controls for the second candidate of C: fan-out, timing)
        left_c = [Signal(name=f"shl_{i}_copy") for i in range(lanes_n)]
        amt_c = [Signal(5, name=f"sh_{i}_copy") for i in range(lanes_n)]
        imm_left, imm_amount = shift_amount(imm.as_unsigned())
        for i in range(lanes_n):
            lane = slice(i * 32, (i + 1) * 32)
            w_left, w_amount = shift_amount(wr_q[lane])
            s_left, s_amount = shift_amount(src_row[lane])
            def take(x, left, amount, i=i):
                return [b_q[i].eq(x), left_q[i].eq(left), amt_q[i].eq(amount),
                        left_c[i].eq(left), amt_c[i].eq(amount)]
            with m.If(use_imm):
                m.d.sync += take(imm.as_unsigned(), imm_left, imm_amount)
            with m.Elif(s_late):
                m.d.sync += take(wr_q[lane], w_left, w_amount)
            with m.Else():
                m.d.sync += take(src_row[lane], s_left, s_amount)
        # the one-hot opcode, one copy per lane (fan-out: timing; registers named *_copy* are
        # deliberate duplicates, which the FPGA build keeps apart: hw.fpga.KEEP_COPIES)
        lane_ops = [{name: Signal(name=f"op_{name}_copy{i}") for name in ("max", "add", "shr", "mul")}
                    for i in range(lanes_n)]
        with m.If(self.start):
            for ops in lane_ops:
                m.d.sync += [ops["max"].eq(op_in == AluOp.MAX), ops["add"].eq(op_in == AluOp.ADD),
                             ops["shr"].eq(op_in == AluOp.SHR), ops["mul"].eq(op_in == AluOp.MUL)]
        # C: compute from registers and register the result. The micro-op just ahead (now in W) may
        # have written acc[d]: the lanes are computed both from its result and from the registered
        # row, and the match flag selects at the end (the fan-out of the flag runs in parallel).
        # Each lane has its own copy of the match flag (fan-out).
        d_w_lane = [Signal(name=f"d_w_copy{i}") for i in range(lanes_n)]
        m.d.sync += [d.eq(valid[C] & (dst[C] == dst[6])) for d in d_w_lane]
        lanes = []
        for i in range(lanes_n):
            lane = slice(i * 32, (i + 1) * 32)
            from_w = Signal(32, name=f"from_w_{i}")
            from_row = Signal(32, name=f"from_row_{i}")
            ops = lane_ops[i]
            m.d.comb += [from_w.eq(alu_lane(m, ops, wr_q[lane], b_q[i], left_q[i], amt_q[i])),
                         from_row.eq(alu_lane(m, ops, a_row[lane], b_q[i], left_c[i], amt_c[i]))]
            res = Mux(d_w_lane[i], from_w, from_row)
            if cfg.ALU_MUL:     # one multiplier per lane, on the selected operand
                a_fin = Mux(d_w_lane[i], wr_q[lane], a_row[lane]).as_signed()
                res = Mux(ops["mul"], (a_fin * b_q[i].as_signed())[:32], res)
            lanes.append(res)
        m.d.sync += wr_q.eq(Cat(*lanes))
        # W: write acc[d]
        m.d.comb += [
            self.acc_wr.en.eq(valid[W]),
            self.acc_wr.addr.eq(dst[W]),
            self.acc_wr.data.eq(wr_q),
            self.uop_fire.eq(valid[W]),
        ]
        with m.If(valid[W] & last[W]):
            m.d.sync += [self.done.eq(1), active.eq(0)]
        m.d.comb += self.busy.eq(active)
        return m
