"""The GEMM core: runs one GEMM instruction over the micro-op loop nest, one micro-op per cycle.

Also holds :class:`UopSequencer`, the two-level micro-op loop shared with the tensor ALU.
"""

from collections.abc import Iterable

from amaranth.hdl import Cat, ClockSignal, Instance, Module, Mux, Signal, Value, signed, unsigned
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from sw.config import Config
from sw.isa import Opcode

from .layouts import insn_layouts, uop_layout
from .sram import check_config, fan_out, merge_history, merge_rows, merge_select, read_signature, write_signature

__all__ = ["UopSequencer", "Gemm", "tree_sum", "registered_mul"]


def tree_sum(terms: Iterable[Value]) -> Value:
    """Sum a list of values with a balanced adder tree."""
    terms = list(terms)
    while len(terms) > 1:
        nxt = [terms[i] + terms[i + 1] for i in range(0, len(terms) - 1, 2)]
        if len(terms) % 2:
            nxt.append(terms[-1])
        terms = nxt
    return terms[0]


def registered_mul(m: Module, platform: object, a: Value, b: Value, name: str, *,
                   signed_operands: bool = True) -> Signal:
    """The product of ``a`` and ``b`` (at most 18 bits each; signed, or unsigned with
    ``signed_operands=False``) two cycles later: the operands are registered, then the product.
    On an ECP5 (``platform.family == "ecp5"``) this is one MULT18X18D with its input and output
    registers (yosys does not pack registers into it), so the multiplier adds no combinational
    delay to a fabric path; elsewhere it is flip-flops around a ``*``. Returns the product, a Signal
    of ``len(a) + len(b)`` bits (signed when the operands are)."""
    wa, wb = len(a), len(b)
    if wa > 18 or wb > 18:
        raise ValueError(f"registered_mul: operands of {wa} and {wb} bits do not fit an 18x18 multiplier")
    shape = signed(wa + wb) if signed_operands else unsigned(wa + wb)
    prod = Signal(shape, name=name)
    if getattr(platform, "family", None) == "ecp5":
        p = Signal(36, name=f"{name}_p")
        ports = {}
        for i in range(18):                  # sign- or zero-extended to 18 bits
            ports[f"i_A{i}"] = a[i] if i < wa else (a[wa - 1] if signed_operands else 0)
            ports[f"i_B{i}"] = b[i] if i < wb else (b[wb - 1] if signed_operands else 0)
            ports[f"i_C{i}"] = 0
        for i in range(36):
            ports[f"o_P{i}"] = p[i]
        for i in range(4):
            ports[f"i_CLK{i}"] = ClockSignal() if i == 0 else 0
            ports[f"i_CE{i}"] = 1
            ports[f"i_RST{i}"] = 0
        m.submodules[f"{name}_dsp"] = Instance(
            "MULT18X18D",
            p_REG_INPUTA_CLK="CLK0", p_REG_INPUTB_CLK="CLK0", p_REG_OUTPUT_CLK="CLK0",
            p_REG_INPUTC_CLK="NONE", p_REG_PIPELINE_CLK="NONE", p_GSR="DISABLED", p_RESETMODE="SYNC",
            p_SOURCEB_MODE="B_SHIFT", p_MULT_BYPASS="DISABLED", p_CAS_MATCH_REG="FALSE",
            i_SIGNEDA=int(signed_operands), i_SIGNEDB=int(signed_operands), i_SOURCEA=0, i_SOURCEB=0, **ports)
        m.d.comb += prod.eq(p[:wa + wb])
    else:
        op_shape = signed if signed_operands else unsigned
        aq, bq = Signal(op_shape(wa), name=f"{name}_a"), Signal(op_shape(wb), name=f"{name}_b")
        m.d.sync += [aq.eq(a), bq.eq(b), prod.eq(aq * bq)]  # untoggled: acc-load-rows
    return prod


class UopSequencer(wiring.Component):
    """The micro-op loop nest of GEMM and ALU (docs/architecture.md §2.7): for i_out, i_in, u in
    [uop_bgn, uop_end) it presents ``uop`` and the index offsets ``dst``, ``src``, ``wgt``
    (= i_out*factor_out + i_in*factor_in, wrapping at their widths).

    Pulse ``start`` with the loop fields valid (``uop_bgn``, ``uop_end``, ``iter_out``, ``iter_in``,
    ``*_factor_out``, ``*_factor_in``); from the next cycle ``valid`` is high while iterations remain,
    and each cycle with ``step`` high advances by one (``last`` marks the final one). An empty nest
    (uop_end <= uop_bgn or an iteration count of 0) never becomes valid. ``first_in``: the inner
    iteration is the first (i_in = 0).
    """

    def __init__(self, cfg: Config) -> None:
        check_config(cfg, self)
        self._cfg = cfg
        uw = cfg.LOG_UOP_DEPTH + 1
        self._widths = {"dst": cfg.LOG_ACC_DEPTH, "src": cfg.UOP_SRC_BITS, "wgt": cfg.LOG_WGT_DEPTH}
        members = {
            "start": In(1), "step": In(1),
            "uop_bgn": In(uw), "uop_end": In(uw), "iter_out": In(14), "iter_in": In(14),
            "valid": Out(1), "last": Out(1), "first_in": Out(1), "uop": Out(cfg.LOG_UOP_DEPTH),
        }
        for name, w in self._widths.items():
            members[f"{name}_factor_out"] = In(w)
            members[f"{name}_factor_in"] = In(w)
            members[name] = Out(w)
        super().__init__(members)

    def elaborate(self, platform: object) -> Module:
        m = Module()
        cfg = self._cfg
        uw = cfg.LOG_UOP_DEPTH + 1
        u, bgn, end = Signal(uw), Signal(uw), Signal(uw)  # untoggled: uop-address
        i_out, i_in, n_out, n_in = Signal(14), Signal(14), Signal(14), Signal(14)
        regs = {}
        for name, w in self._widths.items():
            regs[name] = dict(off_out=Signal(w, name=f"{name}_off_out"),  # untoggled: sram-index
                              off_in=Signal(w, name=f"{name}_off_in"),  # untoggled: sram-index
                              f_out=Signal(w, name=f"{name}_f_out"), f_in=Signal(w, name=f"{name}_f_in"))
            m.d.comb += getattr(self, name).eq(regs[name]["off_out"] + regs[name]["off_in"])  # untoggled: sram-index

        # "this is the last value" flags of the three counters are registers, updated with the
        # counters (for timing: the step logic and its fan-out see three flip-flops, no compares)
        u_last, in_last, out_last = Signal(), Signal(), Signal()
        bgn_last = Signal()              # u_last after wrapping to bgn: a one-uop kernel
        m.d.comb += [self.uop.eq(u), self.last.eq(u_last & in_last & out_last)]

        with m.If(self.start):
            m.d.sync += [
                u.eq(self.uop_bgn), bgn.eq(self.uop_bgn), end.eq(self.uop_end),
                i_out.eq(0), i_in.eq(0), n_out.eq(self.iter_out), n_in.eq(self.iter_in), self.first_in.eq(1),
                self.valid.eq((self.uop_end > self.uop_bgn) & (self.iter_out != 0) & (self.iter_in != 0)),
                u_last.eq(self.uop_bgn + 1 == self.uop_end),  # untoggled: uop-count-plus-one
                bgn_last.eq(self.uop_bgn + 1 == self.uop_end),  # untoggled: uop-count-plus-one
                in_last.eq(self.iter_in == 1), out_last.eq(self.iter_out == 1),
            ]
            for name, r in regs.items():
                m.d.sync += [r["off_out"].eq(0), r["off_in"].eq(0),
                             r["f_out"].eq(getattr(self, f"{name}_factor_out")),
                             r["f_in"].eq(getattr(self, f"{name}_factor_in"))]
        with m.Elif(self.valid & self.step):
            with m.If(~u_last):
                m.d.sync += [u.eq(u + 1), u_last.eq(u + 2 == end)]  # untoggled: uop-count-plus-one
            with m.Else():
                m.d.sync += [u.eq(bgn), u_last.eq(bgn_last)]
                with m.If(~in_last):
                    m.d.sync += [i_in.eq(i_in + 1), in_last.eq(i_in + 2 == n_in),  # untoggled: uop-count-plus-one
                                 self.first_in.eq(0)]  # untoggled: uop-count-plus-one
                    m.d.sync += [r["off_in"].eq(r["off_in"] + r["f_in"]) for r in regs.values()]
                with m.Else():
                    m.d.sync += [i_in.eq(0), in_last.eq(n_in == 1), self.first_in.eq(1)]
                    m.d.sync += [r["off_in"].eq(0) for r in regs.values()]
                    m.d.sync += [i_out.eq(i_out + 1), out_last.eq(i_out + 2 == n_out)]  # untoggled: uop-count-plus-one
                    m.d.sync += [r["off_out"].eq(r["off_out"] + r["f_out"]) for r in regs.values()]
                    with m.If(out_last):
                        m.d.sync += self.valid.eq(0)
        return m


class Gemm(wiring.Component):
    """The GEMM core (docs/architecture.md §2.7): for each micro-op of the loop nest,
    ``acc[d] = 0`` (reset) or ``acc[d] += inp[s] . wgt[w]^T`` (BATCH x BLOCK_IN times
    BLOCK_IN x BLOCK_OUT int8, int32 wrap-around).

    With ``DEPTHWISE`` = 1 it also runs DEPTHWISE instructions (docs/isa.md "DEPTHWISE"): the same loop
    nest and pipeline, but the multiplier of lane (b, j), column k takes channel j of window slot k (the inp
    row read k micro-ops earlier in this instruction, zero before its first) instead of channel k of
    ``inp[s]``, and C writes the lane's dot product instead of adding it to the acc row. The window is
    BLOCK_IN - 1 registers of one inp row each beside ``inp_q``; the rest of the core is shared.

    Pipeline, one micro-op per cycle (II = 1), no stalls. For FPGA timing every SRAM read lands in a
    register before any logic (a block RAM's clock-to-out is long), and every arithmetic
    result is registered:

    * S0 read the uop (address = the sequencer's register);
    * S1 register the uop row;
    * S2 add the loop offsets, register the inp/wgt/acc indices;
    * S3 address inp and wgt;
    * S4 register the inp and wgt rows;
    * S5 the operands of the BATCH*BLOCK_OUT*BLOCK_IN int8 products into registers, S6 the
      products (:func:`registered_mul`: on an ECP5 the input and output registers of a MULT18X18D);
    * T1..Tt the adder trees, two adder levels per stage (t = ceil(log2(BLOCK_IN) / 2): 2 for
      BLOCK_IN 8 or 16), into registers;
    * C = S(7+t) add the acc row (or 0 for a reset) and register the result;
    * W = C + 1 write acc from that register.

    The acc row of a micro-op is read three cycles before C (address at C-3), registered as it
    leaves the SRAM (C-2) and registered again at C-1, where the writes the read missed are merged
    in. The acc memory takes writes through a register and its read port is not transparent
    (hw/sram.py, :func:`~hw.sram.join_acc`): the row as read holds the writes presented up to two
    cycles before the read, and the four presented since (the micro-ops five to two ahead) replace
    it at C-1 when their rows match, the latest one winning; the write of the micro-op just ahead
    (in W while this one is in C) is forwarded (both sums are computed, the match selects). So
    there is no hazard at any distance and results are bit-exact even between consecutive
    micro-ops writing the same row.

    Pulse ``start`` with ``insn`` (GEMM layout) valid. Latency: the first acc write is
    :attr:`latency` (11 for BLOCK_IN 8 and 16) cycles after ``start``; N micro-ops finish with
    ``done`` (one cycle) N + ``latency`` cycles after ``start``. ``busy`` is high in between;
    ``uop_fire`` pulses for each non-reset micro-op written (the fsim ``gemm_counter``).

    Members: ``start`` In(1), ``insn`` In(gemm layout), ``busy`` Out(1), ``done`` Out(1),
    ``uop_fire`` Out(1), and driven memory ports ``uop_rd``, ``inp_rd``, ``wgt_rd``, ``acc_rd``
    (In(ReadPort.Signature)) and ``acc_wr`` (In(WritePort.Signature)).
    """

    def __init__(self, cfg: Config) -> None:
        check_config(cfg, self)
        self._cfg = cfg
        levels = (cfg.BLOCK_IN - 1).bit_length()
        self._tree_stages = (levels + 1) // 2
        #: cycles from ``start`` to the first acc write; ``done`` comes N + latency after ``start``
        self.latency = 9 + self._tree_stages
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

    def elaborate(self, platform: object) -> Module:
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
        dw = Signal()                    # this instruction is a DEPTHWISE
        with m.If(self.start):
            m.d.sync += [reset.eq(insn.reset), active.eq(1)]
            if cfg.DEPTHWISE:
                m.d.sync += dw.eq(insn.opcode == Opcode.DEPTHWISE)

        for port in (self.uop_rd, self.inp_rd, self.wgt_rd, self.acc_rd):
            m.d.comb += port.en.eq(1)

        nt = self._tree_stages
        C = 7 + nt          # the accumulate stage
        W = C + 1           # the acc write stage
        R = C - 3           # the acc read stage
        aw = cfg.LOG_ACC_DEPTH
        # (valid and dst run two stages past W: the merge of missed writes looks at W+1 and W+2)
        valid = {k: Signal(name=f"s{k}_valid") for k in range(1, W + 3)}
        last = {k: Signal(name=f"s{k}_last") for k in range(1, W + 1)}
        dst = {k: Signal(aw, name=f"s{k}_d") for k in range(3, W + 3)}
        for k in range(2, W + 3):
            m.d.sync += valid[k].eq(valid[k - 1])
        for k in range(2, W + 1):
            m.d.sync += last[k].eq(last[k - 1])
        for k in range(4, W + 3):
            m.d.sync += dst[k].eq(dst[k - 1])

        # S0: read the uop; the loop offsets go along
        m.d.comb += self.uop_rd.addr.eq(seq.uop)
        o1_d, o1_s, o1_w = Signal.like(seq.dst), Signal.like(seq.src), Signal.like(seq.wgt)
        m.d.sync += [valid[1].eq(seq.valid), last[1].eq(seq.last),
                     o1_d.eq(seq.dst), o1_s.eq(seq.src), o1_w.eq(seq.wgt)]
        # S1: register the uop row
        uop_q = Signal(len(self.uop_rd.data), reset_less=True)
        o2_d, o2_s, o2_w = Signal.like(o1_d), Signal.like(o1_s), Signal.like(o1_w)
        m.d.sync += [uop_q.eq(self.uop_rd.data), o2_d.eq(o1_d), o2_s.eq(o1_s), o2_w.eq(o1_w)]
        # S2: add the offsets into the index registers
        uop = uop_layout(cfg)(uop_q)
        s3_s = Signal(cfg.LOG_INP_DEPTH)
        s3_w = Signal(cfg.LOG_WGT_DEPTH)
        m.d.sync += [s3_s.eq(uop.src_idx + o2_s), s3_w.eq(uop.wgt_idx + o2_w), dst[3].eq(uop.dst_idx + o2_d)]
        # S3: address inp and wgt
        m.d.comb += [self.inp_rd.addr.eq(s3_s), self.wgt_rd.addr.eq(s3_w)]
        # S4: register the inp and wgt rows
        inp_q = Signal(len(self.inp_rd.data), reset_less=True)
        wgt_q = Signal(len(self.wgt_rd.data), reset_less=True)
        m.d.sync += [inp_q.eq(self.inp_rd.data), wgt_q.eq(self.wgt_rd.data)]
        # S5, S6: the operands and then the products into registers (on an ECP5: the input and
        # output registers of the MULT18X18D, so no route leads into or out of a multiplier
        # combinationally)
        bi, bo = cfg.BLOCK_IN, cfg.BLOCK_OUT
        # DEPTHWISE: the window of the inp rows this instruction read, slot k = the row read k micro-ops before
        # the one in S5 (slot 0 is inp_q itself); cleared at start, shifted as each micro-op leaves S5
        window = [inp_q]
        if cfg.DEPTHWISE:
            window += [Signal(len(inp_q), name=f"dw_slot{k}", reset_less=True) for k in range(1, bi)]
            with m.If(self.start):
                m.d.sync += [w.eq(0) for w in window[1:]]
            with m.Elif(dw & valid[5]):
                m.d.sync += [window[k].eq(window[k - 1]) for k in range(1, bi)]
        rows = []
        for b in range(cfg.BATCH):
            for oc in range(bo):
                row = []
                for k in range(bi):
                    a = inp_q.word_select(b * bi + k, cfg.INP_WIDTH)
                    if cfg.DEPTHWISE:    # lane oc multiplies its own channel of slot k by its tap k
                        a = Mux(dw, window[k].word_select(b * bi + oc, cfg.INP_WIDTH), a)
                    row.append(registered_mul(m, platform, a, wgt_q.word_select(oc * bi + k, cfg.WGT_WIDTH),
                                              f"prod_{b}_{oc}_{k}"))
                rows.append(row)
        # T1..Tt: adder trees, two levels per stage, into registers
        for t in range(nt):
            nxt = []
            for i, row in enumerate(rows):
                terms = row
                for _ in range(2):
                    if len(terms) > 1:
                        terms = [terms[j] + terms[j + 1] for j in range(0, len(terms) - 1, 2)] + \
                                ([terms[-1]] if len(terms) % 2 else [])
                regs = []
                for j, term in enumerate(terms):
                    r = Signal(term.shape(), name=f"sum{t + 1}_{i // bo}_{i % bo}_{j}", reset_less=True)
                    m.d.sync += r.eq(term)
                    regs.append(r)
                nxt.append(regs)
            rows = nxt
        dots = [row[0] for row in rows]
        assert all(len(row) == 1 for row in rows)

        # the acc row: read at R, registered raw at R+1 = C-2, merged with the missed writes at C-1.
        # A write reaches the SRAM a cycle after the unit presents it (the owner's write register)
        # and the read is not transparent, so the raw row holds the writes presented up to R-2; the
        # four presented at R-1 .. C-1 are the last four values of ``wr_q`` (``hist``).
        acc_w = len(self.acc_wr.data)
        lanes = len(dots)
        m.d.comb += self.acc_rd.addr.eq(dst[R])
        raw_q = Signal(acc_w, reset_less=True)
        row_q = Signal(acc_w, reset_less=True)
        wr_q = Signal(acc_w, reset_less=True)       # the result of C, written in W
        # (a copy of it for the forwarding into C, so the placer can keep the loop C -> C tight
        # while wr_q itself goes towards the acc banks)
        wr_f = Signal(acc_w, name="gemm_wr_fwd_copy", reset_less=True)
        hist = merge_history(m, wr_q, 3, "gemm_wr")  # [wr_q, presented 1, 2, 3 cycles before]
        m.d.sync += raw_q.eq(self.acc_rd.data)
        # which of those writes (the latest one) has the row: compared at C-3 with the micro-ops then
        # in C-1, C, W, W+1 (a cycle later in C, W, W+1, W+2: they present their writes at C-1 ..
        # C-4 of this one), selecting at C-1, one copy per lane (fan-out)
        sel = merge_select(m, "gemm_merge", lanes, dst[C - 3],
                           [(valid[k - 1], dst[k - 1]) for k in (C, W, W + 1, W + 2)])
        m.d.sync += row_q.eq(merge_rows(sel, [*hist, raw_q], lanes))
        # C: accumulate into the write register. The micro-op just ahead (now in W) may have written
        # the row: both sums are computed and the match selects at the end (its fan-out in parallel).
        # (compared a stage earlier and copied to the lanes through a register tree: fan-out, timing)
        hit_w = fan_out(m, valid[C - 1] & (dst[C - 1] == dst[C - 2]), lanes, "hit_w")
        aw_ = cfg.ACC_WIDTH
        from_w = [(wr_f.word_select(i, aw_).as_signed() + dots[i])[:aw_] for i in range(lanes)]
        from_row = [(row_q.word_select(i, aw_).as_signed() + dots[i])[:aw_] for i in range(lanes)]
        if cfg.DEPTHWISE:        # DEPTHWISE writes the dot product itself (sign-extended), not a sum
            dw_c = fan_out(m, dw, lanes, "dw")
            for i in range(lanes):
                alone = Signal(signed(aw_), name=f"dw_dot{i}")
                m.d.comb += alone.eq(dots[i])
                from_row[i] = Mux(dw_c[i], alone.as_unsigned(), from_row[i])
                from_w[i] = Mux(dw_c[i], alone.as_unsigned(), from_w[i])
        with m.If(reset):
            m.d.sync += [wr_q.eq(0), wr_f.eq(0)]
        with m.Else():
            result = Cat(*(Mux(hit_w[i], from_w[i], from_row[i]) for i in range(lanes)))
            m.d.sync += [wr_q.eq(result), wr_f.eq(result)]
        # W: write acc
        m.d.comb += [
            self.acc_wr.en.eq(valid[W]),
            self.acc_wr.addr.eq(dst[W]),
            self.acc_wr.data.eq(wr_q),
            self.uop_fire.eq(valid[W] & ~reset),
        ]
        m.d.sync += self.done.eq(0)
        with m.If(valid[W] & last[W]):
            m.d.sync += [self.done.eq(1), active.eq(0)]
        # an empty loop nest: done right away
        with m.If(self.start & ((insn.uop_end <= insn.uop_bgn) | (insn.iter_out == 0) | (insn.iter_in == 0))):
            m.d.sync += [self.done.eq(1), active.eq(0)]
        m.d.comb += self.busy.eq(active)
        return m
