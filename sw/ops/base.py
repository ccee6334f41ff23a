"""What every operator shares: the SRAM halves of the virtual threads, device staging and counters."""

from __future__ import annotations

from contextlib import contextmanager
from functools import cache

import numpy as np

from sw import runtime as rt
from sw.isa import LOOP_ITER_BITS, MEMOP_PAD_BITS

QLOAD, QCOMPUTE, QSTORE = rt.QID_LOAD, rt.QID_COMPUTE, rt.QID_STORE
MAX_EXTENT = (1 << LOOP_ITER_BITS) - 1      # loop extents (the iter_out / iter_in fields)
MAX_PAD = (1 << MEMOP_PAD_BITS) - 1          # the load padding fields

last_counters: dict = {}
"""The summed counters of the most recent operator call."""


class TileError(ValueError):
    """A layer cannot be tiled on this configuration (the message names the limit)."""


def cdiv(a: int, b: int) -> int:
    """ceil(a / b) for positive b."""
    return -(-a // b)


@cache
def _cands(n: int) -> tuple[int, ...]:
    """Tile sizes worth trying for an extent n: ceil(n / k) for every tile count k, ascending."""
    return tuple(sorted({cdiv(n, k) for k in range(1, n + 1)}))


config = rt.current_config
"""The configuration of the current runtime (:func:`sw.runtime.current_config`)."""


def _to_device(cmd, arr) -> int:
    arr = np.ascontiguousarray(arr)
    handle = rt.buffer_alloc(max(arr.nbytes, 1))
    np.from_dlpack(rt.buffer_cpu_ptr(cmd, handle))[:arr.nbytes] = arr.reshape(-1).view(np.uint8)
    return handle


def _from_device(cmd, handle, shape, dtype) -> np.ndarray:
    n = int(np.prod(shape)) * np.dtype(dtype).itemsize
    return np.from_dlpack(rt.buffer_cpu_ptr(cmd, handle))[:n].copy().view(dtype).reshape(shape)


def _add_counters(total: dict, c: dict):
    for k, v in dict(c).items():
        if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
            total[str(k)] = total.get(str(k), 0) + int(v)


def _finish(result, counters, return_counters):
    global last_counters
    last_counters = counters
    return (result, counters) if return_counters else result


def _check_vt(virtual_threads):
    if virtual_threads not in (1, 2):
        raise ValueError(f"virtual_threads = {virtual_threads!r}; allowed: 1 or 2")


def _f(extent, factor):
    """A loop factor, 0 when the loop has one iteration (so it always fits its field)."""
    return int(factor) if extent > 1 else 0


def _halves(cfg, vt):
    """Per-thread capacities and bases: {mem: (capacity, [base of each thread])}."""
    out = {}
    for mem, depth in (("inp", cfg.INP_DEPTH), ("wgt", cfg.WGT_DEPTH), ("acc", cfg.ACC_DEPTH)):
        cap = depth // vt
        out[mem] = (min(cap, MAX_EXTENT), [t * cap for t in range(vt)])
    return out


def _acc_region(hv: dict, a: int, vt: int, slots: int) -> int:
    """The first acc row of a tile's region ``a`` (of ``vt * slots``): thread a % vt, slot a // vt of ``hv``
    (:func:`_halves`)."""
    return hv["acc"][1][a % vt] + (a // vt) * (hv["acc"][0] // slots)


def _edge_pads(first: int, n: int, size: int) -> tuple[int, int, int]:
    """A window of ``n`` positions from ``first`` (negative: before the start) along an axis of ``size``: (zero
    positions before the axis, zero positions after it, positions read from it)."""
    before, after = max(0, -first), max(0, first + n - size)
    return before, after, n - before - after



@contextmanager
def _operands_on_device(cmd, data, weight, bias, out_bytes, residual=None):
    """Device buffers (data, weight or None, bias or None, output, residual or None) for one operator call,
    freed afterwards.

    The operands are already packed (``bias`` as :func:`sw.ops.layout.pack_bias` makes it, ``residual``
    int8 like the output)."""
    handles = []
    try:
        handles.append(_to_device(cmd, data.astype(np.int8)))
        wd = None
        if weight is not None:
            wd = _to_device(cmd, weight.astype(np.int8))
            handles.append(wd)
        pd = None
        if bias is not None:
            pd = _to_device(cmd, np.asarray(bias, dtype=np.int32))
            handles.append(pd)
        yd = rt.buffer_alloc(out_bytes)
        handles.append(yd)
        rd = None
        if residual is not None:
            rd = _to_device(cmd, np.asarray(residual, dtype=np.int8))
            handles.append(rd)
        yield handles[0], wd, pd, yd, rd
    finally:
        for h in handles:
            rt.buffer_free(h)
