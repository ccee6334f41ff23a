"""The VTA instruction set, defined once.

Every instruction format is a list of :class:`Field` in declaration order. Bit offsets follow VTA's
rule (docs/architecture.md §2.1): fields are laid out from bit 0 in order, and a field that would cross bit 64
starts at bit 64 instead. Widths that depend on the SRAM depths come from the :class:`~sw.config.Config`.
From this one definition come the Python encoder and decoder, the numpy bulk decoder of the golden
model, the disassembler, the Amaranth layouts of the hardware and the tables in the docs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from functools import cache
from typing import Protocol

import numpy as np

# The fixed widths of the ISA (docs/isa.md); they do not depend on the JSON.
INS_WIDTH = 128
UOP_WIDTH = 32
OPCODE_BITS = 3
ALU_OPCODE_BITS = 3
MEMOP_ID_BITS = 3
MEMOP_SRAM_ADDR_BITS = 16
MEMOP_DRAM_ADDR_BITS = 32
MEMOP_SIZE_BITS = 16
MEMOP_STRIDE_BITS = 16
MEMOP_PAD_BITS = 4
LOOP_ITER_BITS = 14
ALUOP_IMM_BITS = 16


# The most tokens a dependency queue holds (VTA's 8-bit semaphore; hw.top builds its queues this deep).
# A push into a full queue would be lost, so the runtime refuses a stream that could fill one.
TOKEN_QUEUE_DEPTH = 255


class FormatError(ValueError):
    """A format's fields do not fit its width (the config makes an SRAM index field too wide)."""

__all__ = [
    "Opcode", "opcodes", "opcode_error", "depthwise_window", "MemId", "AluOp", "post_imm_error",
    "POST_STAGES", "POST_PARAM_ROWS", "POST_RESIDUAL_STAGE",
    "POST_RESIDUAL_STEPS", "alu_operand_text", "Field", "Format", "ISA", "Insn", "EncodeError", "isa_for",
    "STAGE_LOAD", "STAGE_COMPUTE", "STAGE_STORE", "STAGE_NAMES",
]


class Opcode(IntEnum):
    LOAD = 0
    STORE = 1
    GEMM = 2
    FINISH = 3
    ALU = 4
    DEPTHWISE = 5


class OpcodeConfig(Protocol):
    """What the opcode checks read of a :class:`sw.config.Config` (which imports this module)."""

    @property
    def DEPTHWISE(self) -> int: ...
    @property
    def name(self) -> str: ...


def opcodes(cfg: OpcodeConfig) -> tuple[Opcode, ...]:
    """The opcodes a config builds: VTA's five, and DEPTHWISE when ``DEPTHWISE`` = 1 (docs/isa.md "DEPTHWISE").
    The one definition used by the golden model, the runtime's checks and the hardware's fetch check."""
    return tuple(op for op in Opcode if op != Opcode.DEPTHWISE or cfg.DEPTHWISE)


def _unbuilt_error(cfg: OpcodeConfig, field: str, value: int, allowed: tuple, keys: dict, what: str) -> str | None:
    """Why ``value`` of ``field`` is not one of ``allowed`` (naming them): an option the config does not build
    (``keys``: option -> the config key that builds it), or not ``what`` at all; None when it is allowed."""
    if value in [int(a) for a in allowed]:
        return None
    names = ", ".join(f"{a.value} {a.name}" for a in allowed)
    for option, key in keys.items():
        if value == option:
            return f"{field} {option.name} is not built in config {cfg.name} ({key} = 0); allowed: {names}"
    return f"{field} = {value!r} is not {what}; allowed: {names}"


def opcode_error(cfg: OpcodeConfig, opcode: int) -> str | None:
    """Why ``opcode`` is not an instruction of ``cfg`` (naming the allowed ones), or None when it is."""
    return _unbuilt_error(cfg, "opcode", opcode, opcodes(cfg), {Opcode.DEPTHWISE: "DEPTHWISE"}, "an instruction")


def depthwise_window(inp_rows: np.ndarray, slots: int) -> np.ndarray:
    """The DEPTHWISE window of every micro-op execution: ``inp_rows`` (n, ...) are the inp rows the
    executions read, in order; the result (n, slots, ...) holds, at [e, k], the row execution e - k read
    (zero for k > e: the window starts empty at each instruction)."""
    n = len(inp_rows)
    out = np.zeros((n, slots) + inp_rows.shape[1:], inp_rows.dtype)
    for k in range(min(slots, n)):
        out[k:, k] = inp_rows[:n - k]
    return out


class MemId(IntEnum):
    UOP = 0
    WGT = 1
    INP = 2
    ACC = 3
    OUT = 4
    ACC_8BIT = 5


class AluOp(IntEnum):
    MIN = 0
    MAX = 1
    ADD = 2
    SHR = 3
    MUL = 4
    POST = 5


# The post-processing unit's fixed chain (alu_opcode POST, docs/isa.md "POST"): stage k applies
# ``POST_STAGES[k]`` with the k-th parameter row as its operand, in this order; the residual (a tensor
# operand) first goes through ``POST_RESIDUAL_STEPS`` with the rows after them as operands and is then added at
# ``POST_RESIDUAL_STAGE``, after that stage's own ADD. Every step is the ALU's own operation on int32 lanes.
POST_STAGES = (AluOp.ADD, AluOp.MAX, AluOp.MIN,
               AluOp.MUL, AluOp.ADD, AluOp.SHR,
               AluOp.MUL, AluOp.ADD, AluOp.SHR,
               AluOp.MUL, AluOp.ADD, AluOp.SHR,
               AluOp.MAX, AluOp.MIN)
POST_RESIDUAL_STEPS = (AluOp.MUL, AluOp.ADD)
POST_PARAM_ROWS = len(POST_STAGES) + len(POST_RESIDUAL_STEPS)
POST_RESIDUAL_STAGE = 10


def alu_opcodes(cfg) -> tuple[AluOp, ...]:
    """The ALU operations a config builds: MIN, MAX, ADD, SHR, MUL when ``ALU_MUL`` = 1 and POST (the
    post-processing unit) when ``POST_UNIT`` = 1.

    The one definition used by the golden model, the runtime, the instruction checks, the random
    program generator and the hardware decoders."""
    return tuple(op for op in AluOp if (op != AluOp.MUL or cfg.ALU_MUL) and (op != AluOp.POST or cfg.POST_UNIT))


def alu_opcode_error(cfg, opcode) -> str | None:
    """Why ``opcode`` is not an ALU operation of ``cfg`` (naming the allowed ones), or None when it is."""
    return _unbuilt_error(cfg, "alu_opcode", opcode, alu_opcodes(cfg), {AluOp.MUL: "ALU_MUL", AluOp.POST: "POST_UNIT"},
                          "an ALU operation")


class AccDepthConfig(Protocol):
    """What POST's check reads of a :class:`sw.config.Config` (which imports this module)."""

    @property
    def ACC_DEPTH(self) -> int: ...


def post_imm_error(cfg: AccDepthConfig, imm: int) -> str | None:
    """Why ``imm`` cannot be POST's parameter row (its POST_PARAM_ROWS rows must lie in the acc SRAM), or None."""
    if 0 <= imm <= cfg.ACC_DEPTH - POST_PARAM_ROWS:
        return None
    return (f"POST's parameter rows [imm, imm + {POST_PARAM_ROWS}) leave the acc SRAM: imm = {imm}; allowed "
            f"range [0, {cfg.ACC_DEPTH - POST_PARAM_ROWS}]")


def alu_operand_text(alu_opcode: int, use_imm: int, imm: int) -> str:
    """An ALU instruction's operands as its disassembly shows them: ``imm=X`` or ``tensor``; for POST its parameter
    rows, ``params=acc[imm:imm + 14]``, and `` residual`` when a tensor operand is added."""
    if alu_opcode == AluOp.POST:
        return f"params=acc[{imm}:{imm + POST_PARAM_ROWS}]" + ("" if use_imm else " residual")
    return f"imm={imm}" if use_imm else "tensor"


def expand_uops(uops, f: dict, gemm: bool):
    """The SRAM indices (dst, src, wgt) of every micro-op execution of a GEMM or ALU instruction.

    ``uops`` is an (n, 3) array of the micro-ops' (dst, src, wgt) indices and ``f`` the
    instruction's loop fields. Execution order: for i0 < iter_out, for i1 < iter_in, for each micro-op
    u: index = u.index + i0 * factor_out + i1 * factor_in. Returns flat int64 arrays (wgt is None for
    ALU instructions, whose micro-ops have no weight index).
    """
    u = np.asarray(uops, dtype=np.int64).reshape(-1, 3)
    io = np.arange(f["iter_out"], dtype=np.int64)[:, None, None]
    ii = np.arange(f["iter_in"], dtype=np.int64)[None, :, None]

    def walk(base, name):
        return (base[None, None, :] + io * f[f"{name}_factor_out"] + ii * f[f"{name}_factor_in"]).reshape(-1)

    return walk(u[:, 0], "dst"), walk(u[:, 1], "src"), (walk(u[:, 2], "wgt") if gemm else None)


def uop_index_error(cfg, dst, src, wgt, gemm: bool) -> str | None:
    """Which expanded micro-op index leaves its SRAM (naming the field and the allowed range), or None."""
    checks = [("dst", dst, cfg.ACC_DEPTH, "acc")]
    if gemm:
        checks += [("src", src, cfg.INP_DEPTH, "inp"), ("wgt", wgt, cfg.WGT_DEPTH, "wgt")]
    else:
        checks += [("src", src, cfg.ACC_DEPTH, "acc")]
    for field, arr, depth, mem in checks:
        if arr.size and int(arr.max()) >= depth:
            return (f"micro-op {field} index reaches {int(arr.max())} over the loops; the {mem} SRAM "
                    f"allows [0, {depth - 1}]")
    return None


# Stage (queue id) of the module that executes an instruction (docs/architecture.md §2.3, docs/architecture.md §5).
STAGE_LOAD, STAGE_COMPUTE, STAGE_STORE = 1, 2, 3
STAGE_NAMES = {STAGE_LOAD: "load", STAGE_COMPUTE: "compute", STAGE_STORE: "store"}


class EncodeError(ValueError):
    """A value does not fit the instruction field it is meant for."""


@dataclass(frozen=True)
class Field:
    name: str
    width: int
    offset: int
    signed: bool = False
    doc: str = ""

    @property
    def mask(self) -> int:
        return (1 << self.width) - 1

    @property
    def lo(self) -> int:
        return -(1 << (self.width - 1)) if self.signed else 0

    @property
    def hi(self) -> int:
        return (1 << (self.width - 1)) - 1 if self.signed else (1 << self.width) - 1


class Format:
    """An instruction (or micro-op) format: fields with offsets, computed by VTA's layout rule."""

    def __init__(self, name: str, size: int, spec: Iterable[tuple[str, int, bool, str]]):
        self.name = name
        self.size = size
        self.fields: dict[str, Field] = {}
        pos = 0
        for fname, width, signed, doc in spec:
            if width <= 0:
                raise FormatError(f"{name}.{fname}: the config gives this field {width} bits")
            if pos < 64 < pos + width and size > 64:
                pos = 64
            if pos + width > size:
                raise FormatError(
                    f"the {name} format does not fit in {size} bits: field {fname!r} ({width} bits) would end "
                    f"at bit {pos + width}; reduce the SRAM depths in the config")
            self.fields[fname] = Field(fname, width, pos, signed, doc)
            pos += width
        self.used_bits = pos
        # per field: (offset, mask, lo, hi), precomputed because encoding is on the runtime's hot path
        self._limits = {f.name: (f.offset, f.mask, f.lo, f.hi) for f in self.fields.values()}

    def __iter__(self):
        return iter(self.fields.values())

    def __getitem__(self, name) -> Field:
        return self.fields[name]

    def encode(self, values: dict) -> int:
        word = 0
        limits = self._limits
        for name, value in values.items():
            try:
                offset, mask, lo, hi = limits[name]
            except KeyError:
                raise EncodeError(f"{self.name}: no field {name!r}; fields are {', '.join(self.fields)}") from None
            value = int(value)
            if not lo <= value <= hi:
                f = self.fields[name]
                raise EncodeError(
                    f"{self.name}.{name} = {value} does not fit its {f.width}-bit "
                    f"{'signed ' if f.signed else ''}field; allowed range [{f.lo}, {f.hi}]")
            word |= (value & mask) << offset
        return word

    def decode(self, word: int) -> dict:
        out = {}
        for f in self.fields.values():
            v = (word >> f.offset) & f.mask
            if f.signed and v >> (f.width - 1):
                v -= 1 << f.width
            out[f.name] = v
        return out

    def decode_array(self, lo: np.ndarray, hi: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Decode many words at once; ``lo``/``hi`` are the uint64 halves (bits 0-63 and 64-127)."""
        out = {}
        for f in self.fields.values():
            if f.offset < 64:
                src, off = lo, f.offset
            elif hi is None:
                raise TypeError(f"decode_array: field {f.name} lies in bits 64-127; give hi")
            else:
                src, off = hi, f.offset - 64
            v = (src >> np.uint64(off)) & np.uint64(f.mask)
            v = v.astype(np.int64)
            if f.signed:
                v = np.where(v >> (f.width - 1), v - (1 << f.width), v)
            out[f.name] = v
        return out

    def table(self) -> str:
        """A markdown table of the layout (for the docs)."""
        rows = ["| bits | field | width | meaning |", "|---|---|---|---|"]
        for f in self.fields.values():
            rows.append(f"| {f.offset}-{f.offset + f.width - 1} | `{f.name}` | {f.width}"
                        f"{' (signed)' if f.signed else ''} | {f.doc} |")
        return "\n".join(rows)


_HEADER = [
    ("opcode", OPCODE_BITS, False, "0 LOAD, 1 STORE, 2 GEMM, 3 FINISH, 4 ALU, 5 DEPTHWISE (with DEPTHWISE)"),
    ("pop_prev", 1, False, "wait for a token from the previous stage before starting"),
    ("pop_next", 1, False, "wait for a token from the next stage before starting"),
    ("push_prev", 1, False, "send a token to the previous stage when done"),
    ("push_next", 1, False, "send a token to the next stage when done"),
]


@dataclass(frozen=True)
class Insn:
    """A decoded instruction: its format name ('mem', 'gemm' or 'alu') and field values."""
    kind: str
    f: dict

    def __getattr__(self, name):
        try:
            return self.f[name]
        except KeyError:
            raise AttributeError(name) from None

    @property
    def opcode(self) -> int:
        return self.f["opcode"]

    def __post_init__(self):
        # ``stage``: the module that runs it: load (1), compute (2) or store (3) (docs/architecture.md §2.2); set
        # once (an instruction's opcode and memory type do not change), a plain attribute because the schedulers
        # read it for every instruction several times
        op = self.f["opcode"]
        if op == Opcode.STORE:
            stage = STAGE_STORE
        elif op == Opcode.LOAD and self.f["memory_type"] in (MemId.INP, MemId.WGT):
            stage = STAGE_LOAD
        else:
            stage = STAGE_COMPUTE
        object.__setattr__(self, "stage", stage)


class IsaConfig(Protocol):
    """What the formats depend on in a :class:`sw.config.Config` (which imports this module)."""

    @property
    def LOG_UOP_DEPTH(self) -> int: ...
    @property
    def LOG_ACC_DEPTH(self) -> int: ...
    @property
    def LOG_INP_DEPTH(self) -> int: ...
    @property
    def LOG_WGT_DEPTH(self) -> int: ...
    @property
    def UOP_SRC_BITS(self) -> int: ...


class ISA:
    """The instruction formats for one configuration."""

    def __init__(self, cfg: IsaConfig) -> None:
        self.cfg = cfg
        header = list(_HEADER)
        self.mem = Format("mem", INS_WIDTH, header + [
            ("memory_type", MEMOP_ID_BITS, False, "0 UOP, 1 WGT, 2 INP, 3 ACC, 4 OUT, 5 ACC_8BIT"),
            ("sram_base", MEMOP_SRAM_ADDR_BITS, False, "SRAM element index"),
            ("dram_base", MEMOP_DRAM_ADDR_BITS, False, "DRAM address in elements of this memory type"),
            ("y_size", MEMOP_SIZE_BITS, False, "rows"),
            ("x_size", MEMOP_SIZE_BITS, False, "elements per row; 0 = a NOP that only moves tokens"),
            ("x_stride", MEMOP_STRIDE_BITS, False, "DRAM row stride in elements"),
            ("y_pad_0", MEMOP_PAD_BITS, False, "zero rows before"),
            ("y_pad_1", MEMOP_PAD_BITS, False, "zero rows after"),
            ("x_pad_0", MEMOP_PAD_BITS, False, "zero elements before each row"),
            ("x_pad_1", MEMOP_PAD_BITS, False, "zero elements after each row"),
        ])
        loop_head = header + [
            ("reset", 1, False, "GEMM: zero the destination instead of accumulating (ignored by ALU)"),
            ("uop_bgn", cfg.LOG_UOP_DEPTH, False, "first micro-op"),
            ("uop_end", cfg.LOG_UOP_DEPTH + 1, False, "one past the last micro-op"),
            ("iter_out", LOOP_ITER_BITS, False, "outer loop count"),
            ("iter_in", LOOP_ITER_BITS, False, "inner loop count"),
            ("dst_factor_out", cfg.LOG_ACC_DEPTH, False, "acc index step per outer iteration"),
            ("dst_factor_in", cfg.LOG_ACC_DEPTH, False, "acc index step per inner iteration"),
        ]
        self.gemm = Format("gemm", INS_WIDTH, loop_head + [
            ("src_factor_out", cfg.LOG_INP_DEPTH, False, "inp index step per outer iteration"),
            ("src_factor_in", cfg.LOG_INP_DEPTH, False, "inp index step per inner iteration"),
            ("wgt_factor_out", cfg.LOG_WGT_DEPTH, False, "wgt index step per outer iteration"),
            ("wgt_factor_in", cfg.LOG_WGT_DEPTH, False, "wgt index step per inner iteration"),
        ])
        self.alu = Format("alu", INS_WIDTH, loop_head + [
            ("src_factor_out", cfg.LOG_ACC_DEPTH, False, "acc (operand) index step per outer iteration"),
            ("src_factor_in", cfg.LOG_ACC_DEPTH, False, "acc (operand) index step per inner iteration"),
            ("alu_opcode", ALU_OPCODE_BITS, False, "0 MIN, 1 MAX, 2 ADD, 3 SHR, 4 MUL, 5 POST"),
            ("use_imm", 1, False, "1 = the second operand is the immediate (POST: 0 = add the residual)"),
            ("imm", ALUOP_IMM_BITS, True, "immediate, sign-extended to the accumulator width (POST: its first "
                                          "parameter row)"),
        ])
        self.uop = Format("uop", UOP_WIDTH, [
            ("dst_idx", cfg.LOG_ACC_DEPTH, False, "acc index (GEMM and ALU destination)"),
            ("src_idx", cfg.UOP_SRC_BITS, False, "inp index (GEMM) or acc index of the operand (ALU)"),
            ("wgt_idx", cfg.LOG_WGT_DEPTH, False, "wgt index (GEMM)"),
        ])
        self.formats = {"mem": self.mem, "gemm": self.gemm, "alu": self.alu}
        self.insn_bytes = INS_WIDTH // 8
        self.uop_bytes = UOP_WIDTH // 8

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def kind_of(opcode: int) -> str:
        if opcode in (Opcode.LOAD, Opcode.STORE):
            return "mem"
        if opcode in (Opcode.GEMM, Opcode.FINISH, Opcode.DEPTHWISE):
            return "gemm"
        if opcode == Opcode.ALU:
            return "alu"
        raise EncodeError(f"opcode = {opcode} is not an instruction; allowed: "
                          + ", ".join(f"{o.value} {o.name}" for o in Opcode))

    def encode(self, **fields) -> int:
        """Encode one instruction as a 128-bit integer; the opcode selects the format."""
        opcode = fields.get("opcode")
        if opcode is None:
            raise EncodeError("an instruction needs an 'opcode' field")
        return self.formats[self.kind_of(int(opcode))].encode(fields)

    def decode(self, word: int) -> Insn:
        opcode = word & ((1 << OPCODE_BITS) - 1)
        kind = self.kind_of(opcode)
        return Insn(kind, self.formats[kind].decode(word))

    def encode_uop(self, dst_idx: int, src_idx: int = 0, wgt_idx: int = 0) -> int:
        return self.uop.encode({"dst_idx": dst_idx, "src_idx": src_idx, "wgt_idx": wgt_idx})

    def decode_uops(self, words: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(dst, src, wgt) index arrays of many micro-ops (uint32 words)."""
        w = words.astype(np.int64)
        f = self.uop.fields
        dst, src, wgt = ((w >> f[n].offset) & f[n].mask for n in ("dst_idx", "src_idx", "wgt_idx"))
        return dst, src, wgt

    @staticmethod
    def to_bytes(word: int) -> bytes:
        return word.to_bytes(INS_WIDTH // 8, "little")

    @staticmethod
    def from_bytes(data: bytes | Iterable[int]) -> int:
        return int.from_bytes(bytes(data), "little")

    def pack_stream(self, insns: Sequence[Insn]) -> np.ndarray:
        """The bytes of a stream of :class:`Insn` (16 each, little-endian), every field already range-checked
        (the runtime's queued instructions): :meth:`Format.encode` without the checks, per format and field."""
        n = len(insns)
        lo, hi = np.zeros(n, np.uint64), np.zeros(n, np.uint64)
        by_kind: dict = {}
        for i, insn in enumerate(insns):
            by_kind.setdefault(insn.kind, []).append(i)
        for kind, idx in by_kind.items():
            rows = [insns[i].f for i in idx]
            part_lo, part_hi = np.zeros(len(idx), np.uint64), np.zeros(len(idx), np.uint64)
            for name, (offset, mask, _, _) in self.formats[kind]._limits.items():
                v = (np.fromiter((r[name] for r in rows), np.int64, len(rows)) & mask).astype(np.uint64)
                if offset < 64:
                    part_lo |= v << np.uint64(offset)
                else:
                    part_hi |= v << np.uint64(offset - 64)
            lo[idx], hi[idx] = part_lo, part_hi
        return np.stack([lo, hi], axis=1).view(np.uint8).reshape(-1)

    def words_to_array(self, words: Iterable[int]) -> np.ndarray:
        """Pack 128-bit instruction integers into a uint8 array (16 bytes each, little-endian)."""
        words = list(words)
        out = np.empty((len(words), 2), dtype=np.uint64)
        mask = (1 << 64) - 1
        for i, w in enumerate(words):
            out[i, 0] = w & mask
            out[i, 1] = w >> 64
        return out.view(np.uint8).reshape(-1)

    def decode_stream(self, raw: np.ndarray) -> list[Insn]:
        """Decode a stream of instructions held as bytes (16 per instruction), vectorised per field."""
        pairs = np.ascontiguousarray(raw).view(np.uint64).reshape(-1, 2)
        lo, hi = pairs[:, 0], pairs[:, 1]
        ops = (lo & np.uint64((1 << OPCODE_BITS) - 1)).astype(np.int64)
        bad = ~np.isin(ops, [int(o) for o in Opcode])
        if bad.any():
            i = int(np.argmax(bad))
            raise EncodeError(f"instruction {i}: opcode = {ops[i]} is not an instruction; allowed: "
                              + ", ".join(f"{o.value} {o.name}" for o in Opcode))
        decoded = {kind: fmt.decode_array(lo, hi) for kind, fmt in self.formats.items()}
        kinds = [self.kind_of(int(o)) for o in ops]
        cols = {kind: {name: arr.tolist() for name, arr in d.items()} for kind, d in decoded.items()}
        out = []
        for i, kind in enumerate(kinds):
            c = cols[kind]
            out.append(Insn(kind, {name: col[i] for name, col in c.items()}))
        return out

    # ------------------------------------------------------------------ disassembly
    def disasm(self, insn: Insn | int) -> str:
        """One readable line for an instruction (an :class:`Insn` or a 128-bit integer)."""
        if not isinstance(insn, Insn):
            insn = self.decode(int(insn))
        f = insn.f
        flags = "".join(ch if f[name] else "-" for ch, name in
                        (("p", "pop_prev"), ("n", "pop_next"), ("P", "push_prev"), ("N", "push_next")))
        deps = f"[{flags}]"
        op = f["opcode"]
        if insn.kind == "mem":
            try:
                mem = MemId(f["memory_type"]).name
            except ValueError:
                mem = f"mem{f['memory_type']}"
            name = "LOAD" if op == Opcode.LOAD else "STORE"
            if f["x_size"] == 0:
                return f"{name:6s} {mem:8s} {deps} NOP"
            pad = ""
            if any(f[p] for p in ("y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1")):
                pad = f" pad y({f['y_pad_0']},{f['y_pad_1']}) x({f['x_pad_0']},{f['x_pad_1']})"
            return (f"{name:6s} {mem:8s} {deps} sram={f['sram_base']} dram={f['dram_base']:#x} "
                    f"y={f['y_size']} x={f['x_size']} stride={f['x_stride']}{pad}")
        if op == Opcode.FINISH:
            return f"FINISH          {deps}"
        loops = (f"uop[{f['uop_bgn']}:{f['uop_end']}] out={f['iter_out']} in={f['iter_in']} "
                 f"dst=({f['dst_factor_out']},{f['dst_factor_in']}) src=({f['src_factor_out']},{f['src_factor_in']})")
        if insn.kind == "gemm":
            name = "DEPTHW" if op == Opcode.DEPTHWISE else "GEMM  "
            return (f"{name} {'reset   ' if f['reset'] else '        '} {deps} {loops} "
                    f"wgt=({f['wgt_factor_out']},{f['wgt_factor_in']})")
        try:
            aop = AluOp(f["alu_opcode"]).name
        except ValueError:
            aop = f"op{f['alu_opcode']}"
        return f"ALU    {aop:8s} {deps} {loops} {alu_operand_text(f['alu_opcode'], f['use_imm'], f['imm'])}"

    def disasm_uop(self, word: int, mode: str = "gemm") -> str:
        d = self.uop.decode(int(word))
        if mode == "alu":
            return f"acc[{d['dst_idx']}] op= acc[{d['src_idx']}]"
        if mode == "depthwise":
            return f"acc[{d['dst_idx']}] = window(inp[{d['src_idx']}]) . wgt[{d['wgt_idx']}]"
        return f"acc[{d['dst_idx']}] += inp[{d['src_idx']}] . wgt[{d['wgt_idx']}]"


@cache
def isa_for(cfg) -> ISA:
    return ISA(cfg)
