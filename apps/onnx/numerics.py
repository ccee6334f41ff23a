"""Integer requantization as VTA's tensor ALU computes it: the steps, how they are chosen, and numpy.

A quantized layer's real result is ``acc * M`` in output units, where ``acc`` is the exact int32
accumulator (with the zero-point and bias corrections folded in) and ``M = s_in * s_w / s_out`` is a
float that is rarely a power of two. VTA's ALU works on 32-bit lanes with 16-bit signed immediates
and five operations (MIN, MAX, ADD, SHR, MUL), so the multiplication by ``M`` is done in fixed point
as a short list of ALU steps ``(AluOp, operand)`` (an :class:`sw.ops.Epilogue`), applied in order,
in place, to every accumulator:

1. ``ADD vector`` -- the per-channel int32 bias (the layer's bias, the zero-point correction and the
   rounding constant of step 2), broadcast along the spatial axes;
2. ``SHR s1`` -- drop low bits so the product of step 4 fits in 32 bits;
3. ``MAX lo``, ``MIN hi`` -- clip to a range just wider than the one that saturates anyway (only when
   the product could otherwise overflow), so saturation is unchanged;
4. ``MUL m0`` -- the fixed-point multiplier, ``m0 ~= M * 2**(s1 + s2)``, ``m0 < 2**15``;
5. ``SHR a; ADD 2**14; SHR 15`` (or ``ADD 2**(s2-1); SHR s2`` when s2 <= 15) -- a rounding shift by
   ``s2`` (floor of a floor is the floor of the whole, so the split shift is exact: round half up);
6. ``ADD zero_point``; ``MAX qmin``; ``MIN qmax`` -- the output zero point and saturation to int8
   [-128, 127] or uint8 [0, 255]; STORE writes the low 8 bits, read back as int8 or uint8.

:func:`requant_steps` chooses ``s1``, ``s2`` and ``m0`` by brute force to minimise the worst-case
error (at most about 2**-8 output units; docs/numerics.md), under the constraints that every
immediate fits 16 signed bits and no intermediate leaves 32 bits. ``Epilogue(steps).reference`` is
the numpy definition, with exactly the golden model's ALU semantics (int32 wrap-around, arithmetic
shift).

Configs without the ALU's MUL get :class:`NumericsError`; the partitioner then keeps that layer on
the CPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sw.fsim.alu import alu_op
from sw.isa import AluOp
from sw.ops.epilogue import IMM_MAX, IMM_MIN, AluStep, Epilogue, steps_multiplier

__all__ = ["QParams", "canonical", "to_onnx_dtype", "from_onnx_dtype",
           "NumericsError", "requant_steps", "requant_steps_per_channel", "value_range", "rescale_steps",
           "rescale_reference", "steps_error", "table_steps",
           "qrange", "quantize_float", "dequantize"]

_I32 = 1 << 31
ADD, SHR, MIN, MAX, MUL = AluOp.ADD, AluOp.SHR, AluOp.MIN, AluOp.MAX, AluOp.MUL


class NumericsError(ValueError):
    """A requantization that VTA's ALU cannot do on this config (e.g. no MUL)."""


@dataclass(frozen=True)
class QParams:
    """Per-tensor quantization: real = scale * (q - zero_point); dtype 'int8' or 'uint8'."""
    scale: float
    zero_point: int
    dtype: str = "int8"

    def __post_init__(self):
        if self.dtype not in ("int8", "uint8"):
            raise ValueError(f"dtype = {self.dtype!r}; allowed: 'int8', 'uint8'")
        lo, hi = qrange(self.dtype)
        if not lo <= self.zero_point <= hi:
            raise ValueError(f"zero_point = {self.zero_point}; allowed [{lo}, {hi}] for {self.dtype}")
        if not (self.scale > 0 and math.isfinite(self.scale)):
            raise ValueError(f"scale = {self.scale}; must be a positive finite number")

    @property
    def np_dtype(self):
        return np.int8 if self.dtype == "int8" else np.uint8


def canonical(qp: QParams) -> QParams:
    """The int8 form of a tensor's quantization (uint8 -> int8 with the zero point moved by -128)."""
    return qp if qp.dtype == "int8" else QParams(qp.scale, qp.zero_point - 128, "int8")


def to_onnx_dtype(q: np.ndarray, qp: QParams) -> np.ndarray:
    """Canonical int8 values back to the tensor's ONNX type (uint8 adds 128)."""
    return q if qp.dtype == "int8" else (q.astype(np.int16) + 128).astype(np.uint8)


def from_onnx_dtype(q: np.ndarray, qp: QParams) -> np.ndarray:
    return q.astype(np.int8) if qp.dtype == "int8" else (q.astype(np.int16) - 128).astype(np.int8)


def qrange(dtype: str) -> tuple[int, int]:
    """(qmin, qmax) of 'int8' or 'uint8'."""
    if dtype == "int8":
        return -128, 127
    if dtype == "uint8":
        return 0, 255
    raise ValueError(f"dtype = {dtype!r}; allowed: 'int8', 'uint8'")


def quantize_float(x, qp: QParams) -> np.ndarray:
    """ONNX QuantizeLinear as onnxruntime computes it: float32 x / scale, round half to even, + zero
    point, saturate."""
    lo, hi = qrange(qp.dtype)
    q = np.rint(np.asarray(x, np.float32) / np.float32(qp.scale)).astype(np.float64) + qp.zero_point
    return np.clip(q, lo, hi).astype(qp.np_dtype)


def dequantize(q, qp: QParams) -> np.ndarray:
    """ONNX DequantizeLinear in float32."""
    return ((np.asarray(q, np.int32) - qp.zero_point).astype(np.float32) * np.float32(qp.scale))


def _shift_steps(s2: int) -> list[AluStep]:
    if s2 == 0:
        return []
    if s2 <= 15:
        return [(ADD, 1 << (s2 - 1)), (SHR, s2)]
    return [(SHR, s2 - 15), (ADD, 1 << 14), (SHR, 15)]


def _shift_zp_steps(S: int, zp: int, lo: int, hi: int) -> list[AluStep]:
    """``round(x / 2^S) + zp`` (round half up) for x in [lo, hi], in as few ALU passes as exactly gives it:

    - ``ADD (2^(S-1) + zp 2^S), SHR S`` when that constant fits an immediate;
    - else ``SHR (S - 8), ADD (2^7 + zp 2^8), SHR 8`` (S >= 8): a floor of a floor is the floor of the
      whole, and ``floor(y + zp) = floor(y) + zp``, so this is the same integer as the rounding shift
      followed by ``ADD zp``, one pass shorter;
    - else the rounding shift, then ``ADD zp``.
    The merged forms are used only where x plus the constant cannot leave int32."""
    def fits(c, a, b):
        return IMM_MIN <= c <= IMM_MAX and -_I32 <= a + min(c, 0) and b + max(c, 0) < _I32

    if S > 0:
        c = (1 << (S - 1)) + zp * (1 << S)
        if fits(c, lo, hi):
            return [(ADD, c), (SHR, S)]
        c = (1 << 7) + zp * (1 << 8)
        if S >= 8 and fits(c, lo >> (S - 8), hi >> (S - 8)):
            return ([(SHR, S - 8)] if S > 8 else []) + [(ADD, c), (SHR, 8)]
    return _shift_steps(S) + ([(ADD, zp)] if zp else [])


_K = np.arange(24, dtype=np.int64)[:, None]                 # pre-shifts k (rows)
_M2 = np.arange(1, 257, dtype=np.int64)[None, :]              # second multipliers m2 (columns)


def _floor_log2(x: np.ndarray) -> np.ndarray:
    """``math.floor(math.log2(x))`` of each element, as Python computes it (numpy's log2 may differ in the last
    place: where its result is near an integer, Python's is used)."""
    f = np.log2(x)
    out = np.floor(f).astype(np.int64)
    near = np.abs(f - np.rint(f)) < 1e-9
    out[near] = [math.floor(math.log2(v)) for v in x[near].tolist()]
    return out


def _search(M: float, T: int, qmin: int, qmax: int):
    """(error, k, S, m1, m2) of the most precise two-multiply form for values |t| <= T, or None: for each
    pre-shift k < 24 and second multiplier m2 in [1, 256], the largest S <= 30 whose first multiplier
    ``m1 = round(M 2^(k+S) / m2)`` fits ``m1max`` and keeps the products in 31 bits; the first (k, m2) of the
    least error wins (one 1e-15 below the best so far replaces it)."""
    r1 = np.where(_K > 0, np.left_shift(1, np.maximum(_K - 1, 0)), 0)
    m1max = np.minimum(IMM_MAX, (_I32 - 1 - r1) // max(T, 1))                 # (24, 1)
    m2f = _M2.astype(np.float64)
    with np.errstate(divide="ignore"):
        S = _floor_log2(np.maximum(m1max, 1) * m2f / (M * np.exp2(_K.astype(np.float64))))
    ok = (m1max >= 1) & (S >= 0)
    S = np.minimum(S, 40)

    def first_multiplier(S):
        return np.rint(M * np.exp2((_K + S).astype(np.float64)) / m2f)

    m1 = first_multiplier(S)
    while True:                         # the largest S with m1 <= m1max
        over = ok & (m1 > m1max) & (S > 0)
        if not over.any():
            break
        S = np.where(over, S - 1, S)
        m1 = np.where(over, first_multiplier(S), m1)
    ok &= (m1 >= 1) & (S <= 30)
    m1i = m1.astype(np.int64)
    p2 = (T * m1i + r1) // np.left_shift(1, _K) + 1
    ok &= p2 * _M2 + np.where(S > 0, np.left_shift(1, np.maximum(S - 1, 0)), 0) < _I32
    err = np.where(_K > 0, 0.5 * m2f / np.exp2(S.astype(np.float64)), 0.0) + \
        (qmax - qmin + 2) * np.abs(m1 * m2f / np.exp2((_K + S).astype(np.float64)) - M) / M
    idx = np.flatnonzero(ok)            # row-major: k, then m2, the order of the search
    if not idx.size:
        return None
    e = err.ravel()[idx]
    low = e <= np.minimum.accumulate(e)         # in order, only a running minimum can be 1e-15 below the best
    best = None
    for i, ei in zip(idx[low].tolist(), e[low].tolist()):
        if best is None or ei < best[0] - 1e-15:
            k, j = divmod(i, 256)
            best = (ei, k, int(S[k, j]), int(m1i[k, j]), j + 1)
    return best


def _exact_clip(middle, lo, hi, bound, qmin: int, qmax: int, vectors):
    """Clip bounds that make the final saturation unnecessary, or None.

    ``middle`` (the steps after the clip: multiplies, rounding shifts, zero point) is monotonic, so with
    ``lo' = max{t: f(t) <= qmin}`` and ``hi' = min{t: f(t) >= qmax}``, searched per channel among the values the
    clip can pass (``[max(lo, -bound), min(hi, bound)]``, where ``|acc + v0| <= bound``), ``f(clip(t, lo', hi'))``
    equals ``saturate(f(clip(t, lo, hi)))`` for every reachable t, provided that ``f(lo') = qmin`` and
    ``f(hi') = qmax`` exactly (a multiplier above 1 can step over them: then None). A side the channel cannot
    saturate on keeps the end of that interval. Saves the two passes of the saturation."""
    bound = np.asarray(bound, np.int64)
    lo, hi = np.maximum(np.asarray(lo, np.int64), -bound), np.minimum(np.asarray(hi, np.int64), bound)
    epilogue = Epilogue(middle)

    def f(t):
        return epilogue.apply(t, vectors, channel_axis=0).astype(np.int64)

    def first(pred):
        """Per channel, the smallest t in [lo, hi] with pred(f(t)) (pred monotonic: false, then true), or hi."""
        a, b = lo.copy(), hi.copy()
        while np.any(b - a > 1):
            mid = (a + b) // 2
            ok = pred(f(mid))
            a, b = np.where(ok, a, mid), np.where(ok, mid, b)
        return np.where(pred(f(a)), a, b)
    new_hi = first(lambda y: y >= qmax)
    new_lo = first(lambda y: y > qmin) - 1
    new_lo = np.where(f(lo) > qmin, lo, new_lo)              # never as low as qmin: nothing to clip
    new_hi = np.where(f(hi) < qmax, hi, new_hi)              # never as high as qmax
    y_lo, y_hi = f(new_lo), f(new_hi)
    if np.any((y_lo != qmin) & (f(lo) <= qmin)) or np.any((y_hi != qmax) & (f(hi) >= qmax)):
        return None
    return new_lo, new_hi


def requant_steps(multiplier: float, out: QParams, acc_bound: int, alu_mul: bool = True):
    """ALU steps that map accumulators ``acc`` (|acc + v0| <= acc_bound) to ``round(acc * M) + zp``
    saturated to the output type.

    Returns (steps, extra): ``extra`` = (offset to add to vector v0, clip vectors) where the clip
    vectors are the constants of the operands 'v1' (lower bound) and 'v2' (upper bound) when they do
    not fit an immediate (else ``()``). Raises :class:`NumericsError` when ``alu_mul`` is False and
    ``M`` is not a power of two.
    """
    M = float(multiplier)
    if not (M > 0 and math.isfinite(M)):
        raise NumericsError(f"requantization multiplier {M}; must be positive and finite")
    qmin, qmax = qrange(out.dtype)
    zp = out.zero_point
    tail = [(ADD, zp), (MAX, qmin), (MIN, qmax)]
    m_exp = math.frexp(M)
    if not alu_mul:
        if m_exp[0] != 0.5 or M > 1:
            raise NumericsError(f"requantization multiplier {M:.6g} is not a power of two <= 1 and the "
                                f"config has no ALU MUL (ALU_MUL = 0)")
        s = -(m_exp[1] - 1)
        return [(ADD, "v0")] + _shift_zp_steps(s, zp, -acc_bound, acc_bound) + tail[1:], (0, ())
    lo = math.floor((qmin - zp - 2) / M)
    hi = math.ceil((qmax - zp + 2) / M)
    unclipped = _search(M, acc_bound, qmin, qmax)
    clip = acc_bound > min(-lo, hi)
    best = unclipped
    if clip:
        clipped = _search(M, max(-lo, hi), qmin, qmax)
        # clipping costs two or four ALU passes per row: only when it buys needed precision
        if unclipped is None or (clipped is not None and unclipped[0] > max(clipped[0], 2.0 ** -12)):
            best = clipped
        else:
            clip = False
    if best is None:
        raise NumericsError(f"no fixed-point form of multiplier {M:.6g} fits VTA's 32-bit ALU with 16-bit "
                            f"immediates")
    _, k, S, m1, m2 = best
    middle = [(MUL, m1)] + _shift_steps(k) + ([(MUL, m2)] if m2 != 1 else [])
    x_lo, x_hi = value_range([(MAX, lo), (MIN, hi)] if clip else [], -acc_bound, acc_bound)
    x_lo, x_hi = value_range(middle, x_lo, x_hi)
    middle += _shift_zp_steps(S, zp, x_lo, x_hi)
    saturate = [(MAX, qmin), (MIN, qmax)]
    exact = _exact_clip(middle, lo, hi, acc_bound, qmin, qmax, []) if clip else None
    if exact is not None:               # the clip bounds where the output saturates: no saturation passes
        lo, hi = int(exact[0]), int(exact[1])
        saturate = []
    steps, vectors = [(ADD, "v0")], ()
    if clip:
        if IMM_MIN <= lo and hi <= IMM_MAX:
            steps += [(MAX, lo), (MIN, hi)]
        else:
            steps += [(MAX, "v1"), (MIN, "v2")]
            vectors = (lo, hi)
    return steps + middle + saturate, (0, vectors)


def _search_channels(Ms: np.ndarray, Ts: np.ndarray, qmin: int, qmax: int, m2max: int = 64):
    """(error, k, S, m1 (C,), m2 (C,)) of the most precise two-multiply form with per-channel
    multipliers (vector operands: full int32) and shifts common to every channel (immediates), for
    values |t_c| <= T_c; the error is the worst channel's. None when nothing fits."""
    Ms = np.asarray(Ms, np.float64)
    Ts = np.maximum(np.asarray(Ts, np.int64), 1)
    m2 = np.arange(1, m2max + 1, dtype=np.int64)[None]
    rows = np.arange(len(Ms))
    best = None
    for k in range(0, 24):
        r1 = (1 << (k - 1)) if k else 0
        m1max = (_I32 - 1 - r1) // Ts                                       # (C,)
        if np.any(m1max < 1):
            continue
        s_top = int(np.floor(np.log2(m1max * m2max / (Ms * 2.0 ** k))).min())
        for S in range(max(0, s_top - 3), min(s_top, 30) + 1):
            m1 = np.rint(Ms[:, None] * 2.0 ** (k + S) / m2)                 # (C, m2max), float
            ok = (m1 >= 1) & (m1 <= m1max[:, None])
            m1 = np.where(ok, m1, 1).astype(np.int64)
            p2 = (Ts[:, None] * m1 + r1) // (1 << k) + 1
            ok &= p2 * m2 + ((1 << (S - 1)) if S else 0) < _I32
            err = (0.5 * m2 / 2.0 ** S if k else 0.0) + \
                (qmax - qmin + 2) * np.abs(m1 * m2 / 2.0 ** (k + S) - Ms[:, None]) / Ms[:, None]
            err = np.where(ok, err, np.inf)
            j = np.argmin(err, axis=1)
            worst = float(err[rows, j].max())
            if np.isfinite(worst) and (best is None or worst < best[0] - 1e-15):
                best = (worst, k, S, m1[rows, j], m2[0, j])
    return best


def requant_steps_per_channel(multipliers, out: QParams, acc_bounds) -> tuple[list[AluStep], tuple]:
    """:func:`requant_steps` for per-channel multipliers ``M_c`` (per-channel weight scales): the
    same form, with the clip bounds and both multipliers as per-channel vectors (v1, v2: clip; v3,
    v4: multipliers) and the shifts shared by all channels. Needs the ALU's MUL.

    Returns (steps, extra) with ``extra`` = (0, [v1, v2, v3, v4]) (arrays over channels)."""
    Ms = np.asarray(multipliers, np.float64).ravel()
    if not np.all((Ms > 0) & np.isfinite(Ms)):
        raise NumericsError(f"per-channel requantization multipliers must be positive and finite "
                            f"(got min {Ms.min():.6g})")
    bounds = np.broadcast_to(np.asarray(acc_bounds, np.int64), Ms.shape)
    qmin, qmax = qrange(out.dtype)
    zp = out.zero_point
    lo = np.floor((qmin - zp - 2) / Ms).astype(np.int64)
    hi = np.ceil((qmax - zp + 2) / Ms).astype(np.int64)
    clip = bool(np.any(bounds > np.minimum(-lo, hi)))
    Ts = np.minimum(bounds, np.maximum(-lo, hi)) if clip else bounds
    best = _search_channels(Ms, Ts, qmin, qmax)
    if best is None:
        raise NumericsError(f"no fixed-point form of the per-channel multipliers {Ms.min():.6g}..{Ms.max():.6g} "
                            f"fits VTA's 32-bit ALU")
    _, k, S, m1, m2 = best
    steps: list[AluStep] = [(ADD, "v0")]
    if clip:
        steps += [(MAX, "v1"), (MIN, "v2")]
    steps.append((MUL, "v3"))
    steps += _shift_steps(k)
    if np.any(m2 != 1):
        steps.append((MUL, "v4"))
    vecs = [np.zeros(1, np.int64), lo, hi, m1, m2]
    x_lo, x_hi = value_range(steps[1:], -int(bounds.max()), int(bounds.max()), vecs)
    steps += _shift_zp_steps(S, zp, x_lo, x_hi)
    exact = _exact_clip(steps[3:], lo, hi, bounds, qmin, qmax, vecs) if clip else None
    if exact is not None:               # the clip bounds where the output saturates: no saturation passes
        return steps, (0, [exact[0], exact[1], m1, m2])
    return steps + [(MAX, qmin), (MIN, qmax)], (0, [lo, hi, m1, m2])


def value_range(steps, lo: int, hi: int, vectors=None) -> tuple[int, int]:
    """The interval the int32 values of ``steps`` stay in for inputs in [lo, hi] (ADD, MIN, MAX, SHR,
    MUL by an immediate or a vector's extremes), for choosing how many bytes to read back."""
    for op, v in steps:
        if isinstance(v, str):
            vec = np.asarray(vectors[int(v[1:])], np.int64)
            a, b = int(vec.min()), int(vec.max())
        else:
            a = b = int(v)
        if op == ADD:
            lo, hi = lo + a, hi + b
        elif op == MIN:
            lo, hi = min(lo, a), min(hi, b)
        elif op == MAX:
            lo, hi = max(lo, a), max(hi, b)
        elif op == SHR:
            lo, hi = (lo >> a, hi >> a) if a >= 0 else (lo << -a, hi << -a)
        else:
            c = [lo * a, lo * b, hi * a, hi * b]
            lo, hi = min(c), max(c)
    return lo, hi


def _factor(target: float, m2max: int):
    """m1 * m2 closest to ``target`` with 1 <= m1 <= IMM_MAX, 1 <= m2 <= m2max."""
    best = None
    for m2 in range(1, m2max + 1):
        m1 = min(IMM_MAX, max(1, round(target / m2)))
        e = abs(m1 * m2 - target)
        if best is None or e < best[0]:
            best = (e, m1, m2)
    return best[1], best[2]


def rescale_steps(multipliers, zero_points, out: QParams):
    """Integer rescaling of one or more int8 inputs into ``out`` (Add, Sum, or a ReLU / pool / flatten whose
    output quantization differs): ``round(sum_i (q_i - z_i) * M_i) + zp_out``, saturated.

    Returns (factors, steps_tail): input i is offset by ``-z_i`` and multiplied by ``m1_i`` then
    ``m2_i`` (two immediates, so the product approximates ``M_i 2**S`` to about 21 bits), the
    products are summed, then ``steps_tail`` (rounding shift by S, zero point, saturation).
    """
    ms = [float(m) for m in multipliers]
    qmin, qmax = qrange(out.dtype)
    if min(ms) <= 0:
        raise NumericsError(f"rescale multipliers {ms}; must be positive")
    # |q - z| <= 255: each product <= 255 * M_i 2^S, their sum and the rounding constant < 2^31
    S = math.floor(math.log2((_I32 // 2) / (256 * sum(ms))))
    S = min(S, 30, math.floor(math.log2(IMM_MAX * 64 / max(ms))))
    if S < 0:
        raise NumericsError(f"rescale multipliers {ms} are too large for 32-bit lanes")
    factors = [_factor(m * 2.0 ** S, 64) for m in ms]
    if any(m1 * m2 == 0 for m1, m2 in factors):
        raise NumericsError(f"rescale multipliers {ms}: one rounds to zero")
    x_max = 256 * sum(m1 * m2 for m1, m2 in factors)
    tail = _shift_zp_steps(S, out.zero_point, -x_max, x_max) + [(MAX, qmin), (MIN, qmax)]
    return factors, tail


def rescale_reference(xs, zero_points, factors, tail) -> np.ndarray:
    """numpy of a rescale: sum_i ((x_i - z_i) * m1_i * m2_i) then the tail steps, int8."""
    acc = None
    for x, z, (m1, m2) in zip(xs, zero_points, factors):
        t = alu_op(MUL, alu_op(MUL, alu_op(ADD, np.asarray(x, np.int32), -int(z)), m1), m2)
        acc = t if acc is None else alu_op(ADD, acc, t)
    return Epilogue(tuple(tail)).reference(acc)


def steps_error(multiplier: float, steps) -> float:
    """The effective multiplier of ``steps`` relative to ``multiplier`` minus 1 (for reports)."""
    return steps_multiplier(steps) / multiplier - 1


def _pairs(x, t):
    """(dx > 0, dt) of every pair of points whose values are not saturated (a saturated value's bound is
    one-sided: the final check covers it), or None with fewer than two."""
    m = (t > -128) & (t < 127)
    x, t = x[m], t[m]
    if x.size < 2:
        return None
    i, j = np.triu_indices(x.size, 1)
    dx, dt = x[j] - x[i], t[j] - t[i]
    keep = dx != 0
    sign = np.sign(dx[keep])
    return dx[keep] * sign, dt[keep] * sign


def _slope_range(pairs, S: int):
    """[lo, hi] of the integer slopes A for which some C puts ``floor((x A + C) / 2^S)`` on the values at every
    pair of points, or None when empty."""
    if pairs is None:
        return -(1 << 24), 1 << 24
    dx, dt = pairs
    lo = int((-(-((dt - 1) * (1 << S) + 1) // dx)).max())            # ceil
    hi = int((((dt + 1) * (1 << S) - 1) // dx).min())
    return (lo, hi) if lo <= hi else None


def _near_middle(lo: int, hi: int, n: int = 24):
    mid = (lo + hi) // 2
    return sorted(range(max(lo, mid - n), min(hi, mid + n) + 1), key=lambda a: abs(a - mid))


def table_steps(table, lo: int, hi: int, knee: int):
    """ALU steps that compute a pointwise int8 function given by its 256-entry ``table`` (index q + 128) for
    every q in [lo, hi], or None: ``x = q - knee``, then ``max(x A, x B)`` (``min`` when B > A: two slopes
    meeting at the knee, a LeakyRelu or PRelu; one when A = B), ``+ C``, ``>> S``, saturated to int8.

    For each shift S the slopes A (x >= 0) and B (x <= 0) that pairs of points allow are bounded exactly
    (:func:`_slope_range`), and for a pair (A, B) the constraints ``T(q) 2^S <= g(q) + C < (T(q) + 1) 2^S``
    (one-sided where T saturates) bound C; a C inside every bound is exact on every q of the interval, and the
    result is checked once more. Returns ``(pre, branch, post)``: steps before the copy, the copy's steps (None:
    no copy) and the steps after."""
    T = np.asarray(table, np.int64)
    q = np.arange(lo, hi + 1, dtype=np.int64)
    t = T[q + 128]
    x = q - knee
    whole, pos, neg = _pairs(x, t), _pairs(x[x >= 0], t[x >= 0]), _pairs(x[x <= 0], t[x <= 0])
    for two in (False, True):
        for S in range(22, -1, -1):
            if two:
                ra, rb = _slope_range(pos, S), _slope_range(neg, S)
                if ra is None or rb is None:
                    continue
                pairs = [(a, b) for a in _near_middle(*ra, 6) for b in _near_middle(*rb, 6) if a != b]
            else:
                r = _slope_range(whole, S)
                if r is None:
                    continue
                pairs = [(a, a) for a in _near_middle(*r)]
            for A, B in pairs:
                if max(abs(A), abs(B)) * 256 >= 1 << 30:
                    continue
                g = np.maximum(x * A, x * B) if A >= B else np.minimum(x * A, x * B)
                low = np.where(t > -128, t * (1 << S) - g, -(1 << 40))
                high = np.where(t < 127, (t + 1) * (1 << S) - 1 - g, 1 << 40)
                c_lo, c_hi = int(low.max()), int(high.min())
                if c_lo > c_hi:
                    continue
                C = c_lo + (c_hi - c_lo) // 2
                if max(abs(int(g.min()) + C), abs(int(g.max()) + C)) >= 1 << 31 or \
                        not np.array_equal(np.clip((g + C) >> S, -128, 127), t):
                    continue
                post = [(ADD, C), (SHR, S), (MAX, -128), (MIN, 127)]
                pre = [(ADD, -knee)]
                if A == B:
                    return pre, None, [(MUL, A)] + post
                if min(A, B) == 0 and max(A, B) > 0:         # one side flat: a clip, no copy
                    return pre, None, [(MAX if A > B else MIN, 0), (MUL, max(A, B))] + post
                return pre, [(MUL, B)], [(MUL, A), (MAX if A >= B else MIN, "b")] + post
    return None
