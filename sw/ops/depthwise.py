"""Depthwise convolution on the GEMM core's DEPTHWISE mode (configs with ``DEPTHWISE`` = 1, docs/isa.md).

A DEPTHWISE micro-op reads one inp row (a pixel's BLOCK_IN channels) into the core's window of the last
BLOCK_IN rows read and writes, per lane j, the dot product of channel j across the window with the lane's
taps. A tile walks its input column by column in *strips*: for r output rows per strip, each column holds
hc = (r - 1) * stride + kh input rows, read top to bottom, so when the micro-op reads the bottom-right pixel
of an output's kh x kw neighbourhood, pixel (ky, kx) of it was read ``(kw - 1 - kx) * hc + (kh - 1 - ky)``
micro-ops earlier: one weight row per channel block, with each channel's taps at those slots, serves every
output. The window must span (kw - 1) * hc + kh <= BLOCK_IN slots, which fixes r (4 rows for a 3x3 stride 1
on 16 lanes, 2 for stride 2).

Each strip is one DEPTHWISE instruction: its micro-ops are one iteration's reads (``stride`` columns of hc rows),
its inner loop walks the tile's columns and its outer loop the tile's channel blocks, so the instruction holds a
handful of micro-ops whatever the tile's size (the compute module scans an instruction's micro-ops before it
issues it). A read whose window is not a whole neighbourhood writes the position of the next output that its
iteration writes, which overwrites it; in a strip's first iterations that position lies left of the tile's first
column, on the row above, which the strip that runs next writes again: strips run from the bottom of the tile up,
and j0 spare rows precede each channel block's outputs (:func:`depthwise_uops`).

A strip of r rows costs (tw + j0) * stride * hc micro-ops for r * tw outputs: at stride 1, 6 micro-ops per 4
outputs of a 3x3 kernel, against 9 per output as a block-diagonal GEMM. :func:`plan_depthwise` tiles within the
SRAMs and returns the planner's cycle estimate, which :func:`sw.ops.conv2d` compares with the block-diagonal plan's.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import cache, lru_cache

import numpy as np

from sw import runtime as rt
from sw.config import Config
from sw.isa import MemId
from sw.ops.base import MAX_PAD, TileError, _acc_region, _cands, _edge_pads, _halves, cdiv, config
from sw.ops.epilogue import Epilogue, TileOperands
from sw.ops.kernels import Depthwise, Load, Store, _f
from sw.ops.layout import block_groups
from sw.ops.plan import _conv_caps, _param_loads, _plan_cycles, _tail_cycles, conv2d_candidates
from sw.ops.schedule import _Step, _Tile, run_operator

__all__ = ["strip_rows", "window_slot", "column_shift", "pack_depthwise_weight", "DepthwisePlan", "plan_depthwise",
           "depthwise_packed", "depthwise_uops",
           "depthwise_choice"]


MAX_STRIP_ROWS = 64
"""The most output rows of a strip (a kernel one column wide puts no bound of its own on them)."""


def strip_rows(kh: int, kw: int, stride: int, cfg: Config) -> int:
    """The most output rows a strip computes for a kh x kw kernel of ``stride`` (0: the window of BLOCK_IN
    slots cannot hold one neighbourhood; also 0 on a config without the DEPTHWISE mode)."""
    if not cfg.DEPTHWISE:
        return 0
    r = 0
    while r < MAX_STRIP_ROWS and (kw - 1) * (r * stride + kh) + kh <= cfg.BLOCK_IN:
        r += 1
    return r


def window_slot(ky: int, kx: int, hc: int, kh: int, kw: int) -> int:
    """The window slot of tap (ky, kx) when a strip's columns hold ``hc`` input rows."""
    return (kw - 1 - kx) * hc + (kh - 1 - ky)


def pack_depthwise_weight(weight: np.ndarray, cb: int, hc: int, cfg: Config) -> np.ndarray:
    """(C, 1, kh, kw) int8 depthwise weights -> (cb, BLOCK_OUT, BLOCK_IN) wgt rows: row m, lane j holds the taps
    of channel m * BLOCK_OUT + j at their window slots (zero elsewhere and for channels past C)."""
    c, _, kh, kw = weight.shape
    out = np.zeros((cb * cfg.BLOCK_OUT, cfg.BLOCK_IN), np.int8)
    for ky, kx in itertools.product(range(kh), range(kw)):
        out[:c, window_slot(ky, kx, hc, kh, kw)] = weight[:, 0, ky, kx]
    return out.reshape(cb, cfg.BLOCK_OUT, cfg.BLOCK_IN)


def _strips(th: int, r: int) -> list[int]:
    """The first output row of each strip of a tile of ``th`` rows, in the order they run: from the bottom up (the
    first, at the bottom, ends at the tile's edge, overlapping the one above where r does not divide th)."""
    starts = list(range(0, th - r + 1, r))
    if starts[-1] + r < th:
        starts.append(th - r)
    return starts[::-1]


def column_shift(kw: int, s: int) -> tuple[int, int]:
    """(shift, j0) of a strip's column walk for a kernel kw wide at stride ``s``: the tile's input gets ``shift``
    zero columns on its left so that each iteration's last column ends an output's neighbourhood, and the first
    ``j0`` iterations end none."""
    shift = (s - kw) % s
    return shift, (kw - s + shift) // s


def depthwise_uops(r0: int, tw: int, kh: int, kw: int, s: int, iwp: int, r: int) -> list[tuple[int, int]]:
    """The (acc, inp) offsets of the micro-ops of iteration 0 of the strip at output row ``r0`` (the inner loop's
    iteration j adds j to the acc offset and s * j to the inp offset): acc rows (th, tw) from the block's base,
    inp rows (ih, iwp) with the tile's columns ``shift`` to the right (:func:`column_shift`).

    Iteration j reads s columns, each top to bottom, the strip's hc = (r - 1) * s + kh rows; the last read of an
    output's neighbourhood writes the output (row r0 + (a - kh + 1) / s, column j - j0); every other read writes
    the next output of its iteration, which overwrites it. In the first j0 iterations those positions lie left of
    column 0: the tail of the row above, which a later iteration or the strip that runs next (strips run bottom
    up) writes again, and, above the tile's first row, the j0 spare rows before its block."""
    _, j0 = column_shift(kw, s)
    hc = (r - 1) * s + kh
    valid = [a for a in range(hc) if a >= kh - 1 and (a - kh + 1) % s == 0]
    uops = []
    for c in range(s):
        for a in range(hc):
            # the row of this read's output, or of the next output the iteration writes
            nxt = (a if a in valid else next(v for v in valid if v > a)) if c == s - 1 else valid[0]
            row = r0 + (nxt - kh + 1) // s
            uops.append((row * tw - j0, (r0 * s + a) * iwp + c))
    return uops


@cache
def _k_depthwise(acc: int, inp: int, wgt: int, tm: int, pitch: int, r0: int, tw: int, kh: int, kw: int, s: int,
                 ih: int, iwp: int, r: int):
    """The DEPTHWISE micro-kernel of one strip of a tile: the inner loop walks its tw + j0 iterations, the outer
    one the tile's ``tm`` channel blocks (acc blocks ``pitch`` rows apart, inp blocks (ih, iwp), one wgt row
    each)."""
    uops = depthwise_uops(r0, tw, kh, kw, s, iwp, r)
    _, j0 = column_shift(kw, s)

    def kernel():
        rt.uop_loop_begin(tm, _f(tm, pitch), _f(tm, ih * iwp), _f(tm, 1))
        rt.uop_loop_begin(tw + j0, 1, s, 0)
        for d, src in uops:
            rt.uop_push(0, 0, acc + d, inp + src, wgt, 0, 0, 0)
        rt.uop_loop_end()
        rt.uop_loop_end()
    return kernel


def _tile_cost(th: int, tw: int, kh: int, kw: int, s: int, r: int) -> int:
    """DEPTHWISE micro-op executions of one channel block of a th x tw tile."""
    return len(_strips(th, r)) * (tw + column_shift(kw, s)[1]) * s * ((r - 1) * s + kh)


@dataclass(frozen=True)
class DepthwisePlan:
    """Tiles of tm channel blocks x th x tw outputs; strips of ``r`` rows; ``slots`` acc regions per thread;
    ``cost``: the planner's cycles for the whole layer; ``stride`` and ``kh``, the kernel's (they fix a strip's
    column, :attr:`hc`)."""
    tm: int
    th: int
    tw: int
    r: int
    virtual_threads: int
    cost: float
    slots: int = 1
    stride: int = 1
    kh: int = 3

    @property
    def hc(self) -> int:
        """Input rows of a strip column."""
        return (self.r - 1) * self.stride + self.kh


def plan_depthwise(nb: int, cb: int, h: int, w: int, kh: int, kw: int, stride: int, pad: int,
                   virtual_threads: int = 1, epilogue: Epilogue | None = None,
                   cfg: Config | None = None) -> DepthwisePlan | None:
    """The cheapest tiling of a depthwise convolution on the DEPTHWISE mode under the planner's cycle model
    (:func:`sw.ops.plan._plan_cycles`), or None where the mode does not apply (no DEPTHWISE on the config, a
    kernel wider than the window, padding beyond the LOAD's, or no tile that fits)."""
    cfg = cfg or config()
    epi = epilogue or Epilogue.vta()
    return _plan_depthwise(nb, cb, h, w, kh, kw, stride, pad, virtual_threads, epi.cost_proxy, cfg)


@lru_cache(maxsize=256)
def _plan_depthwise(nb, cb, h, w, kh, kw, s, pad, vt, epi, cfg) -> DepthwisePlan | None:
    rmax = strip_rows(kh, kw, s, cfg)
    ho, wo = (h + 2 * pad - kh) // s + 1, (w + 2 * pad - kw) // s + 1
    if rmax == 0 or pad > MAX_PAD or pad >= kh or pad >= kw or ho < 1 or wo < 1:
        return None
    caps = _conv_caps(cfg, vt)
    ie, we = cfg.INP_ELEM_BYTES, cfg.WGT_ELEM_BYTES
    best = None
    alu = nb * cb * ho * wo * epi.passes
    for slots, tm, th, tw in itertools.product((1, 2) if vt > 1 else (1,), _cands(cb), _cands(ho), _cands(wo)):
        r = min(rmax, th)
        shift, j0 = column_shift(kw, s)
        ih, iwp = (th - 1) * s + kh, (tw - 1) * s + kw + shift
        if (tm * ih * iwp > caps["inp"] or tm > caps["wgt"] or shift + pad > MAX_PAD
                or epi.acc_rows(tm * (th * tw + j0), tm) + j0 > caps["acc"] // slots):
            continue
        tiles = nb * cdiv(cb, tm) * cdiv(ho, th) * cdiv(wo, tw)
        uops = tiles * tm * _tile_cost(th, tw, kh, kw, s, r)
        load_bytes = tiles * tm * (ih * iwp * ie + we)
        par_bytes, par_rows = _param_loads(nb * cdiv(cb, tm) * min(cdiv(ho, th) * cdiv(wo, tw), vt * slots), tm,
                                           epi, cfg)
        rows = tiles * (tm * ih + 1) + par_rows
        tail = _tail_cycles(tm * th * tw, tm, epi, cfg)
        chain = tiles * tail / max(1, vt * slots - 1)
        insns = tiles * (tm + 8 + len(_strips(th, r)))
        first = tm * ih * iwp * ie + tm * we
        cost = _plan_cycles(vt, load_bytes + par_bytes, rows, uops, alu + tiles * epi.alu_cycles(0, tm), insns,
                            first, tail, cfg, chain)
        # (at stride 1, with virtual threads, two acc regions per thread where they fit: a tile's POST parameters
        # load before its DEPTHWISE and that load waits for every older instruction, so a region reused a tile later
        # stalls the compute module in a way the model does not count; at stride 2 the loads set the pace and the
        # larger tiles of one region per thread move fewer halo bytes)
        key = (-slots if s == 1 else 0, cost, -tm * th * tw)
        if best is None or key < best[0]:
            best = (key, DepthwisePlan(tm, th, tw, r, vt, cost, slots, s, kh))
    return None if best is None else best[1]


def _tiles(plan: DepthwisePlan, cfg, shape, xd, wd, yd, pd, epi: Epilogue) -> list[_Tile]:
    nb, cb, h, w, kh, kw, s, pad = shape
    vt = plan.virtual_threads
    hv = _halves(cfg, vt)
    ho, wo = (h + 2 * pad - kh) // s + 1, (w + 2 * pad - kw) // s + 1
    shift, j0 = column_shift(kw, s)
    INP, WGT = int(MemId.INP), int(MemId.WGT)
    tiles: list[_Tile] = []
    for ti, (n, m0, h0, w0) in enumerate(itertools.product(range(nb), range(0, cb, plan.tm), range(0, ho, plan.th),
                                                          range(0, wo, plan.tw))):
        # an edge tile is a full-size tile that ends at the edge (it recomputes some neighbouring outputs)
        tm = min(plan.tm, cb - m0)
        th, tw = min(plan.th, ho), min(plan.tw, wo)
        h0, w0 = min(h0, ho - th), min(w0, wo - tw)
        ih, iw = (th - 1) * s + kh, (tw - 1) * s + kw
        iwp = iw + shift
        r0, c0 = h0 * s - pad, w0 * s - pad
        ypb, ypa, ys = _edge_pads(r0, ih, h)
        xpb, xpa, xs = _edge_pads(c0, iw, w)
        if ys < 1 or xs < 1:
            raise TileError(f"a depthwise input tile lies entirely in the padding (padding {pad})")
        a = ti % (vt * plan.slots)
        # each channel block's th x tw outputs follow j0 spare rows (:func:`depthwise_uops`)
        acc = _acc_region(hv, a, vt, plan.slots) + j0
        pitch = th * tw + j0
        b = ti % vt
        inp, wgt = hv["inp"][1][b], hv["wgt"][1][b]
        first = ((n * cb + m0) * h + r0 + ypb) * w + c0 + xpb
        loads = [Load(xd, first + c * h * w, xs, ys, w, inp + c * ih * iwp, INP, xpb + shift, ypb, xpa, ypa)
                 for c in range(tm)]
        loads.append(Load(wd, m0, tm, 1, tm, wgt, WGT))
        rows = tm * pitch
        r = plan.r
        strips = [Depthwise(_k_depthwise(acc, inp, wgt, tm, pitch, y0, tw, kh, kw, s, ih, iwp, r))
                  for y0 in _strips(th, r)]
        # DEPTHWISE writes every accumulator of the tile: only the epilogue's further planes start at zero
        t = _Tile(acc=a, gemm_uops=tm * _tile_cost(th, tw, kh, kw, s, r),
                  reset=(acc + rows, rows * (epi.planes - 1)) if epi.planes > 1 else None)
        t.steps.append(_Step(b, loads, strips))
        loops = ((tm, pitch, 1), (th * tw, 1, 0))
        t.computes += epi.actions(acc, rows, tm, loops, TileOperands(pd, cb, m0, tm), None)
        for p, j in itertools.product(range(epi.planes), range(tm)):
            t.stores.append(Store(acc + p * rows + j * pitch, yd,
                                  (((p * nb + n) * cb + m0 + j) * ho + h0) * wo + w0, tw, th, wo))
        tiles.append(t)
    return tiles


def depthwise_packed(data: np.ndarray, weight: np.ndarray, vectors: np.ndarray | None, stride: int, padding: int,
                     epi: Epilogue, plan: DepthwisePlan,
                     return_counters: bool = False) -> np.ndarray | tuple[np.ndarray, dict[str, int]]:
    """A depthwise convolution on packed data (nb, cb, H, W, BATCH, BLOCK_IN) int8 with ``weight`` (C, 1, kh, kw)
    int8 (C <= cb * BLOCK_IN), finished by ``epi`` as lowered for the config with its packed ``vectors``
    (:func:`~sw.ops.epilogue.packed_epilogue`); returns (nb, cb, Ho, Wo, BATCH, BLOCK_OUT) int8 (or the planes of
    a multi-plane epilogue)."""
    cfg = config()
    nb, cb, h, w = data.shape[:4]
    _, _, kh, kw = weight.shape
    ho, wo = (h + 2 * padding - kh) // stride + 1, (w + 2 * padding - kw) // stride + 1
    packed = pack_depthwise_weight(weight, cb, plan.hc, cfg)
    shape = (nb, cb, h, w, kh, kw, stride, padding)
    return run_operator(data, packed, vectors, epi, (nb, cb, ho, wo, cfg.BATCH, cfg.BLOCK_OUT),
                        lambda xd, wd, pd, yd, rd: _tiles(plan, cfg, shape, xd, wd, yd, pd, epi), return_counters)


def depthwise_choice(n: int, c: int, h: int, w: int, kh: int, kw: int, stride: int, padding: int,
                     virtual_threads: int, epi: Epilogue, cfg: Config) -> tuple[DepthwisePlan | None, float]:
    """How :func:`sw.ops.conv2d` runs a depthwise convolution (groups = C = O) of N images of (C, H, W): the
    DEPTHWISE plan when the mode applies and the planner estimates it faster than the block-diagonal GEMM,
    else None; and the block-diagonal plan's estimate (cycles; infinite where it has no tiling)."""
    cb = cdiv(c, cfg.BLOCK_IN)
    nb = cdiv(n, cfg.BATCH)
    ho, wo = (h + 2 * padding - kh) // stride + 1, (w + 2 * padding - kw) // stride + 1
    lowered = epi.lowered(cfg, ho * wo, cb)
    bg, _, cbg, obg = block_groups(c, c, c, cfg)
    try:
        diag = conv2d_candidates(nb * bg, cbg, obg, h, w, kh, kw, stride, padding, virtual_threads,
                                 lowered.cost_proxy, cfg, None)[0].cost
    except TileError:                   # (no block-diagonal tiling: too few output blocks, say)
        diag = float("inf")
    plan = plan_depthwise(nb, cb, h, w, kh, kw, stride, padding, virtual_threads, lowered, cfg)
    return (plan if plan is not None and plan.cost < diag else None), diag
