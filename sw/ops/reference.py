"""numpy references of the operators, bit for bit what the accelerator computes."""

from __future__ import annotations

from typing import cast

import numpy as np

from sw.config import Config
from sw.ops.layout import pack_bias


def _wrap32(x):
    return np.asarray(x, dtype=np.int64).astype(np.int32)


def vadd_ref(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(a + b) in int32 (wrapping), truncated to int8 as VTA's STORE does."""
    return _wrap32(np.asarray(a, np.int64) + np.asarray(b, np.int64)).astype(np.int8)


def relu_ref(a: np.ndarray) -> np.ndarray:
    """MAX 0 then MIN 127, int8 (VTA's test_relu)."""
    return np.clip(np.asarray(a, np.int64), 0, 127).astype(np.int8)


def add_bias_ref(x: np.ndarray, bias: np.ndarray, cfg: Config | None = None) -> np.ndarray:
    """x (R, C, BATCH, BLOCK_OUT) or (R, BATCH, BLOCK_OUT) int32 plus bias per channel, truncated to int8."""
    x4 = np.asarray(x)[:, None] if np.ndim(x) == 3 else np.asarray(x)
    b = pack_bias(bias, x4.shape[1], cfg)
    return _wrap32(x4.astype(np.int64) + b[None]).astype(np.int8).reshape(np.shape(x))


def requantize_ref(x: np.ndarray, shift: int = 8, bias: np.ndarray | None = None, clip: bool = True,
                   cfg: Config | None = None) -> np.ndarray:
    """(x >> shift) [+ bias], clip to [0, 127] (MIN then MAX), int8 (docs/architecture.md §6.4)."""
    x = np.asarray(x, dtype=np.int64)
    y = x >> shift
    if bias is not None:
        x4 = y[:, None] if y.ndim == 3 else y
        y = (x4 + pack_bias(bias, x4.shape[1], cfg)[None]).reshape(x.shape)
    y = _wrap32(y).astype(np.int64)
    if clip:
        y = np.maximum(np.minimum(y, 127), 0)
    return _wrap32(y).astype(np.int8)


def gemm_ref(data: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """data (N, K) . weight (M, K)^T in int32 (wrapping)."""
    return _wrap32(np.asarray(data, np.int64) @ np.asarray(weight, np.int64).T)


def _requant_plain(acc, bias, shift, clip, axis_shape):
    y = np.asarray(acc, np.int64) >> shift
    if bias is not None:
        y = y + np.asarray(bias, np.int64).reshape(axis_shape)
    y = _wrap32(y).astype(np.int64)
    if clip:
        y = np.clip(y, 0, 127)
    return _wrap32(y).astype(np.int8)


def dense_ref(data: np.ndarray, weight: np.ndarray, bias: np.ndarray | None = None, shift: int = 8,
              clip: bool = True) -> np.ndarray:
    """VTA's dense test: (data . weight^T) >> shift, + bias (M,), clip [0, 127], int8."""
    return _requant_plain(gemm_ref(data, weight), bias, shift, clip, (1, -1))


def _pair(v: int | tuple[int, int]) -> tuple[int, int]:
    # cast: np.isscalar's TypeGuard names numpy's scalar types, not the int it is here
    return cast("tuple[int, int]", (v, v) if np.isscalar(v) else v)


def conv2d_nchw(data: np.ndarray, weight: np.ndarray, stride: int | tuple[int, int] = 1, padding: int | tuple[int, int] = 0,
                groups: int = 1) -> np.ndarray:
    """Direct convolution in int32: data (N, C, H, W), weight (O, C / groups, kh, kw) -> (N, O, Ho, Wo);
    output channels [g O/groups, (g+1) O/groups) see input channels [g C/groups, (g+1) C/groups)."""
    data = np.asarray(data)
    weight = np.asarray(weight)
    n, c, h, w = data.shape
    o, c2, kh, kw = weight.shape
    if groups < 1 or c % groups or o % groups:
        raise ValueError(f"groups = {groups} must divide the {c} input and {o} output channels")
    if c2 * groups != c:
        raise ValueError(f"data has {c} channels, weight {c2}" + (f" per group of {groups}" if groups > 1 else ""))
    sh, sw = _pair(stride)
    ph, pw = _pair(padding)
    ho, wo = (h + 2 * ph - kh) // sh + 1, (w + 2 * pw - kw) // sw + 1
    x = np.zeros((n, c, h + 2 * ph, w + 2 * pw), dtype=np.float64)
    x[:, :, ph:ph + h, pw:pw + w] = data
    wt = weight.astype(np.float64).reshape(groups, o // groups, c2, kh, kw)
    out = np.zeros((n, groups, o // groups, ho, wo), dtype=np.float64)   # exact: |sum| < 2^53
    for ky in range(kh):
        for kx in range(kw):
            patch = x[:, :, ky:ky + sh * (ho - 1) + 1:sh, kx:kx + sw * (wo - 1) + 1:sw]   # (n, c, ho, wo)
            out += np.einsum("ngchw,goc->ngohw", patch.reshape(n, groups, c2, ho, wo), wt[..., ky, kx], optimize=True)
    return _wrap32(out.reshape(n, o, ho, wo).astype(np.int64))


def conv2d_ref(data: np.ndarray, weight: np.ndarray, bias: np.ndarray | None = None, stride: int = 1,
               padding: int = 0, shift: int = 8, clip: bool = True) -> np.ndarray:
    """VTA's conv2d benchmark: conv2d_nchw >> shift, + bias (O,), clip [0, 127], int8."""
    return _requant_plain(conv2d_nchw(data, weight, stride, padding), bias, shift, clip, (1, -1, 1, 1))

