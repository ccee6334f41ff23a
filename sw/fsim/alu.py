"""The tensor ALU's arithmetic on int32 lanes (docs/architecture.md §2.8), defined once.

The golden model executes ALU instructions with :func:`alu_op`; the operators' epilogues
(:meth:`sw.ops.epilogue.Epilogue.reference`), their step rewriting (:mod:`sw.ops.compact`) and the ONNX
importer's host references compute with the same function, so a host reference is the golden model's
arithmetic by construction.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from sw.isa import POST_RESIDUAL_STAGE, POST_RESIDUAL_STEPS, POST_STAGES, AluOp
from sw.pipeline import InsnError

__all__ = ["alu_op", "post_op", "SHIFT_MAX"]

SHIFT_MAX = 31
"""The largest shift SHR applies: amounts beyond it (either sign) shift by 31."""


def alu_op(op: int, a: npt.ArrayLike, b: npt.ArrayLike) -> np.ndarray:
    """``op(a, b)`` on signed int32 lanes, the result wrapped to int32.

    ``op`` an :class:`~sw.isa.AluOp` (or its int value); ``a`` the accumulators (any integer array);
    ``b`` the operand: an immediate (a scalar) or an array broadcast against ``a``.

    * MIN, MAX: ``min(a, b)``, ``max(a, b)``;
    * ADD: ``a + b``, MUL: the low 32 bits of ``a * b`` (both wrap modulo 2^32);
    * SHR: ``b >= 0``: arithmetic right shift by ``min(b, 31)``; ``b < 0``: left shift by ``min(-b, 31)``,
      wrapping (so SHR 0 is a copy, SHR -40 of 1 is -2^31, SHR 40 of a negative lane is -1).

    Any other opcode raises :class:`~sw.pipeline.InsnError` (a ``ValueError``) listing the allowed ones.
    """
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    if op == AluOp.MIN:
        r = np.minimum(a, b)
    elif op == AluOp.MAX:
        r = np.maximum(a, b)
    elif op == AluOp.ADD:
        r = a + b
    elif op == AluOp.SHR and b.ndim == 0:
        r = np.right_shift(a, min(int(b), SHIFT_MAX)) if b >= 0 else np.left_shift(a, min(-int(b), SHIFT_MAX))
    elif op == AluOp.SHR:
        right = np.right_shift(a, np.clip(b, 0, SHIFT_MAX))
        left = np.left_shift(a, np.clip(-b, 0, SHIFT_MAX))
        r = np.where(b >= 0, right, left)
    elif op == AluOp.MUL:
        r = a * b
    else:
        allowed = ", ".join(f"{o.value} {o.name}" for o in AluOp if o != AluOp.POST)
        raise InsnError(f"alu_opcode = {op}; allowed: {allowed} (POST: post_op)")
    return r.astype(np.int32)


def post_op(a: npt.ArrayLike, params: npt.ArrayLike, residual: npt.ArrayLike | None = None) -> np.ndarray:
    """The post-processing unit (ALU opcode POST) on int32 lanes: ``a`` through the fixed chain
    :data:`~sw.isa.POST_STAGES`, stage k computing ``alu_op(POST_STAGES[k], x, params[k])``; with ``residual``
    (a tensor operand), the residual through :data:`~sw.isa.POST_RESIDUAL_STEPS` (step j with the operand
    ``params[len(POST_STAGES) + j]``) and then added right after the ADD of stage
    :data:`~sw.isa.POST_RESIDUAL_STAGE`.

    ``params`` (POST_PARAM_ROWS, ...) broadcast against ``a`` row by row (one operand per lane, or one per
    stage). Every step is a step of :func:`alu_op`, so a chain equals the ALU steps it replaces; an operand
    that leaves a value unchanged (ADD 0, MUL 1, SHR 0, MAX -2^31, MIN 2^31 - 1) skips its step."""
    p = np.asarray(params, dtype=np.int64)
    y = np.asarray(a, dtype=np.int64)
    r = None
    if residual is not None:
        r = np.asarray(residual, dtype=np.int64)
        for j, op in enumerate(POST_RESIDUAL_STEPS):
            r = alu_op(op, r, p[len(POST_STAGES) + j])
    for k, op in enumerate(POST_STAGES):
        y = alu_op(op, y, p[k])
        if k == POST_RESIDUAL_STAGE and r is not None:
            y = alu_op(AluOp.ADD, y, r)
    return y
