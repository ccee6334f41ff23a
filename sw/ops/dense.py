"""GEMM and dense layers: blocked int8 matrix products with VTA's requantization."""

from __future__ import annotations

import itertools

import numpy as np

from .. import runtime as rt
from ..isa import AluOp, MemId
from .base import _cdiv, _cfg, _check_vt, _finish, _from_device, _halves, _operands_on_device
from .epilogue import epilogue_actions, packed_vectors
from .kernels import Gemm, Load, Store, _alu_rows, _alu_tensor, _k_dense
from .layout import pack_bias, pack_dense_data, pack_dense_weight, pack_layer_bias, unpack_dense_output
from .plan import DensePlan, _resolve_tiles, plan_dense
from .schedule import _Step, _Tile, run_tiles


def _dense_tiles(plan: DensePlan, cfg, xd, wd, yd, pd, shift, clip, planes, alu=None, nvec=0):
    """Tiles of a blocked dense layer (data (nb, kb), weights (mb, kb), output planes of (nb, mb))."""
    vt = plan.virtual_threads
    h = _halves(cfg, vt)
    nb, kb, mb = plan.nb, plan.kb, plan.mb
    tiles = []
    step_no = 0
    INP, WGT, ACC, OUT = int(MemId.INP), int(MemId.WGT), int(MemId.ACC), int(MemId.OUT)
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
        # two half tiles at the end: nothing overlaps the last tile's requantization and store, so
        # halving it shortens the exposed tail (for one more load of its weights)
        grid[-1:] = [(n0, tn // 2, m0, tm), (n0 + tn // 2, tn - tn // 2, m0, tm)]
    for ti, (n0, tn, m0, tm) in enumerate(grid):
        a = ti % vt
        acc = h["acc"][1][a]
        rows = tn * tm
        t = _Tile(acc=a, reset=(acc, rows * planes), gemm_uops=rows * kb)
        for k0 in range(0, kb, plan.tk):
            tk = min(plan.tk, kb - k0)
            b = step_no % vt
            step_no += 1
            inp, wgt = h["inp"][1][b], h["wgt"][1][b]
            loads = [Load((xd, n0 * kb + k0, tk, tn, kb, 0, 0, 0, 0, inp, INP)),
                     Load((wd, m0 * kb + k0, tk, tm, kb, 0, 0, 0, 0, wgt, WGT))]
            comps = []
            comps.append(Gemm(_k_dense(acc, inp, wgt, tn, tk, tm)))
            t.steps.append(_Step(b, loads, comps))
        if planes == 4:
            # exact int32: copy the accumulators into three more regions (they were reset to 0), shift
            # each by 8, 16, 24 and store the low byte of every region
            t.computes.append(_alu_tensor(acc + rows, acc, ((3, rows, 0), (rows, 1, 1))))
            for p in (1, 2, 3):
                t.computes.append(_alu_rows(AluOp.SHR, 8 * p, acc + p * rows, rows))
            for p in range(4):
                t.stores.append(Store((acc + p * rows, OUT, yd, p * nb * mb + n0 * mb + m0, tm, tn, mb)))
        elif alu is not None:
            vec_base = acc + rows
            for i in range(nvec):
                t.computes.append(Load((pd, i * mb + m0, tm, 1, tm, 0, 0, 0, 0, vec_base + i * tm, ACC)))
            t.computes += epilogue_actions(alu, acc, rows, vec_base, tm, ((tn, tm, 0), (tm, 1, 1)))
            t.stores.append(Store((acc, OUT, yd, n0 * mb + m0, tm, tn, mb)))
        else:
            if shift:
                t.computes.append(_alu_rows(AluOp.SHR, shift, acc, rows))
            if pd is not None:
                bias_base = acc + rows
                t.computes.append(Load((pd, m0, tm, 1, tm, 0, 0, 0, 0, bias_base, ACC)))
                t.computes.append(_alu_tensor(acc, bias_base, ((tn, tm, 0), (tm, 1, 1))))
            if clip:
                t.computes.append(_alu_rows(AluOp.MIN, 127, acc, rows))
                t.computes.append(_alu_rows(AluOp.MAX, 0, acc, rows))
            t.stores.append(Store((acc, OUT, yd, n0 * mb + m0, tm, tn, mb)))
        tiles.append(t)
    return tiles



def dense_packed(data, weight, bias=None, shift=8, clip=True, virtual_threads=1, tiles=None,
                 return_counters=False, _planes=1, alu=None):
    """Dense on packed operands: data (nb, kb, BATCH, BLOCK_IN), weight (mb, kb, BLOCK_OUT, BLOCK_IN)
    int8, bias None or packed (mb, BATCH, BLOCK_OUT) int32; returns (nb, mb, BATCH, BLOCK_OUT) int8.
    With ``alu`` (an epilogue, :mod:`sw.ops.epilogue`), ``bias`` is its vectors packed as (V, mb,
    BATCH, BLOCK_OUT)."""
    _check_vt(virtual_threads)
    cfg = _cfg()
    B, I, O = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
    data, weight = np.asarray(data), np.asarray(weight)
    if data.ndim != 4 or data.shape[2:] != (B, I) or weight.ndim != 4 or weight.shape[2:] != (O, I):
        raise ValueError(f"packed shapes {data.shape}, {weight.shape}; expected (nb, kb, {B}, {I}) and "
                         f"(mb, kb, {O}, {I})")
    nb, kb = data.shape[:2]
    mb = weight.shape[0]
    if weight.shape[1] != kb:
        raise ValueError(f"data has {kb} reduction blocks, weight {weight.shape[1]}")
    if not 0 <= shift <= 31:
        raise ValueError(f"shift = {shift}; allowed range [0, 31]")
    if nb * mb < 3:
        raise ValueError(f"the output has {nb * mb} blocks; the GEMM micro-kernel needs at least 3 "
                         f"(pad the output channels: dense() does this)")
    nvec = 0
    if alu is not None:
        if _planes != 1:
            raise ValueError("alu= applies to requantized outputs (one plane)")
        bias, nvec, alu = packed_vectors(bias, alu, mb, cfg)
    elif bias is not None:
        bias = pack_bias(bias, mb, cfg)
    plan = plan_dense(nb, kb, mb, virtual_threads, nvec if alu is not None else bias is not None, _planes, cfg,
                      tiles)
    cmd = rt.command_handle()
    with _operands_on_device(cmd, data, weight, bias, _planes * nb * mb * cfg.OUT_ELEM_BYTES) as (
            xd, wd, pd, yd):
        tl = _dense_tiles(plan, cfg, xd, wd, yd, pd, shift, clip, _planes, alu, nvec)
        counters = run_tiles(tl)
        counters["tiles"] = len(tl)
        y = _from_device(cmd, yd, (_planes, nb, mb, B, O), np.int8)
    y = y[0] if _planes == 1 else y
    return _finish(y, counters, return_counters)


def _dense_common(data, weight, bias, shift, clip, virtual_threads, tiles, return_counters, planes, alu=None):
    cfg = _cfg()
    data, weight = np.asarray(data), np.asarray(weight)
    if data.ndim != 2 or weight.ndim != 2 or data.shape[1] != weight.shape[1]:
        raise ValueError(f"data {data.shape} and weight {weight.shape} must be (N, K) and (M, K)")
    n, k = data.shape
    m = weight.shape[0]
    if isinstance(tiles, str):
        tiles = _resolve_tiles(tiles, cfg, n, k, m, virtual_threads)
    nb = _cdiv(n, cfg.BATCH)
    mb = max(_cdiv(m, cfg.BLOCK_OUT), _cdiv(3, nb))     # at least 3 output blocks for the hazard rule
    xp = pack_dense_data(data, cfg)
    wp = pack_dense_weight(weight, cfg, mb)
    bp = pack_layer_bias(bias, m, mb, cfg, epilogue=alu is not None)
    y, counters = dense_packed(xp, wp, bp, shift, clip, virtual_threads, tiles, True, planes, alu)
    if planes == 4:
        u = y.astype(np.uint8).astype(np.uint32)
        y = (u[0] | (u[1] << 8) | (u[2] << 16) | (u[3] << 24)).view(np.int32)
    return _finish(unpack_dense_output(y, n, m), counters, return_counters)


def dense(data, weight, bias=None, shift=8, clip=True, virtual_threads=1, tiles=None, relu=None,
          return_counters=False, alu=None):
    """VTA's dense: data (N, K) int8 . weight (M, K)^T int8 in int32, >> shift, + bias (M,) int32,
    clip to [0, 127] (MIN then MAX; ``relu`` is an alias of ``clip``), int8 (N, M).

    ``tiles`` = (tn, tk, tm) in blocks overrides the automatic tiling (e.g. (1, 16, 16) for VTA's
    matrix_multiply_opt blocks of 256 channels). ``alu``: an epilogue of ALU steps instead of shift /
    bias / clip (:mod:`sw.ops.epilogue`); then ``bias`` is its vectors, (M,) or (V, M) int32.
    """
    if relu is not None:
        clip = relu
    return _dense_common(data, weight, bias, shift, clip, virtual_threads, tiles, return_counters, 1, alu)


def gemm(data, weight, virtual_threads=1, tiles=None, return_counters=False):
    """Raw GEMM: data (N, K) int8 . weight (M, K)^T int8 -> int32 (N, M), exact (mod 2^32).

    STORE writes 8 bits per lane, so each accumulator is copied into three more acc regions shifted
    right by 8, 16 and 24 and the four low bytes are stored and reassembled on the host.
    """
    return _dense_common(data, weight, None, 0, False, virtual_threads, tiles, return_counters, 4)


