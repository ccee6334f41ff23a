"""Operators on the accelerator: element-wise ALU ops, GEMM / dense and conv2d, with numpy references.

Every operator drives the runtime API (:mod:`sw.runtime`) of the current runtime, so the same call
runs on the golden model or, inside ``cosim.run``, on the RTL. An operator:

1. packs its operands into VTA's blocked layouts (reference §6.2), zero-padding shapes that are not
   multiples of the blocks, and copies them into device buffers;
2. chooses on-chip tiles from the config's SRAM depths (:func:`plan_dense`, :func:`plan_conv2d`,
   the element-wise tiler) and builds, per tile, its loads, micro-kernels and stores;
3. runs the tiles through :func:`_run_tiles`, which places the dependency tokens (RAW l2g and g2s,
   WAR g2l and s2g) so that with ``virtual_threads=2`` the tiles alternate between two halves of the
   inp/wgt/acc SRAMs: the loads of step t+1 overlap the GEMMs of step t, the requantization (ALU)
   of one tile runs beside the GEMMs of the next (the compute module overlaps a GEMM and an ALU
   instruction in different acc halves), the ALU zeroes the accumulators of the tile after, and
   the store of one tile overlaps the compute of the next; conv2d may give each thread two acc
   regions (``ConvPlan.slots``) so a tile's store has longer before its region is reused; with 1
   virtual thread the modules hand over strictly;
4. reads the result back, crops the padding and returns it.

Micro-kernels are closures made once per distinct shape and SRAM base (memoised factories), so the
runtime's JIT cache (keyed by the callable object and the key) records each one once and reuses it
for every tile. GEMM kernels keep at least three distinct accumulator rows between repeated writes,
so they obey the micro-op hazard rule (reference §3.3) across loop iterations too.

Operators (all take ``virtual_threads=1|2`` and ``return_counters=False``):

=================================================  ==============================================
``vadd(a, b)``, ``relu(a)``, ``add_bias(a, bias)``  int32 (n, BATCH, BLOCK_OUT) or (r, c, BATCH,
``requantize(a, shift=8, bias=None, clip=True)``    BLOCK_OUT) -> int8 of the same shape
``dense(data, weight, bias=None, shift=8,           int8 (N, K), (M, K), int32 (M,) -> int8 (N, M)
clip=True, tiles=None)``
``gemm(data, weight, tiles=None)``                  int8 (N, K), (M, K) -> exact int32 (N, M)
``conv2d(data, weight, bias=None, stride=1,         int8 (N, C, H, W), (O, C, kh, kw), int32 (O,)
padding=0, shift=8, clip=True, tiles=None)``        -> int8 (N, O, Ho, Wo)
``dense_packed``, ``conv2d_packed``                 the same on already packed operands
=================================================  ==============================================

Tiling: dense steps are (tn batch blocks, tk reduction blocks, tm output blocks); conv2d steps are
(tm output-channel blocks, th output rows, tw output columns, tc input-channel blocks, with the
input halo and the zero padding done by the LOAD). Each output tile keeps its accumulators in one
acc half and loops over reduction steps (each a load of inp+wgt into one inp/wgt half and a GEMM);
then the ALU requantizes and STORE writes it. The sizes are the cheapest under a small cycle model
(:func:`_plan_cycles`) among those that fit the per-thread SRAM capacities (depth / virtual_threads),
the micro-op budget and the hazard rule; ``tiles=`` overrides them. A layer for which no tile fits
raises :class:`TileError` (a ValueError) naming the SRAM, what it needs and what it has.

The counters of every ``synchronize`` an operator makes are summed; call with
``return_counters=True`` to get ``(result, counters)``, or read :data:`last_counters` afterwards.
The result of an element-wise op is what VTA's STORE writes: the low 8 bits of each int32 lane
(int8); :func:`gemm` returns exact int32 results by storing the four bytes of each accumulator.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from functools import lru_cache

from contextlib import contextmanager

import numpy as np

from . import runtime as rt
from .isa import AluOp, MemId

__all__ = [
    # operators
    "vadd", "relu", "add_bias", "requantize", "dense", "gemm", "dense_packed", "conv2d", "conv2d_packed",
    # numpy references
    "vadd_ref", "relu_ref", "add_bias_ref", "requantize_ref", "gemm_ref", "dense_ref", "conv2d_nchw",
    "conv2d_ref",
    # layouts
    "pack_dense_data", "pack_dense_weight", "unpack_dense_output", "pack_conv_data", "pack_conv_weight",
    "unpack_conv_output", "pack_bias",
    # planning and benchmarks
    "plan_dense", "plan_conv2d", "DensePlan", "ConvPlan", "RESNET18", "workloads", "run_dense_workload",
    "run_conv2d_workload", "run_resnet18_layer", "last_counters", "TileError",
]

QLOAD, QCOMPUTE, QSTORE = rt.QID_LOAD, rt.QID_COMPUTE, rt.QID_STORE
MAX_EXTENT = (1 << 14) - 1      # loop extents (iter_out / iter_in fields are 14 bits)
MAX_PAD = (1 << 4) - 1          # load padding fields are 4 bits
# Planning model (estimated cycles): DMA at BUS_WIDTH bits per cycle plus a set-up time per row (a
# burst) of a 2-D load, one GEMM micro-op per cycle (accumulator resets included), one ALU pass over
# the tile's rows per requantization op (two for a tensor add), a fixed cost per instruction. One
# virtual thread runs load, GEMM, ALU and store in turn. Two overlap load with compute, and the
# compute module runs one tile's requantization (ALU) beside the next tile's GEMMs, so the slowest of
# the three sets the pace; only the first load and the last tile's requantization and store are
# exposed. The constants were checked against the RTL co-simulation (64-bit bus, DRAM latency 20).
_ROW_CYCLES = 2
_INSN_CYCLES = 8


def _plan_cycles(vt, load_bytes, rows, gemm, alu, insns, first_load, tail, cfg, chain=0.0):
    bus = cfg.BUS_WIDTH // 8
    load = load_bytes / bus + rows * _ROW_CYCLES
    overhead = insns * _INSN_CYCLES
    if vt == 1:
        return load + gemm + alu + overhead
    # (a fifth of the load time on top: less DRAM traffic for the same overlap leaves room when the
    # memory is slower or shared). ``chain``: each tile's requantization and store must end before
    # its acc region is reused, which with one region per thread is one tile later.
    return max(load, gemm, alu, chain) + 0.2 * load + first_load / bus + tail + overhead


def _requant_passes(bias):
    """ALU passes over a tile's rows for VTA's requantization: shift, (tensor add of the bias: 2), clip (2)."""
    return 3 + (2 if bias else 0)


def _tail_cycles(rows, bias, cfg):
    """The last tile's requantization and store, which nothing overlaps."""
    return rows * _requant_passes(bias) + rows * cfg.OUT_ELEM_BYTES / (cfg.BUS_WIDTH // 8)


last_counters: dict = {}
"""The summed counters of the most recent operator call."""


class TileError(ValueError):
    """A layer cannot be tiled on this configuration (the message names the limit)."""


# ---------------------------------------------------------------------- small helpers
def _cdiv(a, b):
    return -(-a // b)


def _cands(n: int) -> list[int]:
    """Tile sizes worth trying for an extent n: ceil(n / k) for every tile count k."""
    return sorted({_cdiv(n, k) for k in range(1, n + 1)})


def _queue():
    return rt.current()


def _cfg():
    return rt.current().cfg


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


# ---------------------------------------------------------------------- micro-kernels (memoised)
@lru_cache(maxsize=None)
def _k_reset(base: int, rows: int):
    """GEMM reset of acc rows [base, base + rows)."""
    def kernel():
        rt.uop_loop_begin(rows, _f(rows, 1), 0, 0)
        rt.uop_push(0, 1, base, 0, 0, 0, 0, 0)
        rt.uop_loop_end()
    return kernel


@lru_cache(maxsize=None)
def _k_alu(opcode: int, use_imm: int, imm: int, dst: int, src: int, loops: tuple):
    """One ALU micro-op under up to two loops ((extent, dst_factor, src_factor), outer first)."""
    def kernel():
        for e, df, sf in loops:
            rt.uop_loop_begin(e, _f(e, df), _f(e, sf), 0)
        rt.uop_push(1, 0, dst, src, 0, int(opcode), use_imm, imm)
        for _ in loops:
            rt.uop_loop_end()
    return kernel


def _alu_rows(opcode, imm, base, rows):
    """An immediate ALU op over acc rows [base, base + rows)."""
    return ("alu", _k_alu(int(opcode), 1, int(imm), base, base, ((rows, 1, 1),)), 0)


def _alu_tensor(dst, src, loops):
    """A tensor ALU ADD (two cycles per micro-op): acc[dst] += acc[src] under ``loops``."""
    kernel = _k_alu(int(AluOp.ADD), 0, 0, dst, src, loops)
    _TENSOR_KERNELS.add(kernel)
    return ("alu", kernel, 0)


_TENSOR_KERNELS: set = set()


def _zero_rows(base, rows):
    """ALU ops that zero acc rows [base, base + rows): MUL by 0, or (without MUL) x >> 31 in {0, -1},
    then max with 0."""
    if _cfg().ALU_MUL:
        return [_alu_rows(AluOp.MUL, 0, base, rows)]
    return [_alu_rows(AluOp.SHR, 31, base, rows), _alu_rows(AluOp.MAX, 0, base, rows)]


@lru_cache(maxsize=None)
def _k_dense(acc: int, inp: int, wgt: int, tn: int, tk: int, tm: int):
    """acc[n*tm + j] += inp[n*tk + k] . wgt[j*tk + k]: loops k (outer), n (inner); uops j.

    Consecutive executions write the rows n*tm + j in a cycle of tn*tm >= 3 distinct rows, so no
    micro-op writes a row written by one of the two before it.
    """
    def kernel():
        rt.uop_loop_begin(tk, 0, _f(tk, 1), _f(tk, 1))
        rt.uop_loop_begin(tn, _f(tn, tm), _f(tn, tk), 0)
        for j in range(tm):
            rt.uop_push(0, 0, acc + j, inp, wgt + j * tk, 0, 0, 0)
        rt.uop_loop_end()
        rt.uop_loop_end()
    return kernel


def _conv_variant(tm, th, tw, tc, kh, kw):
    """(variant, uops) of the conv kernel with the fewest micro-ops that obeys the hazard rule.

    Every variant makes consecutive micro-op executions write a cycle of at least three distinct acc
    rows (or move to new rows at a loop step), so no micro-op writes a row that one of the two before
    it wrote, across loop iterations too:
      A: loops (c, oh), uops (ky, kx, ow, j)  - needs tw*tm >= 3
      B: loops (c, ky), uops (kx, oh, ow, j)  - needs th*tw*tm >= 3
      C: loops (oh, ow), uops (c, ky, kx, j)  - needs tm >= 3; size independent of the spatial tile
    """
    options = []
    if tw * tm >= 3:
        options.append((kh * kw * tw * tm, "A"))
    if th * tw * tm >= 3:
        options.append((kw * th * tw * tm, "B"))
    if tm >= 3:
        options.append((tc * kh * kw * tm, "C"))
    if not options:
        return None, None
    uops, v = min(options)
    return v, uops


@lru_cache(maxsize=None)
def _k_conv(acc, inp, wgt, tm, th, tw, tc, kh, kw, s, ih, iw, sh=None):
    """acc[j, oh, ow] += inp[c, oh*sh + ky, ow*s + kx] . wgt[j, c, ky, kx] over c, ky, kx.

    SRAM layouts: acc (tm, th, tw), inp (tc, ih, iw), wgt (tm, tc, kh, kw); see :func:`_conv_variant`
    for the loop orders. ``sh`` (default ``s``) is the row step in the inp tile: 1 when the LOAD
    already skipped the rows a strided 1x1 kernel does not read.
    """
    sh = s if sh is None else sh
    variant, _ = _conv_variant(tm, th, tw, tc, kh, kw)
    kk = kh * kw

    def kernel():
        if variant == "A":
            rt.uop_loop_begin(tc, 0, _f(tc, ih * iw), _f(tc, kk))
            rt.uop_loop_begin(th, _f(th, tw), _f(th, sh * iw), 0)
            for ky in range(kh):
                for kx in range(kw):
                    for ow in range(tw):
                        for j in range(tm):
                            rt.uop_push(0, 0, acc + j * th * tw + ow, inp + ky * iw + ow * s + kx,
                                        wgt + j * tc * kk + ky * kw + kx, 0, 0, 0)
        elif variant == "B":
            rt.uop_loop_begin(tc, 0, _f(tc, ih * iw), _f(tc, kk))
            rt.uop_loop_begin(kh, 0, _f(kh, iw), _f(kh, kw))
            for kx in range(kw):
                for oh in range(th):
                    for ow in range(tw):
                        for j in range(tm):
                            rt.uop_push(0, 0, acc + j * th * tw + oh * tw + ow, inp + oh * sh * iw + ow * s + kx,
                                        wgt + j * tc * kk + kx, 0, 0, 0)
        else:
            rt.uop_loop_begin(th, _f(th, tw), _f(th, sh * iw), 0)
            rt.uop_loop_begin(tw, _f(tw, 1), _f(tw, s), 0)
            for c in range(tc):
                for ky in range(kh):
                    for kx in range(kw):
                        for j in range(tm):
                            rt.uop_push(0, 0, acc + j * th * tw, inp + c * ih * iw + ky * iw + kx,
                                        wgt + (j * tc + c) * kk + ky * kw + kx, 0, 0, 0)
        rt.uop_loop_end()
        rt.uop_loop_end()
    return kernel


# ---------------------------------------------------------------------- the tile executor
@dataclass
class _Step:
    """One reduction step: load-stage loads into inp/wgt half ``buf``, then compute-stage actions."""
    buf: int
    loads: list
    computes: list


@dataclass
class _Tile:
    """One output tile in acc half ``acc``: reduction steps, then compute actions, then stores."""
    acc: int
    steps: list = field(default_factory=list)
    computes: list = field(default_factory=list)
    stores: list = field(default_factory=list)
    reset: tuple = None         # (acc row, rows) zeroed before the first step (GEMM reset, or the ALU)
    gemm_uops: int = 0          # GEMM micro-ops of the tile (the window for overlapped ALU work)

    def insn_bound(self) -> int:
        """An upper bound of the instructions this tile appends (dependency NOPs included)."""
        n = 0
        for st in self.steps:
            n += len(st.loads) + 5 + sum(2 if a[0] != "load" else 1 for a in st.computes)
        n += sum(2 if a[0] != "load" else 1 for a in self.computes) + len(self.stores) + 5
        n += 6 if self.reset else 0
        return n


def _emit(cmd, action):
    kind = action[0]
    if kind == "load":
        rt.load_2d(cmd, *action[1])
    elif kind == "gemm":
        rt.push_gemm_op(cmd, action[1], action[2])
    elif kind == "alu":
        rt.push_alu_op(cmd, action[1], action[2])
    else:  # pragma: no cover - internal
        raise AssertionError(kind)


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
            assert j > last, "token pairing would not be FIFO"
            last = j


def _run_tiles(tiles, interleave=None) -> dict:
    """Queue the tiles with their dependency tokens and synchronize; return the summed counters.

    Token protocol per tile (reference §3.8):
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
    so the requantization of one tile overlaps the GEMMs of the next. A LOAD of the acc (bias) that
    repeats the last load into the same half is skipped (its rows still hold the data).
    """
    cmd = rt.command_handle()
    q = _queue()
    budget = max(64, getattr(q, "max_insns", 1 << 16) - 32)
    counters = {"synchronize_calls": 0}
    if interleave is None:
        interleave = len({t.acc for t in tiles}) > 1 and all(t.steps for t in tiles)
    acc_loaded = {}

    def emit_computes(t, actions):
        for a in actions:
            if a[0] == "load":
                if acc_loaded.get(t.acc) == a[1]:
                    continue
                acc_loaded[t.acc] = a[1]
            _emit(cmd, a)

    def finish_tile(t, actions, store_next):
        emit_computes(t, actions)
        rt.dep_push(cmd, QCOMPUTE, QSTORE)
        rt.dep_pop(cmd, QCOMPUTE, QSTORE)
        for a in t.stores:
            rt.store_2d(cmd, *a)
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
        deferred = None     # (tile, its acc loads, its other compute actions, store_next)
        zeroed = set()      # tiles whose accumulators the ALU zeroed (and whose s2g it popped)
        if interleave:
            # the first tile of each acc half: zeroed by the ALU while the first loads are in flight
            for ti, t in enumerate(chunk):
                if t.reset and not prev_acc[ti] and ti < 2:
                    for a in _zero_rows(*t.reset):
                        _emit(cmd, a)
                    zeroed.add(ti)
        for ti, t in enumerate(chunk):
            need_s2g = prev_acc[ti] and ti not in zeroed
            reset = t.reset if ti not in zeroed else None
            per, last_share = 0, 0
            if deferred is not None:
                # one share after each GEMM step, front-loaded: the deferred tile's store then
                # overlaps this tile's GEMMs and is done long before its acc half is reset again
                d_alu = deferred[2]
                per = _cdiv(len(d_alu), len(t.steps))
                last_share = _cdiv(len(d_alu), per) - 1 if per else 0
                shares = [d_alu[k * per:(k + 1) * per] for k in range(len(t.steps))]
            # the next tile's accumulators, zeroed by the ALU beside this tile's GEMMs (after the
            # store that last read them) when the ALU has the time, instead of a GEMM reset pass
            nxt = chunk[ti + 1] if ti + 1 < len(chunk) else None
            zero_ops = None
            if interleave and deferred is not None and nxt is not None and nxt.reset:
                zero_ops = _zero_rows(*nxt.reset)
                alu_rows = sum(2 if a[1] in _TENSOR_KERNELS else 1 for a in deferred[2]) * deferred[0].reset[1]
                if alu_rows + len(zero_ops) * nxt.reset[1] > t.gemm_uops:
                    zero_ops = None
            k_zero = min(len(t.steps) - 1, last_share + 1)
            for k, st in enumerate(t.steps):
                if prev_buf[i]:
                    rt.dep_pop(cmd, QCOMPUTE, QLOAD)
                for a in st.loads:
                    rt.load_2d(cmd, *a)
                rt.dep_push(cmd, QLOAD, QCOMPUTE)
                rt.dep_pop(cmd, QLOAD, QCOMPUTE)
                if need_s2g:
                    rt.dep_pop(cmd, QSTORE, QCOMPUTE)
                    need_s2g = False
                if k == 0 and deferred is not None:
                    emit_computes(deferred[0], deferred[1])
                if k == 0 and reset is not None:
                    _emit(cmd, ("gemm", _k_reset(*reset), 0))
                for a in st.computes:
                    _emit(cmd, a)
                if next_buf[i]:
                    rt.dep_push(cmd, QCOMPUTE, QLOAD)
                if deferred is not None and k == last_share:
                    # the last share: then the deferred tile's push to store and its stores
                    finish_tile(deferred[0], shares[k], deferred[3])
                    deferred = None
                elif deferred is not None:
                    emit_computes(deferred[0], shares[k])
                if zero_ops and k == k_zero:
                    if prev_acc[ti + 1]:
                        rt.dep_pop(cmd, QSTORE, QCOMPUTE)
                    for a in zero_ops:
                        _emit(cmd, a)
                    zeroed.add(ti + 1)
                i += 1
            if need_s2g:
                rt.dep_pop(cmd, QSTORE, QCOMPUTE)
            if interleave and nxt is not None:
                loads = [a for a in t.computes if a[0] == "load"]
                deferred = (t, loads, [a for a in t.computes if a[0] != "load"], next_acc[ti])
            else:
                finish_tile(t, t.computes, next_acc[ti])
        _add_counters(counters, rt.synchronize(cmd, 1 << 31))
        counters["synchronize_calls"] += 1
    return counters


def _halves(cfg, vt):
    """Per-thread capacities and bases: {mem: (capacity, [base of each thread])}."""
    out = {}
    for mem, depth in (("inp", cfg.INP_DEPTH), ("wgt", cfg.WGT_DEPTH), ("acc", cfg.ACC_DEPTH)):
        cap = depth // vt
        out[mem] = (min(cap, MAX_EXTENT), [t * cap for t in range(vt)])
    return out


# ---------------------------------------------------------------------- layouts
def pack_dense_data(x, cfg=None) -> np.ndarray:
    """(N, K) int8 -> (N/BATCH, K/BLOCK_IN, BATCH, BLOCK_IN), zero-padded."""
    cfg = cfg or _cfg()
    x = np.asarray(x)
    n, k = x.shape
    B, I = cfg.BATCH, cfg.BLOCK_IN
    nb, kb = _cdiv(n, B), _cdiv(k, I)
    p = np.zeros((nb * B, kb * I), dtype=np.int8)
    p[:n, :k] = x
    return np.ascontiguousarray(p.reshape(nb, B, kb, I).transpose(0, 2, 1, 3))


def pack_dense_weight(w, cfg=None, m_blocks=None) -> np.ndarray:
    """(M, K) int8 -> (M/BLOCK_OUT, K/BLOCK_IN, BLOCK_OUT, BLOCK_IN), zero-padded."""
    cfg = cfg or _cfg()
    w = np.asarray(w)
    m, k = w.shape
    O, I = cfg.BLOCK_OUT, cfg.BLOCK_IN
    mb, kb = max(_cdiv(m, O), m_blocks or 0), _cdiv(k, I)
    p = np.zeros((mb * O, kb * I), dtype=np.int8)
    p[:m, :k] = w
    return np.ascontiguousarray(p.reshape(mb, O, kb, I).transpose(0, 2, 1, 3))


def unpack_dense_output(y, n, m) -> np.ndarray:
    """(N/BATCH, M/BLOCK_OUT, BATCH, BLOCK_OUT) -> (N, M), cropped."""
    nb, mb, B, O = y.shape
    return np.ascontiguousarray(y.transpose(0, 2, 1, 3).reshape(nb * B, mb * O)[:n, :m])


def pack_bias(bias, blocks, cfg=None) -> np.ndarray:
    """Per-channel int32 bias (C,) -> (blocks, BATCH, BLOCK_OUT), repeated over the batch lanes.

    An already packed (blocks, BATCH, BLOCK_OUT) array is returned as int32 unchanged.
    """
    cfg = cfg or _cfg()
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


def pack_conv_data(x, cfg=None) -> np.ndarray:
    """(N, C, H, W) int8 -> NCHW{BATCH}n{BLOCK_IN}c: (N/BATCH, C/BLOCK_IN, H, W, BATCH, BLOCK_IN)."""
    cfg = cfg or _cfg()
    x = np.asarray(x)
    n, c, h, w = x.shape
    B, I = cfg.BATCH, cfg.BLOCK_IN
    nb, cb = _cdiv(n, B), _cdiv(c, I)
    p = np.zeros((nb * B, cb * I, h, w), dtype=np.int8)
    p[:n, :c] = x
    return np.ascontiguousarray(p.reshape(nb, B, cb, I, h, w).transpose(0, 2, 4, 5, 1, 3))


def pack_conv_weight(w, cfg=None, o_blocks=None) -> np.ndarray:
    """(O, C, kh, kw) int8 -> OIHW{BLOCK_OUT}o{BLOCK_IN}i: (O/BLOCK_OUT, C/BLOCK_IN, kh, kw, BLOCK_OUT, BLOCK_IN)."""
    cfg = cfg or _cfg()
    w = np.asarray(w)
    o, c, kh, kw = w.shape
    O, I = cfg.BLOCK_OUT, cfg.BLOCK_IN
    ob, cb = max(_cdiv(o, O), o_blocks or 0), _cdiv(c, I)
    p = np.zeros((ob * O, cb * I, kh, kw), dtype=np.int8)
    p[:o, :c] = w
    return np.ascontiguousarray(p.reshape(ob, O, cb, I, kh, kw).transpose(0, 2, 4, 5, 1, 3))


def unpack_conv_output(y, n, c) -> np.ndarray:
    """(N/BATCH, C/BLOCK_OUT, H, W, BATCH, BLOCK_OUT) -> (N, C, H, W), cropped."""
    nb, cb, h, w, B, O = y.shape
    return np.ascontiguousarray(y.transpose(0, 4, 1, 5, 2, 3).reshape(nb * B, cb * O, h, w)[:n, :c])


# ---------------------------------------------------------------------- numpy references
def _wrap32(x):
    return np.asarray(x, dtype=np.int64).astype(np.int32)


def vadd_ref(a, b):
    """(a + b) in int32 (wrapping), truncated to int8 as VTA's STORE does."""
    return _wrap32(np.asarray(a, np.int64) + np.asarray(b, np.int64)).astype(np.int8)


def relu_ref(a):
    """MAX 0 then MIN 127, int8 (VTA's test_relu)."""
    return np.clip(np.asarray(a, np.int64), 0, 127).astype(np.int8)


def add_bias_ref(x, bias, cfg=None):
    """x (R, C, BATCH, BLOCK_OUT) or (R, BATCH, BLOCK_OUT) int32 plus bias per channel, truncated to int8."""
    x4 = np.asarray(x)[:, None] if np.ndim(x) == 3 else np.asarray(x)
    b = pack_bias(bias, x4.shape[1], cfg)
    return _wrap32(x4.astype(np.int64) + b[None]).astype(np.int8).reshape(np.shape(x))


def requantize_ref(x, shift=8, bias=None, clip=True, cfg=None):
    """(x >> shift) [+ bias], clip to [0, 127] (MIN then MAX), int8 (reference §6.2)."""
    x = np.asarray(x, dtype=np.int64)
    y = x >> shift
    if bias is not None:
        x4 = y[:, None] if y.ndim == 3 else y
        y = (x4 + pack_bias(bias, x4.shape[1], cfg)[None]).reshape(x.shape)
    y = _wrap32(y).astype(np.int64)
    if clip:
        y = np.maximum(np.minimum(y, 127), 0)
    return _wrap32(y).astype(np.int8)


def gemm_ref(data, weight):
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


def dense_ref(data, weight, bias=None, shift=8, clip=True):
    """VTA's dense test: (data . weight^T) >> shift, + bias (M,), clip [0, 127], int8."""
    return _requant_plain(gemm_ref(data, weight), bias, shift, clip, (1, -1))


def conv2d_nchw(data, weight, stride=1, padding=0):
    """Direct convolution in int32: data (N, C, H, W), weight (O, C, kh, kw) -> (N, O, Ho, Wo)."""
    data = np.asarray(data)
    weight = np.asarray(weight)
    n, c, h, w = data.shape
    o, c2, kh, kw = weight.shape
    if c != c2:
        raise ValueError(f"data has {c} channels, weight {c2}")
    sh, sw = (stride, stride) if np.isscalar(stride) else stride
    ph, pw = (padding, padding) if np.isscalar(padding) else padding
    ho, wo = (h + 2 * ph - kh) // sh + 1, (w + 2 * pw - kw) // sw + 1
    x = np.zeros((n, c, h + 2 * ph, w + 2 * pw), dtype=np.float64)
    x[:, :, ph:ph + h, pw:pw + w] = data
    wt = weight.astype(np.float64)
    out = np.zeros((n, o, ho, wo), dtype=np.float64)   # exact: |sum| < 2^53
    for ky in range(kh):
        for kx in range(kw):
            patch = x[:, :, ky:ky + sh * (ho - 1) + 1:sh, kx:kx + sw * (wo - 1) + 1:sw]   # (n, c, ho, wo)
            out += np.einsum("nchw,oc->nohw", patch, wt[:, :, ky, kx], optimize=True)
    return _wrap32(out.astype(np.int64))


def conv2d_ref(data, weight, bias=None, stride=1, padding=0, shift=8, clip=True):
    """VTA's conv2d benchmark: conv2d_nchw >> shift, + bias (O,), clip [0, 127], int8."""
    return _requant_plain(conv2d_nchw(data, weight, stride, padding), bias, shift, clip, (1, -1, 1, 1))


# ---------------------------------------------------------------------- element-wise operators
def _as_grid(x, cfg, name):
    x = np.asarray(x)
    B, O = cfg.BATCH, cfg.BLOCK_OUT
    if x.ndim == 3 and x.shape[1:] == (B, O):
        return x.reshape(1, x.shape[0], B, O)
    if x.ndim == 4 and x.shape[2:] == (B, O):
        return x
    raise ValueError(f"{name} has shape {x.shape}; expected the packed layout (n, {B}, {O}) or (r, c, {B}, {O})")


def _elementwise(a, b, bias, ops, virtual_threads, return_counters):
    """Run ALU ``ops`` over int32 tensor a (packed), with tensor operand b and per-column bias.

    ops: list of ("imm", opcode, imm) | ("tensor_add",) | ("bias_add",), applied in order.
    """
    _check_vt(virtual_threads)
    cfg = _cfg()
    shape = np.shape(a)
    a4 = _as_grid(a, cfg, "a").astype(np.int32)
    if bias is not None and np.ndim(a) == 3:
        a4 = a4.reshape(shape[0], 1, cfg.BATCH, cfg.BLOCK_OUT)   # bias per channel block of one column
    R, C = a4.shape[:2]
    b4 = None
    if b is not None:
        if np.shape(b) != shape:
            raise ValueError(f"operands have shapes {shape} and {np.shape(b)}")
        b4 = np.asarray(b, dtype=np.int32).reshape(a4.shape)
    bias_p = pack_bias(bias, C, cfg) if bias is not None else None
    h = _halves(cfg, virtual_threads)
    cap, bases = h["acc"]
    per = 2 if b4 is not None else 1
    tc = min(C, cap // (per + (1 if bias_p is not None else 0)))
    if tc < 1:
        raise TileError(f"the ACC SRAM ({cfg.ACC_DEPTH} rows, {cap} per virtual thread) cannot hold one "
                        f"element of each operand")
    bias_rows = tc if bias_p is not None else 0
    tr = max(1, min(R, (cap - bias_rows) // (per * tc)))
    cmd = rt.command_handle()
    handles = [_to_device(cmd, a4)]
    bd = _to_device(cmd, b4) if b4 is not None else None
    pd = _to_device(cmd, bias_p) if bias_p is not None else None
    yd = rt.buffer_alloc(R * C * cfg.OUT_ELEM_BYTES)
    handles += [h_ for h_ in (bd, pd, yd) if h_ is not None]
    tiles = []
    acc_id = int(MemId.ACC)
    try:
        for ti, (r0, c0) in enumerate(itertools.product(range(0, R, tr), range(0, C, tc))):
            nr, nc = min(tr, R - r0), min(tc, C - c0)
            a_half = ti % virtual_threads
            base = bases[a_half]
            rows = nr * nc
            other = base + rows
            bias_base = base + per * rows
            stride = C if nr > 1 else nc     # (a single row needs no stride; keeps the 16-bit field small)
            comps = [("load", (handles[0], r0 * C + c0, nc, nr, stride, 0, 0, 0, 0, base, acc_id))]
            if bd is not None:
                comps.append(("load", (bd, r0 * C + c0, nc, nr, stride, 0, 0, 0, 0, other, acc_id)))
            if pd is not None:
                comps.append(("load", (pd, c0, nc, 1, nc, 0, 0, 0, 0, bias_base, acc_id)))
            for op in ops:
                if op[0] == "imm":
                    comps.append(_alu_rows(op[1], op[2], base, rows))
                elif op[0] == "tensor_add":
                    comps.append(("alu", _k_alu(int(AluOp.ADD), 0, 0, base, other, ((rows, 1, 1),)), 0))
                elif op[0] == "bias_add":
                    comps.append(("alu", _k_alu(int(AluOp.ADD), 0, 0, base, bias_base,
                                                ((nr, nc, 0), (nc, 1, 1))), 0))
            stores = [(base, int(MemId.OUT), yd, r0 * C + c0, nc, nr, stride)]
            tiles.append(_Tile(acc=a_half, computes=comps, stores=stores))
        counters = _run_tiles(tiles)
        counters["tiles"] = len(tiles)
        y = _from_device(cmd, yd, (R, C, cfg.BATCH, cfg.BLOCK_OUT), np.int8).reshape(shape)
    finally:
        for h_ in handles:
            rt.buffer_free(h_)
    return _finish(y, counters, return_counters)


def vadd(a, b, virtual_threads=1, return_counters=False):
    """a + b on the ALU for int32 tensors in the packed layout (n, BATCH, BLOCK_OUT) (or (r, c, BATCH,
    BLOCK_OUT)); returns the int8 that STORE writes (the low 8 bits), like VTA's get-started tutorial."""
    return _elementwise(a, b, None, [("tensor_add",)], virtual_threads, return_counters)


def relu(a, virtual_threads=1, return_counters=False):
    """MAX 0 then MIN 127 on the ALU (VTA's test_relu); int8 result."""
    return _elementwise(a, None, None, [("imm", AluOp.MAX, 0), ("imm", AluOp.MIN, 127)], virtual_threads,
                        return_counters)


def add_bias(a, bias, virtual_threads=1, return_counters=False):
    """a + bias per output channel on the ALU; int8 result (the low 8 bits).

    a: int32 (r, c, BATCH, BLOCK_OUT) with bias (c*BLOCK_OUT,) or packed (c, BATCH, BLOCK_OUT);
    or a: (n, BATCH, BLOCK_OUT) with bias (BLOCK_OUT,) or (1, BATCH, BLOCK_OUT).
    """
    return _elementwise(a, None, bias, [("bias_add",)], virtual_threads, return_counters)


def requantize(a, shift=8, bias=None, clip=True, virtual_threads=1, return_counters=False):
    """(a >> shift), optional + bias, clip to [0, 127] as MIN 127 then MAX 0, int8 (reference §6.2)."""
    if not 0 <= shift <= 31:
        raise ValueError(f"shift = {shift}; allowed range [0, 31]")
    ops = [("imm", AluOp.SHR, shift)]
    if bias is not None:
        ops.append(("bias_add",))
    if clip:
        ops += [("imm", AluOp.MIN, 127), ("imm", AluOp.MAX, 0)]
    return _elementwise(a, None, bias, ops, virtual_threads, return_counters)


# ---------------------------------------------------------------------- GEMM / dense
@dataclass(frozen=True)
class DensePlan:
    """Tiles in blocks: tn batch blocks x tk reduction blocks x tm output blocks per step."""
    nb: int
    kb: int
    mb: int
    tn: int
    tk: int
    tm: int
    virtual_threads: int
    cost: float = 0.0

    @property
    def steps(self):
        return _cdiv(self.nb, self.tn) * _cdiv(self.mb, self.tm) * _cdiv(self.kb, self.tk)


def _dense_limits(cfg, vt):
    h = _halves(cfg, vt)
    return h["inp"][0], h["wgt"][0], h["acc"][0], max(1, cfg.UOP_DEPTH // (4 * vt))


def _dense_fits(cfg, vt, tn, tk, tm, bias, planes):
    ic, wc, ac, uc = _dense_limits(cfg, vt)
    need = {"inp": tn * tk, "wgt": tm * tk, "acc": tn * tm * planes + (tm if bias else 0), "uop": tm}
    caps = {"inp": ic, "wgt": wc, "acc": ac, "uop": uc}
    return [(m, need[m], caps[m]) for m in need if need[m] > caps[m]]


_MEM_NAMES = {"inp": "input (INP)", "wgt": "weight (WGT)", "acc": "accumulator (ACC)", "uop": "micro-op (UOP)"}


def _limit_message(cfg, vt, over):
    parts = [f"{_MEM_NAMES[m]} SRAM: needs {need} elements, {cap} available per virtual thread"
             for m, need, cap in over]
    return f"config {cfg.name} with virtual_threads = {vt}: " + "; ".join(parts)


def plan_dense(nb, kb, mb, virtual_threads=1, bias=False, planes=1, cfg=None, tiles=None) -> DensePlan:
    """Choose (tn, tk, tm) minimising DRAM traffic plus a per-instruction cost within the SRAMs."""
    cfg = cfg or _cfg()
    vt = virtual_threads
    if tiles is not None:
        tn, tk, tm = (int(t) for t in tiles)
        if not (1 <= tn <= nb and 1 <= tk <= kb and 1 <= tm <= mb):
            raise ValueError(f"tiles = {tiles} must lie within the blocked shape (nb, kb, mb) = {(nb, kb, mb)}")
        over = _dense_fits(cfg, vt, tn, tk, tm, bias, planes)
        if over:
            raise TileError(f"dense tiles (tn, tk, tm) = {(tn, tk, tm)} do not fit: " + _limit_message(cfg, vt, over))
        if tn * tm < 3 and nb * mb >= 3:
            raise TileError(f"dense tiles (tn, tk, tm) = {(tn, tk, tm)}: tn * tm must be >= 3 (micro-op hazard rule)")
        return DensePlan(nb, kb, mb, tn, tk, tm, vt)
    best = None
    ie, we = cfg.INP_ELEM_BYTES, cfg.WGT_ELEM_BYTES
    for tn in _cands(nb):
        for tm in _cands(mb):
            if tn * tm < min(3, nb * mb):
                continue
            for tk in _cands(kb):
                if _dense_fits(cfg, vt, tn, tk, tm, bias, planes):
                    continue
                nt, mt, kt = _cdiv(nb, tn), _cdiv(mb, tm), _cdiv(kb, tk)
                steps = nt * mt * kt
                cost = _plan_cycles(vt, mt * nb * kb * ie + nt * mb * kb * we, steps * (tn + tm),
                                    nb * mb * (kb + planes), nb * mb * planes * _requant_passes(bias),
                                    steps * 6 + nt * mt * 8, tn * tk * ie + tm * tk * we,
                                    _tail_cycles(tn * tm * planes, bias, cfg), cfg)
                key = (cost, -tn * tk * tm)
                if best is None or key < best[0]:
                    best = (key, DensePlan(nb, kb, mb, tn, tk, tm, vt, cost))
    if best is None:
        over = _dense_fits(cfg, vt, 1, 1, min(mb, 3), bias, planes)
        raise TileError("dense cannot be tiled: " + _limit_message(cfg, vt, over or [("acc", 3, 0)]))
    return best[1]


def _dense_tiles(plan: DensePlan, cfg, xd, wd, yd, pd, shift, clip, planes):
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
            loads = [(xd, n0 * kb + k0, tk, tn, kb, 0, 0, 0, 0, inp, INP),
                     (wd, m0 * kb + k0, tk, tm, kb, 0, 0, 0, 0, wgt, WGT)]
            comps = []
            comps.append(("gemm", _k_dense(acc, inp, wgt, tn, tk, tm), 0))
            t.steps.append(_Step(b, loads, comps))
        if planes == 4:
            # exact int32: copy the accumulators into three more regions (they were reset to 0), shift
            # each by 8, 16, 24 and store the low byte of every region
            t.computes.append(_alu_tensor(acc + rows, acc, ((3, rows, 0), (rows, 1, 1))))
            for p in (1, 2, 3):
                t.computes.append(_alu_rows(AluOp.SHR, 8 * p, acc + p * rows, rows))
            for p in range(4):
                t.stores.append((acc + p * rows, OUT, yd, p * nb * mb + n0 * mb + m0, tm, tn, mb))
        else:
            if shift:
                t.computes.append(_alu_rows(AluOp.SHR, shift, acc, rows))
            if pd is not None:
                bias_base = acc + rows
                t.computes.append(("load", (pd, m0, tm, 1, tm, 0, 0, 0, 0, bias_base, ACC)))
                t.computes.append(_alu_tensor(acc, bias_base, ((tn, tm, 0), (tm, 1, 1))))
            if clip:
                t.computes.append(_alu_rows(AluOp.MIN, 127, acc, rows))
                t.computes.append(_alu_rows(AluOp.MAX, 0, acc, rows))
            t.stores.append((acc, OUT, yd, n0 * mb + m0, tm, tn, mb))
        tiles.append(t)
    return tiles


@contextmanager
def _operands_on_device(cmd, data, weight, bias, out_blocks, out_bytes, cfg):
    """Device buffers (data, weight, packed bias or None, output) for one operator call, freed afterwards."""
    handles = []
    try:
        handles.append(_to_device(cmd, data.astype(np.int8)))
        handles.append(_to_device(cmd, weight.astype(np.int8)))
        pd = None
        if bias is not None:
            pd = _to_device(cmd, pack_bias(bias, out_blocks, cfg))
            handles.append(pd)
        yd = rt.buffer_alloc(out_bytes)
        handles.append(yd)
        yield handles[0], handles[1], pd, yd
    finally:
        for h in handles:
            rt.buffer_free(h)


def dense_packed(data, weight, bias=None, shift=8, clip=True, virtual_threads=1, tiles=None,
                 return_counters=False, _planes=1):
    """Dense on packed operands: data (nb, kb, BATCH, BLOCK_IN), weight (mb, kb, BLOCK_OUT, BLOCK_IN)
    int8, bias None or packed (mb, BATCH, BLOCK_OUT) int32; returns (nb, mb, BATCH, BLOCK_OUT) int8."""
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
    plan = plan_dense(nb, kb, mb, virtual_threads, bias is not None, _planes, cfg, tiles)
    cmd = rt.command_handle()
    with _operands_on_device(cmd, data, weight, bias, mb, _planes * nb * mb * cfg.OUT_ELEM_BYTES, cfg) as (
            xd, wd, pd, yd):
        tl = _dense_tiles(plan, cfg, xd, wd, yd, pd, shift, clip, _planes)
        counters = _run_tiles(tl)
        counters["tiles"] = len(tl)
        y = _from_device(cmd, yd, (_planes, nb, mb, B, O), np.int8)
    y = y[0] if _planes == 1 else y
    return _finish(y, counters, return_counters)


def _dense_common(data, weight, bias, shift, clip, virtual_threads, tiles, return_counters, planes):
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
    bp = None
    if bias is not None:
        bias = np.asarray(bias)
        if bias.shape != (m,):
            raise ValueError(f"bias has shape {bias.shape}; expected ({m},)")
        bp = pack_bias(bias, mb, cfg)
    y, counters = dense_packed(xp, wp, bp, shift, clip, virtual_threads, tiles, True, planes)
    if planes == 4:
        u = y.astype(np.uint8).astype(np.uint32)
        y = (u[0] | (u[1] << 8) | (u[2] << 16) | (u[3] << 24)).view(np.int32)
    return _finish(unpack_dense_output(y, n, m), counters, return_counters)


def dense(data, weight, bias=None, shift=8, clip=True, virtual_threads=1, tiles=None, relu=None,
          return_counters=False):
    """VTA's dense: data (N, K) int8 . weight (M, K)^T int8 in int32, >> shift, + bias (M,) int32,
    clip to [0, 127] (MIN then MAX; ``relu`` is an alias of ``clip``), int8 (N, M).

    ``tiles`` = (tn, tk, tm) in blocks overrides the automatic tiling (e.g. (1, 16, 16) for VTA's
    matrix_multiply_opt blocks of 256 channels).
    """
    if relu is not None:
        clip = relu
    return _dense_common(data, weight, bias, shift, clip, virtual_threads, tiles, return_counters, 1)


def gemm(data, weight, virtual_threads=1, tiles=None, return_counters=False):
    """Raw GEMM: data (N, K) int8 . weight (M, K)^T int8 -> int32 (N, M), exact (mod 2^32).

    STORE writes 8 bits per lane, so each accumulator is copied into three more acc regions shifted
    right by 8, 16 and 24 and the four low bytes are stored and reassembled on the host.
    """
    return _dense_common(data, weight, None, 0, False, virtual_threads, tiles, return_counters, 4)


# ---------------------------------------------------------------------- conv2d
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


def _conv_need(tm, th, tw, tc, kh, kw, s, bias, pad=None):
    ih, iw = _in_rows(th, kh, s, pad), (tw - 1) * s + kw
    _, uops = _conv_variant(tm, th, tw, tc, kh, kw)
    return {"inp": tc * ih * iw, "wgt": tm * tc * kh * kw, "acc": tm * th * tw + (tm if bias else 0),
            "uop": uops}


def _conv_caps(cfg, vt):
    h = _halves(cfg, vt)
    return {"inp": h["inp"][0], "wgt": h["wgt"][0], "acc": h["acc"][0], "uop": max(1, cfg.UOP_DEPTH // (2 * vt))}


def plan_conv2d(nb, cb, ob, h, w, kh, kw, stride, pad, virtual_threads=1, bias=False, cfg=None, tiles=None):
    """Choose conv tiles within the SRAMs, minimising DRAM traffic plus a per-instruction cost."""
    cfg = cfg or _cfg()
    vt = virtual_threads
    ho, wo = (h + 2 * pad - kh) // stride + 1, (w + 2 * pad - kw) // stride + 1
    caps = _conv_caps(cfg, vt)

    def over(tm, th, tw, tc):
        need = _conv_need(tm, th, tw, tc, kh, kw, stride, bias, pad)
        if need["uop"] is None:
            return [("acc", "3 distinct rows for the hazard rule", "fewer")]
        return [(m, need[m], caps[m]) for m in need if need[m] > caps[m]]

    if tiles is not None:
        tm, th, tw, tc = (int(t) for t in tiles)
        if not (1 <= tm <= ob and 1 <= th <= ho and 1 <= tw <= wo and 1 <= tc <= cb):
            raise ValueError(f"tiles = {tiles} must lie within (ob, ho, wo, cb) = {(ob, ho, wo, cb)}")
        o = over(tm, th, tw, tc)
        if o:
            raise TileError(f"conv2d tiles (tm, th, tw, tc) = {tuple(tiles)} do not fit: " + _limit_message(cfg, vt, o))
        return ConvPlan(tm, th, tw, tc, vt)
    o = [(m, need, caps[m]) for m, need in _conv_need(1, 1, 1, 1, kh, kw, stride, bias).items()
         if m in ("inp", "wgt") and need > caps[m]]
    if o:
        raise TileError(f"conv2d {kh}x{kw} cannot be tiled: one input-channel block of the kernel "
                        + _limit_message(cfg, vt, o))
    ie, we = cfg.INP_ELEM_BYTES, cfg.WGT_ELEM_BYTES
    best = None
    kk = kh * kw
    for slots, tm, tw, th in itertools.product((1, 2) if vt > 1 else (1,), _cands(ob), _cands(wo), _cands(ho)):
        if tm * th * tw + (tm if bias else 0) > caps["acc"] // slots:
            continue
        ih, iw = _in_rows(th, kh, stride, pad), (tw - 1) * stride + kw
        tc_max = min(caps["inp"] // (ih * iw), caps["wgt"] // (tm * kk), cb)
        for tc in _cands(cb):
            v, uops = _conv_variant(tm, th, tw, tc, kh, kw)
            if tc > tc_max or v is None or uops > caps["uop"]:
                continue
            mt, ht, wt, ct = _cdiv(ob, tm), _cdiv(ho, th), _cdiv(wo, tw), _cdiv(cb, tc)
            spatial = nb * ht * wt
            tail = _tail_cycles(tm * th * tw, bias, cfg)
            cost = _plan_cycles(vt, spatial * mt * cb * ih * iw * ie + spatial * ob * cb * kk * we,
                                spatial * mt * (cb * ih + ct * tm), nb * ob * ho * wo * (cb * kk + 1),
                                nb * ob * ho * wo * _requant_passes(bias),
                                spatial * mt * (ct * (tc + 6) + tm + 8), tc * ih * iw * ie + tm * tc * kk * we,
                                tail, cfg, chain=spatial * mt * tail / max(1, vt * slots - 1))
            key = (cost, slots, -tc, -tm * th * tw)
            if best is None or key < best[0]:
                best = (key, ConvPlan(tm, th, tw, tc, vt, cost, slots))
    if best is None:
        raise TileError(f"conv2d {kh}x{kw} stride {stride} cannot be tiled on config {cfg.name} with "
                        f"virtual_threads = {vt}: no tile fits the SRAMs " + str(caps))
    return best[1]


def _conv_tiles(plan: ConvPlan, cfg, shape, xd, wd, yd, pd, shift, clip):
    nb, cb, ob, h, w, kh, kw, s, pad = shape
    vt = plan.virtual_threads
    hv = _halves(cfg, vt)
    ho, wo = (h + 2 * pad - kh) // s + 1, (w + 2 * pad - kw) // s + 1
    kk = kh * kw
    INP, WGT, ACC, OUT = int(MemId.INP), int(MemId.WGT), int(MemId.ACC), int(MemId.OUT)
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
        t = _Tile(acc=a, reset=(acc, rows), gemm_uops=rows * cb * kk)
        for c0 in range(0, cb, plan.tc):
            tc = min(plan.tc, cb - c0)
            b = step_no % vt
            step_no += 1
            inp, wgt = hv["inp"][1][b], hv["wgt"][1][b]
            loads = []
            for c in range(tc):
                off = ((n * cb + c0 + c) * h + r0 + ypb) * w + c0_ + xpb
                loads.append((xd, off, xs, ys, w * s if skip else w, xpb, ypb, xpa, ypa, inp + c * ih * iw, INP))
            loads.append((wd, (m0 * cb + c0) * kk, tc * kk, tm, cb * kk, 0, 0, 0, 0, wgt, WGT))
            comps = []
            comps.append(("gemm", _k_conv(acc, inp, wgt, tm, th, tw, tc, kh, kw, s, ih, iw, 1 if skip else s), 0))
            t.steps.append(_Step(b, loads, comps))
        if shift:
            t.computes.append(_alu_rows(AluOp.SHR, shift, acc, rows))
        if pd is not None:
            bias_base = acc + rows
            t.computes.append(("load", (pd, m0, tm, 1, tm, 0, 0, 0, 0, bias_base, ACC)))
            t.computes.append(_alu_tensor(acc, bias_base, ((tm, th * tw, 1), (th * tw, 1, 0))))
        if clip:
            t.computes.append(_alu_rows(AluOp.MIN, 127, acc, rows))
            t.computes.append(_alu_rows(AluOp.MAX, 0, acc, rows))
        for j in range(tm):
            t.stores.append((acc + j * th * tw, OUT, yd, ((n * ob + m0 + j) * ho + h0) * wo + w0,
                             tw, th, wo))
        tiles.append(t)
    return tiles


def conv2d_packed(data, weight, bias=None, stride=1, padding=0, shift=8, clip=True, virtual_threads=1,
                  tiles=None, return_counters=False):
    """conv2d on packed operands: data (nb, cb, H, W, BATCH, BLOCK_IN), weight (ob, cb, kh, kw, BLOCK_OUT,
    BLOCK_IN) int8, bias None or packed (ob, BATCH, BLOCK_OUT) int32; returns (nb, ob, Ho, Wo, BATCH,
    BLOCK_OUT) int8 after >> shift, + bias, clip [0, 127]."""
    _check_vt(virtual_threads)
    cfg = _cfg()
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
    if not 0 <= shift <= 31:
        raise ValueError(f"shift = {shift}; allowed range [0, 31]")
    plan = plan_conv2d(nb, cb, ob, h, w, kh, kw, stride, padding, virtual_threads, bias is not None, cfg, tiles)
    cmd = rt.command_handle()
    with _operands_on_device(cmd, data, weight, bias, ob, nb * ob * ho * wo * cfg.OUT_ELEM_BYTES, cfg) as (
            xd, wd, pd, yd):
        tl = _conv_tiles(plan, cfg, (nb, cb, ob, h, w, kh, kw, stride, padding), xd, wd, yd, pd, shift, clip)
        counters = _run_tiles(tl)
        counters["tiles"] = len(tl)
        y = _from_device(cmd, yd, (nb, ob, ho, wo, B, O), np.int8)
    return _finish(y, counters, return_counters)


def conv2d(data, weight, bias=None, stride=1, padding=0, shift=8, clip=True, virtual_threads=1, tiles=None,
           return_counters=False):
    """VTA's conv2d benchmark: data (N, C, H, W) int8, weight (O, C, kh, kw) int8, bias (O,) int32 or
    None; conv2d_nchw in int32, >> shift, + bias, clip [0, 127], int8 (N, O, Ho, Wo).

    The operands are packed to NCHW{BATCH}n{BLOCK_IN}c / OIHW{BLOCK_OUT}o{BLOCK_IN}i (zero-padded to
    whole blocks); the spatial padding is done by the LOADs. ``tiles`` = (tm, th, tw, tc) overrides
    the automatic tiling.
    """
    cfg = _cfg()
    data, weight = np.asarray(data), np.asarray(weight)
    if data.ndim != 4 or weight.ndim != 4 or data.shape[1] != weight.shape[1]:
        raise ValueError(f"data {data.shape} and weight {weight.shape} must be (N, C, H, W) and (O, C, kh, kw)")
    n, _, h, w = data.shape
    o, _, kh, kw = weight.shape
    ho = (h + 2 * padding - kh) // stride + 1
    wo = (w + 2 * padding - kw) // stride + 1
    ob = max(_cdiv(o, cfg.BLOCK_OUT), _cdiv(3, max(1, ho * wo)))
    bp = None
    if bias is not None:
        bias = np.asarray(bias)
        if bias.shape != (o,):
            raise ValueError(f"bias has shape {bias.shape}; expected ({o},)")
        bp = pack_bias(bias, ob, cfg)
    y, counters = conv2d_packed(pack_conv_data(data, cfg), pack_conv_weight(weight, cfg, ob), bp, stride,
                                padding, shift, clip, virtual_threads, tiles, True)
    return _finish(unpack_conv_output(y, n, o), counters, return_counters)


# ---------------------------------------------------------------------- workloads (benchmarks)
# ResNet-18 layers of VTA's conv2d benchmark (reference §6.2): H, W, Cin, Cout, k, pad, stride
RESNET18 = {
    "C2": (56, 56, 64, 64, 3, 1, 1),
    "C3": (56, 56, 64, 128, 3, 1, 2),
    "C4": (56, 56, 64, 128, 1, 0, 2),
    "C5": (28, 28, 128, 128, 3, 1, 1),
    "C6": (28, 28, 128, 256, 3, 1, 2),
    "C7": (28, 28, 128, 256, 1, 0, 2),
    "C8": (14, 14, 256, 256, 3, 1, 1),
    "C9": (14, 14, 256, 512, 3, 1, 2),
    "C10": (14, 14, 256, 512, 1, 0, 2),
    "C11": (7, 7, 512, 512, 3, 1, 1),
}


def _rand(rng, shape, lo=-128, hi=128, dtype=np.int8):
    return rng.integers(lo, hi, size=shape, dtype=dtype)


def run_dense_workload(n, k, m, virtual_threads=1, bias=False, tiles=None, seed=0) -> dict:
    """Random int8 dense (N, K) x (M, K) with VTA's requantization; returns counters, MACs and the check."""
    rng = np.random.default_rng(seed)
    x, wt = _rand(rng, (n, k)), _rand(rng, (m, k))
    b = _rand(rng, (m,), -(1 << 14), 1 << 14, np.int32) if bias else None
    y, counters = dense(x, wt, b, virtual_threads=virtual_threads, tiles=tiles, return_counters=True)
    ok = bool(np.array_equal(y, dense_ref(x, wt, b)))
    return {"ok": ok, "macs": n * k * m, "counters": counters}


def run_conv2d_workload(name=None, batch=None, h=None, w=None, cin=None, cout=None, k=None, pad=None, stride=None,
                        virtual_threads=1, bias=True, tiles=None, seed=0) -> dict:
    """Random conv2d layer (a RESNET18 name, or explicit sizes) with bias; returns counters, MACs, check."""
    if name is not None:
        h, w, cin, cout, k, pad, stride = RESNET18[name]
    batch = batch or _cfg().BATCH
    rng = np.random.default_rng(seed)
    x, wt = _rand(rng, (batch, cin, h, w)), _rand(rng, (cout, cin, k, k))
    b = _rand(rng, (cout,), -(1 << 14), 1 << 14, np.int32) if bias else None
    y, counters = conv2d(x, wt, b, stride, pad, virtual_threads=virtual_threads, tiles=tiles, return_counters=True)
    ok = bool(np.array_equal(y, conv2d_ref(x, wt, b, stride, pad)))
    ho, wo = y.shape[2:]
    return {"ok": ok, "macs": batch * cout * ho * wo * cin * k * k, "counters": counters}


def run_resnet18_layer(name, virtual_threads=1, seed=0) -> dict:
    """One ResNet-18 layer of :data:`RESNET18` with bias, batch = BATCH (see :func:`run_conv2d_workload`)."""
    return run_conv2d_workload(name, virtual_threads=virtual_threads, seed=seed)


def workloads(virtual_threads=2) -> dict:
    """Benchmark workloads: name -> (module-level function, positional args), ready for
    ``fn(*args)`` on the current runtime or ``cosim.run(fn, *args)`` on the RTL. Each call returns
    ``{"ok", "macs", "counters"}``; MAC utilisation = macs / (cycles * BATCH*BLOCK_IN*BLOCK_OUT) on a
    target that counts cycles (the golden model counts GEMM micro-ops but no cycles)."""
    vt = virtual_threads
    out = {
        "matrix_multiply_opt": (run_dense_workload, (1, 1024, 1024, vt, False, "blocks256")),
        "gemm_256": (run_dense_workload, (256, 256, 256, vt)),
        "dense_128": (run_dense_workload, (128, 128, 128, vt)),
        "dense_16x512x1008": (run_dense_workload, (16, 512, 1008, vt)),
    }
    for name in RESNET18:
        out[f"resnet18.{name}"] = (run_resnet18_layer, (name, vt))
    return out


def _resolve_tiles(tiles, cfg, n, k, m, vt=1):
    """'blocks256': VTA's matrix_multiply_opt tiling, 256 input and 256 output channels per step
    (automatic tiling instead when such a step does not fit this config's SRAMs)."""
    if tiles != "blocks256":
        raise ValueError(f"tiles = {tiles!r}; allowed: None, 'blocks256' or (tn, tk, tm) in blocks")
    t = (1, min(_cdiv(k, cfg.BLOCK_IN), max(1, 256 // cfg.BLOCK_IN)),
         min(_cdiv(m, cfg.BLOCK_OUT), max(1, 256 // cfg.BLOCK_OUT)))
    nb = _cdiv(n, cfg.BATCH)
    mb = max(_cdiv(m, cfg.BLOCK_OUT), _cdiv(3, nb))
    if t[0] * t[2] < min(3, nb * mb) or _dense_fits(cfg, vt, *t, False, 1):
        return None
    return t
