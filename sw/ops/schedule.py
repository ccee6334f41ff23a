"""The tile scheduler: queues tiles with their dependency tokens so two virtual threads overlap."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from sw import runtime as rt
from sw.config import Config
from sw.isa import MemId
from sw.ops.base import (
    QCOMPUTE,
    QLOAD,
    QSTORE,
    TileError,
    _add_counters,
    _finish,
    _from_device,
    _operands_on_device,
    cdiv,
    config,
)
from sw.ops.epilogue import Epilogue
from sw.ops.kernels import ALU_INSN_CYCLES, Alu, Gemm, Load, _k_reset, _zero_rows
from sw.ops.plan import dma_cycles
from sw.pipeline import elem_bytes


@dataclass
class _Step:
    """One reduction step: load-stage loads into inp/wgt half ``buf``, then compute-stage actions.
    ``holds``: the WGT loads whose data the half holds after the step (None: the step's own; the last
    part of a first step in parts holds the whole step's, see :func:`head_parts`)."""
    buf: int
    loads: list
    computes: list
    holds: tuple | None = None


@dataclass
class _Tile:
    """One output tile in acc half ``acc``: reduction steps, then compute actions, then stores."""
    acc: int
    steps: list = field(default_factory=list)
    computes: list = field(default_factory=list)
    stores: list = field(default_factory=list)
    reset: tuple | None = None         # (acc row, rows) zeroed before the first step (GEMM reset, or the ALU)
    gemm_uops: int = 0          # GEMM micro-ops of the tile (the window for overlapped ALU work)
    init: tuple | None = None          # (actions that start the accumulators at the bias, the other computes): the
                                # reset's alternative on a region an earlier tile left (Epilogue.init_actions)
    tail: Callable | None = None       # tail(initialized) -> [(computes, stores)]: the tile finished in parts, each
                                # stored while the ALU works on the next (the operator's last tile)

    def insn_bound(self) -> int:
        """An upper bound of the instructions this tile appends (dependency NOPs included)."""
        n = 0
        for st in self.steps:
            n += len(st.loads) + 5 + sum(a.insns for a in st.computes)
        n += sum(a.insns for a in self.computes) + len(self.stores) + 5
        n += 6 if self.reset else 0
        if self.tail is not None:       # (finished in parts instead: more ALU instructions, stores and tokens)
            n += sum(sum(a.insns for a in acts) + len(stores) + 4 for acts, stores in self.tail(False))
        return n


def _chunks(tiles, budget):
    chunk, n = [], 0
    for t in tiles:
        b = t.insn_bound()
        if b > budget:
            raise TileError(f"one tile needs up to {b} instructions, more than the runtime queue holds "
                            f"({budget}); use smaller tiles")
        if chunk and n + b > budget:
            yield chunk
            chunk, n = [], 0
        chunk.append(t)
        n += b
    if chunk:
        yield chunk


def _shares(actions, rows: int, t, even: bool = False) -> list[list]:
    """The deferred tile's ALU actions split over the GEMM steps of tile ``t``: as many after each step as
    its GEMMs hide (ALU passes x rows against the step's micro-ops), from the first step on, so the
    deferred tile's store starts early and its acc region is free before a later tile needs it. The same
    number of actions after each step instead when the ALU work exceeds the tile's GEMMs, and with
    ``even`` (a tile with a residual, whose loads go one before each step)."""
    n = len(t.steps)
    per_step = t.gemm_uops / max(1, n)
    shares: list[list] = [[] for _ in range(n)]
    total = sum(_cost(a, rows) for a in actions)
    if per_step <= 0 or even or total > t.gemm_uops:       # (more ALU work than GEMMs: spread it evenly)
        per = cdiv(len(actions), n) if actions else 0
        for k in range(n):
            shares[k] = actions[k * per:(k + 1) * per]
        return shares
    used, k = 0.0, 0
    for a in actions:
        cost = _cost(a, rows)
        while k < n - 1 and shares[k] and used + cost > per_step * (k + 1):
            k += 1
        shares[k].append(a)
        used += cost
    return shares


HEAD_PARTS = 4
"""The first reduction step of an operator is queued in up to this many parts (:func:`head_parts`), and its
last tile finished in up to this many (``_Tile.tail``)."""


def head_parts(blocks: int, parts: int | None = None) -> list[tuple[int, int]]:
    """(first block, blocks) of each part of an operator's first reduction step of ``blocks`` blocks.

    Nothing overlaps the first step's loads: the GEMMs wait for all of them. In parts, each with its
    own loads and GEMM (and tokens), the GEMMs start when the first part is in and the loads of the
    others run beside them. Each part but the last has a step key of its own (:func:`head_key`), so
    no token waits for it; the last keeps the step's half, whose next user waits for it, and so, the
    compute module running its GEMMs in order, for all the parts."""
    parts = min(blocks, HEAD_PARTS if parts is None else parts)
    edges = [blocks * i // parts for i in range(parts + 1)]
    return [(a, b - a) for a, b in zip(edges, edges[1:])]


def head_pays(gemm_uops: int, loads: Sequence[Load], cfg: Config, alu: float = 0.0) -> bool:
    """Whether the first step's GEMMs (``gemm_uops`` micro-ops) outlast its ``loads`` (bus beats and a
    set-up per row, as the planner counts them) and ``alu``, its share of the tile's requantization (ALU
    passes x rows): then the steps after it are not waiting for loads or the ALU, and starting its GEMMs
    earlier (:func:`head_parts`) ends the operator earlier (where the ALU sets the pace, the parts only add
    instructions)."""
    cycles = dma_cycles(sum(a.x_size * a.y_size * elem_bytes(cfg, a.mem) for a in loads),
                        sum(a.y_size for a in loads), cfg)
    return gemm_uops >= max(cycles, alu)


def tail_parts(rows: int, store_rows: int, insn_cycles: int, cfg: Config) -> int:
    """How many parts the operator's last tile is finished in (``_Tile.tail``): k parts expose 1/k of its store
    (``rows`` accumulators in ``store_rows`` rows of a 2-D STORE) and cost k - 1 more times the epilogue's
    instructions (``insn_cycles`` beyond their rows, :meth:`~sw.ops.epilogue.Epilogue.insn_cycles`), so
    k = sqrt(store / insn_cycles), at most HEAD_PARTS."""
    store = dma_cycles(rows * cfg.OUT_ELEM_BYTES, store_rows, cfg)
    return max(1, min(HEAD_PARTS, round((store / max(ALU_INSN_CYCLES, insn_cycles)) ** 0.5)))


def head_key(part: int) -> int:
    """The step key of a part of the first step (negative: no half of the SRAMs has it)."""
    return -1 - part


def _cost(action, rows: int) -> int:
    """The planner's ALU cycles of an action over a tile of ``rows`` rows (:meth:`~sw.ops.kernels.Alu.cycles`;
    another action's ``passes`` x rows)."""
    return action.cycles(rows) if isinstance(action, Alu) else getattr(action, "passes", 1) * rows


def _alu_work(actions, tile) -> int:
    """ALU cycles of ``actions`` over ``tile``'s rows (passes x rows; its loads take none)."""
    rows = tile.reset[1] if tile.reset else 1
    return sum(_cost(a, rows) for a in actions if not isinstance(a, Load) and hasattr(a, "passes"))


def _neighbours(keys):
    """For each position: (an earlier position has the same key, a later one has)."""
    prev, seen = [], set()
    for k in keys:
        prev.append(k in seen)
        seen.add(k)
    nxt, seen = [], set()
    for k in reversed(keys):
        nxt.append(k in seen)
        seen.add(k)
    return prev, nxt[::-1]


def _check_fifo(keys, nxt):
    """Counting token queues pair the k-th push with the k-th pop: the reuse order must be monotone."""
    last = -1
    for i, k in enumerate(keys):
        if nxt[i]:
            j = next(j for j in range(i + 1, len(keys)) if keys[j] == k)
            if j <= last:
                raise TileError("internal: the tiles reuse SRAM halves out of order, so counting token queues "
                                "would pair a push with the wrong pop")
            last = j


def _repeats(keyed_loads) -> list[bool]:
    """For each ``(key, loads)`` in program order: the loads are not empty and equal the last loads of the
    same key (an SRAM region that only such LOADs write), so the rows still hold their data."""
    last: dict = {}
    out: list[bool] = []
    for key, loads in keyed_loads:
        out.append(bool(loads) and last.get(key) == loads)
        last[key] = loads
    return out


POST_COUNTERS = ("post_insns", "post_uops", "post_cycles")
"""The counters :func:`run_tiles` adds where it queued POST instructions (the post-processing unit's): how many, their
micro-ops (part of ``alu_counter``) and the planner's cycles of them (rows at one or two cycles each, and each
instruction's fixed cost, :meth:`~sw.ops.kernels.Alu.cycles`); the stream's own figures, the same on every target."""


def run_tiles(tiles: Sequence[_Tile], interleave: bool | None = None) -> dict:
    """Queue the tiles with their dependency tokens and synchronize; return the summed counters.

    Token protocol per tile (docs/architecture.md §2.3):
      load   : [pop g2l if this inp/wgt half was used before] loads; push l2g
      compute: pop l2g; [pop s2g before the tile's first compute if its acc half was stored before];
               GEMMs; [push g2l if a later step loads into this half]; ...; ALU; push g2s
      store  : pop g2s; stores; [push s2g if a later tile computes into this acc half]
    Every push has exactly one matching pop, so the token queues end empty. The stream is split into
    several synchronize calls (at tile boundaries) when it would overflow the instruction queue.

    With ``interleave`` (the default when tiles have GEMM steps and alternate between acc halves,
    i.e. two virtual threads) the compute actions of a tile (requantization) are deferred into the next
    tile's steps: after each of its GEMM steps comes a share of them, then the deferred tile's g2s
    push and stores. The compute module runs an ALU instruction beside a GEMM of another acc half,
    so the requantization of one tile overlaps the GEMMs of the next. A tile's LOADs of the acc vectors
    (bias, clip bounds) that repeat those of the last tile in the same acc region are skipped (their
    rows still hold the data). In the same slot as the ALU's zeroing, a tile with ``init`` on a region an
    earlier tile of the operator finished (its rows covering the new tile's) is started at the bias instead,
    and then finished without the epilogue's ADD; the operator's last tile, with ``tail``, is finished and
    stored in parts (docs/architecture.md §6.3). Where POST instructions were queued, the counters include
    :data:`POST_COUNTERS`.
    """
    cmd = rt.command_handle()
    q = rt.current()
    budget = max(64, getattr(q, "max_insns", 1 << 16) - 32)
    ACC8, WGT = int(MemId.ACC_8BIT), int(MemId.WGT)
    work = [0, 0]           # ALU and GEMM cycles of the tiles so far (where the zeroing was chosen)
    counters = {"synchronize_calls": 0}
    if interleave is None:
        interleave = len({t.acc for t in tiles}) > 1 and all(t.steps for t in tiles)
    # LOADs whose SRAM rows still hold their data: a tile's vector LOADs (bias, clip bounds) equal to those
    # of the last tile in its acc region (accumulators and residual lie apart from them), a step's WGT LOADs
    # equal to the last ones into its wgt half (only WGT LOADs write it); the residual is new in every tile
    vector_loads = [tuple(a for a in t.computes if isinstance(a, Load) and a.mem != ACC8) for t in tiles]
    kept_vectors = {id(t) for t, kept in zip(tiles, _repeats(zip((t.acc for t in tiles), vector_loads))) if kept}
    steps = [st for t in tiles for st in t.steps]
    kept_wgts = {id(st) for st, kept in zip(steps, _repeats(
        (st.buf, st.holds if st.holds is not None else tuple(a for a in st.loads if a.mem == WGT)) for st in steps))
        if kept}

    post = dict.fromkeys(POST_COUNTERS, 0)

    def emit_computes(t, actions):
        for a in actions:
            if not (id(t) in kept_vectors and isinstance(a, Load) and a.mem != ACC8):
                a.emit(cmd)
                if isinstance(a, Alu) and a.post:
                    post["post_insns"] += 1
                    post["post_uops"] += a.uops or 0
                    post["post_cycles"] += a.cycles(0)

    def finish_tile(t, actions, store_next):
        emit_computes(t, actions)
        rt.dep_push(cmd, QCOMPUTE, QSTORE)
        rt.dep_pop(cmd, QCOMPUTE, QSTORE)
        for a in t.stores:
            a.emit(cmd)
        if store_next:
            rt.dep_push(cmd, QSTORE, QCOMPUTE)

    for chunk in _chunks(tiles, budget):
        step_bufs = [st.buf for t in chunk for st in t.steps]
        prev_buf, next_buf = _neighbours(step_bufs)
        accs = [t.acc for t in chunk]
        prev_acc, next_acc = _neighbours(accs)
        _check_fifo(step_bufs, next_buf)
        _check_fifo(accs, next_acc)
        i = 0
        # (tile, its acc loads, its other compute actions, store_next, its residual loads left, whether it has a residual)
        deferred: tuple | None = None
        zeroed = set()      # tiles whose accumulators the ALU zeroed or initialized (and whose s2g it popped)
        initialized = set()     # those started at the bias (Epilogue.init_actions)
        covered: dict = {}        # acc region -> the rows its last tile finished
        if interleave and chunk[0].reset and not prev_acc[0]:
            # the first tile's accumulators: zeroed by the ALU while the first loads are in flight (the
            # second tile's beside the first's GEMMs, below)
            for a in _zero_rows(*chunk[0].reset):
                a.emit(cmd)
            zeroed.add(0)
        for ti, t in enumerate(chunk):
            need_s2g = prev_acc[ti] and ti not in zeroed
            reset = t.reset if ti not in zeroed else None
            last_share = 0
            pending = []            # the deferred tile's residual loads after the first: one before each GEMM step
            if deferred is not None:
                # one share after each GEMM step, front-loaded: the deferred tile's store then
                # overlaps this tile's GEMMs and is done long before its acc half is reset again
                pending = list(deferred[4])
                shares = _shares(deferred[2], deferred[0].reset[1] if deferred[0].reset else 1, t, even=deferred[5])
                last_share = max([k for k, sh in enumerate(shares) if sh] or [0])
            # the next tile's accumulators, zeroed by the ALU beside this tile's GEMMs (after the
            # store that last read them) instead of a GEMM reset pass, when that keeps the busier of
            # the two units (their work summed over the tiles so far) less busy: where the ALU's work
            # matches the GEMMs', the zeroing alternates between them
            nxt = chunk[ti + 1] if ti + 1 < len(chunk) else None
            zero_ops = None
            alu_rows = _alu_work(deferred[2], deferred[0]) if deferred is not None else 0
            if interleave and ti == 0 and nxt is not None and nxt.reset and not prev_acc[1]:
                zero_ops = _zero_rows(*nxt.reset)
                work[0] += len(zero_ops) * nxt.reset[1]
                work[1] += t.gemm_uops
            elif (interleave and deferred is not None and nxt is not None and nxt.init is not None
                  and prev_acc[ti + 1] and nxt.reset[1] <= covered.get(nxt.acc, 0)):
                # the next tile's accumulators started at the bias by the ALU (one pass, in place of its
                # epilogue's ADD): every row holds a result of an earlier tile of this operator
                zero_ops = nxt.init[0]
                initialized.add(ti + 1)
                work[0] += alu_rows
                work[1] += t.gemm_uops
            elif interleave and deferred is not None and nxt is not None and nxt.reset:
                zero_ops = _zero_rows(*nxt.reset)
                zero = len(zero_ops) * nxt.reset[1]
                if max(work[0] + alu_rows + zero, work[1] + t.gemm_uops) > \
                        max(work[0] + alu_rows, work[1] + t.gemm_uops + nxt.reset[1]):
                    zero_ops = None
                work[0] += alu_rows + (zero if zero_ops else 0)
                work[1] += t.gemm_uops + (0 if zero_ops else nxt.reset[1])
            k_zero = min(len(t.steps) - 1, last_share + 1)
            # where the ALU sets the pace (the tile's requantization outlasts its GEMMs), this tile's residual
            # loads, when a later tile takes its requantization: queued right after its last GEMMs, amid the
            # deferred tile's ALU work (which runs beside them in the other bank), instead of beside the next
            # tile's GEMMs and before its own requantization, which would wait for them (where the GEMMs set the
            # pace, that is where they cost nothing)
            comps = t.init[1] if ti in initialized else t.computes
            own_res = [a for a in comps if isinstance(a, Load) and a.mem == ACC8] \
                if interleave and nxt is not None and _alu_work(comps, t) > t.gemm_uops else []
            for k, st in enumerate(t.steps):
                if prev_buf[i]:
                    rt.dep_pop(cmd, QCOMPUTE, QLOAD)
                # (the weights the half holds are not loaded again; the input LOADs carry the step's tokens)
                keep = id(st) in kept_wgts and any(a.mem != WGT for a in st.loads)
                for a in st.loads:
                    if not (keep and a.mem == WGT):
                        a.emit(cmd)
                rt.dep_push(cmd, QLOAD, QCOMPUTE)
                rt.dep_pop(cmd, QLOAD, QCOMPUTE)
                if need_s2g:
                    rt.dep_pop(cmd, QSTORE, QCOMPUTE)
                    need_s2g = False
                if k == 0 and deferred is not None:
                    emit_computes(deferred[0], deferred[1])
                elif pending:
                    # (a compute-module LOAD of the acc runs beside this step's GEMMs in the other bank)
                    assert deferred is not None     # pending: the deferred tile's residual loads
                    emit_computes(deferred[0], [pending.pop(0)])
                if k == 0 and reset is not None:
                    Gemm(_k_reset(*reset)).emit(cmd)
                for a in st.computes:
                    a.emit(cmd)
                if next_buf[i]:
                    rt.dep_push(cmd, QCOMPUTE, QLOAD)
                share = shares[k] if deferred is not None else []
                if pending:
                    # the residual's remaining loads just before the first action that reads it (the
                    # actions before run beside this step's GEMMs, the loads beside the next step's)
                    j = next((j for j, a in enumerate(share) if getattr(a, "reads_residual", False)),
                             len(share) if k == last_share else None)
                    if j is not None:
                        assert deferred is not None     # pending: the deferred tile's residual loads
                        emit_computes(deferred[0], share[:j] + pending)
                        share, pending = share[j:], []
                if own_res and k == len(t.steps) - 1:
                    # (after as much of the share as this step's GEMMs take: the loads wait for both to end)
                    cut, work_k = len(share), t.gemm_uops / len(t.steps)
                    if deferred is not None:
                        cut = next((j for j in range(len(share)) if _alu_work(share[:j], deferred[0]) >= work_k),
                                   len(share))
                        emit_computes(deferred[0], share[:cut])
                    # each load followed by a part of the rest of the share: an acc load waits for every older
                    # instruction, so the ALU instruction after one runs beside it and the next load waits for it
                    rest = share[cut:] if deferred is not None else []
                    n = len(own_res)
                    per = -(-len(rest) // n) if rest else 0
                    for j, a in enumerate(own_res):
                        emit_computes(t, [a])
                        if rest and j < n - 1:
                            assert deferred is not None     # rest: a part of the deferred tile's share
                            emit_computes(deferred[0], rest[j * per:(j + 1) * per])
                    share = rest[(n - 1) * per:] if rest else share[cut:]
                if deferred is not None and k == last_share:
                    # the last share: then the deferred tile's push to store and its stores
                    finish_tile(deferred[0], share, deferred[3])
                    deferred = None
                elif deferred is not None:
                    emit_computes(deferred[0], share)
                if zero_ops and k == k_zero:
                    if prev_acc[ti + 1]:
                        rt.dep_pop(cmd, QSTORE, QCOMPUTE)
                    emit_computes(nxt, zero_ops)
                    zeroed.add(ti + 1)
                i += 1
            if need_s2g:
                rt.dep_pop(cmd, QSTORE, QCOMPUTE)
            covered[t.acc] = t.reset[1] if t.reset else 0
            if interleave and nxt is not None:
                # (t, loads at the next tile's start: the vectors and the residual's first, the ALU actions,
                # store_next, the residual's other loads)
                computes = t.init[1] if ti in initialized else t.computes
                loads = [a for a in computes if isinstance(a, Load) and a.mem != ACC8]
                res = [a for a in computes if isinstance(a, Load) and a.mem == ACC8 and not own_res]
                deferred = (t, loads + res[:1], [a for a in computes if not isinstance(a, Load)], next_acc[ti],
                            res[1:], bool(own_res or res))
            elif t.tail is not None and interleave:
                # the last tile in parts: each part's store overlaps the next part's requantization
                for actions, stores in t.tail(ti in initialized):
                    emit_computes(t, actions)
                    rt.dep_push(cmd, QCOMPUTE, QSTORE)
                    rt.dep_pop(cmd, QCOMPUTE, QSTORE)
                    for a in stores:
                        a.emit(cmd)
                if next_acc[ti]:
                    rt.dep_push(cmd, QSTORE, QCOMPUTE)
            else:
                finish_tile(t, t.init[1] if ti in initialized else t.computes, next_acc[ti])
        _add_counters(counters, rt.synchronize(cmd, 1 << 31))
        counters["synchronize_calls"] += 1
    if post["post_insns"]:
        counters.update(post)
    return counters



def run_operator(data: np.ndarray, weight: np.ndarray | None, vectors: np.ndarray | None, epi: Epilogue, out_shape: tuple,
                 make_tiles: Callable[..., list[_Tile]], return_counters: bool,
                 residual: np.ndarray | None = None) -> np.ndarray | tuple[np.ndarray, dict[str, int]]:
    """Stage an operator's packed operands on the device (``weight`` None: an operator without one, a pool), run
    the tiles ``make_tiles(xd, wd, pd, yd, rd)`` builds on their buffers (``rd``: the packed int8 ``residual`` of
    ``out_shape``, or None),
    and read back the ``epi.planes`` planes of ``out_shape`` int8 (the first alone for one plane)."""
    cfg = config()
    cmd = rt.command_handle()
    out_bytes = epi.planes * int(np.prod(out_shape[:-2])) * cfg.OUT_ELEM_BYTES
    if (residual is None) != (epi.residual is None):
        raise ValueError("a residual tensor must be given exactly when the epilogue has a residual")
    if residual is not None and np.shape(residual) != tuple(out_shape):
        raise ValueError(f"residual has shape {np.shape(residual)}; expected the packed output {tuple(out_shape)}")
    with _operands_on_device(cmd, data, weight, vectors, out_bytes, residual) as (xd, wd, pd, yd, rd):
        tiles = make_tiles(xd, wd, pd, yd, rd)
        counters = run_tiles(tiles)
        counters["tiles"] = len(tiles)
        y = _from_device(cmd, yd, (epi.planes, *out_shape), np.int8)
    return _finish(y[0] if epi.planes == 1 else y, counters, return_counters)
