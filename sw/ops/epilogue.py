"""ALU epilogues: a caller's own sequence of ALU steps on a tile's accumulators (``alu=`` of conv2d/dense).

VTA's requantization (``>> shift``, ``+ bias``, clip) is one fixed sequence; an epilogue is any
sequence of steps ``(op, operand)`` applied in order, in place, to every accumulator of a tile
before STORE writes its low 8 bits:

* ``op``: an :class:`~sw.isa.AluOp` (MIN, MAX, ADD, SHR, MUL; MUL only on configs with ``ALU_MUL``);
* ``operand``: an int immediate (16 bits signed), or ``"v0"``, ``"v1"``, ... for per-output-channel
  int32 vector i of the operator's ``bias`` argument (shape (V, channels)), loaded into the acc SRAM
  beside the tile and broadcast over its rows (two cycles per micro-op, like VTA's bias add).

This is how fixed-point requantization with a multiplier (``MUL m`` between rounding shifts), zero
points and saturation to int8 or uint8 ranges runs on the accelerator.
"""

from __future__ import annotations

import numpy as np

from ..isa import AluOp
from .base import _cfg
from .kernels import Alu, _alu_rows, _k_alu

IMM_MIN, IMM_MAX = -(1 << 15), (1 << 15) - 1


def check_alu(alu, n_vectors: int):
    """Validate an epilogue; returns it as a tuple of (AluOp, int | 'vI')."""
    cfg = _cfg()
    out = []
    for i, step in enumerate(alu):
        if len(step) != 2:
            raise ValueError(f"alu[{i}] = {step!r}; expected (AluOp, operand)")
        op, operand = step
        try:
            op = AluOp(int(op))
        except ValueError:
            raise ValueError(f"alu[{i}]: op {op!r}; allowed: " + ", ".join(o.name for o in AluOp)) from None
        if op == AluOp.MUL and not cfg.ALU_MUL:
            raise ValueError(f"alu[{i}]: MUL on config {cfg.name}, which has no ALU MUL (ALU_MUL = 0)")
        if isinstance(operand, str):
            if not (operand.startswith("v") and operand[1:].isdigit() and int(operand[1:]) < n_vectors):
                raise ValueError(f"alu[{i}]: operand {operand!r}; allowed: an int immediate or 'v0'..'v{n_vectors - 1}' "
                                 f"(the rows of bias)")
            if op == AluOp.SHR:
                raise ValueError(f"alu[{i}]: SHR takes an immediate shift, not a vector")
        elif not IMM_MIN <= int(operand) <= IMM_MAX:
            raise ValueError(f"alu[{i}]: immediate {operand}; allowed [{IMM_MIN}, {IMM_MAX}]")
        else:
            operand = int(operand)
        out.append((op, operand))
    return tuple(out)


def vectors_2d(bias, channels: int) -> np.ndarray:
    """bias (channels,) or (V, channels) -> int32 (V, channels)."""
    b = np.asarray(bias)
    if b.ndim == 1:
        b = b[None]
    if b.ndim != 2 or b.shape[1] != channels:
        raise ValueError(f"bias has shape {np.shape(bias)}; expected ({channels},) or (V, {channels}) with alu=")
    if np.any(b != b.astype(np.int32)):
        raise ValueError("bias vectors must fit int32")
    return b.astype(np.int32)


def epilogue_actions(alu, acc: int, rows: int, vec_base: int, tm: int, loops):
    """The ALU actions of an epilogue on acc rows [acc, acc + rows); vector i of the tile's tm channel
    blocks lies at vec_base + i * tm, and ``loops`` ((extent, dst_factor, src_factor), outer first)
    walk the rows with the src on their channel block."""
    acts = []
    for op, operand in alu:
        if isinstance(operand, str):
            src = vec_base + int(operand[1:]) * tm
            acts.append(Alu(_k_alu(int(op), 0, 0, acc, src, loops), passes=2))
        else:
            acts.append(_alu_rows(op, operand, acc, rows))
    return acts


def packed_vectors(vectors, alu, blocks, cfg):
    """``(vectors as acc rows or None, their count, checked alu)`` for the packed operator APIs: with
    ``alu`` the (V, blocks, BATCH, BLOCK_OUT) int32 vectors of its steps (or None for none)."""
    B, O = cfg.BATCH, cfg.BLOCK_OUT
    v = np.zeros((0, blocks, B, O), np.int32) if vectors is None else np.asarray(vectors, np.int32)
    if v.ndim != 4 or v.shape[1:] != (blocks, B, O):
        raise ValueError(f"packed vectors have shape {v.shape}; expected (V, {blocks}, {B}, {O}) with alu=")
    n = v.shape[0]
    return (v.reshape(n * blocks, B, O) if n else None), n, check_alu(alu, n)
