"""The GEMM core: runs one GEMM instruction over the micro-op loop nest, one micro-op per cycle.

Also holds :class:`UopSequencer`, the two-level micro-op loop shared with the tensor ALU.
"""

from amaranth.hdl import Cat, Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .isa import insn_layouts, uop_layout
from .sram import check_config, read_signature, write_signature

__all__ = ["UopSequencer", "Gemm", "tree_sum"]


def tree_sum(terms):
    """Sum a list of values with a balanced adder tree."""
    terms = list(terms)
    while len(terms) > 1:
        nxt = [terms[i] + terms[i + 1] for i in range(0, len(terms) - 1, 2)]
        if len(terms) % 2:
            nxt.append(terms[-1])
        terms = nxt
    return terms[0]


class UopSequencer(wiring.Component):
    """The micro-op loop nest of GEMM and ALU (reference §3.3): for i_out, i_in, u in
    [uop_bgn, uop_end) it presents ``uop`` and the index offsets ``dst``, ``src``, ``wgt``
    (= i_out*factor_out + i_in*factor_in, wrapping at their widths).

    Pulse ``start`` with the loop fields valid (``uop_bgn``, ``uop_end``, ``iter_out``, ``iter_in``,
    ``*_factor_out``, ``*_factor_in``); from the next cycle ``valid`` is high while iterations remain,
    and each cycle with ``step`` high advances by one (``last`` marks the final one). An empty nest
    (uop_end <= uop_bgn or an iteration count of 0) never becomes valid.
    """

    def __init__(self, cfg):
        check_config(cfg, self)
        self._cfg = cfg
        uw = cfg.LOG_UOP_DEPTH + 1
        self._widths = {"dst": cfg.LOG_ACC_DEPTH, "src": cfg.UOP_SRC_BITS, "wgt": cfg.LOG_WGT_DEPTH}
        members = {
            "start": In(1), "step": In(1),
            "uop_bgn": In(uw), "uop_end": In(uw), "iter_out": In(14), "iter_in": In(14),
            "valid": Out(1), "last": Out(1), "uop": Out(cfg.LOG_UOP_DEPTH),
        }
        for name, w in self._widths.items():
            members[f"{name}_factor_out"] = In(w)
            members[f"{name}_factor_in"] = In(w)
            members[name] = Out(w)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        cfg = self._cfg
        uw = cfg.LOG_UOP_DEPTH + 1
        u, bgn, end = Signal(uw), Signal(uw), Signal(uw)
        i_out, i_in, n_out, n_in = Signal(14), Signal(14), Signal(14), Signal(14)
        regs = {}
        for name, w in self._widths.items():
            regs[name] = dict(off_out=Signal(w, name=f"{name}_off_out"), off_in=Signal(w, name=f"{name}_off_in"),
                              f_out=Signal(w, name=f"{name}_f_out"), f_in=Signal(w, name=f"{name}_f_in"))
            m.d.comb += getattr(self, name).eq(regs[name]["off_out"] + regs[name]["off_in"])

        u_last = u == end - 1
        in_last = i_in == n_in - 1
        out_last = i_out == n_out - 1
        m.d.comb += [self.uop.eq(u), self.last.eq(u_last & in_last & out_last)]

        with m.If(self.start):
            m.d.sync += [
                u.eq(self.uop_bgn), bgn.eq(self.uop_bgn), end.eq(self.uop_end),
                i_out.eq(0), i_in.eq(0), n_out.eq(self.iter_out), n_in.eq(self.iter_in),
                self.valid.eq((self.uop_end > self.uop_bgn) & (self.iter_out != 0) & (self.iter_in != 0)),
            ]
            for name, r in regs.items():
                m.d.sync += [r["off_out"].eq(0), r["off_in"].eq(0),
                             r["f_out"].eq(getattr(self, f"{name}_factor_out")),
                             r["f_in"].eq(getattr(self, f"{name}_factor_in"))]
        with m.Elif(self.valid & self.step):
            with m.If(~u_last):
                m.d.sync += u.eq(u + 1)
            with m.Else():
                m.d.sync += u.eq(bgn)
                with m.If(~in_last):
                    m.d.sync += i_in.eq(i_in + 1)
                    m.d.sync += [r["off_in"].eq(r["off_in"] + r["f_in"]) for r in regs.values()]
                with m.Else():
                    m.d.sync += i_in.eq(0)
                    m.d.sync += [r["off_in"].eq(0) for r in regs.values()]
                    m.d.sync += i_out.eq(i_out + 1)
                    m.d.sync += [r["off_out"].eq(r["off_out"] + r["f_out"]) for r in regs.values()]
                    with m.If(out_last):
                        m.d.sync += self.valid.eq(0)
        return m


class Gemm(wiring.Component):
    """The GEMM core (reference §3.3): for each micro-op of the loop nest,
    ``acc[d] = 0`` (reset) or ``acc[d] += inp[s] . wgt[w]^T`` (BATCH x BLOCK_IN times
    BLOCK_IN x BLOCK_OUT int8, int32 wrap-around).

    Pipeline, one micro-op per cycle (II = 1), no stalls, every arithmetic result registered
    (for FPGA timing: the int8 products land in MULT18/DSP output registers):
    S0 read uop; S1 add the loop offsets to the uop fields and address inp and wgt; S2 products
    (BATCH*BLOCK_OUT*BLOCK_IN int8 multipliers) into registers, read acc; S3 adder trees into
    registers, acc row into a register; S4 add and write acc.
    The acc read of a micro-op (S2) is two cycles before its write (S4). The write of the micro-op
    two ahead happens in the cycle of the read, so an acc read port *transparent* to the acc write
    port (``read_port(transparent_for=...)``, which the owner of the acc memory must provide) shows
    it; the write of the micro-op just ahead comes one cycle too late and is forwarded from S4 into
    S3's acc register when the rows match. So there is no hazard at any distance, and results are
    bit-exact even between consecutive micro-ops writing the same row.

    Pulse ``start`` with ``insn`` (GEMM layout) valid. Latency: the first acc write is 5 cycles
    after ``start``; N micro-ops finish with ``done`` (one cycle) N + 5 cycles after ``start``.
    ``busy`` is high in between; ``uop_fire`` pulses for each non-reset micro-op written (the fsim
    ``gemm_counter``).

    Members: ``start`` In(1), ``insn`` In(gemm layout), ``busy`` Out(1), ``done`` Out(1),
    ``uop_fire`` Out(1), and driven memory ports ``uop_rd``, ``inp_rd``, ``wgt_rd``, ``acc_rd``
    (In(ReadPort.Signature)) and ``acc_wr`` (In(WritePort.Signature)).
    """

    def __init__(self, cfg):
        check_config(cfg, self)
        self._cfg = cfg
        super().__init__({
            "start": In(1),
            "insn": In(insn_layouts(cfg)["gemm"]),
            "busy": Out(1),
            "done": Out(1),
            "uop_fire": Out(1),
            "uop_rd": In(read_signature(cfg, "uop")),
            "inp_rd": In(read_signature(cfg, "inp")),
            "wgt_rd": In(read_signature(cfg, "wgt")),
            "acc_rd": In(read_signature(cfg, "acc")),
            "acc_wr": In(write_signature(cfg, "acc")),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self._cfg
        insn = self.insn
        m.submodules.seq = seq = UopSequencer(cfg)
        m.d.comb += [
            seq.start.eq(self.start), seq.step.eq(1),
            seq.uop_bgn.eq(insn.uop_bgn), seq.uop_end.eq(insn.uop_end),
            seq.iter_out.eq(insn.iter_out), seq.iter_in.eq(insn.iter_in),
        ]
        for name in ("dst", "src", "wgt"):
            m.d.comb += [getattr(seq, f"{name}_factor_out").eq(getattr(insn, f"{name}_factor_out")),
                         getattr(seq, f"{name}_factor_in").eq(getattr(insn, f"{name}_factor_in"))]
        reset = Signal()
        active = Signal()
        with m.If(self.start):
            m.d.sync += [reset.eq(insn.reset), active.eq(1)]

        for port in (self.uop_rd, self.inp_rd, self.wgt_rd, self.acc_rd):
            m.d.comb += port.en.eq(1)

        # S0: read the uop; the loop offsets go along
        m.d.comb += self.uop_rd.addr.eq(seq.uop)
        p1_valid, p1_last = Signal(), Signal()
        p1_d, p1_s, p1_w = Signal.like(seq.dst), Signal.like(seq.src), Signal.like(seq.wgt)
        m.d.sync += [p1_valid.eq(seq.valid), p1_last.eq(seq.last),
                     p1_d.eq(seq.dst), p1_s.eq(seq.src), p1_w.eq(seq.wgt)]
        # S1: add the offsets; the inp and wgt addresses go straight to their memories
        uop = uop_layout(cfg)(self.uop_rd.data)
        s_idx = Signal(cfg.LOG_INP_DEPTH)
        w_idx = Signal(cfg.LOG_WGT_DEPTH)
        m.d.comb += [s_idx.eq(uop.src_idx + p1_s), w_idx.eq(uop.wgt_idx + p1_w),
                     self.inp_rd.addr.eq(s_idx), self.wgt_rd.addr.eq(w_idx)]
        p2_valid, p2_last = Signal(), Signal()
        p2_d = Signal(cfg.LOG_ACC_DEPTH)
        m.d.sync += [p2_valid.eq(p1_valid), p2_last.eq(p1_last), p2_d.eq(uop.dst_idx + p1_d)]
        # S2: products into registers (the MULT18 output); read acc
        m.d.comb += self.acc_rd.addr.eq(p2_d)
        bi, bo = cfg.BLOCK_IN, cfg.BLOCK_OUT
        inp, wgt = self.inp_rd.data, self.wgt_rd.data
        p3_valid, p3_last = Signal(), Signal()
        p3_d = Signal(cfg.LOG_ACC_DEPTH)
        m.d.sync += [p3_valid.eq(p2_valid), p3_last.eq(p2_last), p3_d.eq(p2_d)]
        prods = []
        for b in range(cfg.BATCH):
            for oc in range(bo):
                row = []
                for k in range(bi):
                    prod = Signal(signed(16), name=f"prod_{b}_{oc}_{k}")
                    m.d.sync += prod.eq(inp[(b * bi + k) * 8:(b * bi + k + 1) * 8].as_signed() *
                                        wgt[(oc * bi + k) * 8:(oc * bi + k + 1) * 8].as_signed())
                    row.append(prod)
                prods.append(row)
        # S3: adder trees into registers; the acc row read in S2 is registered, or, when the micro-op
        # now in S4 writes the same row (consecutive micro-ops), S4's result is forwarded instead.
        # A micro-op two apart wrote in the cycle of this one's acc read, which the transparent acc
        # read port already shows; three or more apart is plain memory.
        p4_valid, p4_last = Signal(), Signal()
        p4_d = Signal(cfg.LOG_ACC_DEPTH)
        m.d.sync += [p4_valid.eq(p3_valid), p4_last.eq(p3_last), p4_d.eq(p3_d)]
        dots = []
        for i, row in enumerate(prods):
            dot = Signal(signed(16 + cfg.LOG_BLOCK_IN), name=f"dot_{i // bo}_{i % bo}")
            m.d.sync += dot.eq(tree_sum(row))
            dots.append(dot)
        acc_q = Signal(len(self.acc_wr.data))
        wr_data = Signal(len(self.acc_wr.data))
        with m.If(p4_valid & (p4_d == p3_d)):
            m.d.sync += acc_q.eq(wr_data)
        with m.Else():
            m.d.sync += acc_q.eq(self.acc_rd.data)
        # S4: accumulate and write
        lanes = [(acc_q[i * 32:(i + 1) * 32].as_signed() + dots[i])[:32] for i in range(len(dots))]
        m.d.comb += [
            wr_data.eq(Mux(reset, 0, Cat(*lanes))),
            self.acc_wr.en.eq(p4_valid),
            self.acc_wr.addr.eq(p4_d),
            self.acc_wr.data.eq(wr_data),
            self.uop_fire.eq(p4_valid & ~reset),
        ]
        m.d.sync += self.done.eq(0)
        with m.If(p4_valid & p4_last):
            m.d.sync += [self.done.eq(1), active.eq(0)]
        # an empty loop nest: done right away
        with m.If(self.start & ((insn.uop_end <= insn.uop_bgn) | (insn.iter_out == 0) | (insn.iter_in == 0))):
            m.d.sync += [self.done.eq(1), active.eq(0)]
        m.d.comb += self.busy.eq(active)
        return m
