"""The tensor ALU: runs one ALU instruction over the micro-op loop nest (reference §3.4, DESIGN §2)."""

from amaranth.hdl import Cat, Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from sw.isa import AluOp
from .gemm import UopSequencer
from .isa import insn_layouts, uop_layout
from .sram import check_config, read_signature, write_signature

__all__ = ["Alu", "alu_lane"]


def alu_lane(m, op, a, b, *, with_mul):
    """The result of one 32-bit lane: ``op`` (alu_opcode) applied to signed ``a`` and ``b``."""
    res = Signal(32)
    sa = a.as_signed()
    sb = b.as_signed()
    # SHR: b >= 0 shifts right (arithmetic) by min(b, 31); b < 0 shifts left by min(-b, 31).
    rsh = Mux(sb > 31, 31, sb[:5])
    neg = Signal(33)
    m.d.comb += neg.eq(-sb)
    lsh = Mux(neg > 31, 31, neg[:5])
    shifted = Mux(sb[31], (sa << lsh)[:32], (sa >> rsh)[:32])
    with m.Switch(op):
        with m.Case(AluOp.MIN):
            m.d.comb += res.eq(Mux(sa < sb, sa, sb))
        with m.Case(AluOp.MAX):
            m.d.comb += res.eq(Mux(sa > sb, sa, sb))
        with m.Case(AluOp.ADD):
            m.d.comb += res.eq((sa + sb)[:32])
        with m.Case(AluOp.SHR):
            m.d.comb += res.eq(shifted)
        if with_mul:
            with m.Case(AluOp.MUL):
                m.d.comb += res.eq((sa * sb)[:32])
    return res


class Alu(wiring.Component):
    """The tensor ALU: for each micro-op of the loop nest, ``acc[d] = op(acc[d], X)`` on
    BATCH*BLOCK_OUT int32 lanes, X = the sign-extended immediate (``use_imm``) or ``acc[s]``.
    Opcodes MIN, MAX (signed), ADD (wraps), SHR (s >= 0: arithmetic right shift by min(s, 31);
    s < 0: left shift by min(-s, 31), wrapping) and, when ``cfg.ALU_MUL`` is 1, MUL (low 32 bits).
    Another opcode (or MUL when it is not built) does nothing and pulses ``error`` with ``done``.

    Pipeline: S0 read uop; S1 add the loop offsets and read acc (immediate: acc[d]; tensor: acc[s]);
    S2 register the row (tensor: register acc[s], read acc[d], and register it in an extra cycle
    S2b); S3 compute from registers and write acc[d] (no SRAM output feeds the lane logic directly:
    an FPGA block RAM's clock-to-out is too slow for that). An immediate operand runs one micro-op per
    cycle, a tensor operand one every two cycles (one acc read port). A row is registered one cycle
    after its read: a write in the cycle of the read is shown by the acc read port, which must be
    transparent to the write port; the write of the micro-op just ahead, in the cycle the row is
    registered, is forwarded from S3 when the rows match. So there are no hazards. Latency: ``done`` N + 4 cycles after ``start`` for N
    micro-ops with an immediate, 2N + 4 with a tensor operand.

    Members: ``start`` In(1), ``insn`` In(alu layout), ``busy``, ``done``, ``error``, ``uop_fire``
    Out(1), driven memory ports ``uop_rd``, ``acc_rd`` (In(ReadPort.Signature)), ``acc_wr``
    (In(WritePort.Signature)).
    """

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

        op = Signal(3)
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
            m.d.sync += [op.eq(op_in), use_imm.eq(insn.use_imm), imm.eq(insn.imm), toggle.eq(0)]
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
        # S0 -> S1
        m.d.comb += self.uop_rd.addr.eq(seq.uop)
        p1_valid, p1_last = Signal(), Signal()
        p1_d, p1_s = Signal.like(seq.dst), Signal.like(seq.src)
        m.d.sync += [p1_valid.eq(step), p1_last.eq(seq.last), p1_d.eq(seq.dst), p1_s.eq(seq.src)]
        # S1: add the loop offsets; the first acc read (immediate: acc[d]; tensor: acc[s]) goes straight
        # to the memory
        uop = uop_layout(cfg)(self.uop_rd.data)
        d1, s1 = Signal(aw), Signal(aw)
        m.d.comb += [d1.eq(uop.dst_idx + p1_d), s1.eq(uop.src_idx + p1_s)]
        p2_valid, p2_last = Signal(), Signal()
        p2_d, p2_s = Signal(aw), Signal(aw)
        m.d.sync += [p2_valid.eq(p1_valid), p2_last.eq(p1_last), p2_d.eq(d1), p2_s.eq(s1)]
        # S2 (and S2b for a tensor operand): register the rows read. Tensor: S2 registers acc[s] and
        # reads acc[d], S2b registers acc[d]. The write of the micro-op ahead (in S3) in the cycle a
        # row is registered is forwarded when the rows match; writes before that are in the memory or
        # shown by the transparent read port (a write in the cycle of the read).
        p2b_valid, p2b_last = Signal(), Signal()
        p2b_d = Signal(aw)
        p3_valid, p3_last = Signal(), Signal()
        p3_d = Signal(aw)
        src = Signal(cfg.ACC_MATRIX_WIDTH)
        a_q = Signal(cfg.ACC_MATRIX_WIDTH)
        wr_data = Signal(cfg.ACC_MATRIX_WIDTH)
        tensor2 = p2_valid & ~use_imm
        m.d.sync += [p2b_valid.eq(tensor2), p2b_last.eq(p2_last), p2b_d.eq(p2_d)]
        with m.If(tensor2):
            m.d.comb += self.acc_rd.addr.eq(p2_d)
        with m.Elif(use_imm):
            m.d.comb += self.acc_rd.addr.eq(d1)
        with m.Else():
            m.d.comb += self.acc_rd.addr.eq(s1)
        with m.If(tensor2):
            with m.If(p3_valid & (p3_d == p2_s)):
                m.d.sync += src.eq(wr_data)
            with m.Else():
                m.d.sync += src.eq(self.acc_rd.data)
        a_row = Mux(p2b_valid, p2b_d, p2_d)
        with m.If(p3_valid & (p3_d == a_row)):
            m.d.sync += a_q.eq(wr_data)
        with m.Else():
            m.d.sync += a_q.eq(self.acc_rd.data)
        a_valid = Mux(use_imm, p2_valid, p2b_valid)
        m.d.sync += [
            p3_valid.eq(a_valid),
            p3_last.eq(Mux(use_imm, p2_last, p2b_last)),
            p3_d.eq(a_row),
        ]
        # S3: compute from registers and write
        lanes = []
        for i in range(cfg.BATCH * cfg.BLOCK_OUT):
            a = a_q[i * 32:(i + 1) * 32]
            b = Mux(use_imm, imm.as_unsigned(), src[i * 32:(i + 1) * 32])
            lanes.append(alu_lane(m, op, a, b, with_mul=bool(cfg.ALU_MUL)))
        m.d.comb += [
            wr_data.eq(Cat(*lanes)),
            self.acc_wr.en.eq(p3_valid),
            self.acc_wr.addr.eq(p3_d),
            self.acc_wr.data.eq(wr_data),
            self.uop_fire.eq(p3_valid),
        ]
        with m.If(p3_valid & p3_last):
            m.d.sync += [self.done.eq(1), active.eq(0)]
        m.d.comb += self.busy.eq(active)
        return m
