"""GEMM and dense layers: blocked int8 matrix products, finished by an epilogue (:mod:`sw.ops.epilogue`)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Literal, overload

import numpy as np
import numpy.typing as npt

from sw.config import Config
from sw.isa import AluOp, MemId
from sw.ops.base import _check_vt, _finish, _halves, cdiv, config
from sw.ops.epilogue import Epilogue, TileOperands, bias_init, packed_epilogue, vectors_2d
from sw.ops.kernels import Gemm, Load, Store, _k_dense
from sw.ops.layout import pack_dense_data, pack_dense_weight, pack_layer_bias, unpack_dense_output
from sw.ops.plan import DensePlan, _resolve_tiles, plan_dense
from sw.ops.schedule import HEAD_PARTS, _Step, _Tile, head_key, head_parts, head_pays, run_operator, tail_parts


def _dense_tiles(plan: DensePlan, cfg, xd, wd, yd, pd, epi: Epilogue, init: bool = False) -> list[_Tile]:
    """Tiles of a blocked dense layer (data (nb, kb), weights (mb, kb), output planes of (nb, mb)); ``init``:
    the epilogue is :func:`~sw.ops.epilogue.bias_init`'s, so a tile may start at the bias."""
    vt = plan.virtual_threads
    h = _halves(cfg, vt)
    nb, kb, mb = plan.nb, plan.kb, plan.mb
    tiles = []
    step_no = 0
    INP, WGT = int(MemId.INP), int(MemId.WGT)
    grid = []
    for n0, m0 in itertools.product(range(0, nb, plan.tn), range(0, mb, plan.tm)):
        tn, tm = min(plan.tn, nb - n0), min(plan.tm, mb - m0)
        if tn * tm < 3:
            # an edge tile too small for the hazard rule: use a full-size tile that ends at the edge
            # (it recomputes and stores again some outputs of its neighbours, with the same values)
            tn, tm = plan.tn, plan.tm
            n0, m0 = min(n0, nb - tn), min(m0, mb - tm)
        grid.append((n0, tn, m0, tm))
    n0, tn, m0, tm = grid[-1]
    if vt > 1 and len(grid) > 1 and tn >= 2 and (tn // 2) * tm >= 3:
        # the last tile in two: nothing overlaps the last tile's requantization and store, so a smaller
        # last tile shortens the exposed tail (for one more load of its weights)
        # (a third where the GEMMs outlast the loads, whose last requantization is then exposed; a half
        # where loads set the pace, so more rows share each weight load)
        tk = min(plan.tk, kb)
        step_loads = [Load(xd, 0, tk, tn, kb, 0, INP), Load(wd, 0, tk, tm, kb, 0, WGT)]
        q = tn // 3 if tn // 3 * tm >= 3 and head_pays(tn * tk * tm, step_loads, cfg,
                                                        epi.alu_cycles(tn * tm, tm) * tk / kb) \
            else tn // 2
        grid[-1:] = [(n0, tn - q, m0, tm), (n0 + tn - q, q, m0, tm)]
    for ti, (n0, tn, m0, tm) in enumerate(grid):
        a = ti % (vt * plan.slots)          # the acc region: thread a % vt, slot a // vt
        acc = h["acc"][1][a % vt] + (a // vt) * (h["acc"][0] // plan.slots)
        rows = tn * tm
        t = _Tile(acc=a, reset=(acc, rows * epi.planes), gemm_uops=rows * kb)
        k_steps = list(range(0, kb, plan.tk))
        if vt == 2 and ti and grid[ti - 1][2] == m0 and len(k_steps) % 2 == 0 and len(k_steps) > 2:
            # the weights of the last tile's last two steps are still in their halves: take those first
            k_steps = k_steps[-2:] + k_steps[:-2]
        for k0 in k_steps:
            tk = min(plan.tk, kb - k0)
            b = step_no % vt
            step_no += 1
            inp, wgt = h["inp"][1][b], h["wgt"][1][b]
            wload = Load(wd, m0 * kb + k0, tk, tm, kb, wgt, WGT)
            parts = [(0, tn)]
            if vt > 1 and ti == 0 and k0 == 0 and tm * (tn // HEAD_PARTS) >= 3 and head_pays(
                    tn * tk * tm, [Load(xd, n0 * kb + k0, tk, tn, kb, inp, INP), wload], cfg,
                    epi.alu_cycles(tn * tm, tm) * tk / kb):
                parts = head_parts(tn)
            for part, (r, nr) in enumerate(parts):
                # (the first step in parts of rows, the weights with the first: the GEMMs start when
                # those are in; a part of reduction blocks would load the data in short rows)
                loads = [wload] if r == 0 else []
                loads.insert(0, Load(xd, (n0 + r) * kb + k0, tk, nr, kb, inp + r * tk, INP))
                last = r + nr == tn
                t.steps.append(_Step(b if last else head_key(part), loads,
                                     [Gemm(_k_dense(acc + r * tm, inp + r * tk, wgt, nr, tk, tm))],
                                     (wload,) if last else None))

        operands = TileOperands(pd, mb, m0, tm)
        # (vectors: channel blocks outer, rows inner, so the ALU reads each vector row once per block)
        loops = ((tm, 1, 1), (tn, tm, 0))
        t.computes += epi.actions(acc, rows, tm, loops, operands)
        if init:
            t.init = epi.init_actions(acc, rows, tm, loops, operands)
        k = tail_parts(rows, tn, epi.insn_cycles(tm), cfg) if vt > 1 and ti == len(grid) - 1 and epi.planes == 1 \
            else 1
        if k > 1 and tm * (tn // k) >= 3:
            parts = head_parts(tn, k)

            def tail(initialized, acc=acc, tm=tm, n0=n0, m0=m0, parts=parts, operands=operands):
                acts = epi.tail_actions(acc, [(acc + r * tm, nr * tm) for r, nr in parts], tm,
                                        lambda n: ((tm, 1, 1), (n // tm, tm, 0)), operands, initialized)
                return [(a, [Store(acc + r * tm, yd, (n0 + r) * mb + m0, tm, nr, mb)])
                        for a, (r, nr) in zip(acts, parts)]
            t.tail = tail
        for p in range(epi.planes):
            t.stores.append(Store(acc + p * rows, yd, p * nb * mb + n0 * mb + m0, tm, tn, mb))
        tiles.append(t)
    return tiles


@overload
def dense_packed(data: npt.ArrayLike, weight: npt.ArrayLike, bias: npt.ArrayLike | None = ..., shift: int = ...,
                 clip: bool = ..., virtual_threads: int = ..., tiles: Sequence[int] | None = ...,
                 return_counters: Literal[False] = ..., epilogue: Epilogue | Sequence | None = ...) -> np.ndarray: ...
@overload
def dense_packed(data: npt.ArrayLike, weight: npt.ArrayLike, bias: npt.ArrayLike | None = ..., shift: int = ...,
                 clip: bool = ..., virtual_threads: int = ..., tiles: Sequence[int] | None = ..., *,
                 return_counters: Literal[True],
                 epilogue: Epilogue | Sequence | None = ...) -> tuple[np.ndarray, dict[str, int]]: ...
@overload
def dense_packed(data: npt.ArrayLike, weight: npt.ArrayLike, bias: npt.ArrayLike | None = ..., shift: int = ...,
                 clip: bool = ..., virtual_threads: int = ..., tiles: Sequence[int] | None = ...,
                 return_counters: bool = ...,
                 epilogue: Epilogue | Sequence | None = ...) -> np.ndarray | tuple[np.ndarray, dict[str, int]]: ...


def dense_packed(data: npt.ArrayLike, weight: npt.ArrayLike, bias: npt.ArrayLike | None = None, shift: int = 8,
                 clip: bool = True, virtual_threads: int = 1, tiles: Sequence[int] | None = None,
                 return_counters: bool = False,
                 epilogue: Epilogue | Sequence | None = None) -> np.ndarray | tuple[np.ndarray, dict[str, int]]:
    """Dense on packed operands: data (nb, kb, BATCH, BLOCK_IN), weight (mb, kb, BLOCK_OUT, BLOCK_IN)
    int8, bias None or packed (mb, BATCH, BLOCK_OUT) int32 (or (V, mb, BATCH, BLOCK_OUT): the vectors
    of an epilogue); returns (nb, mb, BATCH, BLOCK_OUT) int8, or (planes, nb, mb, BATCH, BLOCK_OUT)
    int8 (the bytes of each result) for an epilogue of more than one plane.

    ``epilogue`` (an :class:`~sw.ops.epilogue.Epilogue` or its ALU steps) replaces VTA's
    ``shift`` / ``bias`` / ``clip`` requantization."""
    _check_vt(virtual_threads)
    cfg = config()
    B, I, O = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
    data, weight = np.asarray(data), np.asarray(weight)
    if data.ndim != 4 or data.shape[2:] != (B, I) or weight.ndim != 4 or weight.shape[2:] != (O, I):
        raise ValueError(f"packed shapes {data.shape}, {weight.shape}; expected (nb, kb, {B}, {I}) and "
                         f"(mb, kb, {O}, {I})")
    nb, kb = data.shape[:2]
    mb = weight.shape[0]
    if weight.shape[1] != kb:
        raise ValueError(f"data has {kb} reduction blocks, weight {weight.shape[1]}")
    if nb * mb < 3:
        raise ValueError(f"the output has {nb * mb} blocks; the GEMM micro-kernel needs at least 3 "
                         f"(pad the output channels: dense() does this)")
    epi, vectors = packed_epilogue(epilogue, shift, bias, clip, mb, cfg, rows=nb)
    plan = plan_dense(nb, kb, mb, virtual_threads, epi, cfg, tiles)
    init = bias_init(epi, vectors, kb * I * 128 * 128) if virtual_threads > 1 else None
    if init is not None:
        epi, vectors = init
    return run_operator(data, weight, vectors, epi, (nb, mb, B, O),
                        lambda xd, wd, pd, yd, rd: _dense_tiles(plan, cfg, xd, wd, yd, pd, epi, init is not None),
                        return_counters)


def spare_lanes(k: int, cfg: Config | None = None) -> int:
    """The lanes a reduction of ``k`` leaves free in its last BLOCK_IN block: with two or more, :func:`dense`
    moves an epilogue's leading ``ADD v0`` into them (the GEMM then adds the bias)."""
    return -k % (cfg or config()).BLOCK_IN


def _vector_in_reduction(data, weight, bias, epi: Epilogue, cfg):
    """An epilogue that starts with ``ADD v0`` (a bias) moved into the GEMM where the reduction's last block
    has room (K = 147, an RGB stem's im2col, leaves 13 of 160 lanes): constant columns (127 ... 127, 1)
    appended to the data and ``v0 = 127 q + r`` written into the weights' matching columns, so the
    accumulators leave the GEMMs with ``v0`` added (the same int32 values) and the ALU saves its pass.
    Returns (data, weight, bias, epilogue), unchanged where the steps, the free lanes or v0's range do not
    allow it."""
    steps = epi.steps
    free = spare_lanes(data.shape[1], cfg)
    if (bias is None or not steps or steps[0] != (AluOp.ADD, "v0") or any(v == "v0" for _, v in steps[1:])
            or epi.residual is not None or epi.branch is not None or free < 2):
        return data, weight, bias, epi
    vectors = vectors_2d(bias, weight.shape[0]).astype(np.int64)
    q = np.round(vectors[0] / 127).astype(np.int64)
    lanes = max(1, cdiv(int(np.abs(q).max()), 127))            # columns of 127, then one of 1 for |r| <= 63
    if lanes + 1 > free:
        return data, weight, bias, epi
    wv = np.zeros((weight.shape[0], lanes + 1), np.int64)
    for j in range(lanes):
        wv[:, j] = np.clip(q - wv[:, :j].sum(axis=1), -127, 127)
    wv[:, lanes] = vectors[0] - 127 * q
    const = np.array([127] * lanes + [1], data.dtype)
    data = np.concatenate([data, np.broadcast_to(const, (data.shape[0], lanes + 1))], axis=1)
    weight = np.concatenate([weight, wv.astype(weight.dtype)], axis=1)
    renamed = tuple((op, f"v{int(v[1:]) - 1}" if isinstance(v, str) and v != "r" else v) for op, v in steps[1:])
    return data, weight, (vectors[1:].astype(np.int32) if len(vectors) > 1 else None), Epilogue(renamed, epi.planes)


def _dense_common(data, weight, bias, epi: Epilogue, virtual_threads, tiles, return_counters):
    cfg = config()
    data, weight = np.asarray(data), np.asarray(weight)
    if data.ndim != 2 or weight.ndim != 2 or data.shape[1] != weight.shape[1]:
        raise ValueError(f"data {data.shape} and weight {weight.shape} must be (N, K) and (M, K)")
    n, k = data.shape
    m = weight.shape[0]
    if isinstance(tiles, str):
        tiles = _resolve_tiles(tiles, cfg, n, k, m, virtual_threads)
    data, weight, bias, epi = _vector_in_reduction(data, weight, bias, epi, cfg)
    nb = cdiv(n, cfg.BATCH)
    mb = max(cdiv(m, cfg.BLOCK_OUT), cdiv(3, nb))     # at least 3 output blocks for the hazard rule
    xp = pack_dense_data(data, cfg)
    wp = pack_dense_weight(weight, cfg, mb)
    bp = pack_layer_bias(bias, m, mb, cfg)
    y, counters = dense_packed(xp, wp, bp, virtual_threads=virtual_threads, tiles=tiles, return_counters=True,
                               epilogue=epi)
    y = epi.assemble(y if epi.planes > 1 else y[None])
    return _finish(unpack_dense_output(y, n, m), counters, return_counters)


@overload
def dense(data: npt.ArrayLike, weight: npt.ArrayLike, bias: npt.ArrayLike | None = ..., shift: int = ...,
          clip: bool = ..., virtual_threads: int = ..., tiles: Sequence[int] | str | None = ..., relu: bool | None = ...,
          return_counters: Literal[False] = ..., epilogue: Epilogue | Sequence | None = ...) -> np.ndarray: ...
@overload
def dense(data: npt.ArrayLike, weight: npt.ArrayLike, bias: npt.ArrayLike | None = ..., shift: int = ...,
          clip: bool = ..., virtual_threads: int = ..., tiles: Sequence[int] | str | None = ..., relu: bool | None = ..., *,
          return_counters: Literal[True],
          epilogue: Epilogue | Sequence | None = ...) -> tuple[np.ndarray, dict[str, int]]: ...
@overload
def dense(data: npt.ArrayLike, weight: npt.ArrayLike, bias: npt.ArrayLike | None = ..., shift: int = ...,
          clip: bool = ..., virtual_threads: int = ..., tiles: Sequence[int] | str | None = ..., relu: bool | None = ...,
          return_counters: bool = ...,
          epilogue: Epilogue | Sequence | None = ...) -> np.ndarray | tuple[np.ndarray, dict[str, int]]: ...


def dense(data: npt.ArrayLike, weight: npt.ArrayLike, bias: npt.ArrayLike | None = None, shift: int = 8,
          clip: bool = True, virtual_threads: int = 1, tiles: Sequence[int] | str | None = None, relu: bool | None = None,
          return_counters: bool = False,
          epilogue: Epilogue | Sequence | None = None) -> np.ndarray | tuple[np.ndarray, dict[str, int]]:
    """VTA's dense: data (N, K) int8 . weight (M, K)^T int8 in int32, >> shift, + bias (M,) int32,
    clip to [0, 127] (MIN then MAX; ``relu`` is an alias of ``clip``), int8 (N, M).

    ``tiles`` = (tn, tk, tm) in blocks overrides the automatic tiling (e.g. (1, 16, 16) for VTA's
    matrix_multiply_opt blocks of 256 channels); (tn, tk, tm, 2): two acc regions per virtual thread.
    ``epilogue``: an :class:`~sw.ops.epilogue.Epilogue` (or its ALU steps) instead of shift / bias /
    clip; then ``bias`` is its vectors, (M,) or (V, M) int32, and the result int8 (one plane) or int32
    (more).
    """
    if relu is not None:
        clip = relu
    epi = Epilogue.of(epilogue) or Epilogue.vta(shift, bias is not None, clip)
    return _dense_common(data, weight, bias, epi, virtual_threads, tiles, return_counters)


@overload
def gemm(data: npt.ArrayLike, weight: npt.ArrayLike, virtual_threads: int = ..., tiles: Sequence[int] | str | None = ...,
         return_counters: Literal[False] = ...) -> np.ndarray: ...
@overload
def gemm(data: npt.ArrayLike, weight: npt.ArrayLike, virtual_threads: int = ..., tiles: Sequence[int] | str | None = ..., *,
         return_counters: Literal[True]) -> tuple[np.ndarray, dict[str, int]]: ...
@overload
def gemm(data: npt.ArrayLike, weight: npt.ArrayLike, virtual_threads: int = ..., tiles: Sequence[int] | str | None = ...,
         return_counters: bool = ...) -> np.ndarray | tuple[np.ndarray, dict[str, int]]: ...


def gemm(data: npt.ArrayLike, weight: npt.ArrayLike, virtual_threads: int = 1, tiles: Sequence[int] | str | None = None,
         return_counters: bool = False) -> np.ndarray | tuple[np.ndarray, dict[str, int]]:
    """Raw GEMM: data (N, K) int8 . weight (M, K)^T int8 -> int32 (N, M), exact (mod 2^32).

    STORE writes 8 bits per lane, so the epilogue is :meth:`Epilogue.exact_int32`: each accumulator
    is copied into three more acc regions shifted right by 8, 16 and 24 and the four low bytes are
    stored and reassembled on the host.
    """
    return _dense_common(data, weight, None, Epilogue.exact_int32(), virtual_threads, tiles, return_counters)
