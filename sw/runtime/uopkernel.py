"""Recording a micro-kernel: the kernel being recorded by a thread and the three functions that record it.

A kernel passed to ``push_gemm_op`` / ``push_alu_op`` is a callable that, when the runtime records it
(once per (callable, key)), calls :func:`uop_loop_begin` (at most twice), then :func:`uop_push` for
each micro-op, then :func:`uop_loop_end` once per loop. Each thread records its own kernels.
"""

from __future__ import annotations

import threading

from sw.config import Config
from sw.isa import ISA, AluOp, EncodeError, alu_opcode_error, alu_operand_text, isa_for
from sw.pipeline import InsnError, VTAError, check_int

__all__ = ["UopKernel", "RECORDING", "recording", "naturals", "uop_loop_begin", "uop_loop_end", "uop_push"]

RECORDING = threading.local()      # per thread: .kernel, the micro-kernel being recorded (None when none is)


class UopKernel:
    """A recorded micro-kernel: its micro-ops, up to two loops, and its mode and ALU operation."""

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.uops: list[tuple[int, int, int]] = []
        self.loops: list[tuple[int, int, int, int]] = []
        self.mode: int | None = None          # 0 GEMM, 1 ALU
        self.reset = 0
        self.alu_opcode = 0
        self.use_imm = 0
        self.imm = 0
        self.open_loops = 0       # uop_loop_begin calls not yet closed by uop_loop_end
        # where its encoded micro-ops live in device memory (ignore: set when they are written, before any LOAD)
        self.dram_addr: int = None  # type: ignore[assignment]
        self.chunk: int = None  # type: ignore[assignment]  # the handle of the staging buffer that holds them
        self.sram_begin: int | None = None    # its range in the uop SRAM while resident
        self.checked_op: dict | None = None    # its instruction's fields once checked (sw.runtime push_op)

    @property
    def sram_end(self) -> int | None:
        """One past the kernel's last row in the uop SRAM while it is resident, else None."""
        return None if self.sram_begin is None else self.sram_begin + len(self.uops)

    def loop_fields(self) -> dict:
        """Instruction loop fields (docs/architecture.md §5.5: GEMM puts a single loop outside, ALU inside)."""
        loops = [(1, 0, 0, 0), (1, 0, 0, 0)]
        if len(self.loops) == 2:
            loops = list(self.loops)
        elif len(self.loops) == 1:
            loops[0 if self.mode == 0 else 1] = self.loops[0]
        (eo, do, so, wo), (ei, di, si, wi) = loops
        f = dict(iter_out=eo, iter_in=ei, dst_factor_out=do, dst_factor_in=di,
                 src_factor_out=so, src_factor_in=si)
        if self.mode == 0:
            f.update(wgt_factor_out=wo, wgt_factor_in=wi)
        return f

    def dump(self, isa: ISA) -> str:
        """The kernel as text: mode, loops, and each micro-op disassembled (``DEBUG_DUMP_UOP``)."""
        mode = "GEMM" if self.mode == 0 else f"ALU {AluOp(self.alu_opcode).name}"
        head = f"kernel {mode}{' reset' if self.reset else ''}"
        if self.mode == 1:
            head += " " + alu_operand_text(self.alu_opcode, self.use_imm, self.imm)
        lines = [head + " loops=" + ", ".join(f"(extent={e}, dst={d}, src={s}, wgt={w})" for e, d, s, w in self.loops)]
        for i, (d, s, w) in enumerate(self.uops):
            lines.append(f"  uop {i:4d}: " + isa.disasm_uop(isa.encode_uop(d, s, w), "gemm" if self.mode == 0 else "alu"))
        return "\n".join(lines)


def recording(what: str) -> UopKernel:
    """The kernel the calling thread is recording, or ``VTAError`` saying ``what`` must be called from a kernel."""
    k = getattr(RECORDING, "kernel", None)
    if k is None:
        raise VTAError(f"{what}: no micro-kernel is being recorded; call it from the kernel passed to "
                       f"push_gemm_op or push_alu_op")
    return k


def naturals(what: str, bounds: dict[str, int], **args: int) -> dict[str, int]:
    """Each named argument as an int in [0, ``bounds[name]``], or an InsnError naming it and that range."""
    for name, v in args.items():        # (the common case, plain ints in range, without a call per argument)
        if type(v) is not int or not 0 <= v <= bounds[name]:
            return {name: check_int(what, name, v, 0, bounds[name], InsnError) for name, v in args.items()}
    return args


def uop_loop_begin(extent: int, dst_factor: int, src_factor: int, wgt_factor: int) -> None:
    """Open a loop around the kernel's micro-ops (loops nest: begin, begin, micro-ops, end, end).

    ``extent``: iterations, in [1, the instruction's loop field maximum]; ``dst_factor``,
    ``src_factor``, ``wgt_factor``: non-negative SRAM row steps added to the micro-ops' indices per
    iteration. At most two loops, all opened before the first :func:`uop_push`. Raises
    :class:`sw.pipeline.InsnError` for a value out of range and ``VTAError`` for a broken nesting rule."""
    k = recording("uop_loop_begin")
    if k.uops:
        raise VTAError("uop_loop_begin: loops must begin before the first uop_push of a kernel")
    if len(k.loops) > k.open_loops:
        raise VTAError("uop_loop_begin: called after uop_loop_end; a kernel's loops nest around all of its "
                       "micro-ops (uop_loop_begin calls, then the uop_push calls, then one uop_loop_end per loop)")
    if len(k.loops) >= 2:
        raise VTAError("uop_loop_begin: a kernel has at most 2 loops (allowed range [0, 2])")
    extent = check_int("uop_loop_begin", "extent", extent, 1, isa_for(k.cfg).gemm["iter_out"].hi, InsnError)
    g = isa_for(k.cfg).gemm
    factors = naturals("uop_loop_begin", {n: g[f"{n}_out"].hi for n in ("dst_factor", "src_factor", "wgt_factor")},
                       dst_factor=dst_factor, src_factor=src_factor, wgt_factor=wgt_factor)
    k.loops.append((extent, factors["dst_factor"], factors["src_factor"], factors["wgt_factor"]))
    k.open_loops += 1


def uop_loop_end() -> None:
    """Close the innermost open loop of the kernel being recorded."""
    k = recording("uop_loop_end")
    if not k.open_loops:
        raise VTAError(f"uop_loop_end: no loop is open (the kernel opened {len(k.loops)} and closed them all); "
                       f"each uop_loop_end closes one uop_loop_begin")
    k.open_loops -= 1


def uop_push(mode: int, reset_out: int, dst_index: int, src_index: int, wgt_index: int, opcode: int, use_imm: int,
             imm_val: int) -> None:
    """Record one micro-op of the kernel being recorded (call it from a kernel passed to ``push_*_op``).

    ``mode``: 0 GEMM, 1 ALU; ``reset_out`` 1 zeroes the acc rows instead of computing (GEMM).
    Indices are SRAM rows before the loops add their factors: ``dst_index`` an acc row,
    ``src_index`` an inp row (GEMM) or an acc row (ALU), ``wgt_index`` a wgt row (GEMM; 0 for ALU);
    each must fit the micro-op's fields and, with the loops, the SRAM depths (checked at push).
    ALU only: ``opcode`` an :class:`sw.isa.AluOp` the config builds (MIN 0, MAX 1, ADD 2, SHR 3,
    MUL 4 with ALU_MUL, POST 5 with POST_UNIT), ``use_imm`` 0 or 1 and ``imm_val`` a signed value of the
    ALU immediate field (for POST the first of its 14 parameter rows, checked at push; ``use_imm`` 0 adds
    the residual ``acc[src_index]``). All micro-ops of a kernel share ``mode`` and ``reset_out``, and ALU ones ``opcode``,
    ``use_imm`` and ``imm_val``. Raises :class:`sw.pipeline.InsnError` naming the argument and its
    range, or ``VTAError`` when no kernel is being recorded or the kernel's rules are broken."""
    k = recording("uop_push")
    if len(k.loops) > k.open_loops:
        raise VTAError("uop_push: called after uop_loop_end closed a loop of this kernel; every micro-op of a "
                       "kernel runs under all of its loops, so push them all before the first uop_loop_end")
    imm_field = isa_for(k.cfg).alu["imm"]
    uop = isa_for(k.cfg).uop
    n = naturals("uop_push", {"mode": 1, "dst_index": uop["dst_idx"].hi, "src_index": uop["src_idx"].hi,
                              "wgt_index": uop["wgt_idx"].hi, "opcode": isa_for(k.cfg).alu["alu_opcode"].hi},
                 mode=mode, dst_index=dst_index, src_index=src_index, wgt_index=wgt_index, opcode=opcode)
    mode, dst_index, src_index, wgt_index, opcode = n.values()
    reset_out = check_int("uop_push", "reset_out", reset_out, 0, 1, InsnError)
    use_imm = check_int("uop_push", "use_imm", use_imm, 0, 1, InsnError)
    imm_val = check_int("uop_push", "imm_val", imm_val, imm_field.lo, imm_field.hi, InsnError)
    cfg = k.cfg
    isa = isa_for(cfg)
    try:
        isa.encode_uop(dst_index, src_index, wgt_index)
    except EncodeError as err:
        raise InsnError(f"uop_push: {err}") from None
    if mode == 1:
        problem = alu_opcode_error(cfg, opcode)
        if problem:
            raise InsnError(f"uop_push: {problem}")
        try:
            isa.alu.encode({"imm": int(imm_val), "use_imm": use_imm})
        except EncodeError as err:
            raise InsnError(f"uop_push: {err}") from None
    if not k.uops:
        k.mode, k.reset = mode, reset_out
        if mode == 1:
            k.alu_opcode, k.use_imm, k.imm = int(opcode), use_imm, int(imm_val)
    else:
        if (mode, reset_out) != (k.mode, k.reset):
            raise VTAError("uop_push: mode and reset_out must equal those of the kernel's first micro-op")
        if mode == 1 and (int(opcode), use_imm, int(imm_val)) != (k.alu_opcode, k.use_imm, k.imm):
            raise VTAError("uop_push: an ALU kernel has one opcode and one immediate; they must equal the first "
                           "micro-op's")
    k.uops.append((int(dst_index), int(src_index), int(wgt_index)))
