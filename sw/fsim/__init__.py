"""The numpy golden model: VTA's functional-simulator semantics with docs/architecture.md §2's decisions.

:class:`FsimDevice` owns a byte-addressed DRAM (a numpy array the runtime writes into directly) and
the SRAMs of one configuration. :meth:`FsimDevice.run` decodes ``insn_count`` instructions at
``insn_addr``, checks them all before executing any (so a bad stream changes nothing), then runs
them on three in-order cores with four token counters (:func:`sw.pipeline.schedule`). Each
instruction is one vectorised numpy step: no Python loop per lane or per MAC.

Physical addresses are byte offsets into ``dram``; the allocator of the runtime never hands out
page 0, so address 0 is never a valid buffer.
"""

from __future__ import annotations

import ctypes
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from numpy.lib.stride_tricks import as_strided

from sw.config import Config, load_config
from sw.isa import AluOp, Insn, MemId, Opcode, expand_uops, isa_for, uop_index_error
from sw.pipeline import InsnError, VTAError, check_insn, elem_bytes, schedule

__all__ = ["FsimDevice", "COUNTER_NAMES", "DEFAULT_DRAM_BYTES"]

DEFAULT_DRAM_BYTES = 256 << 20

# The counters of VTA's profiler (docs/architecture.md §5.6), kept by every target.
COUNTER_NAMES = ("inp_load_nbytes", "wgt_load_nbytes", "acc_load_nbytes", "uop_load_nbytes",
                 "out_store_nbytes", "gemm_counter", "alu_counter")

_LOAD_COUNTER = {MemId.INP: "inp_load_nbytes", MemId.WGT: "wgt_load_nbytes", MemId.ACC: "acc_load_nbytes",
                 MemId.ACC_8BIT: "acc_load_nbytes", MemId.UOP: "uop_load_nbytes"}


class FsimDevice:
    """The golden model of one accelerator and its DRAM."""

    name = "fsim"

    def __init__(self, cfg: Config | str | None = None, dram_bytes: int = DEFAULT_DRAM_BYTES):
        self.cfg = cfg = load_config(cfg)
        self.isa = isa_for(cfg)
        self.dram = np.zeros(dram_bytes, dtype=np.uint8)
        B, I, O = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
        self.inp = np.zeros((cfg.INP_DEPTH, B, I), dtype=np.int8)
        self.wgt = np.zeros((cfg.WGT_DEPTH, O, I), dtype=np.int8)
        self.acc = np.zeros((cfg.ACC_DEPTH, B * O), dtype=np.int32)
        self.uop = np.zeros(cfg.UOP_DEPTH, dtype=np.uint32)
        # byte views of each SRAM, one row per element
        self._sram_bytes = {
            MemId.INP: self.inp.view(np.uint8).reshape(cfg.INP_DEPTH, -1),
            MemId.WGT: self.wgt.view(np.uint8).reshape(cfg.WGT_DEPTH, -1),
            MemId.ACC: self.acc.view(np.uint8).reshape(cfg.ACC_DEPTH, -1),
            MemId.UOP: self.uop.view(np.uint8).reshape(cfg.UOP_DEPTH, -1),
        }
        self.counters = dict.fromkeys(COUNTER_NAMES, 0)
        self._index_cache: dict = {}
        self._checked = None

    def checked_stream(self, insn_addr: int, raw: np.ndarray, insns: list, order: list | None = None) -> None:
        """The runtime announces the stream it wrote at ``insn_addr`` (its bytes ``raw``) and already checked: every
        instruction when it was queued, the tokens by its dry run, which ran them in ``order`` (the indices, as
        :func:`sw.pipeline.schedule` runs them). The next :meth:`run` of exactly those bytes executes ``insns`` in
        that order without decoding, checking and scheduling them again; any other run does all of that."""
        self._checked = (insn_addr, raw, insns, order)

    # ------------------------------------------------------------------ target interface
    def run(self, insn_addr: int, insn_count: int, wait_cycles: int | None = None) -> dict:
        """Execute a stream; return the profiler counters of this run."""
        ib = self.isa.insn_bytes
        if insn_count <= 0:
            raise VTAError(f"insn_count = {insn_count}; allowed range [1, {len(self.dram) // ib}]")
        end = insn_addr + insn_count * ib
        if insn_addr < 0 or insn_addr % ib or end > len(self.dram):
            raise VTAError(f"instruction range [{insn_addr:#x}, {end:#x}) must be {ib}-byte aligned and inside "
                           f"device memory [0, {len(self.dram):#x})")
        hint, self._checked = self._checked, None
        checked = (hint is not None and hint[0] == insn_addr and len(hint[2]) == insn_count
                   and np.array_equal(self.dram[insn_addr:end], hint[1]))
        if checked:
            insns = hint[2]
        else:
            try:
                insns = self.isa.decode_stream(self.dram[insn_addr:end])
            except ValueError as err:
                raise InsnError(str(err)) from None
            for i, insn in enumerate(insns):
                try:
                    check_insn(self.cfg, insn, len(self.dram), where="\0")
                except InsnError as err:            # name the instruction (disassembled only when it is wrong)
                    raise InsnError(str(err).replace("\0", f"instruction #{i} ({self.isa.disasm(insn)})", 1)) from None
        self.counters = dict.fromkeys(COUNTER_NAMES, 0)
        if checked and hint[3] is not None:
            execute = self._execute
            for i in hint[3]:
                execute(i, insns[i])
        else:
            schedule(self.cfg, insns, self._execute, self.isa.disasm, check_depth=not checked)
        return dict(self.counters)

    def reset(self):
        for arr in (self.inp, self.wgt, self.acc, self.uop):
            arr[...] = 0

    # ------------------------------------------------------------------ execution
    def _execute(self, index: int, insn: Insn):
        op = insn.opcode
        try:
            if op == Opcode.LOAD:
                self._load(insn.f)
            elif op == Opcode.STORE:
                self._store(insn.f)
            elif op == Opcode.GEMM:
                self._gemm(insn.f)
            elif op == Opcode.ALU:
                self._alu(insn.f)
        except InsnError as err:
            raise InsnError(f"instruction #{index} ({self.isa.disasm(insn)}): {err}") from None

    def _dram_rows(self, f, eb):
        """A (y_size, x_size * eb) strided byte view of the DRAM rows an instruction touches."""
        start = f["dram_base"] * eb
        return as_strided(self.dram[start:], shape=(f["y_size"], f["x_size"] * eb),
                          strides=(f["x_stride"] * eb, 1), writeable=True)

    def _load(self, f):
        if f["x_size"] == 0:
            return
        mem = f["memory_type"]
        eb = elem_bytes(self.cfg, mem)
        xs, ys = f["x_size"], f["y_size"]
        y0, y1, x0, x1 = f["y_pad_0"], f["y_pad_1"], f["x_pad_0"], f["x_pad_1"]
        pitch, rows = x0 + xs + x1, y0 + ys + y1
        base = f["sram_base"]
        src = self._dram_rows(f, eb)
        if mem == MemId.ACC_8BIT:
            region = self.acc[base:base + pitch * rows].reshape(rows, pitch, -1)
            region[...] = 0
            region[y0:y0 + ys, x0:x0 + xs] = src.view(np.int8).reshape(ys, xs, -1)
            nbytes = xs * ys * self.cfg.ACC_ELEM_BYTES
        else:
            region = self._sram_bytes[mem][base:base + pitch * rows].reshape(rows, pitch, -1)
            region[...] = 0
            region[y0:y0 + ys, x0:x0 + xs] = src.reshape(ys, xs, -1)
            nbytes = xs * ys * eb
        self.counters[_LOAD_COUNTER[mem]] += nbytes

    def _store(self, f):
        if f["x_size"] == 0:
            return
        xs, ys, base = f["x_size"], f["y_size"], f["sram_base"]
        # OUT mirrors the low bits of ACC (docs/architecture.md §2.4): a store truncates the accumulators.
        out = self.acc[base:base + xs * ys].astype(np.int8)
        dst = self._dram_rows(f, self.cfg.OUT_ELEM_BYTES)
        dst[...] = out.view(np.uint8).reshape(ys, -1)
        self.counters["out_store_nbytes"] += xs * ys * self.cfg.OUT_ELEM_BYTES

    def _indices(self, f, kind):
        """Flattened (dst, src, wgt) indices of every micro-op execution, in execution order, and a dict for what
        the units derive from them (a GEMM's fold plan, an ALU instruction's shape).

        Memoised on the micro-op words and the loop fields: a network repeats a few hundred distinct
        (kernel, loop) pairs tens of thousands of times."""
        words = self.uop[f["uop_bgn"]:f["uop_end"]]
        key = (kind, words.tobytes(), f["iter_out"], f["iter_in"], f["dst_factor_out"], f["dst_factor_in"],
               f["src_factor_out"], f["src_factor_in"], f.get("wgt_factor_out", 0), f.get("wgt_factor_in", 0))
        hit = self._index_cache.get(key)
        if hit is not None:
            return hit
        d, s, w = expand_uops(np.stack(self.isa.decode_uops(words), axis=-1), f, kind == "gemm")
        problem = uop_index_error(self.cfg, d, s, w, kind == "gemm")
        if problem:
            raise InsnError(problem)
        for a in (d, s, w):
            if a is not None:
                a.flags.writeable = False
        if len(self._index_cache) >= 4096:
            self._index_cache.clear()
        hit = self._index_cache[key] = (d, s, w, {})
        return hit

    def _gemm(self, f):
        d, s, w, memo = self._indices(f, "gemm")
        if d.size == 0:
            return
        if f["reset"]:
            self.acc[d] = 0
            return
        if "fold" not in memo:
            memo["fold"] = _gemm_fold(d, s, w)
        with _one_blas_thread():
            if not _gemm_folded(self.acc, self.inp, self.wgt, memo["fold"]):
                prod, order = _gemm_products(self.inp, self.wgt, s, w)
                _accumulate(self.acc, d[order], prod)
        self.counters["gemm_counter"] += d.size

    def _alu(self, f):
        d, s, _, memo = self._indices(f, "alu")
        if d.size == 0:
            return
        self.counters["alu_counter"] += d.size
        op, use_imm, imm = f["alu_opcode"], f["use_imm"], f["imm"]
        acc = self.acc
        shape = memo.get(use_imm)
        if shape is None:
            shape = memo[use_imm] = self._alu_shape(d, s, use_imm)
        run, independent = shape
        if independent:
            b = np.int64(imm) if use_imm else acc[s]
            if run is not None:
                # the common case: a run of consecutive rows, in place on a view
                rows = acc[run[0]:run[1]]
                rows[...] = alu_op(op, rows, b)
            else:
                acc[d] = alu_op(op, acc[d], b)
        else:  # rare: a micro-op reads or rewrites a row an earlier one wrote; keep program order
            for j in range(d.size):
                b = np.int64(imm) if use_imm else acc[s[j]]
                acc[d[j]] = alu_op(op, acc[d[j]], b)

    def _alu_shape(self, d, s, use_imm):
        """(the destination rows as a run [first, end) or None, whether the micro-ops can run at once: no
        destination repeats and, with a tensor operand, none reads a row an earlier one of them wrote)."""
        n = d.size
        increasing = n == 1 or bool(np.all(d[1:] > d[:-1]))
        run = (int(d[0]), int(d[-1]) + 1) if increasing and d[-1] - d[0] == n - 1 else None
        independent = increasing or np.unique(d).size == n
        if independent and not use_imm:
            # every operand must be read before any earlier micro-op of this instruction writes it
            first_write = np.full(self.acc.shape[0], n, dtype=np.int64)
            first_write[d] = np.arange(n)
            independent = bool(np.all(first_write[s] >= np.arange(n)))
        return run, independent


def alu_op(op: int, a: np.ndarray, b) -> np.ndarray:
    """The tensor ALU on int32 lanes (docs/architecture.md §2): MIN, MAX, ADD, SHR, MUL, wrapping to 32 bits."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    if op == AluOp.MIN:
        r = np.minimum(a, b)
    elif op == AluOp.MAX:
        r = np.maximum(a, b)
    elif op == AluOp.ADD:
        r = a + b
    elif op == AluOp.SHR and b.ndim == 0:
        r = np.right_shift(a, min(int(b), 31)) if b >= 0 else np.left_shift(a, min(-int(b), 31))
    elif op == AluOp.SHR:
        right = np.right_shift(a, np.clip(b, 0, 31))
        left = np.left_shift(a, np.clip(-b, 0, 31))
        r = np.where(b >= 0, right, left)
    elif op == AluOp.MUL:
        r = a * b
    else:
        raise InsnError(f"alu_opcode = {op}; allowed: " + ", ".join(f"{o.value} {o.name}" for o in AluOp))
    return r.astype(np.int32)


# ---------------------------------------------------------------------- GEMM kernels
# A GEMM instruction adds, to each acc row it writes, the sum of the products of every micro-op
# execution that writes that row. Sums of int32 lanes wrap modulo 2^32, which is a ring: the result
# does not depend on the order of the additions, so executions that write the same row (at any
# distance, with no hazard rule) may be summed in any order and added to the row once.
#
# The fast path (:func:`_gemm_folded`) folds that per-row sum into BLAS. When every written row gets
# the same number K of executions, row r needs sum_k inp[S[r, k]] . wgt[W[r, k]]^T: the product of
# the (BATCH, K*BLOCK_IN) concatenation of its inp rows with the (BLOCK_OUT, K*BLOCK_IN) one of its
# wgt rows. Rows that share their inp list S[r] (the same output pixel) and rows that share W[r] (the
# same output channel block) make one matrix product of all the distinct inp lists by all the distinct
# wgt lists, computed once. Irregular instructions (unequal counts, too few shared lists) take the
# general path (:func:`_gemm_products` and :func:`_accumulate`).
#
# Exactness of float32: an int8 x int8 product has |a*b| <= 128*128 = 2^14. A dot product of at most
# _F32_TERMS = 1024 such terms has every partial sum, in whatever order or blocking BLAS adds them and
# with or without fused multiply-add, an integer of magnitude <= 1024 * 2^14 = 2^24; float32 holds
# every integer of magnitude <= 2^24 exactly, so each rounding step is exact and the float32 result is
# the exact integer. Longer reductions are split into chunks of <= 1024 terms, each converted to int32
# and added with wrap-around.
_F32_TERMS = 1024


def _blas_thread_setter():
    """OpenBLAS's ``openblas_set_num_threads_local`` (thread-local; returns the previous setting) from
    the library bundled with numpy, or None when numpy uses another BLAS."""
    libs = Path(np.__file__).resolve().parent.parent / "numpy.libs"
    for lib in sorted(libs.glob("lib*openblas*.so*")) if libs.is_dir() else ():
        try:
            fn = ctypes.CDLL(str(lib)).openblas_set_num_threads_local
        except (OSError, AttributeError):
            continue
        fn.argtypes, fn.restype = [ctypes.c_int], ctypes.c_int
        return fn
    return None


_SET_BLAS_THREADS = _blas_thread_setter()


@contextmanager
def _one_blas_thread():
    """Run the enclosed BLAS calls on the calling thread only. The golden model's products are small
    (often ~1 M MACs); OpenBLAS splits anything above ~0.26 M MACs over all cores, and on a shared
    machine each call then waits for a busy core (measured: 3 ms instead of 0.05 ms)."""
    if _SET_BLAS_THREADS is None:
        yield
        return
    previous = _SET_BLAS_THREADS(1)
    try:
        yield
    finally:
        _SET_BLAS_THREADS(previous)


def _gemm_fold(d, s, w):
    """How :func:`_gemm_folded` computes a GEMM of these executions, which depends on the indices only: (dst
    rows, distinct inp lists and their inverse, distinct wgt lists and theirs, rows in the product's order), or
    None where the executions have no regular structure to fold."""
    plan = _fold_plan(d, s, w)
    if plan is None:
        return None
    dst, S, W = plan
    us, inv_s = _row_classes(S)
    uw, inv_w = _row_classes(W)
    if us.shape[0] * uw.shape[0] > 2 * dst.size:
        return None            # few rows share their lists: the full product would mostly be wasted
    R = S.shape[0]
    nu, nw = us.shape[0], uw.shape[0]
    # the rows in the product's own order (row r = pair (r // nw, r % nw)): no gather needed
    in_order = nu * nw == R and np.array_equal(inv_s * nw + inv_w, np.arange(R))
    lo = int(dst[0])
    run = int(dst[-1]) - lo == R - 1 and (R == 1 or bool(np.all(dst[1:] > dst[:-1])))
    return dst, us, inv_s, uw, inv_w, in_order, run


def _gemm_folded(acc, inp, wgt, fold) -> bool:
    """acc[d] += inp[s] . wgt[w]^T over all executions, as one blocked product (``fold``: :func:`_gemm_fold`
    of the executions); False (nothing done) when they have no regular structure to fold."""
    if fold is None:
        return False
    dst, us, inv_s, uw, inv_w, in_order, run = fold
    B, I = inp.shape[1], inp.shape[2]
    O = wgt.shape[1]
    R, K = dst.size, us.shape[1]
    nu, nw = us.shape[0], uw.shape[0]
    chunk = max(1, _F32_TERMS // I)
    total = None
    for k0 in range(0, K, chunk):
        x = inp[us[:, k0:k0 + chunk]].transpose(0, 2, 1, 3).astype(np.float32, order="C")
        y = wgt[uw[:, k0:k0 + chunk]].transpose(0, 2, 1, 3).astype(np.float32, order="C")
        p = (x.reshape(nu * B, -1) @ y.reshape(nw * O, -1).T).reshape(nu, B, nw, O)   # exact: <= 1024 terms
        p = (p.transpose(0, 2, 1, 3) if in_order else p[inv_s, :, inv_w, :]).astype(np.int32)   # (R, B, O)
        total = p if total is None else total + p         # int32 wrap-around
    total = total.reshape(R, B * O)
    lo = int(dst[0])
    if run:
        acc[lo:lo + R] += total                           # a run of consecutive rows: in place on a view
    else:
        acc[dst] += total
    return True


def _fold_plan(d, s, w):
    """(dst rows (R,), S (R, K), W (R, K)) with the inp/wgt indices of the K executions writing each
    distinct row dst[r], in execution order; None when the rows get unequal numbers of executions."""
    n = d.size
    hits = np.flatnonzero(d == d[0])
    K = hits.size                        # if the counts are equal, every row's is that of the first
    if K == 1:
        return (d, s[:, None], w[:, None]) if _distinct(d) else None
    # the common loop nests repeat one run of C distinct rows K times in a row, A times over
    # (A = 1: the whole set of rows K times; C = 1: each row's executions back to back)
    C = int(hits[1] - hits[0])
    if n % (K * C) == 0:
        A = n // (K * C)
        d3 = d.reshape(A, K, C)
        first = d3[:, 0]
        if np.array_equal(d3, np.broadcast_to(first[:, None], d3.shape)) and _distinct(first.reshape(-1)):
            def rows_of(x):
                return x.reshape(A, K, C).transpose(0, 2, 1).reshape(A * C, K)
            return first.reshape(-1), rows_of(s), rows_of(w)
    lo = int(d.min())
    counts = np.bincount(d - lo)
    rows = np.flatnonzero(counts)
    R = rows.size
    if K * R != n or not np.all(counts[rows] == K):
        return None
    key = (d - lo).astype(np.uint16 if rows[-1] < 1 << 16 else np.uint32)
    order = np.argsort(key, kind="stable")               # radix sort; keeps execution order per row
    return rows + lo, s[order].reshape(R, K), w[order].reshape(R, K)


def _distinct(x) -> bool:
    """Whether the non-negative integers x are all different."""
    return x.size <= 1 or int(np.bincount(x - x.min()).max()) == 1


def _row_classes(m):
    """(u, inverse) with m == u[inverse]: the distinct rows of the index matrix m (R, K) of
    non-negative SRAM indices."""
    step = m[:, 1:] - m[:, :1]
    if np.array_equal(step, np.broadcast_to(step[:1], step.shape)):
        # every row is one pattern at an offset (the loops of a dense or conv kernel): key on the offset
        base = m[:, 0]
        seen = np.zeros(int(base.max()) + 1, dtype=np.int64)
        seen[base] = 1
        offsets = np.flatnonzero(seen)
        seen[offsets] = np.arange(offsets.size)
        return offsets[:, None] + np.concatenate(([0], step[0])), seen[base]
    u, inverse = np.unique(m, axis=0, return_inverse=True)
    return u, inverse.reshape(-1)


def _gemm_products(inp, wgt, s, w):
    """(products (N, BATCH*BLOCK_OUT) float32, exact, order) with products[i] = inp[s[order[i]]] . wgt[w[order[i]]]^T."""
    n = s.size
    B, I = inp.shape[1], inp.shape[2]
    O = wgt.shape[1]
    counts_w = np.bincount(w, minlength=wgt.shape[0])
    counts_s = np.bincount(s, minlength=inp.shape[0])
    groups_w, groups_s = np.count_nonzero(counts_w), np.count_nonzero(counts_s)
    if n < 8 * min(groups_w, groups_s):
        # little reuse of either operand: one small matrix product per micro-op, in chunks
        out = np.empty((n, B, O), dtype=np.float32)
        chunk = 1 << 14
        for a in range(0, n, chunk):
            x = inp[s[a:a + chunk]].astype(np.float32)                  # (c, B, I)
            ww = wgt[w[a:a + chunk]].astype(np.float32)                 # (c, O, I)
            np.matmul(x, ww.transpose(0, 2, 1), out=out[a:a + chunk])
        return out.reshape(n, B * O), np.arange(n)
    # group the micro-ops that share an operand: each group is one real matrix product
    by_wgt = groups_w <= groups_s
    key, counts = (w, counts_w) if by_wgt else (s, counts_s)
    order = np.argsort(key.astype(np.uint16), kind="stable")   # radix sort
    ks = key[order]
    sizes = counts[counts > 0]
    firsts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    keys = ks[firsts]
    if by_wgt:
        x = inp[s[order]].astype(np.float32)                            # (n, B, I)
        wk = wgt[keys].astype(np.float32)                               # (G, O, I)
    else:
        x = wgt[w[order]].astype(np.float32)                            # (n, O, I)
        wk = inp[keys].astype(np.float32)                               # (G, B, I)
    if np.all(sizes == sizes[0]):
        m = int(sizes[0])
        r = np.matmul(x.reshape(keys.size, -1, I), wk.transpose(0, 2, 1))   # (G, m*rows, cols)
        r = r.reshape(n, x.shape[1], wk.shape[1])
    else:
        r = np.empty((n, x.shape[1], wk.shape[1]), dtype=np.float32)
        for g, (a, m) in enumerate(zip(firsts.tolist(), sizes.tolist())):
            r[a:a + m] = (x[a:a + m].reshape(-1, I) @ wk[g].T).reshape(m, x.shape[1], -1)
    if not by_wgt:
        r = r.transpose(0, 2, 1)                                        # (n, B, O)
    return np.ascontiguousarray(r).reshape(n, B * O), order


def _accumulate(acc, d, vals):
    """acc[d] += vals, summing repeated rows (vals: float32 holding exact integers; int32 wrap-around)."""
    depth, lanes = acc.shape
    counts = np.bincount(d, minlength=depth)
    if counts.max() <= 1:
        acc[d] += vals.astype(np.int32)
        return
    # one weighted bincount over (row, lane) pairs; float64 sums of int8 products are exact
    flat = (d[:, None] * lanes + np.arange(lanes)).reshape(-1)
    sums = np.bincount(flat, weights=vals.reshape(-1), minlength=depth * lanes).reshape(depth, lanes)
    rows = np.flatnonzero(counts)
    acc[rows] = (acc[rows].astype(np.int64) + sums[rows].astype(np.int64)).astype(np.int32)
