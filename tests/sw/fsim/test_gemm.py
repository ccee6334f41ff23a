"""The golden model's GEMM products (sw.fsim.gemm): the folded fast path against the per-micro-op semantics."""
import numpy as np
import pytest

from sw.fsim import FsimDevice
from sw.fsim.gemm import SET_BLAS_THREADS, gemm_fold, gemm_folded, one_blas_thread
from sw.isa import Opcode, expand_uops
from tests.sw.fsim.conftest import DRAM, finish, put_uops, run


def per_uop_gemm(acc, inp, wgt, d, s, w):
    """The plain semantics: one micro-op execution at a time, in order, int64 then wrapped to int32."""
    out = acc.astype(np.int64)
    for dd, ss, ww in zip(d.tolist(), s.tolist(), w.tolist()):
        out[dd] += (inp[ss].astype(np.int64) @ wgt[ww].astype(np.int64).T).reshape(-1)
    return ((out + 2**31) % 2**32 - 2**31).astype(np.int32)


def loop_kernel(shape, rng, cfg):
    """(fields, uops) of a GEMM instruction in one of the loop shapes the operators and tests use, with
    random sizes that fit the SRAMs of cfg."""
    f = dict(iter_out=1, iter_in=1, dst_factor_out=0, dst_factor_in=0, src_factor_out=0, src_factor_in=0,
             wgt_factor_out=0, wgt_factor_in=0)
    r = lambda lo, hi: int(rng.integers(lo, hi + 1))
    if shape == "dense":            # sw.ops.kernels._k_dense: loops k (outer), n (inner); uops j
        tk, tn, tm = r(1, 6), r(1, 5), r(1, 5)
        uops = [(j, 0, j * tk) for j in range(tm)]
        f.update(iter_out=tk, src_factor_out=1, wgt_factor_out=1, iter_in=tn, dst_factor_in=tm, src_factor_in=tk)
    elif shape == "rows_outside":   # sw.testing.fsim_speed: loops rows (outer), k (inner, dst factor 0); uops j
        rows, k, o = r(1, 6), r(1, 6), r(1, 5)
        uops = [(j, 0, j * k) for j in range(o)]
        f.update(iter_out=rows, dst_factor_out=o, src_factor_out=k, iter_in=k, src_factor_in=1, wgt_factor_in=1)
    elif shape == "conv":           # sw.ops.kernels._k_conv variant A: loops (c, oh); uops (ky, kx, ow, j)
        tm, th, tw, tc, kh, kw, s = r(1, 3), r(1, 3), r(1, 3), r(1, 3), r(1, 3), r(1, 3), r(1, 2)
        ih, iw = (th - 1) * s + kh, (tw - 1) * s + kw
        uops = [(j * th * tw + ow, ky * iw + ow * s + kx, j * tc * kh * kw + ky * kw + kx)
                for ky in range(kh) for kx in range(kw) for ow in range(tw) for j in range(tm)]
        f.update(iter_out=tc, src_factor_out=ih * iw, wgt_factor_out=kh * kw,
                 iter_in=th, dst_factor_in=tw, src_factor_in=s * iw)
    elif shape == "same_row":       # sw.testing.vta_tests.same_row: every step writes the same rows (distance 1, 2)
        rows = r(1, 3)
        uops = [(d, r(0, 3), r(0, 3)) for d in range(rows)]
        f.update(iter_out=r(1, 4), src_factor_out=r(0, 2), iter_in=r(1, 4), src_factor_in=1, wgt_factor_in=1)
    elif shape == "one_loop":       # every execution writes its own row (in any order, with gaps); the
        o = r(1, 4)                 # weights shared by the rows
        uops = [(j, 0, 2 * j) for j in rng.permutation(o).tolist()]
        f.update(iter_out=r(1, 8), dst_factor_out=o + r(0, 2), src_factor_out=r(1, 3))
    elif shape == "uop_reduction":  # no loops; the micro-ops repeat their rows in a shuffled order
        rows, k = r(1, 4), r(2, 4)
        seen = [0] * rows
        uops = []
        for d in rng.permutation(np.repeat(np.arange(rows), k)).tolist():
            uops.append((d, seen[d], 5 * d + seen[d]))        # the k-th term of a row: inp k, wgt 5d + k
            seen[d] += 1
    else:                           # anything: random factors, rows written unequally often
        uops = [(r(0, 6), r(0, 9), r(0, 9)) for _ in range(r(1, 6))]
        f.update({k: r(0, 3) for k in f if k.endswith("factor_out") or k.endswith("factor_in")})
        f.update(iter_out=r(1, 4), iter_in=r(1, 4))
    return f, uops


LOOP_SHAPES = ["dense", "rows_outside", "conv", "same_row", "one_loop", "uop_reduction", "random"]


@pytest.mark.parametrize("shape", LOOP_SHAPES)
def test_folded_gemm_matches_per_uop_reference(dev, rng, shape):
    """The folded products equal the per-micro-op semantics on random kernels of every loop shape,
    repeated destination rows included; the regular shapes do take the fast path."""
    cfg = dev.cfg
    folded = 0
    for _ in range(6):
        f, uops = loop_kernel(shape, rng, cfg)
        dev.inp[...] = rng.integers(-128, 128, size=dev.inp.shape, dtype=np.int8)
        dev.wgt[...] = rng.integers(-128, 128, size=dev.wgt.shape, dtype=np.int8)
        dev.acc[...] = rng.integers(-2**31, 2**31, size=dev.acc.shape, dtype=np.int64).astype(np.int32)
        d, s, w = expand_uops(np.array(uops), f, True)
        want = per_uop_gemm(dev.acc, dev.inp, dev.wgt, d, s, w)
        acc = dev.acc.copy()
        if gemm_folded(acc, dev.inp, dev.wgt, gemm_fold(d, s, w)):
            folded += 1
            np.testing.assert_array_equal(acc, want)
        else:
            np.testing.assert_array_equal(acc, dev.acc)        # a refusal changes nothing
        put_uops(dev, uops)
        f.update(opcode=Opcode.GEMM, uop_bgn=0, uop_end=len(uops))
        counters = run(dev, [f, finish()])                      # the device: fast path or the general one
        np.testing.assert_array_equal(dev.acc, want)
        assert counters["gemm_counter"] == d.size
    if shape != "random":
        assert folded == 6


@pytest.mark.parametrize("k_blocks", [1, 63, 64, 65, 129, 201])
def test_folded_gemm_exact_at_extremes(default_cfg, k_blocks):
    """-128 * -128 in every lane but one 1 * 1: a row sums k_blocks * (15 * 2^14 + 1), which for 129 and
    201 blocks is odd and above 2^24, so no single float32 dot product holds it (the chunks of at most
    1024 terms do); the sums wrap mod 2^32."""
    dev = FsimDevice(default_cfg, dram_bytes=DRAM)
    I = default_cfg.BLOCK_IN
    dev.inp[...] = -128
    dev.wgt[...] = -128
    dev.inp[:, :, 0] = 1
    dev.wgt[:, :, 0] = 1
    dev.acc[...] = 2**31 - 7
    rows = 3
    f = dict(iter_out=k_blocks, iter_in=rows, dst_factor_out=0, dst_factor_in=1, src_factor_out=1,
             src_factor_in=0, wgt_factor_out=1, wgt_factor_in=0)
    d, s, w = expand_uops(np.array([(0, 0, 0)]), f, True)
    want = per_uop_gemm(dev.acc, dev.inp, dev.wgt, d, s, w)
    terms = k_blocks * I
    exact = (2**31 - 7 + 2**14 * (terms - terms // I) + terms // I + 2**31) % 2**32 - 2**31
    assert (want[:rows] == exact).all()
    assert gemm_folded(dev.acc, dev.inp, dev.wgt, gemm_fold(d, s, w))
    np.testing.assert_array_equal(dev.acc, want)


def test_one_blas_thread_restores_the_callers_setting():
    """The pinned numpy's OpenBLAS is found, and the thread-local setting is put back after the products."""
    assert SET_BLAS_THREADS is not None
    before = SET_BLAS_THREADS(3)
    with one_blas_thread():
        assert SET_BLAS_THREADS(1) == 1
    assert SET_BLAS_THREADS(before) == 3
