"""Micro-kernels (memoised closures, recorded once by the runtime's JIT cache) and the typed actions that queue them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from sw import runtime as rt
from sw.isa import POST_PARAM_ROWS, AluOp, MemId
from sw.ops.base import _f, config

ALU_INSN_CYCLES = 32
"""The planner's cost, in cycles, of an ALU instruction beyond its rows."""

POST_PIPELINE_CYCLES = 22
"""The cycles a POST instruction takes beyond its parameter rows and its rows: filling and draining the
post-processing unit's pipeline."""

POST_INSN_CYCLES = POST_PARAM_ROWS + POST_PIPELINE_CYCLES
"""The planner's cost, in cycles, of a POST instruction beyond its rows: reading its parameter rows
(:data:`~sw.isa.POST_PARAM_ROWS`, one a cycle) and the unit's pipeline (N + POST_INSN_CYCLES cycles for N rows,
2 N + POST_INSN_CYCLES with the residual)."""


# ---------------------------------------------------------------------- actions
@dataclass(frozen=True)
class Load:
    """A ``load_2d``: ``y_size`` rows of ``x_size`` elements, ``x_stride`` apart, from element ``offset``
    of buffer ``dram`` to SRAM row ``sram`` of memory ``mem`` (INP/WGT in a step, ACC in compute), with
    the zero padding the LOAD inserts around them."""
    dram: int
    offset: int
    x_size: int
    y_size: int
    x_stride: int
    sram: int
    mem: int
    x_pad_before: int = 0
    y_pad_before: int = 0
    x_pad_after: int = 0
    y_pad_after: int = 0
    insns = 1                   # the most instructions it appends

    def emit(self, cmd: int) -> None:
        rt.load_2d(cmd, self.dram, self.offset, self.x_size, self.y_size, self.x_stride, self.x_pad_before,
                   self.y_pad_before, self.x_pad_after, self.y_pad_after, self.sram, self.mem)


@dataclass(frozen=True)
class Gemm:
    """A GEMM instruction of a micro-kernel (plus the LOAD UOP that makes it resident)."""
    kernel: Callable[[], None]
    key: int = 0
    insns = 2

    def emit(self, cmd: int) -> None:
        rt.push_gemm_op(cmd, self.kernel, self.key)


@dataclass(frozen=True)
class Depthwise:
    """A DEPTHWISE instruction of a micro-kernel (plus the LOAD UOP that makes it resident)."""
    kernel: Callable[[], None]
    key: int = 0
    insns = 2

    def emit(self, cmd: int) -> None:
        rt.push_depthwise_op(cmd, self.kernel, self.key)


@dataclass(frozen=True)
class Alu:
    """An ALU instruction of a micro-kernel; ``passes``: cycles per micro-op (2 with a tensor operand);
    ``reads_residual``: it reads an epilogue's residual rows (which must be loaded before it is queued);
    ``uops``: its micro-op executions (None: one per row of its tile); ``post``: a POST instruction (the
    post-processing unit's, :mod:`sw.ops.post`), which costs POST_INSN_CYCLES more."""
    kernel: Callable[[], None]
    key: int = 0
    passes: int = 1
    reads_residual: bool = False
    uops: int | None = None
    post: bool = False
    insns = 2

    def emit(self, cmd: int) -> None:
        rt.push_alu_op(cmd, self.kernel, self.key)

    def cycles(self, rows: int) -> int:
        """The planner's cycles of the instruction on a tile of ``rows`` rows (``passes`` per micro-op, and a POST
        instruction's fixed cost)."""
        return self.passes * (rows if self.uops is None else self.uops) + (POST_INSN_CYCLES if self.post else 0)


@dataclass(frozen=True)
class Store:
    """A ``store_2d`` of a tile's result: ``y_size`` rows of ``x_size`` elements from OUT/acc row
    ``sram`` to element ``offset`` of buffer ``dram``, rows ``x_stride`` apart."""
    sram: int
    dram: int
    offset: int
    x_size: int
    y_size: int
    x_stride: int

    def emit(self, cmd: int) -> None:
        rt.store_2d(cmd, self.sram, int(MemId.OUT), self.dram, self.offset, self.x_size, self.y_size, self.x_stride)


@cache
def _k_reset(base: int, rows: int):
    """GEMM reset of acc rows [base, base + rows)."""
    def kernel():
        rt.uop_loop_begin(rows, _f(rows, 1), 0, 0)
        rt.uop_push(0, 1, base, 0, 0, 0, 0, 0)
        rt.uop_loop_end()
    return kernel


@cache
def _k_alu(opcode: int, use_imm: int, imm: int, dst: int, src: int, loops: tuple):
    """One ALU micro-op under up to two loops ((extent, dst_factor, src_factor), outer first)."""
    def kernel():
        for e, df, sf in loops:
            rt.uop_loop_begin(e, _f(e, df), _f(e, sf), 0)
        rt.uop_push(1, 0, dst, src, 0, int(opcode), use_imm, imm)
        for _ in loops:
            rt.uop_loop_end()
    return kernel


def _alu_rows(opcode, imm, base, rows):
    """An immediate ALU op over acc rows [base, base + rows)."""
    return Alu(_k_alu(int(opcode), 1, int(imm), base, base, ((rows, 1, 1),)))


def _alu_tensor(dst, src, loops, op=AluOp.ADD, **kw):
    """A tensor ALU operation: acc[dst] = op(acc[dst], acc[src]) under ``loops`` (``kw``: more :class:`Alu`
    fields). Two cycles per micro-op (SHR three), or one where the inner loop keeps the source row (a per-channel
    vector over its channel block's rows: the ALU reads it once per inner iteration when the compute
    module finds the source rows apart from the destination rows)."""
    e, _, sf = loops[-1]
    return Alu(_k_alu(int(op), 0, 0, dst, src, loops), passes=1 if (sf == 0 and e > 1) else 3 if op == AluOp.SHR else 2,
               **kw)


def _zero_rows(base, rows):
    """ALU ops that zero acc rows [base, base + rows): MUL by 0, or (without MUL) x >> 31 in {0, -1},
    then max with 0."""
    if config().ALU_MUL:
        return [_alu_rows(AluOp.MUL, 0, base, rows)]
    return [_alu_rows(AluOp.SHR, 31, base, rows), _alu_rows(AluOp.MAX, 0, base, rows)]


@cache
def _k_dense(acc: int, inp: int, wgt: int, tn: int, tk: int, tm: int):
    """acc[n*tm + j] += inp[n*tk + k] . wgt[j*tk + k]: loops k (outer), n (inner); uops j.

    Consecutive executions write the rows n*tm + j in a cycle of tn*tm >= 3 distinct rows, so no
    micro-op writes a row written by one of the two before it.
    """
    def kernel():
        rt.uop_loop_begin(tk, 0, _f(tk, 1), _f(tk, 1))
        rt.uop_loop_begin(tn, _f(tn, tm), _f(tn, tk), 0)
        for j in range(tm):
            rt.uop_push(0, 0, acc + j, inp, wgt + j * tk, 0, 0, 0)
        rt.uop_loop_end()
        rt.uop_loop_end()
    return kernel


@cache
def _conv_variant(tm, th, tw, tc, kh, kw):
    """(variant, uops) of the conv kernel with the fewest micro-ops that obeys the hazard rule.

    Every variant makes consecutive micro-op executions write a cycle of at least three distinct acc
    rows (or move to new rows at a loop step), so no micro-op writes a row that one of the two before
    it wrote, across loop iterations too:
      A: loops (c, oh), uops (ky, kx, ow, j)  - needs tw*tm >= 3
      B: loops (c, ky), uops (kx, oh, ow, j)  - needs th*tw*tm >= 3
      C: loops (oh, ow), uops (c, ky, kx, j)  - needs tm >= 3; size independent of the spatial tile
    """
    options = []
    if tw * tm >= 3:
        options.append((kh * kw * tw * tm, "A"))
    if th * tw * tm >= 3:
        options.append((kw * th * tw * tm, "B"))
    if tm >= 3:
        options.append((tc * kh * kw * tm, "C"))
    if not options:
        return None, None
    uops, v = min(options)
    return v, uops


@cache
def _k_conv(acc, inp, wgt, tm, th, tw, tc, kh, kw, s, ih, iw, sh=None):
    """acc[j, oh, ow] += inp[c, oh*sh + ky, ow*s + kx] . wgt[j, c, ky, kx] over c, ky, kx.

    SRAM layouts: acc (tm, th, tw), inp (tc, ih, iw), wgt (tm, tc, kh, kw); see :func:`_conv_variant`
    for the loop orders. ``sh`` (default ``s``) is the row step in the inp tile: 1 when the LOAD
    already skipped the rows a strided 1x1 kernel does not read.
    """
    sh = s if sh is None else sh
    variant, _ = _conv_variant(tm, th, tw, tc, kh, kw)
    kk = kh * kw

    def kernel():
        if variant == "A":
            rt.uop_loop_begin(tc, 0, _f(tc, ih * iw), _f(tc, kk))
            rt.uop_loop_begin(th, _f(th, tw), _f(th, sh * iw), 0)
            for ky in range(kh):
                for kx in range(kw):
                    for ow in range(tw):
                        for j in range(tm):
                            rt.uop_push(0, 0, acc + j * th * tw + ow, inp + ky * iw + ow * s + kx,
                                        wgt + j * tc * kk + ky * kw + kx, 0, 0, 0)
        elif variant == "B":
            rt.uop_loop_begin(tc, 0, _f(tc, ih * iw), _f(tc, kk))
            rt.uop_loop_begin(kh, 0, _f(kh, iw), _f(kh, kw))
            for kx in range(kw):
                for oh in range(th):
                    for ow in range(tw):
                        for j in range(tm):
                            rt.uop_push(0, 0, acc + j * th * tw + oh * tw + ow, inp + oh * sh * iw + ow * s + kx,
                                        wgt + j * tc * kk + kx, 0, 0, 0)
        else:
            rt.uop_loop_begin(th, _f(th, tw), _f(th, sh * iw), 0)
            rt.uop_loop_begin(tw, _f(tw, 1), _f(tw, s), 0)
            for c in range(tc):
                for ky in range(kh):
                    for kx in range(kw):
                        for j in range(tm):
                            rt.uop_push(0, 0, acc + j * th * tw, inp + c * ih * iw + ky * iw + kx,
                                        wgt + (j * tc + c) * kk + ky * kw + kx, 0, 0, 0)
        rt.uop_loop_end()
        rt.uop_loop_end()
    return kernel


