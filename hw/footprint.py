"""The acc footprint of a GEMM or ALU instruction: which accumulator rows it can touch.

The compute module runs a GEMM and an ALU instruction at the same time when their footprints lie
in different halves (banks) of the accumulator; this block computes a footprint before issue.
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from sw.config import Config
from sw.isa import POST_PARAM_ROWS, AluOp, Opcode

from .gemm import registered_mul
from .layouts import insn_layouts, uop_layout
from .sram import check_config, read_signature

__all__ = ["AccFootprint"]


class AccFootprint(wiring.Component):
    """Scans the micro-ops of one GEMM or ALU instruction and bounds the acc rows it touches.

    Row index e of a micro-op u in loop iteration (i, j) is ``uop_e[u] + i*f_out + j*f_in``, taken
    modulo the acc depth D by the hardware. With ``lo = min_u uop_e[u]`` and
    ``hi = max_u uop_e[u] + (iter_out-1)*f_out + (iter_in-1)*f_in`` (exact, not wrapped), every row
    touched lies in [lo, hi] when hi < D. e is the destination (GEMM, ALU) and, for an ALU
    instruction with a tensor operand, also the source; GEMM's source indexes the inp SRAM and
    does not count.

    Pulse ``start`` with ``insn`` (the 128-bit instruction word) valid; the micro-ops are read one
    per cycle through ``uop_rd`` and ``done`` is high from about ``uop_end - uop_bgn + 4`` cycles
    later until the next ``start``. Then:

    * ``empty``: the loop nest is empty (touches nothing);
    * ``single``: the nest is not empty, hi < D and lo, hi share the bank bit (the top bit of the
      row index): every row touched lies in that bank, ``bank``. (An empty nest is not ``single``:
      the compute module then runs it alone, which costs nothing.)
    * ``lo``, ``hi``: the bounds (for tests and debugging);
    * ``apart``: an ALU instruction with a tensor operand whose source rows and destination rows
      (each bounded as above, both below D) cannot meet: no micro-op writes a row another reads as
      acc[s], so the ALU may read a repeated source row once (:class:`~hw.alu.Alu`, ``src_apart``).
    * ``increasing``: a one-micro-op kernel whose destination strictly increases over the loops and stays
      below D (``iter_in`` <= 1 or ``f_in`` >= 1, and ``iter_out`` <= 1 or ``f_out`` > (iter_in-1)*f_in):
      no row is written twice, so a POST's micro-ops may follow each other through its long pipeline.
    * For a POST (ALU opcode POST), its parameter rows [imm, imm + POST_PARAM_ROWS) count as rows it touches.
    * ``distinct``: no micro-op of the nest writes the row (modulo D) the micro-op just before it wrote:
      consecutive micro-ops of the kernel, the last and the first of consecutive inner iterations
      (``uop_e[last] != uop_e[first] + f_in``) and of consecutive outer ones (``uop_e[last] +
      (iter_in-1)*f_in != uop_e[first] + f_out``). Then the ALU runs an immediate's micro-ops one per
      cycle with no write to forward from one to the next (:class:`~hw.alu.Alu`, ``dst_distinct``).

    With one bank (acc depth 1) ``single`` is never high.

    Members: ``start`` In(1), ``insn`` In(128), ``uop_rd`` In(ReadPort.Signature) (driven),
    ``done``, ``empty``, ``single``, ``bank``, ``apart``, ``distinct`` Out(1), ``lo``, ``hi`` Out(32).
    """

    def __init__(self, cfg: Config) -> None:
        check_config(cfg, self)
        self._cfg = cfg
        super().__init__({
            "start": In(1),
            "insn": In(128),
            "uop_rd": In(read_signature(cfg, "uop")),
            "done": Out(1),
            "empty": Out(1),
            "single": Out(1),
            "bank": Out(1),
            "apart": Out(1),
            "distinct": Out(1),
            "increasing": Out(1),
            "lo": Out(32),
            "hi": Out(32),
        })

    def elaborate(self, platform: object) -> Module:
        m = Module()
        cfg = self._cfg
        aw = cfg.LOG_ACC_DEPTH
        layouts = insn_layouts(cfg)
        gem = layouts["gemm"](self.insn)
        alu = layouts["alu"](self.insn)
        uw = cfg.LOG_UOP_DEPTH + 1

        def span(n, f, name):
            """(n - 1) * f (0 for n = 0), three cycles after its inputs: the operands into registers
            here, then :func:`~hw.gemm.registered_mul` (a multiplier block may sit far away)."""
            n1, fq = Signal(len(n), name=f"{name}_n", reset_less=True), Signal(len(f), name=f"{name}_f", reset_less=True)
            m.d.sync += [n1.eq(Mux(n == 0, 0, n - 1)), fq.eq(f)]  # untoggled: count-minus-one
            return registered_mul(m, platform, n1, fq, name, signed_operands=False)

        # the loop spans, always computed from ``insn`` (stable from ``start`` until the next one):
        # registered products (on an ECP5 in MULT18X18D registers), then their sums, ready four
        # cycles after ``start`` (``age``), before the bounds need them
        off_d, off_s = Signal(32, reset_less=True), Signal(32, reset_less=True)  # untoggled: loop-span
        span_d1 = span(gem.iter_in, gem.dst_factor_in, "span_d1")
        m.d.sync += [
            off_d.eq(span(gem.iter_out, gem.dst_factor_out, "span_d0") + span_d1),  # untoggled: loop-span
            off_s.eq(span(alu.iter_out, alu.src_factor_out, "span_s0") + span(alu.iter_in, alu.src_factor_in, "span_s1")),
        ]
        age = Signal(3)                 # cycles since start, up to 4

        u, end = Signal(uw), Signal(uw)
        tensor = Signal()                  # an ALU instruction with a tensor (acc) operand
        post = Signal()                    # a POST: its parameter rows count too
        single_uop = Signal()
        min_d, max_d = Signal(32), Signal(32)
        min_s, max_s = Signal(32), Signal(32)
        reading, rd_valid, summing = Signal(), Signal(), Signal()
        row_valid = Signal()
        # ``distinct``: the first and the latest micro-op's destination (modulo D), a repeat seen so far
        first_d, prev_d = Signal(aw, reset_less=True), Signal(aw, reset_less=True)
        seen, repeat = Signal(), Signal()
        row = Signal.like(self.uop_rd.data, reset_less=True)         # the micro-op row, registered as it leaves the SRAM
        m.d.comb += [self.uop_rd.en.eq(1), self.uop_rd.addr.eq(u)]
        m.d.sync += row.eq(self.uop_rd.data)
        uop = uop_layout(cfg)(row)

        with m.If(self.start):
            is_alu = gem.opcode == Opcode.ALU
            m.d.sync += [
                u.eq(gem.uop_bgn), end.eq(gem.uop_end),
                tensor.eq(is_alu & ~alu.use_imm),
                post.eq(is_alu & (alu.alu_opcode == AluOp.POST) if cfg.POST_UNIT else 0),
                single_uop.eq(gem.uop_end == gem.uop_bgn + 1),  # untoggled: uop-count-plus-one
                self.empty.eq((gem.uop_end <= gem.uop_bgn) | (gem.iter_out == 0) | (gem.iter_in == 0)),
                min_d.eq(~0), max_d.eq(0), min_s.eq(~0), max_s.eq(0), seen.eq(0), repeat.eq(0),
                reading.eq(1), rd_valid.eq(0), row_valid.eq(0), summing.eq(0), self.done.eq(0), age.eq(0),
            ]
        with m.Else():
            # S0: address the micro-op; S1: register its row; S2: its fields update the running bounds
            m.d.sync += [rd_valid.eq(reading & (u < end)), row_valid.eq(rd_valid)]
            with m.If(reading):
                with m.If(u < end):
                    m.d.sync += u.eq(u + 1)  # untoggled: uop-count-plus-one
                with m.Else():
                    m.d.sync += reading.eq(0)
            with m.If(row_valid):
                m.d.sync += [
                    min_d.eq(Mux(uop.dst_idx < min_d, uop.dst_idx, min_d)),  # untoggled: uop-index-bounds
                    max_d.eq(Mux(uop.dst_idx > max_d, uop.dst_idx, max_d)),  # untoggled: uop-index-bounds
                    min_s.eq(Mux(uop.src_idx < min_s, uop.src_idx, min_s)),  # untoggled: uop-index-bounds
                    max_s.eq(Mux(uop.src_idx > max_s, uop.src_idx, max_s)),  # untoggled: uop-index-bounds
                    prev_d.eq(uop.dst_idx), seen.eq(1),
                ]
                with m.If(~seen):
                    m.d.sync += first_d.eq(uop.dst_idx)
                with m.If(seen & (uop.dst_idx[:aw] == prev_d)):
                    m.d.sync += repeat.eq(1)
            # S3: the bounds, once the last micro-op is in
            m.d.sync += summing.eq(0)
            with m.If(age != 4):
                m.d.sync += age.eq(age + 1)  # untoggled: age
            with m.If(~reading & ~rd_valid & ~row_valid & ~summing & ~self.done & (age == 4)):
                hi_d = max_d + off_d
                hi_s = max_s + off_s
                lo = Mux(tensor & (min_s < min_d), min_s, min_d)
                hi = Mux(tensor & (hi_s > hi_d), hi_s, hi_d)
                p_lo = alu.imm.as_unsigned()
                p_hi = p_lo + (POST_PARAM_ROWS - 1)
                m.d.sync += [
                    self.lo.eq(Mux(post & (p_lo < lo), p_lo, lo)),
                    self.hi.eq(Mux(post & (p_hi > hi), p_hi, hi)),
                    self.increasing.eq(single_uop & ~self.empty & (hi_d < (1 << aw))
                                       & ((gem.iter_in <= 1) | (gem.dst_factor_in != 0))
                                       & ((gem.iter_out <= 1) | (gem.dst_factor_out > span_d1))),
                    self.apart.eq(tensor & ~self.empty & (hi_d < (1 << aw)) & (hi_s < (1 << aw))
                                  & ((hi_s < min_d) | (min_s > hi_d))),
                    self.distinct.eq(~repeat
                                     & ((gem.iter_in <= 1) | ((prev_d - first_d - gem.dst_factor_in)[:aw] != 0))
                                     & ((gem.iter_out <= 1)
                                        | ((prev_d + span_d1 - first_d - gem.dst_factor_out)[:aw] != 0))),
                    summing.eq(1),
                ]
            # S4: the bank, into registers with done
            with m.If(summing):
                m.d.sync += self.done.eq(1)
                if aw >= 1:
                    lo_bank = self.lo[aw - 1]
                    hi_bank = self.hi[aw - 1]
                    m.d.sync += [
                        self.single.eq(~self.empty & (self.hi < (1 << aw)) & (lo_bank == hi_bank)),
                        self.bank.eq(lo_bank),
                    ]
        return m
