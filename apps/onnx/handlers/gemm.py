"""What conv and dense share: the integer preparation of a GEMM layer and its epilogue on a config.

An int8 GEMM layer computes ``acc = sum (x - zx) w`` exactly in int32 (the zero-point correction
``-zx * sum w`` folded into the bias vector v0) and requantizes it by ``M_c = sx * sw_c / sy``: one
multiplier (per-tensor weight scales) or one per output channel (per-channel scales), as the ALU
steps of :mod:`apps.onnx.numerics` (docs/numerics.md).

On a config without the ALU's MUL, a multiplier that is a power of two is a shift and the layer runs
whole on the accelerator. Otherwise the epilogue is split at its first MUL: the accelerator runs the
GEMMs and the steps before it (bias, clip) and reads the values back in as many bytes as their range
needs (:class:`sw.ops.Epilogue` planes); the CPU applies the remaining steps, the same integer steps,
so the result is the reference's bit for bit.
"""

from __future__ import annotations

import numpy as np

from sw import ops
from sw.isa import AluOp
from sw.runtime import current_config

from ..numerics import NumericsError, qrange, requant_steps, requant_steps_per_channel, value_range
from ..proto import attrs_of
from .base import Unsupported

__all__ = ["add_counters", "match_conv", "prepare_gemm", "set_requant", "accelerator_epilogue", "compact_epilogue",
           "acc_range", "run_epilogue", "describe_split", "vectors", "alu_per_row"]


def add_counters(total: dict, counters: dict) -> dict:
    """``total`` with the accelerator counters of one more product added (several GEMMs of one layer)."""
    for key, v in counters.items():
        total[key] = total.get(key, 0) + v
    return total


def vectors(v0, extra, channels):
    """The (V, channels) int32 vector operands: v0 plus the others of ``extra`` (scalars or arrays)."""
    off, more = extra
    rows = [np.asarray(v0, np.int64) + off] + [np.broadcast_to(np.asarray(c, np.int64), (channels,)) for c in more]
    return np.stack(rows).astype(np.int32)


def match_conv(node, ctx, channel_axis: int, what: str):
    """(attributes, input, int8 weight, scales) of a Conv or ConvTranspose in QDQ form with one output,
    a 2-D kernel and dilation 1 (:class:`Unsupported` naming ``what`` otherwise)."""
    ctx.only_output(node)
    a = attrs_of(node)
    x = ctx.act_input(node, 0)
    w, sw = ctx.weight(node, 1, channel_axis=channel_axis)
    if w.ndim != 4:
        raise Unsupported(f"weight of rank {w.ndim}; the accelerator's {what} is 2-D")
    if any(d != 1 for d in a.get("dilations", [1, 1])):
        raise Unsupported(f"dilations = {list(a['dilations'])}; the accelerator's {what} takes 1")
    return a, x, w, sw


def prepare_gemm(lay, alu_mul: bool) -> None:
    """Weights, vectors and steps of a conv / dense layer (``lay.node.attrs``: weight, w_scale, bias,
    b_scale)."""
    a = lay.node.attrs
    w = a["weight"].astype(np.int8)
    o = w.shape[0]
    sx, zx = lay.inp[0].scale, lay.inp[0].zero_point
    sw = np.broadcast_to(np.asarray(a["w_scale"], np.float64), (o,))
    b = a["bias"]
    if b is None:
        b = np.zeros(o, np.int64)
    else:
        ratio = np.broadcast_to(np.asarray(a["b_scale"], np.float64), (o,)) / (sx * sw)
        if np.any(np.abs(ratio - 1) > 1e-6):        # a bias at another scale: rescale it
            b = np.rint(b * ratio).astype(np.int64)
    flat = w.reshape(o, -1).astype(np.int64)
    vector = b - zx * flat.sum(axis=1)
    if np.any(np.abs(vector) >= 1 << 31):
        raise NumericsError(f"node {lay.name!r}: the bias vector leaves int32")
    # x - zx lies in [-128 - zx, 127 - zx]
    bounds = np.abs(flat).sum(axis=1) * max(128 + zx, 127 - zx) + np.abs(vector) + 1
    M = sx * sw / lay.out.scale
    lay.params.update(weight=w, multiplier=M, acc_bounds=bounds)
    extra = set_requant(lay, M, bounds, alu_mul, vector)
    lay.params["vectors"] = vectors(vector, extra, o)
    lay.macs_per_item = int(w.size)      # per output pixel (conv) / per row (dense)


def set_requant(lay, M, bounds, alu_mul: bool, v0=None):
    """The requantization steps of a layer with multipliers ``M`` (one, or one per output channel) and
    accumulators bounded by ``bounds`` (per channel, or one), and where the accelerator's part ends on
    a config without MUL (``lay.params['split']``, sized for the values ``v0`` of the first vector);
    returns the extra vector operands (offset of v0, [v1, v2, ...]) for :func:`vectors`."""
    M = np.atleast_1d(np.asarray(M, np.float64))
    bounds = np.atleast_1d(np.asarray(bounds, np.int64))
    if np.all(M == M[0]):
        try:
            lay.steps, extra = requant_steps(float(M[0]), lay.out, int(bounds.max()), alu_mul)
        except NumericsError:
            lay.steps, extra = requant_steps(float(M[0]), lay.out, int(bounds.max()), True)
    else:
        lay.steps, extra = requant_steps_per_channel(M, lay.out, bounds)
    lay.params["split"] = None
    if not alu_mul and any(op == AluOp.MUL for op, _ in lay.steps):
        k = next(i for i, (op, _) in enumerate(lay.steps) if op == AluOp.MUL)
        v0 = np.zeros(M.size, np.int64) if v0 is None else np.asarray(v0, np.int64)
        lo, hi = value_range(lay.steps[:k], -int(bounds.max()), int(bounds.max()), vectors(v0, extra, v0.size))
        planes = next((p for p in (1, 2, 3, 4) if -(1 << (8 * p - 1)) <= lo and hi < 1 << (8 * p - 1)), 4)
        lay.params["split"] = (ops.Epilogue(tuple(lay.steps[:k]), planes), tuple(lay.steps[k:]))
    return extra


def accelerator_epilogue(lay) -> ops.Epilogue:
    """What the accelerator runs after the GEMMs: the whole requantization, or the part before the
    first MUL on a config without one."""
    split = lay.params["split"]
    return split[0] if split else lay.epilogue


def acc_range(lay) -> tuple[np.ndarray, np.ndarray]:
    """Per output channel, the interval of a conv / dense layer's int32 accumulators ``sum x w`` over every
    input of the input's type (padding is the zero point, a value of that type)."""
    flat = lay.params["weight"].reshape(lay.params["weight"].shape[0], -1).astype(np.int64)
    xmin, xmax = qrange(lay.inp[0].dtype)
    pos, neg = np.where(flat > 0, flat, 0).sum(axis=1), np.where(flat < 0, flat, 0).sum(axis=1)
    return pos * xmin + neg * xmax, pos * xmax + neg * xmin


def compact_epilogue(lay, keep_bias: bool = False) -> tuple[ops.Epilogue, np.ndarray]:
    """The accelerator's epilogue of a conv / dense layer and its vectors, the requantization in as few ALU
    passes as gives the same values (:func:`sw.ops.compact`): the reference keeps the steps as written.
    ``keep_bias``: the leading ``ADD v0`` stays (the GEMM may take it over, :func:`sw.ops.dense`). A split
    epilogue (no ALU MUL) is left as it is."""
    if lay.params["split"]:
        return lay.params["split"][0], lay.params["vectors"]
    memo = lay.params.setdefault("compact", {})
    if keep_bias not in memo:
        lo, hi = acc_range(lay)
        if keep_bias:
            lo, hi = lo + lay.params["vectors"][0], hi + lay.params["vectors"][0]
        steps, _, vecs = ops.compact(lay.steps, lay.params["vectors"], lo, hi, keep=int(keep_bias))
        memo[keep_bias] = (ops.Epilogue(tuple(steps)), vecs)
    return memo[keep_bias]


def alu_per_row(epi: ops.Epilogue, rows: int, blocks: int) -> float:
    """The ALU's cycles per accumulator row of ``epi`` as the current config
    runs it (:meth:`sw.ops.Epilogue.lowered`: passes of the post-processing unit where the config has it and they
    pay), on tiles of ``blocks`` channel blocks of ``rows`` accumulator rows each: its passes per row, and the POST
    instructions' fixed cost shared among the rows (:meth:`sw.ops.Epilogue.alu_cycles`)."""
    low = epi.lowered(current_config(), rows, blocks)
    n = max(1, rows * blocks)
    return low.alu_cycles(n, blocks) / n


def run_epilogue(lay, y: np.ndarray, vecs=None) -> np.ndarray:
    """The CPU's part of a split epilogue on the accelerator's read-back (channels on axis 1)."""
    split = lay.params["split"]
    if not split:
        return y
    return ops.Epilogue(split[1]).reference(y, lay.params["vectors"] if vecs is None else vecs, 1)


def describe_split(lay) -> str:
    split = lay.params["split"]
    if not split:
        return ""
    return (f"GEMMs and {len(split[0].steps)} ALU steps on VTA, read back in {split[0].planes} bytes; "
            f"{len(split[1])} steps from the first MUL on the CPU (the config has no ALU MUL)")
