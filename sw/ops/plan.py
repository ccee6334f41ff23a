"""Tiling plans: the cheapest tiles under a small cycle model that fit the per-thread SRAMs."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from sw.config import Config
from sw.ops import tuned as _tuned
from sw.ops.base import TileError, _cands, _halves, cdiv, config
from sw.ops.epilogue import Epilogue
from sw.ops.kernels import _conv_variant

_VTA = Epilogue.vta()

# Planning model (estimated cycles): DMA at BUS_WIDTH bits per cycle plus a set-up time per row (a
# burst) of a 2-D load, one GEMM micro-op per cycle (accumulator resets included), one ALU pass over
# the tile's rows per requantization op (two for a tensor add; one per pass of the post-processing unit,
# two with the residual, plus each POST instruction's fixed cost, and the DMA of its parameter rows where a
# region does not hold them yet), a fixed cost per instruction. One
# virtual thread runs load, GEMM, ALU and store in turn. Two overlap load with compute, and the
# compute module runs one tile's requantization (ALU) beside the next tile's GEMMs, so the slowest of
# the three sets the pace; only the first load and the last tile's requantization and store are
# exposed.
_ROW_CYCLES = 2
_INSN_CYCLES = 8


def dma_cycles(nbytes: float, rows: int, cfg: Config) -> float:
    """The model's cycles of a DMA transfer of ``nbytes`` in ``rows`` 2-D rows: the bus width and a set-up per row."""
    return nbytes / (cfg.BUS_WIDTH // 8) + rows * _ROW_CYCLES


def _plan_cycles(vt, load_bytes, rows, gemm, alu, insns, first_load, tail, cfg, chain=0.0):
    bus = cfg.BUS_WIDTH // 8
    load = dma_cycles(load_bytes, rows, cfg)
    overhead = insns * _INSN_CYCLES
    if vt == 1:
        return load + gemm + alu + overhead
    # (a fifth of the load time on top: less DRAM traffic for the same overlap leaves room when the
    # memory is slower or shared). ``chain``: each tile's requantization and store must end before
    # its acc region is reused, which with one region per thread is one tile later.
    return max(load, gemm, alu, chain) + 0.2 * load + first_load / bus + tail + overhead


def _param_loads(loads: int, tm: int, epi: Epilogue, cfg: Config) -> tuple[int, int]:
    """(bytes, 2-D rows) of ``loads`` loads of a tile's POST parameters (``tm`` channel blocks): one LOAD per pass."""
    if epi.post is None:
        return 0, 0
    return loads * epi.param_rows(tm) * cfg.ACC_ELEM_BYTES, loads * len(epi.post_passes)


def _tail_cycles(rows, tm, epi: Epilogue, cfg):
    """The last tile's epilogue (``rows`` accumulators over ``tm`` channel blocks) and store, which nothing
    overlaps."""
    return epi.alu_cycles(rows, tm) + rows * epi.planes * cfg.OUT_ELEM_BYTES / (cfg.BUS_WIDTH // 8)


last_counters: dict = {}
"""The summed counters of the most recent operator call."""


@dataclass(frozen=True)
class DensePlan:
    """Tiles in blocks: tn batch blocks x tk reduction blocks x tm output blocks per step; ``slots`` acc
    regions per virtual thread (as :class:`ConvPlan`)."""
    nb: int
    kb: int
    mb: int
    tn: int
    tk: int
    tm: int
    virtual_threads: int
    cost: float = 0.0
    slots: int = 1

    @property
    def steps(self) -> int:
        return cdiv(self.nb, self.tn) * cdiv(self.mb, self.tm) * cdiv(self.kb, self.tk)


def _dense_limits(cfg, vt):
    h = _halves(cfg, vt)
    return h["inp"][0], h["wgt"][0], h["acc"][0], max(1, cfg.UOP_DEPTH // (4 * vt))


def _dense_fits(cfg, vt, tn, tk, tm, epi: Epilogue, slots: int = 1):
    ic, wc, ac, uc = _dense_limits(cfg, vt)
    need = {"inp": tn * tk, "wgt": tm * tk, "acc": epi.acc_rows(tn * tm, tm), "uop": tm}
    caps = {"inp": ic, "wgt": wc, "acc": ac // slots, "uop": uc}
    return [(m, need[m], caps[m]) for m in need if need[m] > caps[m]]


_MEM_NAMES = {"inp": "input (INP)", "wgt": "weight (WGT)", "acc": "accumulator (ACC)", "uop": "micro-op (UOP)"}


def _with_slots(tiles, names, vt) -> tuple:
    """Explicit ``tiles``: the sizes named ``names``, then the acc regions per virtual thread (default 1)."""
    fields = ", ".join(names)
    if len(tiles) not in (len(names), len(names) + 1):
        raise ValueError(f"tiles = {tiles}; allowed: ({fields}) or ({fields}, slots)")
    *sizes, slots = (*(int(t) for t in tiles[:len(names) + 1]), 1)[:len(names) + 1]
    if slots not in ((1, 2) if vt > 1 else (1,)):
        raise ValueError(f"tiles = {tiles}: slots = {slots}; allowed: 1" + (", 2" if vt > 1 else "")
                         + f" with virtual_threads = {vt}")
    return (*sizes, slots)


def _limit_message(cfg, vt, over):
    parts = [f"{_MEM_NAMES[m]} SRAM: needs {need} elements, {cap} available per virtual thread"
             for m, need, cap in over]
    return f"config {cfg.name} with virtual_threads = {vt}: " + "; ".join(parts)


def _dense_explicit(nb, kb, mb, vt, epi, cfg, tiles) -> DensePlan:
    """The plan of explicit dense tiles (tn, tk, tm[, slots]), checked against the shape and the SRAMs."""
    tn, tk, tm, slots = _with_slots(tiles, ("tn", "tk", "tm"), vt)
    if not (1 <= tn <= nb and 1 <= tk <= kb and 1 <= tm <= mb):
        raise ValueError(f"tiles = {tiles} must lie within the blocked shape (nb, kb, mb) = {(nb, kb, mb)}")
    over = _dense_fits(cfg, vt, tn, tk, tm, epi, slots)
    if over:
        raise TileError(f"dense tiles (tn, tk, tm) = {(tn, tk, tm)} do not fit: " + _limit_message(cfg, vt, over))
    if tn * tm < 3 and nb * mb >= 3:
        raise TileError(f"dense tiles (tn, tk, tm) = {(tn, tk, tm)}: tn * tm must be >= 3 (micro-op hazard rule)")
    return DensePlan(nb, kb, mb, tn, tk, tm, vt, slots=slots)


def plan_dense(nb: int, kb: int, mb: int, virtual_threads: int = 1, epilogue: Epilogue | None = None,
               cfg: Config | None = None, tiles: Sequence[int] | None = None) -> DensePlan:
    """Choose (tn, tk, tm) minimising DRAM traffic plus a per-instruction cost within the SRAMs, for
    tiles finished by ``epilogue`` (default VTA's requantization without bias)."""
    cfg = cfg or config()
    epi = epilogue or _VTA
    vt = virtual_threads
    if tiles is not None:
        return _dense_explicit(nb, kb, mb, vt, epi, cfg, tiles)
    _tuned.record("dense", cfg, (nb, kb, mb), vt, epi)
    return _measured_or(lambda: dense_candidates(nb, kb, mb, vt, epi, cfg)[0],
                        lambda t: _dense_explicit(nb, kb, mb, vt, epi, cfg, t),
                        _tuned.lookup("dense", cfg, (nb, kb, mb), vt, epi))


def plan_tiles(plan: DensePlan | ConvPlan) -> tuple:
    """A plan's explicit tiles: (tn, tk, tm, slots) of a dense plan, (tm, th, tw, tc, slots) of a conv plan."""
    if isinstance(plan, DensePlan):
        return (plan.tn, plan.tk, plan.tm, plan.slots)
    return (plan.tm, plan.th, plan.tw, plan.tc, plan.slots)


class Ranked(Sequence):
    """Plans cheapest first by the planning model, each built when read (a search ranks many; only the plans read
    are built). ``found``: flat tuples, the ``nkey`` fields of the sort key (ending with the
    order found, so ties keep it) then the plan class's arguments; ``tiles_of``: the explicit tiles of such
    arguments."""

    def __init__(self, cls: Callable, found: list, nkey: int, tiles_of: Callable):
        found.sort()
        self._cls, self._args, self._tiles_of = cls, [f[nkey:] for f in found], tiles_of

    def __len__(self) -> int:
        return len(self._args)

    def __getitem__(self, i: int):  # type: ignore[override]  # no slices: a ranked list is read by index
        return self._cls(*self._args[i])

    def tiles(self, i: int) -> tuple:
        """The explicit tiles of the i-th plan (:func:`plan_tiles`), without building it."""
        return self._tiles_of(self._args[i])


def _measured_or(search: Callable, explicit: Callable, measured: tuple | None):
    """The measured choice (:mod:`sw.ops.tuned`) when it still fits (no search then), else the model's cheapest."""
    if measured is not None:
        try:
            return explicit(measured)
        except (TileError, ValueError):       # a stale entry: the config or the epilogue's needs changed
            pass
    return search()


def dense_candidates(nb: int, kb: int, mb: int, vt: int, epi: Epilogue, cfg: Config) -> Ranked:
    """Every dense plan that fits, cheapest first by the planning model."""
    found: list = []
    planes = epi.planes
    ie, we = cfg.INP_ELEM_BYTES, cfg.WGT_ELEM_BYTES
    for slots, tn, tm in itertools.product((1, 2) if vt > 1 else (1,), _cands(nb), _cands(mb)):
        if tn * tm < min(3, nb * mb):
            continue
        nt, mt = cdiv(nb, tn), cdiv(mb, tm)
        tail = _tail_cycles(tn * tm, tm, epi, cfg)
        alu = nb * mb * epi.passes + nt * mt * (epi.alu_cycles(0, tm))    # (the second term: POST instructions)
        # POST parameters: a region keeps them while its tiles take the same channel blocks (tiles walk the
        # channel blocks, then the rows)
        regions = vt * slots
        par = _param_loads(nt * mt if regions % mt else min(nt * mt, regions), tm, epi, cfg)
        # each tile's requantization and store end before its acc region is reused (as for conv2d), and
        # the next tile in that region waits for them and for the ALU pass that zeroes it: a fifth more,
        # as for the loads, since that chain also waits on the shared bus and the tokens
        chain = nt * mt * (tail + tn * tm) * 1.2 / max(1, vt * slots - 1)
        for tk in _cands(kb):
            if _dense_fits(cfg, vt, tn, tk, tm, epi, slots):
                continue
            steps = nt * mt * cdiv(kb, tk)
            cost = _plan_cycles(vt, mt * nb * kb * ie + nt * mb * kb * we + par[0], steps * (tn + tm) + par[1],
                                nb * mb * (kb + planes), alu,
                                steps * 6 + nt * mt * 8, tn * tk * ie + tm * tk * we,
                                tail, cfg, chain)
            found.append((cost, slots, -tn * tk * tm, len(found), nb, kb, mb, tn, tk, tm, vt, cost, slots))
    if not found:
        over = _dense_fits(cfg, vt, 1, 1, min(mb, 3), epi)
        raise TileError("dense cannot be tiled: " + _limit_message(cfg, vt, over or [("acc", 3, 0)]))
    return Ranked(DensePlan, found, 4, lambda a: (a[3], a[4], a[5], a[8]))


@dataclass(frozen=True)
class ConvPlan:
    """Tiles: tm output-channel blocks x th output rows x tw output columns, tc input-channel blocks per
    step; ``slots`` acc regions per virtual thread (tiles cycle through them, so a region is reused
    only after virtual_threads * slots - 1 other tiles: time for its requantization and store)."""
    tm: int
    th: int
    tw: int
    tc: int
    virtual_threads: int
    cost: float = 0.0
    slots: int = 1


def _in_rows(th, kh, s, pad):
    """Input rows a conv tile of th output rows loads: a strided 1x1 kernel without padding loads
    only the rows it reads (the LOAD's DRAM row stride skips the others)."""
    return th if (kh == 1 and s > 1 and pad == 0) else (th - 1) * s + kh


def _conv_need(tm, th, tw, tc, kh, kw, s, epi: Epilogue, pad=None):
    ih, iw = _in_rows(th, kh, s, pad), (tw - 1) * s + kw
    _, uops = _conv_variant(tm, th, tw, tc, kh, kw)
    return {"inp": tc * ih * iw, "wgt": tm * tc * kh * kw, "acc": epi.acc_rows(tm * th * tw, tm),
            "uop": uops}


def _conv_caps(cfg, vt):
    h = _halves(cfg, vt)
    return {"inp": h["inp"][0], "wgt": h["wgt"][0], "acc": h["acc"][0], "uop": max(1, cfg.UOP_DEPTH // (2 * vt))}


def plan_conv2d(nb: int, cb: int, ob: int, h: int, w: int, kh: int, kw: int, stride: int, pad: int,
                virtual_threads: int = 1, epilogue: Epilogue | None = None, cfg: Config | None = None,
                tiles: Sequence[int] | None = None, block_groups: int = 1) -> ConvPlan:
    """Choose conv tiles within the SRAMs, minimising DRAM traffic plus a per-instruction cost, for
    tiles finished by ``epilogue`` (default VTA's requantization without bias).

    Plans are memoised per (shape, config): a network repeats its layer shapes. A choice measured on the RTL
    for the problem (:mod:`sw.ops.tuned`) is preferred to the model's when it fits. A grouped conv of
    ``block_groups`` block-groups plans as ``nb`` (= images x block-groups) images of one group's blocks; its
    measured choice is its own (operator ``conv2d-g<block_groups>``: each group reads other weights, so the
    timing is not the batched conv's)."""
    cfg = cfg or config()
    if tiles is not None and not isinstance(tiles, str):
        tiles = tuple(tiles)
    epi = epilogue or _VTA
    measured = None
    if tiles is None:
        shape = (nb, cb, ob, h, w, kh, kw, stride, pad)
        op = _tuned.conv_op(block_groups)
        _tuned.record(op, cfg, shape, virtual_threads, epi)
        measured = _tuned.lookup(op, cfg, shape, virtual_threads, epi)
    return _plan_conv2d(nb, cb, ob, h, w, kh, kw, stride, pad, virtual_threads, epi.cost_proxy, cfg, tiles,
                        measured)


@lru_cache(maxsize=1024)
def _plan_conv2d(nb, cb, ob, h, w, kh, kw, stride, pad, virtual_threads, epi, cfg, tiles, measured=None):
    args = (nb, cb, ob, h, w, kh, kw, stride, pad, virtual_threads, epi, cfg)
    return _measured_or(lambda: conv2d_candidates(*args, tiles)[0], lambda t: conv2d_candidates(*args, t)[0],
                        measured)


@lru_cache(maxsize=256)
def conv2d_candidates(nb, cb, ob, h, w, kh, kw, stride, pad, virtual_threads, epi, cfg, tiles) -> Ranked:
    """Every plan that fits, cheapest first by the planning model (the explicit ``tiles`` alone when given); the
    ranking depends on ``epi``'s cost only (:attr:`~sw.ops.epilogue.Epilogue.cost_proxy`)."""
    vt = virtual_threads
    ho, wo = (h + 2 * pad - kh) // stride + 1, (w + 2 * pad - kw) // stride + 1
    caps = _conv_caps(cfg, vt)

    def over(tm, th, tw, tc):
        need = _conv_need(tm, th, tw, tc, kh, kw, stride, epi, pad)
        if need["uop"] is None:
            return [("acc", "3 distinct rows for the hazard rule", "fewer")]
        return [(m, need[m], caps[m]) for m in need if need[m] > caps[m]]

    if tiles is not None:
        tm, th, tw, tc, slots = _with_slots(tiles, ("tm", "th", "tw", "tc"), vt)
        if not (1 <= tm <= ob and 1 <= th <= ho and 1 <= tw <= wo and 1 <= tc <= cb):
            raise ValueError(f"tiles = {tiles} must lie within (ob, ho, wo, cb) = {(ob, ho, wo, cb)}")
        caps["acc"] //= slots
        o = over(tm, th, tw, tc)
        if o:
            raise TileError(f"conv2d tiles (tm, th, tw, tc) = {tuple(tiles[:4])} do not fit: "
                            + _limit_message(cfg, vt, o))
        return Ranked(ConvPlan, [(0, tm, th, tw, tc, vt, 0.0, slots)], 1, lambda a: (a[0], a[1], a[2], a[3], a[6]))
    o = [(m, need, caps[m]) for m, need in _conv_need(1, 1, 1, 1, kh, kw, stride, epi).items()
         if m in ("inp", "wgt") and need > caps[m]]
    if o:
        raise TileError(f"conv2d {kh}x{kw} cannot be tiled: one input-channel block of the kernel "
                        + _limit_message(cfg, vt, o))
    ie, we = cfg.INP_ELEM_BYTES, cfg.WGT_ELEM_BYTES
    found: list = []
    kk = kh * kw
    tc_cands = _cands(cb)
    bus = cfg.BUS_WIDTH // 8
    gemm = nb * ob * ho * wo * (cb * kk + epi.planes)          # the same for every tiling
    alu = nb * ob * ho * wo * epi.passes
    uop_cap = caps["uop"]
    for slots, tm, tw, th in itertools.product((1, 2) if vt > 1 else (1,), _cands(ob), _cands(wo), _cands(ho)):
        if epi.acc_rows(tm * th * tw, tm) > caps["acc"] // slots:
            continue
        ih, iw = _in_rows(th, kh, stride, pad), (tw - 1) * stride + kw
        tc_max = min(caps["inp"] // (ih * iw), caps["wgt"] // (tm * kk), cb)
        mt, ht, wt = cdiv(ob, tm), cdiv(ho, th), cdiv(wo, tw)
        spatial = nb * ht * wt
        tail = _tail_cycles(tm * th * tw, tm, epi, cfg)
        alu_tiles = alu + spatial * mt * epi.alu_cycles(0, tm)         # (the POST instructions' fixed cost)
        load_bytes = spatial * mt * cb * ih * iw * ie + spatial * ob * cb * kk * we
        # POST parameters: loaded by each region once per image and channel blocks (tiles walk the rows inside)
        par_bytes, par_rows = _param_loads(nb * mt * min(ht * wt, vt * slots), tm, epi, cfg)
        load_bytes += par_bytes
        chain = spatial * mt * tail / max(1, vt * slots - 1)
        for tc in tc_cands:                 # ascending
            if tc > tc_max:
                break
            v, uops = _conv_variant(tm, th, tw, tc, kh, kw)
            if v is None or uops > uop_cap:
                continue
            ct = cdiv(cb, tc)
            rows = spatial * mt * (cb * ih + ct * tm) + par_rows
            insns = spatial * mt * (ct * (tc + 6) + tm + 8)
            first_load = tc * ih * iw * ie + tm * tc * kk * we
            if vt == 1:
                cost = _plan_cycles(vt, load_bytes, rows, gemm, alu_tiles, insns, first_load, tail, cfg, chain)
            else:                           # _plan_cycles inlined (the search's hot loop), the same arithmetic
                load = load_bytes / bus + rows * _ROW_CYCLES
                cost = (max(load, gemm, alu_tiles, chain) + 0.2 * load + first_load / bus + tail
                        + insns * _INSN_CYCLES)
            found.append((cost, slots, -tc, -tm * th * tw, len(found), tm, th, tw, tc, vt, cost, slots))
    if not found:
        raise TileError(f"conv2d {kh}x{kw} stride {stride} cannot be tiled on config {cfg.name} with "
                        f"virtual_threads = {vt}: no tile fits the SRAMs " + str(caps))
    return Ranked(ConvPlan, found, 5, lambda a: (a[0], a[1], a[2], a[3], a[6]))


def _resolve_tiles(tiles, cfg, n, k, m, vt=1):
    """'blocks256': VTA's matrix_multiply_opt tiling, 256 input and 256 output channels per step
    (automatic tiling instead when such a step does not fit this config's SRAMs)."""
    if tiles != "blocks256":
        raise ValueError(f"tiles = {tiles!r}; allowed: None, 'blocks256' or (tn, tk, tm) in blocks")
    t = (1, min(cdiv(k, cfg.BLOCK_IN), max(1, 256 // cfg.BLOCK_IN)),
         min(cdiv(m, cfg.BLOCK_OUT), max(1, 256 // cfg.BLOCK_OUT)))
    nb = cdiv(n, cfg.BATCH)
    mb = max(cdiv(m, cfg.BLOCK_OUT), cdiv(3, nb))
    if t[0] * t[2] < min(3, nb * mb) or _dense_fits(cfg, vt, *t, _VTA):
        return None
    return t
