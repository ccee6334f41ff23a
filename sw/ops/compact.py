"""Shorter ALU step lists that compute the same int32 values: fewer passes of the tensor ALU per row.

A requantization written step by step (:mod:`apps.onnx.numerics`) and a residual add fused behind it
repeat work the ALU can do in one pass: a rounding shift ``SHR 15; ADD c; SHR 8`` followed by the next
layer's ``ADD -zero_point``, two 16-bit multiplies in a row, a bias added just before a clip and a
multiply. :func:`compact` rewrites a list of :class:`~sw.ops.epilogue.Epilogue` steps with rules that
are identities of the ALU's arithmetic (int32 lanes, wrap-around ADD and MUL, arithmetic SHR), each
applied only where it holds for every value the steps can see:

* ring identities, exact for any value because ADD and MUL wrap modulo 2^32: ``ADD a; ADD b`` ->
  ``ADD a+b``; ``MUL a; MUL b`` -> ``MUL ab``; ``ADD a; MUL b; ADD c`` -> ``MUL b; ADD ab+c``; a constant
  ``ADD`` next to the residual's ``ADD r`` moves into the residual's own steps;
* ``SHR s; SHR t`` -> ``SHR s+t`` and ``MIN a; MIN b`` -> ``MIN min(a,b)`` (likewise MAX), exact;
* ``SHR s; ADD c`` -> ``ADD c 2^s; SHR s`` and ``ADD c; MAX d`` <-> ``MAX d-c; ADD c`` (MIN too), exact
  where ``x + c 2^s`` (``x + c``) cannot leave int32 for any x in the interval the earlier steps
  leave: the intervals are propagated per channel from the accumulators' bounds. These two only move a
  constant towards another it merges with.

A merged constant that is the same on every channel and fits the 16-bit immediate stays an immediate;
any other becomes a per-channel vector operand (a full int32, one acc row per channel block, and one
ALU cycle per row like an immediate).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from sw.fsim.alu import alu_op
from sw.isa import AluOp
from sw.ops.epilogue import IMM_MAX, IMM_MIN, AluStep

__all__ = ["compact", "with_operands"]

ADD, SHR, MIN, MAX, MUL = AluOp.ADD, AluOp.SHR, AluOp.MIN, AluOp.MAX, AluOp.MUL
_LO, _HI = -(1 << 31), (1 << 31) - 1


def _alu(op, a, b) -> np.ndarray:
    """The ALU's own arithmetic (int32 wrap-around, :func:`~sw.fsim.alu.alu_op`) on int64 arrays."""
    return alu_op(op, a, b).astype(np.int64)


def _arrays(steps, vectors, channels: int) -> list:
    """Steps as (op, operand) with operand a per-channel int64 constant (C,), a tensor operand (``'r'``: the
    residual, ``'b'``: the branch) or an int shift (SHR)."""
    out: list[tuple[object, str | int | np.ndarray]] = []
    for op, v in steps:
        if op == SHR or v in ("r", "b"):
            out.append((op, v if isinstance(v, str) else int(v)))
        elif isinstance(v, str):
            i = int(v[1:])
            if vectors is None or i >= len(vectors):
                raise ValueError(f"the steps use vector {v} but {0 if vectors is None else len(vectors)} were given")
            out.append((op, np.asarray(vectors[i], np.int64).reshape(-1).copy()))
        else:
            out.append((op, np.full(channels, int(v), np.int64)))
    return out


def _const(step) -> bool:
    return step[0] != SHR and not isinstance(step[1], str)


def _ranges(steps, lo, hi, r_range):
    """The per-channel interval before each step and after the last (None from where int32 may be left)."""
    out = [(lo, hi)]
    for op, v in steps:
        if isinstance(v, str):                          # the residual
            a, b = r_range if r_range is not None else (None, None)
        else:
            a = b = v
        if lo is None or a is None or (op == SHR and v < 0) or (op == MUL and np.any(np.abs(a) >= 1 << 31)):
            lo = hi = None
        elif op == ADD:
            lo, hi = lo + a, hi + b
        elif op == MIN:
            lo, hi = np.minimum(lo, a), np.minimum(hi, b)
        elif op == MAX:
            lo, hi = np.maximum(lo, a), np.maximum(hi, b)
        elif op == SHR:
            lo, hi = lo >> min(v, 31), hi >> min(v, 31)
        else:
            c = np.stack([lo * a, lo * b, hi * a, hi * b])
            lo, hi = c.min(axis=0), c.max(axis=0)
        if lo is not None and (np.any(lo < _LO) or np.any(hi > _HI)):
            lo = hi = None
        out.append((lo, hi))
    return out


def _fits(x) -> bool:
    return bool(np.all(x >= _LO) and np.all(x <= _HI))


def _merge(steps, keep: int) -> bool:
    """One exact merge of two neighbouring steps at or after ``keep`` (in place); whether one was made."""
    for i in range(keep, len(steps) - 1):
        (o1, v1), (o2, v2) = steps[i], steps[i + 1]
        if o1 == o2 == SHR and v1 >= 0 and v2 >= 0:
            steps[i:i + 2] = [(SHR, min(v1 + v2, 31))]
            return True
        if not (_const(steps[i]) and _const(steps[i + 1])) or o1 != o2:
            continue
        if o1 == ADD:
            steps[i:i + 2] = [(ADD, _alu(ADD, v1, v2))]
        elif o1 == MUL:
            steps[i:i + 2] = [(MUL, _alu(MUL, v1, v2))]
        elif o1 == MIN:
            steps[i:i + 2] = [(MIN, np.minimum(v1, v2))]
        else:
            steps[i:i + 2] = [(MAX, np.maximum(v1, v2))]
        return True
    return False


def _drop_identities(steps, keep: int) -> bool:
    for i in range(keep, len(steps)):
        op, v = steps[i]
        if (op == SHR and v == 0) or (_const(steps[i]) and ((op == ADD and not v.any()) or (op == MUL and np.all(v == 1)))):
            del steps[i]
            return True
    return False


def _move(steps, keep: int, lo, hi, r_range) -> bool:
    """One range-checked move of a constant ADD (left over a SHR, right over a clip) towards a constant it
    merges with."""
    rng = _ranges(steps, lo, hi, r_range)
    for i in range(keep, len(steps) - 1):
        (o1, v1), (o2, v2) = steps[i], steps[i + 1]
        # SHR s; ADD c -> ADD c 2^s; SHR s, when an ADD before or a SHR after then merges
        if o1 == SHR and v1 >= 0 and o2 == ADD and _const(steps[i + 1]):
            before = i > keep and steps[i - 1][0] == ADD and _const(steps[i - 1])
            after = i + 2 < len(steps) and steps[i + 2][0] == SHR and steps[i + 2][1] >= 0
            x_lo, x_hi = rng[i]
            if (before or after) and x_lo is not None and v1 <= 31:
                c = v2 << v1
                if _fits(c) and _fits(x_lo + c) and _fits(x_hi + c):
                    steps[i:i + 2] = [(ADD, c), (SHR, v1)]
                    return True
        # ADD c; MAX/MIN d -> MAX/MIN d-c; ADD c, when the next non-clip step is a constant ADD or MUL
        if o1 == ADD and _const(steps[i]) and o2 in (MIN, MAX) and _const(steps[i + 1]):
            j = i + 1
            while j < len(steps) and steps[j][0] in (MIN, MAX) and _const(steps[j]):
                j += 1
            x_lo, x_hi = rng[i]
            if j < len(steps) and steps[j][0] in (ADD, MUL) and _const(steps[j]) and x_lo is not None:
                d = v2 - v1
                if _fits(d) and _fits(x_lo + v1) and _fits(x_hi + v1):
                    steps[i:i + 2] = [(o2, d), (ADD, v1)]
                    return True
        # MAX/MIN d ...; ADD c -> ADD c; MAX/MIN d+c ..., when the step before the clips is a constant ADD or a SHR
        if o2 == ADD and _const(steps[i + 1]) and o1 in (MIN, MAX) and _const(steps[i]):
            j = i
            while j > keep and steps[j - 1][0] in (MIN, MAX) and _const(steps[j - 1]):
                j -= 1
            x_lo, x_hi = rng[j]
            if j > keep and (steps[j - 1][0] == SHR and steps[j - 1][1] >= 0 or steps[j - 1][0] == ADD
                             and _const(steps[j - 1])) and x_lo is not None:
                bounds = [steps[k][1] + v2 for k in range(j, i + 1)]
                if all(_fits(d) for d in bounds) and _fits(x_lo + v2) and _fits(x_hi + v2):
                    steps[j:i + 2] = [(ADD, v2)] + [(steps[k][0], d) for k, d in zip(range(j, i + 1), bounds)]
                    return True
    return False


def _affine(steps, keep: int) -> bool:
    """ADD a; MUL b; ADD c -> MUL b; ADD ab+c (exact modulo 2^32)."""
    for i in range(keep, len(steps) - 2):
        if [s[0] for s in steps[i:i + 3]] == [ADD, MUL, ADD] and all(_const(s) for s in steps[i:i + 3]):
            a, b, c = steps[i][1], steps[i + 1][1], steps[i + 2][1]
            steps[i:i + 3] = [(MUL, b), (ADD, _alu(ADD, _alu(MUL, a, b), c))]
            return True
    return False


def _into_residual(steps, residual, keep: int) -> bool:
    """A constant ADD right before or after ``ADD r`` joins the residual's steps (exact modulo 2^32)."""
    for i in range(keep, len(steps)):
        if steps[i][0] == ADD and isinstance(steps[i][1], str):
            for j in (i - 1, i + 1):
                if keep <= j < len(steps) and steps[j][0] == ADD and _const(steps[j]):
                    residual.append(steps.pop(j))
                    return True
    return False


def _simplify(steps, keep: int, lo=None, hi=None, r_range=None) -> None:
    while _drop_identities(steps, keep) or _merge(steps, keep) or (lo is not None and _move(steps, keep, lo, hi,
                                                                                          r_range)):
        pass
    while _drop_identities(steps, keep) or _merge(steps, keep) or _affine(steps, keep):
        pass


def compact(steps: Sequence[AluStep], vectors: npt.ArrayLike | None, lo: npt.ArrayLike, hi: npt.ArrayLike,
            residual: Sequence[AluStep] | None = None, keep: int = 0) -> tuple:
    """``steps`` (and a residual's steps) rewritten to as few ALU passes as the rules above allow, with
    the same int32 result for every accumulator in ``[lo, hi]`` (per channel, or one bound) and every
    int8 residual. The first ``keep`` steps stay as they are (a bias the GEMM may take over); ``lo``,
    ``hi`` bound the values after them.

    Returns (steps, residual, vectors): the vectors (V, channels) int32 the new steps use, numbered in order
    of first use (a kept step's operand stays a vector), or None when no step uses one."""
    vectors = None if vectors is None else np.asarray(vectors, np.int64)
    channels = vectors.shape[1] if vectors is not None and vectors.ndim == 2 else np.size(lo)
    lo = np.broadcast_to(np.asarray(lo, np.int64), (channels,)).copy()
    hi = np.broadcast_to(np.asarray(hi, np.int64), (channels,)).copy()
    seq = _arrays(steps, vectors, channels)
    head, body = seq[:keep], seq[keep:]
    res = None
    r_range = None
    if residual is not None:
        res = _arrays(residual, vectors, channels)
        if any(isinstance(v, str) for _, v in res):
            raise ValueError("the residual's steps cannot use the residual")
        _simplify(res, 0)
        rr = _ranges(res, np.full(channels, -128, np.int64), np.full(channels, 127, np.int64), None)[-1]
        r_range = rr if rr[0] is not None else None
    _simplify(body, 0, lo, hi, r_range)
    if res is not None:
        moved = False
        while _into_residual(body, res, 0):
            moved = True
        if moved:
            _simplify(res, 0)
            _simplify(body, 0)
    names: list = []
    out = _materialize(head, names, kept=True)
    n_kept = len(names)
    out += _materialize(body, names, n_kept)
    out_res = None if res is None else _materialize(res, names, n_kept)
    return out, out_res, _stack(names)


def _materialize(steps, names: list, first: int = 0, kept: bool = False) -> list:
    """Per-channel constants as immediates (one 16-bit value on every channel) or vector operands: the index of
    an equal vector in ``names`` from ``first`` on (a kept step's vector is not shared: it may be replaced),
    else a new one appended."""
    out = []
    for op, v in steps:
        if op != SHR and not isinstance(v, str):
            if not kept and np.all(v == v[0]) and IMM_MIN <= v[0] <= IMM_MAX:
                v = int(v[0])
            else:
                k = next((k for k in range(0 if kept else first, len(names)) if np.array_equal(names[k], v)), None)
                if k is None:
                    names.append(v)
                    k = len(names) - 1
                v = f"v{k}"
        out.append((op, v))
    return out


def _stack(names: list):
    return np.stack(names).astype(np.int32) if names else None


def with_operands(steps: Sequence[AluStep], vectors: npt.ArrayLike) -> tuple[list, np.ndarray | None]:
    """``steps`` whose int constants may exceed an immediate (a list written by hand, the tail of a fused
    function) as ALU operands: an int that fits stays, any other becomes a vector appended to ``vectors``
    (V, channels) (or shares an equal one). Returns (steps, vectors)."""
    vectors = None if vectors is None else np.asarray(vectors, np.int64)
    names = [] if vectors is None else list(vectors)
    channels = vectors.shape[1]
    out = []
    for op, v in steps:
        if isinstance(v, str) or op == SHR or IMM_MIN <= int(v) <= IMM_MAX:
            out.append((op, v))
        else:
            out += _materialize([(op, np.full(channels, int(v), np.int64))], names)
    return out, _stack(names)
