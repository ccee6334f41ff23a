"""2-D pooling on the tensor ALU: the max or the sum of each window, then an epilogue (an average's
requantization), int8 in and out.

Each tile loads ``tc`` channel blocks of the input rows its output rows need into the acc SRAM (LOAD
ACC_8BIT, sign-extended), then reduces the windows into the tile's output rows with tensor ALU
instructions: the output rows are zeroed, the first tap added (a copy), and every tap combined with
``MAX`` (or ``ADD`` for a sum). The instructions run one of two ways, whichever needs fewer: one per tap
and channel block, its micro-op loops walking the output pixels (a small kernel over a large output),
or one per output pixel and channel block, its loops walking the window (a global pool: a 7x7 window
over one output pixel is one instruction per channel block, its 49 writes to one row forwarded in
order, docs/architecture.md §3.4). A tensor operand costs two ALU cycles per micro-op, so a pool costs
about ``2 k^2`` cycles per output row. The epilogue's steps follow (:meth:`Epilogue.actions`) and STORE
writes the low byte of each lane.

Padding is done on the host with ``pad_value`` (-128 for a max over int8, the zero point for an
average that counts the padding), because the LOAD pads with zeros only.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Literal, overload

import numpy as np
import numpy.typing as npt

from sw.isa import AluOp, MemId
from sw.ops.base import MAX_EXTENT, TileError, _check_vt, _finish, _halves, config
from sw.ops.epilogue import Epilogue, TileOperands, packed_epilogue
from sw.ops.kernels import Load, Store, _alu_tensor, _zero_rows
from sw.ops.layout import pack_conv_output, pack_layer_bias, unpack_conv_output
from sw.ops.schedule import _Tile, run_operator

__all__ = ["pool2d", "pool2d_ref"]

_MODES = {"max": AluOp.MAX, "sum": AluOp.ADD}


def pool2d_ref(x: npt.ArrayLike, kernel: int | Sequence[int], stride: int | Sequence[int] = 1,
               padding: int | Sequence[int] = 0, pad_value: int = 0, mode: str = "max") -> np.ndarray:
    """numpy: the int32 max or sum of each window of int8 ``x`` (N, C, H, W) padded with ``pad_value``."""
    (kh, kw), (sh, sw), (t, l, b, r) = _pool_args(kernel, stride, padding)
    xp = np.pad(np.asarray(x, np.int32), ((0, 0), (0, 0), (t, b), (l, r)), constant_values=pad_value)
    ho, wo = (xp.shape[2] - kh) // sh + 1, (xp.shape[3] - kw) // sw + 1
    taps = [xp[:, :, i:i + sh * (ho - 1) + 1:sh, j:j + sw * (wo - 1) + 1:sw] for i in range(kh) for j in range(kw)]
    return np.asarray(np.max(taps, axis=0) if mode == "max" else np.sum(taps, axis=0, dtype=np.int64)).astype(np.int32)


def _pool_args(kernel, stride, padding):
    def pair(v, name, lo):
        v = (v, v) if isinstance(v, (int, np.integer)) else tuple(v)
        if len(v) != 2 or any(not isinstance(e, (int, np.integer)) or e < lo for e in v):
            raise ValueError(f"{name} = {v!r}; allowed: an integer >= {lo} or two of them")
        return tuple(int(e) for e in v)

    k, s = pair(kernel, "kernel", 1), pair(stride, "stride", 1)
    p = (padding,) * 4 if isinstance(padding, (int, np.integer)) else tuple(padding)
    if len(p) != 4 or any(not isinstance(e, (int, np.integer)) or e < 0 for e in p):
        raise ValueError(f"padding = {padding!r}; allowed: an integer >= 0 or four (top, left, bottom, right)")
    return k, s, tuple(int(e) for e in p)


def _tile_shape(cb, ho, wo, kh, sh, wp, epi: Epilogue, cap):
    """(tc, th): channel blocks and output rows per tile, the most outputs whose input rows and epilogue rows
    (:meth:`Epilogue.acc_rows`) fit ``cap`` acc rows."""
    best = None
    for tc in range(cb, 0, -1):
        for th in range(ho, 0, -1):
            ih = (th - 1) * sh + kh
            if tc * ih * wp + epi.acc_rows(tc * th * wo, tc) <= cap and ih * wp <= MAX_EXTENT:
                if best is None or tc * th > best[0] * best[1]:
                    best = (tc, th)
                break
    if best is None:
        raise TileError(f"one channel block of {kh} input rows of width {wp} and one output row do not fit the "
                        f"{cap} acc rows of a virtual thread")
    return best


def _pool_tiles(cfg, vt, shape, op, epi: Epilogue, xd, pd, yd) -> list[_Tile]:
    """The tiles of a pool over packed int8 data (nb, cb, hp, wp) into (planes, nb, cb, ho, wo): each loads its
    input rows behind its epilogue's rows, zeroes its outputs and reduces the windows into them."""
    nb, cb, hp, wp, kh, kw, sh, sw, ho, wo = shape
    cap, bases = _halves(cfg, vt)["acc"]
    tc, th = _tile_shape(cb, ho, wo, kh, sh, wp, epi, cap)
    ACC8 = int(MemId.ACC_8BIT)
    per_tap = kh * kw <= th * wo                     # fewer instructions: one per tap, or one per output
    tiles = []
    for ti, (q, c0, y0) in enumerate(itertools.product(range(nb), range(0, cb, tc), range(0, ho, th))):
        nc, nh = min(tc, cb - c0), min(th, ho - y0)
        ih = (nh - 1) * sh + kh
        base = bases[ti % vt]
        rows = nc * nh * wo                          # outputs at base, [j][y][x]; inputs after the epilogue's rows
        inp = base + epi.acc_rows(rows, nc)
        first = ((q * cb + c0) * hp + y0 * sh) * wp
        if ih == hp and hp * wp <= MAX_EXTENT:       # whole channel blocks: one LOAD of nc runs
            comps = [Load(xd, first, hp * wp, nc, hp * wp, inp, ACC8)]
        else:
            comps = [Load(xd, first + j * hp * wp, wp, ih, wp, inp + j * ih * wp, ACC8) for j in range(nc)]
        comps += _zero_rows(base, rows)
        over_outputs = ((nh, wo, sh * wp), (wo, 1, sw))
        for j in range(nc):
            out, src = base + j * nh * wo, inp + j * ih * wp
            if per_tap or op == AluOp.MAX:           # the first tap copied into the zeroed outputs
                comps.append(_alu_tensor(out, src, over_outputs, AluOp.ADD))
            if per_tap:
                comps += [_alu_tensor(out, src + dy * wp + dx, over_outputs, op)
                          for dy, dx in itertools.product(range(kh), range(kw)) if dy or dx]
            else:                                    # every tap of the window into one output row
                comps += [_alu_tensor(out + oy * wo + ox, src + oy * sh * wp + ox * sw, ((kh, 0, wp), (kw, 0, 1)), op)
                          for oy, ox in itertools.product(range(nh), range(wo))]
        comps += epi.actions(base, rows, nc, ((nc, nh * wo, 1), (nh * wo, 1, 0)), TileOperands(pd, cb, c0, nc))
        stores = [Store(base + p * rows, yd, ((p * nb + q) * cb + c0) * ho * wo + y0 * wo, nh * wo, nc, ho * wo)
                  for p in range(epi.planes)]
        tiles.append(_Tile(acc=ti % vt, computes=comps, stores=stores))
    return tiles


@overload
def pool2d(x: npt.ArrayLike, kernel: int | Sequence[int], stride: int | Sequence[int] = ...,
           padding: int | Sequence[int] = ..., pad_value: int = ..., mode: str = ...,
           epilogue: Epilogue | Sequence | None = ..., vectors: npt.ArrayLike | None = ...,
           virtual_threads: int = ..., return_counters: Literal[False] = ...) -> np.ndarray: ...
@overload
def pool2d(x: npt.ArrayLike, kernel: int | Sequence[int], stride: int | Sequence[int] = ...,
           padding: int | Sequence[int] = ..., pad_value: int = ..., mode: str = ...,
           epilogue: Epilogue | Sequence | None = ..., vectors: npt.ArrayLike | None = ...,
           virtual_threads: int = ..., *, return_counters: Literal[True]) -> tuple[np.ndarray, dict[str, int]]: ...
@overload
def pool2d(x: npt.ArrayLike, kernel: int | Sequence[int], stride: int | Sequence[int] = ...,
           padding: int | Sequence[int] = ..., pad_value: int = ..., mode: str = ...,
           epilogue: Epilogue | Sequence | None = ..., vectors: npt.ArrayLike | None = ...,
           virtual_threads: int = ..., return_counters: bool = ...) -> np.ndarray | tuple[np.ndarray, dict[str, int]]: ...


def pool2d(x: npt.ArrayLike, kernel: int | Sequence[int], stride: int | Sequence[int] = 1,
           padding: int | Sequence[int] = 0, pad_value: int = 0, mode: str = "max",
           epilogue: Epilogue | Sequence | None = None, vectors: npt.ArrayLike | None = None,
           virtual_threads: int = 1, return_counters: bool = False) -> np.ndarray | tuple[np.ndarray, dict[str, int]]:
    """Pool int8 ``x`` (N, C, H, W) on the accelerator: ``mode`` 'max' or 'sum' over each ``kernel`` window
    (``stride``, ``padding`` (top, left, bottom, right) filled with ``pad_value``), then ``epilogue`` (an
    :class:`~sw.ops.epilogue.Epilogue` or its steps; default none) with ``vectors`` (C,) or (V, C) int32;
    returns int8 (N, C, Ho, Wo), the low byte of each result (int32 planes for a multi-plane epilogue)."""
    _check_vt(virtual_threads)
    if mode not in _MODES:
        raise ValueError(f"mode = {mode!r}; allowed: {', '.join(map(repr, _MODES))}")
    (kh, kw), (sh, sw), (t, l, b, r) = _pool_args(kernel, stride, padding)
    x = np.asarray(x)
    if x.ndim != 4 or x.dtype != np.int8:
        raise ValueError(f"x has shape {x.shape} and type {x.dtype}; expected int8 (N, C, H, W)")
    if not -128 <= pad_value <= 127:
        raise ValueError(f"pad_value = {pad_value}; allowed [-128, 127] (an int8)")
    cfg = config()
    n, c = x.shape[:2]
    xp = np.pad(x, ((0, 0), (0, 0), (t, b), (l, r)), constant_values=pad_value) if t or l or b or r else x
    hp, wp = xp.shape[2:]
    ho, wo = (hp - kh) // sh + 1, (wp - kw) // sw + 1
    if ho < 1 or wo < 1:
        raise ValueError(f"kernel {kh}x{kw} is larger than the padded input {hp}x{wp}")
    epi = Epilogue.of(epilogue) or Epilogue(())
    if epi.residual is not None:
        raise ValueError("a pool's epilogue takes no residual")
    data = pack_conv_output(xp, cfg)                     # (nb, cb, Hp, Wp, BATCH, BLOCK_OUT) int8
    nb, cb = data.shape[:2]
    epi, vec = packed_epilogue(epi, 0, None if vectors is None else pack_layer_bias(vectors, c, cb, cfg), False,
                               cb, cfg, rows=ho * wo)
    shape = (nb, cb, hp, wp, kh, kw, sh, sw, ho, wo)
    y, counters = run_operator(data, None, vec, epi, (nb, cb, ho, wo, cfg.BATCH, cfg.BLOCK_OUT),
                               lambda xd, _, pd, yd, __: _pool_tiles(cfg, virtual_threads, shape, _MODES[mode], epi,
                                                                     xd, pd, yd), True)
    planes = y[None] if epi.planes == 1 else y
    return _finish(epi.assemble(np.stack([unpack_conv_output(p, n, c) for p in planes])), counters, return_counters)
