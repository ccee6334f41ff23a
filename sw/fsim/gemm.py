"""The golden model's GEMM: one instruction's int8 products summed into the int32 accumulators, exactly.

A GEMM instruction adds, to each acc row it writes, the sum of the products of every micro-op
execution that writes that row. Sums of int32 lanes wrap modulo 2^32, which is a ring: the result
does not depend on the order of the additions, so executions that write the same row (at any
distance, with no hazard rule) may be summed in any order and added to the row once.

The fast path (:func:`gemm_folded`) folds that per-row sum into BLAS. When every written row gets
the same number K of executions, row r needs sum_k inp[S[r, k]] . wgt[W[r, k]]^T: the product of
the (BATCH, K*BLOCK_IN) concatenation of its inp rows with the (BLOCK_OUT, K*BLOCK_IN) one of its
wgt rows. Rows that share their inp list S[r] (the same output pixel) and rows that share W[r] (the
same output channel block) make one matrix product of all the distinct inp lists by all the distinct
wgt lists, computed once. Irregular instructions (unequal counts, too few shared lists) take the
general path (:func:`gemm_products` and :func:`accumulate`). :func:`gemm` chooses.

Exactness of float32: an int8 x int8 product has |a*b| <= 128*128 = 2^14. A dot product of at most
:data:`F32_TERMS` = 1024 such terms has every partial sum, in whatever order or blocking BLAS adds them
and with or without fused multiply-add, an integer of magnitude <= 1024 * 2^14 = 2^24; float32 holds
every integer of magnitude <= 2^24 exactly, so each rounding step is exact and the float32 result is
the exact integer. Longer reductions are split into chunks of <= 1024 terms, each converted to int32
and added with wrap-around.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

__all__ = ["gemm", "gemm_fold", "gemm_folded", "gemm_products", "accumulate", "one_blas_thread",
           "SET_BLAS_THREADS", "F32_TERMS"]

# gemm_fold's plan: dst rows, distinct inp lists and their inverse, distinct wgt lists and theirs, in order, run
Fold = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, bool, bool]

F32_TERMS = 1024
"""The longest dot product one float32 matrix product computes (exact: see the module docstring)."""


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


SET_BLAS_THREADS = _blas_thread_setter()


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the enclosed BLAS calls on the calling thread only (the thread-local setting is restored on exit).
    The golden model's products are small; OpenBLAS would split the larger of them over all cores, and each
    call would then wait for the busiest core."""
    if SET_BLAS_THREADS is None:
        yield
        return
    previous = SET_BLAS_THREADS(1)
    try:
        yield
    finally:
        SET_BLAS_THREADS(previous)


def gemm(acc: np.ndarray, inp: np.ndarray, wgt: np.ndarray, d: np.ndarray, s: np.ndarray, w: np.ndarray,
         fold: Fold | None) -> None:
    """acc[d[i]] += inp[s[i]] . wgt[w[i]]^T for every execution i (flattened into acc's lanes, int32
    wrap-around), on the calling thread: the folded product where ``fold`` (:func:`gemm_fold` of the
    executions) is not None, else one product per execution summed per row."""
    with one_blas_thread():
        if not gemm_folded(acc, inp, wgt, fold):
            prod, order = gemm_products(inp, wgt, s, w)
            accumulate(acc, d[order], prod)


def gemm_fold(d: np.ndarray, s: np.ndarray, w: np.ndarray) -> Fold | None:
    """How :func:`gemm_folded` computes a GEMM of these executions, which depends on the indices only: (dst
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


def gemm_folded(acc: np.ndarray, inp: np.ndarray, wgt: np.ndarray, fold: Fold | None) -> bool:
    """acc[d] += inp[s] . wgt[w]^T over all executions, as one blocked product (``fold``: :func:`gemm_fold`
    of the executions); False (nothing done) when they have no regular structure to fold."""
    if fold is None:
        return False
    dst, us, inv_s, uw, inv_w, in_order, run = fold
    B, I = inp.shape[1], inp.shape[2]
    O = wgt.shape[1]
    R, K = dst.size, us.shape[1]
    nu, nw = us.shape[0], uw.shape[0]
    chunk = max(1, F32_TERMS // I)
    total: np.ndarray | None = None
    for k0 in range(0, K, chunk):
        x = inp[us[:, k0:k0 + chunk]].transpose(0, 2, 1, 3).astype(np.float32, order="C")
        y = wgt[uw[:, k0:k0 + chunk]].transpose(0, 2, 1, 3).astype(np.float32, order="C")
        p = (x.reshape(nu * B, -1) @ y.reshape(nw * O, -1).T).reshape(nu, B, nw, O)   # exact: <= 1024 terms
        p = (p.transpose(0, 2, 1, 3) if in_order else p[inv_s, :, inv_w, :]).astype(np.int32)   # (R, B, O)
        total = p if total is None else total + p         # int32 wrap-around
    assert total is not None          # K >= 1: one chunk at least
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


def gemm_products(inp: np.ndarray, wgt: np.ndarray, s: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


def accumulate(acc: np.ndarray, d: np.ndarray, vals: np.ndarray) -> None:
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
