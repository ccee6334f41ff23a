"""2-D convolution on packed NCHWnc tensors: tiles with the halo and the zero padding done by the LOADs."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Literal, overload

import numpy as np
import numpy.typing as npt

from sw.isa import MemId
from sw.ops.base import (
    MAX_EXTENT,
    MAX_PAD,
    TileError,
    _acc_region,
    _check_vt,
    _edge_pads,
    _finish,
    _halves,
    cdiv,
    config,
)
from sw.ops.depthwise import depthwise_choice, depthwise_packed
from sw.ops.epilogue import Epilogue, TileOperands, bias_init, packed_epilogue, vectors_2d
from sw.ops.kernels import Gemm, Load, Store, _conv_variant, _k_conv
from sw.ops.layout import (
    block_groups,
    grouped_channels,
    pack_conv_data,
    pack_conv_output,
    pack_conv_weight,
    pack_grouped_conv_weight,
    pack_layer_bias,
    unpack_conv_output,
)
from sw.ops.plan import ConvPlan, _conv_caps, _in_rows, plan_conv2d
from sw.ops.schedule import _Step, _Tile, head_key, head_parts, head_pays, run_operator


def _conv_tiles(plan: ConvPlan, cfg, shape, xd, wd, yd, pd, epi: Epilogue, bg: int = 1, rd=None,
                init: bool = False) -> list[_Tile]:
    """The tiles of a conv2d; with ``bg`` block-groups, output block m reads only the ``cb`` input blocks
    of its block-group m // (ob / bg), and no tile straddles two block-groups. ``rd``: the residual's
    buffer (packed like the output), loaded per tile in the layout of the tile's stores. ``init``: the
    epilogue is :func:`~sw.ops.epilogue.bias_init`'s, so a tile may start at the bias."""
    nb, cb, ob, h, w, kh, kw, s, pad = shape
    obg = ob // bg
    vt = plan.virtual_threads
    hv = _halves(cfg, vt)
    ho, wo = (h + 2 * pad - kh) // s + 1, (w + 2 * pad - kw) // s + 1
    kk = kh * kw
    INP, WGT, ACC8 = int(MemId.INP), int(MemId.WGT), int(MemId.ACC_8BIT)
    tiles: list[_Tile] = []
    step_no = 0
    ti = 0
    uop_cap = _conv_caps(cfg, vt)["uop"]
    for n, g, gm0, h0_, w0_ in itertools.product(range(nb), range(bg), range(0, obg, plan.tm), range(0, ho, plan.th),
                                                 range(0, wo, plan.tw)):
        gend = (g + 1) * obg                    # the block-group's output blocks end here
        m0, h0, w0 = g * obg + gm0, h0_, w0_
        tm, th, tw = min(plan.tm, gend - m0), min(plan.th, ho - h0), min(plan.tw, wo - w0)
        v, uops = _conv_variant(tm, th, tw, min(plan.tc, cb), kh, kw)
        if v is None or uops > uop_cap:
            # an edge tile whose kernel would break the hazard rule or the uop budget: use a
            # full-size tile that ends at the edge (it recomputes some neighbouring outputs)
            tm, th, tw = plan.tm, plan.th, plan.tw
            m0, h0, w0 = min(m0, gend - tm), min(h0, ho - th), min(w0, wo - tw)
        ih = _in_rows(th, kh, s, pad)
        skip = ih < (th - 1) * s + kh           # rows skipped by the load: row step 1 in the tile
        r0 = h0 * s - pad
        ypb, ypa, ys = _edge_pads(r0, ih, h)
        iw = (tw - 1) * s + kw
        c0_ = w0 * s - pad
        xpb, xpa, xs = _edge_pads(c0_, iw, w)
        if ys < 1 or xs < 1:
            raise TileError(f"an input tile lies entirely in the padding (padding {pad} >= kernel)")
        a = ti % (vt * plan.slots)          # the acc region: thread a % vt, slot a // vt
        ti += 1
        acc = _acc_region(hv, a, vt, plan.slots)
        rows = tm * th * tw
        t = _Tile(acc=a, reset=(acc, rows * epi.planes), gemm_uops=rows * cb * kk)
        for c0 in range(0, cb, plan.tc):
            tc = min(plan.tc, cb - c0)
            b = step_no % vt
            step_no += 1
            inp, wgt = hv["inp"][1][b], hv["wgt"][1][b]
            inp_loads = []
            first = ((n * bg * cb + g * cb + c0) * h + r0 + ypb) * w + c0_ + xpb
            if tc > 1 and xs == w and not skip and not (xpb or ypb or xpa or ypa) and h * w <= MAX_EXTENT:
                # whole unpadded rows: each channel block's rows are contiguous, so one LOAD of tc such runs
                # (h * w apart) fills the tile (a LOAD pads each 2-D block, hence only without padding)
                inp_loads.append(Load(xd, first, xs * ys, tc, h * w, inp, INP))
            else:
                for c in range(tc):
                    inp_loads.append(Load(xd, first + c * h * w, xs, ys, w * s if skip else w, inp + c * ih * iw, INP,
                                          xpb, ypb, xpa, ypa))
            whole = Load(wd, (m0 * cb + c0) * kk, tc * kk, tm, cb * kk, wgt, WGT)
            parts = [(0, tm)]
            if vt > 1 and not tiles and c0 == 0:
                # the operator's first step in parts of output blocks, where its GEMMs outlast its loads and the
                # kernel of a part keeps to the hazard rule and the micro-op budget: the first part loads the
                # input, each its share of the weights, in the step's own layout (so the last holds them all)
                heads = head_parts(tm)
                if (len(heads) > 1 and head_pays(rows * tc * kk, inp_loads + [whole], cfg,
                                                      epi.alu_cycles(rows, tm) * tc / cb)
                        and all((u := _conv_variant(jn, th, tw, tc, kh, kw))[0] is not None and u[1] <= uop_cap
                                for _, jn in heads)):
                    parts = heads
            for i, (ja, jn) in enumerate(parts):
                last = ja + jn == tm
                share = Load(wd, ((m0 + ja) * cb + c0) * kk, tc * kk, jn, cb * kk, wgt + ja * tc * kk, WGT)
                loads = (inp_loads if ja == 0 else []) + [whole if jn == tm else share]
                gemm = Gemm(_k_conv(acc + ja * th * tw, inp, wgt + ja * tc * kk, jn, th, tw, tc, kh, kw, s, ih, iw,
                                    1 if skip else s))
                t.steps.append(_Step(b if last else head_key(i), loads, [gemm], (whole,) if last else None))

        operands = TileOperands(pd, ob, m0, tm)

        def load_residual(row, n=n, m0=m0, h0=h0, w0=w0, tm=tm, th=th, tw=tw):
            return [Load(rd, ((n * ob + m0 + j) * ho + h0) * wo + w0, tw, th, wo, row + j * th * tw, ACC8)
                    for j in range(tm)]

        loops = ((tm, th * tw, 1), (th * tw, 1, 0))
        t.computes += epi.actions(acc, rows, tm, loops, operands, load_residual if rd is not None else None)
        if init:
            t.init = epi.init_actions(acc, rows, tm, loops, operands)
        for p, j in itertools.product(range(epi.planes), range(tm)):
            t.stores.append(Store(acc + p * rows + j * th * tw, yd,
                                  (((p * nb + n) * ob + m0 + j) * ho + h0) * wo + w0, tw, th, wo))
        tiles.append(t)
    return tiles


@overload
def conv2d_packed(data: npt.ArrayLike, weight: npt.ArrayLike, bias: npt.ArrayLike | None = ..., stride: int = ...,
                  padding: int = ..., shift: int = ..., clip: bool = ..., virtual_threads: int = ...,
                  tiles: Sequence[int] | None = ..., return_counters: Literal[False] = ...,
                  epilogue: Epilogue | Sequence | None = ..., block_groups: int = ...,
                  residual: np.ndarray | None = ...) -> np.ndarray: ...
@overload
def conv2d_packed(data: npt.ArrayLike, weight: npt.ArrayLike, bias: npt.ArrayLike | None = ..., stride: int = ...,
                  padding: int = ..., shift: int = ..., clip: bool = ..., virtual_threads: int = ...,
                  tiles: Sequence[int] | None = ..., *, return_counters: Literal[True],
                  epilogue: Epilogue | Sequence | None = ..., block_groups: int = ...,
                  residual: np.ndarray | None = ...) -> tuple[np.ndarray, dict[str, int]]: ...
@overload
def conv2d_packed(data: npt.ArrayLike, weight: npt.ArrayLike, bias: npt.ArrayLike | None = ..., stride: int = ...,
                  padding: int = ..., shift: int = ..., clip: bool = ..., virtual_threads: int = ...,
                  tiles: Sequence[int] | None = ..., return_counters: bool = ...,
                  epilogue: Epilogue | Sequence | None = ..., block_groups: int = ...,
                  residual: np.ndarray | None = ...) -> np.ndarray | tuple[np.ndarray, dict[str, int]]: ...


def conv2d_packed(data: npt.ArrayLike, weight: npt.ArrayLike, bias: npt.ArrayLike | None = None, stride: int = 1,
                  padding: int = 0, shift: int = 8, clip: bool = True, virtual_threads: int = 1,
                  tiles: Sequence[int] | None = None, return_counters: bool = False,
                  epilogue: Epilogue | Sequence | None = None, block_groups: int = 1,
                  residual: np.ndarray | None = None) -> np.ndarray | tuple[np.ndarray, dict[str, int]]:
    """conv2d on packed operands: data (nb, cb, H, W, BATCH, BLOCK_IN), weight (ob, cb, kh, kw, BLOCK_OUT,
    BLOCK_IN) int8, bias None or packed (ob, BATCH, BLOCK_OUT) int32; returns (nb, ob, Ho, Wo, BATCH,
    BLOCK_OUT) int8 after >> shift, + bias, clip [0, 127].

    ``epilogue`` (an :class:`~sw.ops.epilogue.Epilogue` or its ALU steps) replaces that requantization;
    ``bias`` then holds its vectors packed as (V, ob, BATCH, BLOCK_OUT), and an epilogue of k > 1
    planes returns (k, nb, ob, Ho, Wo, BATCH, BLOCK_OUT) int8, the bytes of each result. An epilogue
    with a residual takes it as ``residual``, int8 packed like the output (nb, ob, Ho, Wo, BATCH,
    BLOCK_OUT).

    ``block_groups`` = G > 1 (grouped and depthwise convolutions, :func:`~sw.ops.layout.block_groups`):
    data has G * cbg input blocks, weight (ob, cbg, ...) with ob = G * obg, and output block m is the
    convolution of input blocks [(m // obg) cbg, (m // obg + 1) cbg) only."""
    _check_vt(virtual_threads)
    cfg = config()
    B, I, O = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
    data, weight = np.asarray(data), np.asarray(weight)
    if data.ndim != 6 or data.shape[4:] != (B, I) or weight.ndim != 6 or weight.shape[4:] != (O, I):
        raise ValueError(f"packed shapes {data.shape}, {weight.shape}; expected (nb, cb, H, W, {B}, {I}) and "
                         f"(ob, cb, kh, kw, {O}, {I})")
    nb, cb, h, w = data.shape[:4]
    ob, cb2, kh, kw = weight.shape[:4]
    bg = block_groups
    if not isinstance(bg, (int, np.integer)) or bg < 1 or ob % bg:
        raise ValueError(f"block_groups = {bg!r}; allowed: an integer >= 1 dividing the {ob} output blocks")
    if cb2 * bg != cb:
        raise ValueError(f"data has {cb} input-channel blocks, weight {cb2}" +
                         (f" per block-group of {bg}" if bg > 1 else ""))
    if not isinstance(stride, (int, np.integer)) or stride < 1:
        raise ValueError(f"stride = {stride!r}; allowed: an integer >= 1 (the same for both axes)")
    if not isinstance(padding, (int, np.integer)) or not 0 <= padding <= MAX_PAD:
        raise TileError(f"padding = {padding!r}; the LOAD padding fields allow [0, {MAX_PAD}]")
    if padding >= kh or padding >= kw:
        raise ValueError(f"padding = {padding} must be smaller than the kernel {kh}x{kw}")
    ho, wo = (h + 2 * padding - kh) // stride + 1, (w + 2 * padding - kw) // stride + 1
    if ho < 1 or wo < 1:
        raise ValueError(f"the output would be {ho}x{wo}")
    if ob // bg * ho * wo < 3:
        raise ValueError(f"the output has {ob // bg * ho * wo} blocks" + (" per block-group" if bg > 1 else "") +
                         "; the GEMM micro-kernel needs at least 3 (pad the output channels: conv2d() does this)")
    epi, vectors = packed_epilogue(epilogue, shift, bias, clip, ob, cfg, rows=ho * wo)
    plan = plan_conv2d(nb * bg, cb2, ob // bg, h, w, kh, kw, stride, padding, virtual_threads, epi, cfg, tiles,
                       block_groups=bg)
    shape = (nb, cb2, ob, h, w, kh, kw, stride, padding)
    init = bias_init(epi, vectors, cb2 * kh * kw * I * 128 * 128) if virtual_threads > 1 else None
    if init is not None:
        epi, vectors = init
    return run_operator(data, weight, vectors, epi, (nb, ob, ho, wo, B, O),
                        lambda xd, wd, pd, yd, rd: _conv_tiles(plan, cfg, shape, xd, wd, yd, pd, epi, bg, rd,
                                                               init is not None),
                        return_counters, residual)


@overload
def conv2d(data: np.ndarray, weight: np.ndarray, bias: npt.ArrayLike | None = ..., stride: int = ..., padding: int = ...,
           shift: int = ..., clip: bool = ..., virtual_threads: int = ..., tiles: Sequence[int] | None = ...,
           return_counters: Literal[False] = ..., epilogue: Epilogue | Sequence | None = ..., groups: int = ...,
           residual: npt.ArrayLike | None = ...) -> np.ndarray: ...
@overload
def conv2d(data: np.ndarray, weight: np.ndarray, bias: npt.ArrayLike | None = ..., stride: int = ..., padding: int = ...,
           shift: int = ..., clip: bool = ..., virtual_threads: int = ..., tiles: Sequence[int] | None = ..., *,
           return_counters: Literal[True], epilogue: Epilogue | Sequence | None = ..., groups: int = ...,
           residual: npt.ArrayLike | None = ...) -> tuple[np.ndarray, dict[str, int]]: ...
@overload
def conv2d(data: np.ndarray, weight: np.ndarray, bias: npt.ArrayLike | None = ..., stride: int = ...,
           padding: int = ..., shift: int = ..., clip: bool = ..., virtual_threads: int = ...,
           tiles: Sequence[int] | None = ..., return_counters: bool = ..., epilogue: Epilogue | Sequence | None = ...,
           groups: int = ..., residual: npt.ArrayLike | None = ...) -> np.ndarray | tuple[np.ndarray, dict[str, int]]: ...


def conv2d(data: np.ndarray, weight: np.ndarray, bias: npt.ArrayLike | None = None, stride: int = 1, padding: int = 0,
           shift: int = 8, clip: bool = True, virtual_threads: int = 1, tiles: Sequence[int] | None = None,
           return_counters: bool = False, epilogue: Epilogue | Sequence | None = None, groups: int = 1,
           residual: npt.ArrayLike | None = None) -> np.ndarray | tuple[np.ndarray, dict[str, int]]:
    """VTA's conv2d benchmark: data (N, C, H, W) int8, weight (O, C, kh, kw) int8, bias (O,) int32 or
    None; conv2d_nchw in int32, >> shift, + bias, clip [0, 127], int8 (N, O, Ho, Wo).

    The operands are packed to NCHW{BATCH}n{BLOCK_IN}c / OIHW{BLOCK_OUT}o{BLOCK_IN}i (zero-padded to
    whole blocks); the spatial padding is done by the LOADs. ``tiles`` = (tm, th, tw, tc) overrides
    the automatic tiling ((tm, th, tw, tc, 2): two acc regions per virtual thread). ``epilogue``: an
    :class:`~sw.ops.epilogue.Epilogue` (or its ALU steps) instead of shift / bias / clip; then ``bias``
    is its vectors, (O,) or (V, O) int32, and the result int8 (one plane) or int32 (more).

    ``groups`` > 1: a grouped convolution, weight (O, C / groups, kh, kw) as in ONNX and PyTorch
    (``groups = C``: depthwise). Whole groups are packed side by side into block-groups with a
    block-diagonal weight (:func:`~sw.ops.layout.block_groups`), so a depthwise convolution costs one
    GEMM micro-op per kernel tap, output pixel and block of channels.

    ``residual``: an int8 (N, O, Ho, Wo) tensor for an epilogue with a residual (a skip connection
    added in the epilogue, :class:`~sw.ops.epilogue.Epilogue`); groups = 1 only.
    """
    cfg = config()
    data, weight = np.asarray(data), np.asarray(weight)
    if not isinstance(groups, (int, np.integer)) or groups < 1:
        raise ValueError(f"groups = {groups!r}; allowed: an integer >= 1")
    if data.ndim != 4 or weight.ndim != 4 or data.shape[1] != weight.shape[1] * groups \
            or weight.shape[0] % groups:
        raise ValueError(f"data {data.shape} and weight {weight.shape} must be (N, C, H, W) and (O, C / groups, kh, kw) "
                         f"with groups = {groups} dividing C and O")
    n, c, h, w = data.shape
    o, _, kh, kw = weight.shape
    if residual is not None and groups > 1:
        raise ValueError(f"residual with groups = {groups}; a fused residual takes groups = 1")
    if groups > 1:
        return _grouped(data, weight, bias, stride, padding, virtual_threads, tiles, return_counters,
                        Epilogue.of(epilogue) or Epilogue.vta(shift, bias is not None, clip), groups, cfg)
    ho = (h + 2 * padding - kh) // stride + 1
    wo = (w + 2 * padding - kw) // stride + 1
    ob = max(cdiv(o, cfg.BLOCK_OUT), cdiv(3, max(1, ho * wo)))
    epi = Epilogue.of(epilogue) or Epilogue.vta(shift, bias is not None, clip)
    bp = pack_layer_bias(bias, o, ob, cfg)
    rp = None
    if residual is not None:
        residual = np.asarray(residual)
        if residual.shape != (n, o, ho, wo):
            raise ValueError(f"residual has shape {residual.shape}; expected the output's {(n, o, ho, wo)}")
        rp = pack_conv_output(residual, cfg, ob)
    y, counters = conv2d_packed(pack_conv_data(data, cfg), pack_conv_weight(weight, cfg, ob), bp, stride,
                                padding, virtual_threads=virtual_threads, tiles=tiles, return_counters=True,
                                epilogue=epi, residual=rp)
    y = epi.assemble(y if epi.planes > 1 else y[None])
    return _finish(unpack_conv_output(y, n, o), counters, return_counters)


def _grouped(data, weight, bias, stride, padding, vt, tiles, return_counters, epi: Epilogue, groups: int, cfg):
    n, c, h, w = data.shape
    o, _, kh, kw = weight.shape
    if groups == c == o and tiles is None:
        plan, _ = depthwise_choice(n, c, h, w, kh, kw, stride, padding, vt, epi, cfg)
        if plan is not None:
            cb = cdiv(c, cfg.BLOCK_IN)
            ho, wo = (h + 2 * padding - kh) // stride + 1, (w + 2 * padding - kw) // stride + 1
            lowered, vectors = packed_epilogue(epi, 0, pack_layer_bias(bias, o, cb, cfg), True, cb, cfg,
                                               rows=ho * wo)
            y, counters = depthwise_packed(pack_conv_data(data, cfg), weight, vectors, stride, padding, lowered, plan,
                                           return_counters=True)
            y = epi.assemble(y if epi.planes > 1 else y[None])
            return _finish(unpack_conv_output(y, n, c), counters, return_counters)
    bg, _, cbg, obg = block_groups(c, o, groups, cfg)
    ho, wo = (h + 2 * padding - kh) // stride + 1, (w + 2 * padding - kw) // stride + 1
    if obg * ho * wo < 3:
        raise ValueError(f"a grouped convolution with a {ho}x{wo} output and {obg} output block per block-group: the "
                         f"GEMM micro-kernel needs at least 3 output blocks per block-group")
    x = np.zeros((n, bg * cbg * cfg.BLOCK_IN, h, w), np.int8)
    x[:, :c] = data
    where = grouped_channels(c, o, groups, cfg)
    bp = None
    if bias is not None:
        vec = vectors_2d(bias, o)
        spread = np.zeros((len(vec), bg * obg * cfg.BLOCK_OUT), np.int32)
        spread[:, where] = vec
        bp = pack_layer_bias(spread, spread.shape[1], bg * obg, cfg)
    y, counters = conv2d_packed(pack_conv_data(x, cfg), pack_grouped_conv_weight(weight, groups, c, cfg), bp, stride,
                                padding, virtual_threads=vt, tiles=tiles, return_counters=True, epilogue=epi,
                                block_groups=bg)
    y = epi.assemble(y if epi.planes > 1 else y[None])
    return _finish(unpack_conv_output(y, n, bg * obg * cfg.BLOCK_OUT)[:, where], counters, return_counters)
