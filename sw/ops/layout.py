"""VTA's blocked tensor layouts: packing operands for the SRAMs and unpacking results."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from sw.config import Config
from sw.ops.base import cdiv, config
from sw.ops.epilogue import vectors_2d


def pack_dense_data(x: npt.ArrayLike, cfg: Config | None = None) -> np.ndarray:
    """(N, K) int8 -> (N/BATCH, K/BLOCK_IN, BATCH, BLOCK_IN), zero-padded."""
    cfg = cfg or config()
    x = np.asarray(x)
    n, k = x.shape
    B, I = cfg.BATCH, cfg.BLOCK_IN
    nb, kb = cdiv(n, B), cdiv(k, I)
    p = np.zeros((nb * B, kb * I), dtype=np.int8)
    p[:n, :k] = x
    return np.ascontiguousarray(p.reshape(nb, B, kb, I).transpose(0, 2, 1, 3))


def pack_dense_weight(w: npt.ArrayLike, cfg: Config | None = None, m_blocks: int | None = None) -> np.ndarray:
    """(M, K) int8 -> (M/BLOCK_OUT, K/BLOCK_IN, BLOCK_OUT, BLOCK_IN), zero-padded."""
    cfg = cfg or config()
    w = np.asarray(w)
    m, k = w.shape
    O, I = cfg.BLOCK_OUT, cfg.BLOCK_IN
    mb, kb = max(cdiv(m, O), m_blocks or 0), cdiv(k, I)
    p = np.zeros((mb * O, kb * I), dtype=np.int8)
    p[:m, :k] = w
    return np.ascontiguousarray(p.reshape(mb, O, kb, I).transpose(0, 2, 1, 3))


def unpack_dense_output(y: np.ndarray, n: int, m: int) -> np.ndarray:
    """(N/BATCH, M/BLOCK_OUT, BATCH, BLOCK_OUT) -> (N, M), cropped."""
    nb, mb, B, O = y.shape
    return np.ascontiguousarray(y.transpose(0, 2, 1, 3).reshape(nb * B, mb * O)[:n, :m])


def pack_bias(bias: npt.ArrayLike, blocks: int, cfg: Config | None = None) -> np.ndarray:
    """Per-channel int32 bias (C,) -> (blocks, BATCH, BLOCK_OUT), repeated over the batch lanes.

    An already packed (blocks, BATCH, BLOCK_OUT) array is returned as int32 unchanged.
    """
    cfg = cfg or config()
    bias = np.asarray(bias)
    B, O = cfg.BATCH, cfg.BLOCK_OUT
    if bias.ndim == 3:
        if bias.shape != (blocks, B, O):
            raise ValueError(f"packed bias has shape {bias.shape}; expected {(blocks, B, O)}")
        return np.ascontiguousarray(bias, dtype=np.int32)
    if bias.ndim != 1 or bias.shape[0] > blocks * O:
        raise ValueError(f"bias has shape {bias.shape}; expected (C,) with C <= {blocks * O} or packed "
                         f"{(blocks, B, O)}")
    p = np.zeros(blocks * O, dtype=np.int32)
    p[:bias.shape[0]] = bias
    return np.ascontiguousarray(np.broadcast_to(p.reshape(blocks, 1, O), (blocks, B, O)))


def _pack_nchw(x: npt.ArrayLike, batch: int, block: int, blocks: int = 0) -> np.ndarray:
    """(N, C, H, W) int8 -> (N/batch, C/block, H, W, batch, block), zero-padded (to ``blocks`` channel blocks
    at least)."""
    x = np.asarray(x)
    n, c, h, w = x.shape
    nb, cb = cdiv(n, batch), max(cdiv(c, block), blocks)
    p = np.zeros((nb * batch, cb * block, h, w), dtype=np.int8)
    p[:n, :c] = x
    return np.ascontiguousarray(p.reshape(nb, batch, cb, block, h, w).transpose(0, 2, 4, 5, 1, 3))


def pack_conv_data(x: npt.ArrayLike, cfg: Config | None = None) -> np.ndarray:
    """(N, C, H, W) int8 -> NCHW{BATCH}n{BLOCK_IN}c: (N/BATCH, C/BLOCK_IN, H, W, BATCH, BLOCK_IN)."""
    cfg = cfg or config()
    return _pack_nchw(x, cfg.BATCH, cfg.BLOCK_IN)


def pack_conv_weight(w: npt.ArrayLike, cfg: Config | None = None, o_blocks: int | None = None) -> np.ndarray:
    """(O, C, kh, kw) int8 -> OIHW{BLOCK_OUT}o{BLOCK_IN}i: (O/BLOCK_OUT, C/BLOCK_IN, kh, kw, BLOCK_OUT, BLOCK_IN)."""
    cfg = cfg or config()
    w = np.asarray(w)
    o, c, kh, kw = w.shape
    O, I = cfg.BLOCK_OUT, cfg.BLOCK_IN
    ob, cb = max(cdiv(o, O), o_blocks or 0), cdiv(c, I)
    p = np.zeros((ob * O, cb * I, kh, kw), dtype=np.int8)
    p[:o, :c] = w
    return np.ascontiguousarray(p.reshape(ob, O, cb, I, kh, kw).transpose(0, 2, 4, 5, 1, 3))


def block_groups(c: int, o: int, groups: int, cfg: Config | None = None) -> tuple[int, int, int, int]:
    """How a grouped convolution (``groups`` groups of c/groups input and o/groups output channels) maps
    onto blocks: (bg, per, cbg, obg), ``bg`` block-groups of ``per`` whole groups each, every
    block-group ``cbg`` input blocks wide and ``obg`` output blocks tall. The weight of a block-group
    is block-diagonal over its groups; output block m reads only the input blocks of block-group
    m // obg. A depthwise convolution of C channels: C / BLOCK_IN block-groups of 1 x 1 blocks."""
    from math import gcd

    cfg = cfg or config()
    I, O = cfg.BLOCK_IN, cfg.BLOCK_OUT
    cg, og = c // groups, o // groups
    per = min(I // gcd(cg, I), groups)
    return cdiv(groups, per), per, cdiv(per * cg, I), cdiv(per * og, O)


def grouped_channels(c: int, o: int, groups: int, cfg: Config | None = None) -> np.ndarray:
    """Where output channel k of a grouped convolution lies in the packed output (its block-groups
    padded to whole blocks)."""
    cfg = cfg or config()
    og = o // groups
    _, per, _, obg = block_groups(c, o, groups, cfg)
    g = np.arange(o) // og
    return (g // per) * obg * cfg.BLOCK_OUT + (g % per) * og + np.arange(o) % og


def pack_grouped_conv_weight(w: npt.ArrayLike, groups: int, c: int, cfg: Config | None = None) -> np.ndarray:
    """(O, C/groups, kh, kw) int8 of a grouped convolution -> (bg*obg, cbg, kh, kw, BLOCK_OUT, BLOCK_IN),
    block-diagonal within each block-group (:func:`block_groups`)."""
    cfg = cfg or config()
    w = np.asarray(w)
    o, cg, kh, kw = w.shape
    og = o // groups
    O, I = cfg.BLOCK_OUT, cfg.BLOCK_IN
    bg, per, cbg, obg = block_groups(c, o, groups, cfg)
    p = np.zeros((bg, obg * O, cbg * I, kh, kw), dtype=np.int8)
    for g in range(groups):
        j, r = divmod(g, per)
        p[j, r * og:(r + 1) * og, r * cg:(r + 1) * cg] = w[g * og:(g + 1) * og]
    return np.ascontiguousarray(p.reshape(bg * obg, O, cbg, I, kh, kw).transpose(0, 2, 4, 5, 1, 3))


def pack_conv_output(x: npt.ArrayLike, cfg: Config | None = None, o_blocks: int | None = None) -> np.ndarray:
    """(N, C, H, W) int8 in the layout of a conv2d's output (N/BATCH, C/BLOCK_OUT, H, W, BATCH, BLOCK_OUT),
    zero-padded to ``o_blocks`` channel blocks (a residual that the epilogue adds)."""
    cfg = cfg or config()
    return _pack_nchw(x, cfg.BATCH, cfg.BLOCK_OUT, o_blocks or 0)


def unpack_conv_output(y: np.ndarray, n: int, c: int) -> np.ndarray:
    """(N/BATCH, C/BLOCK_OUT, H, W, BATCH, BLOCK_OUT) -> (N, C, H, W), cropped."""
    nb, cb, h, w, B, O = y.shape
    return np.ascontiguousarray(y.transpose(0, 4, 1, 5, 2, 3).reshape(nb * B, cb * O, h, w)[:n, :c])



def pack_layer_bias(bias: npt.ArrayLike | None, channels: int, blocks: int, cfg: Config | None) -> np.ndarray | None:
    """An operator's per-channel vectors, packed: None, or bias (C,) or (V, C) int32 as (V, blocks,
    BATCH, BLOCK_OUT) (the bias of VTA's requantization is vector v0 of its epilogue)."""
    if bias is None:
        return None
    return np.stack([pack_bias(v, blocks, cfg) for v in vectors_2d(bias, channels)])
