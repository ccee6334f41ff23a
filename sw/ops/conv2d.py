"""2-D convolution on packed NCHWnc tensors: tiles with the halo and the zero padding done by the LOADs."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from ..isa import MemId
from .base import MAX_PAD, TileError, _check_vt, _finish, _halves, cdiv, config
from .epilogue import Epilogue, packed_epilogue
from .kernels import Gemm, Load, Store, _conv_variant, _k_conv
from .layout import pack_conv_data, pack_conv_weight, pack_layer_bias, unpack_conv_output
from .plan import ConvPlan, _conv_caps, _in_rows, plan_conv2d
from .schedule import _Step, _Tile, run_operator


def _conv_tiles(plan: ConvPlan, cfg, shape, xd, wd, yd, pd, epi: Epilogue) -> list[_Tile]:
    nb, cb, ob, h, w, kh, kw, s, pad = shape
    vt = plan.virtual_threads
    hv = _halves(cfg, vt)
    ho, wo = (h + 2 * pad - kh) // s + 1, (w + 2 * pad - kw) // s + 1
    kk = kh * kw
    INP, WGT, ACC = int(MemId.INP), int(MemId.WGT), int(MemId.ACC)
    tiles = []
    step_no = 0
    ti = 0
    uop_cap = _conv_caps(cfg, vt)["uop"]
    for n, m0_, h0_, w0_ in itertools.product(range(nb), range(0, ob, plan.tm), range(0, ho, plan.th),
                                              range(0, wo, plan.tw)):
        m0, h0, w0 = m0_, h0_, w0_
        tm, th, tw = min(plan.tm, ob - m0), min(plan.th, ho - h0), min(plan.tw, wo - w0)
        v, uops = _conv_variant(tm, th, tw, min(plan.tc, cb), kh, kw)
        if v is None or uops > uop_cap:
            # an edge tile whose kernel would break the hazard rule or the uop budget: use a
            # full-size tile that ends at the edge (it recomputes some neighbouring outputs)
            tm, th, tw = plan.tm, plan.th, plan.tw
            m0, h0, w0 = min(m0, ob - tm), min(h0, ho - th), min(w0, wo - tw)
        ih = _in_rows(th, kh, s, pad)
        skip = ih < (th - 1) * s + kh           # rows skipped by the load: row step 1 in the tile
        r0 = h0 * s - pad
        ypb, ypa = max(0, -r0), max(0, r0 + ih - h)
        ys = ih - ypb - ypa
        iw = (tw - 1) * s + kw
        c0_ = w0 * s - pad
        xpb, xpa = max(0, -c0_), max(0, c0_ + iw - w)
        xs = iw - xpb - xpa
        if ys < 1 or xs < 1:
            raise TileError(f"an input tile lies entirely in the padding (padding {pad} >= kernel)")
        a = ti % (vt * plan.slots)          # the acc region: thread a % vt, slot a // vt
        ti += 1
        acc = hv["acc"][1][a % vt] + (a // vt) * (hv["acc"][0] // plan.slots)
        rows = tm * th * tw
        t = _Tile(acc=a, reset=(acc, rows * epi.planes), gemm_uops=rows * cb * kk)
        for c0 in range(0, cb, plan.tc):
            tc = min(plan.tc, cb - c0)
            b = step_no % vt
            step_no += 1
            inp, wgt = hv["inp"][1][b], hv["wgt"][1][b]
            loads = []
            for c in range(tc):
                off = ((n * cb + c0 + c) * h + r0 + ypb) * w + c0_ + xpb
                loads.append(Load(xd, off, xs, ys, w * s if skip else w, inp + c * ih * iw, INP, xpb, ypb, xpa, ypa))
            loads.append(Load(wd, (m0 * cb + c0) * kk, tc * kk, tm, cb * kk, wgt, WGT))
            gemm = Gemm(_k_conv(acc, inp, wgt, tm, th, tw, tc, kh, kw, s, ih, iw, 1 if skip else s))
            t.steps.append(_Step(b, loads, [gemm]))

        def load_vector(i, row, m0=m0, tm=tm):
            return Load(pd, i * ob + m0, tm, 1, tm, row, ACC)

        t.computes += epi.actions(acc, rows, tm, ((tm, th * tw, 1), (th * tw, 1, 0)), load_vector)
        for p, j in itertools.product(range(epi.planes), range(tm)):
            t.stores.append(Store(acc + p * rows + j * th * tw, yd,
                                  (((p * nb + n) * ob + m0 + j) * ho + h0) * wo + w0, tw, th, wo))
        tiles.append(t)
    return tiles


def conv2d_packed(data, weight, bias=None, stride: int = 1, padding: int = 0, shift: int = 8, clip: bool = True,
                  virtual_threads: int = 1, tiles=None, return_counters: bool = False,
                  epilogue: Epilogue | Sequence | None = None):
    """conv2d on packed operands: data (nb, cb, H, W, BATCH, BLOCK_IN), weight (ob, cb, kh, kw, BLOCK_OUT,
    BLOCK_IN) int8, bias None or packed (ob, BATCH, BLOCK_OUT) int32; returns (nb, ob, Ho, Wo, BATCH,
    BLOCK_OUT) int8 after >> shift, + bias, clip [0, 127].

    ``epilogue`` (an :class:`~sw.ops.epilogue.Epilogue` or its ALU steps) replaces that requantization;
    ``bias`` then holds its vectors packed as (V, ob, BATCH, BLOCK_OUT), and an epilogue of k > 1
    planes returns (k, nb, ob, Ho, Wo, BATCH, BLOCK_OUT) int8, the bytes of each result."""
    _check_vt(virtual_threads)
    cfg = config()
    B, I, O = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
    data, weight = np.asarray(data), np.asarray(weight)
    if data.ndim != 6 or data.shape[4:] != (B, I) or weight.ndim != 6 or weight.shape[4:] != (O, I):
        raise ValueError(f"packed shapes {data.shape}, {weight.shape}; expected (nb, cb, H, W, {B}, {I}) and "
                         f"(ob, cb, kh, kw, {O}, {I})")
    nb, cb, h, w = data.shape[:4]
    ob, cb2, kh, kw = weight.shape[:4]
    if cb2 != cb:
        raise ValueError(f"data has {cb} input-channel blocks, weight {cb2}")
    if not isinstance(stride, (int, np.integer)) or stride < 1:
        raise ValueError(f"stride = {stride!r}; allowed: an integer >= 1 (the same for both axes)")
    if not isinstance(padding, (int, np.integer)) or not 0 <= padding <= MAX_PAD:
        raise TileError(f"padding = {padding!r}; the LOAD padding fields allow [0, {MAX_PAD}]")
    if padding >= kh or padding >= kw:
        raise ValueError(f"padding = {padding} must be smaller than the kernel {kh}x{kw}")
    ho, wo = (h + 2 * padding - kh) // stride + 1, (w + 2 * padding - kw) // stride + 1
    if ho < 1 or wo < 1:
        raise ValueError(f"the output would be {ho}x{wo}")
    if ob * ho * wo < 3:
        raise ValueError(f"the output has {ob * ho * wo} blocks; the GEMM micro-kernel needs at least 3 "
                         f"(pad the output channels: conv2d() does this)")
    epi, vectors = packed_epilogue(epilogue, shift, bias, clip, ob, cfg)
    plan = plan_conv2d(nb, cb, ob, h, w, kh, kw, stride, padding, virtual_threads, epi, cfg, tiles)
    shape = (nb, cb, ob, h, w, kh, kw, stride, padding)
    return run_operator(data, weight, vectors, epi, (nb, ob, ho, wo, B, O),
                        lambda xd, wd, pd, yd: _conv_tiles(plan, cfg, shape, xd, wd, yd, pd, epi), return_counters)


def conv2d(data, weight, bias=None, stride: int = 1, padding: int = 0, shift: int = 8, clip: bool = True,
           virtual_threads: int = 1, tiles=None, return_counters: bool = False,
           epilogue: Epilogue | Sequence | None = None):
    """VTA's conv2d benchmark: data (N, C, H, W) int8, weight (O, C, kh, kw) int8, bias (O,) int32 or
    None; conv2d_nchw in int32, >> shift, + bias, clip [0, 127], int8 (N, O, Ho, Wo).

    The operands are packed to NCHW{BATCH}n{BLOCK_IN}c / OIHW{BLOCK_OUT}o{BLOCK_IN}i (zero-padded to
    whole blocks); the spatial padding is done by the LOADs. ``tiles`` = (tm, th, tw, tc) overrides
    the automatic tiling. ``epilogue``: an :class:`~sw.ops.epilogue.Epilogue` (or its ALU steps)
    instead of shift / bias / clip; then ``bias`` is its vectors, (O,) or (V, O) int32, and the
    result int8 (one plane) or int32 (more).
    """
    cfg = config()
    data, weight = np.asarray(data), np.asarray(weight)
    if data.ndim != 4 or weight.ndim != 4 or data.shape[1] != weight.shape[1]:
        raise ValueError(f"data {data.shape} and weight {weight.shape} must be (N, C, H, W) and (O, C, kh, kw)")
    n, _, h, w = data.shape
    o, _, kh, kw = weight.shape
    ho = (h + 2 * padding - kh) // stride + 1
    wo = (w + 2 * padding - kw) // stride + 1
    ob = max(cdiv(o, cfg.BLOCK_OUT), cdiv(3, max(1, ho * wo)))
    epi = Epilogue.of(epilogue) or Epilogue.vta(shift, bias is not None, clip)
    bp = pack_layer_bias(bias, o, ob, cfg)
    y, counters = conv2d_packed(pack_conv_data(data, cfg), pack_conv_weight(weight, cfg, ob), bp, stride,
                                padding, virtual_threads=virtual_threads, tiles=tiles, return_counters=True,
                                epilogue=epi)
    y = epi.assemble(y if epi.planes > 1 else y[None])
    return _finish(unpack_conv_output(y, n, o), counters, return_counters)
