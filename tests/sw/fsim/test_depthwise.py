"""The golden model's DEPTHWISE (docs/isa.md "DEPTHWISE") against a plain loop over the micro-op executions."""
import numpy as np
import pytest

from sw.config import load_config
from sw.fsim import FsimDevice
from sw.isa import Opcode
from sw.pipeline import InsnError
from tests.sw.fsim.conftest import DRAM, finish, put_uops, run


def naive_depthwise(dev, f, uops):
    """acc after ``f``, execution by execution: the window of the inp rows read so far (slot 0 this execution's, zero
    before the first), each lane's channel dotted with its weight row, the acc row overwritten; reset writes 0."""
    cfg = dev.cfg
    acc = dev.acc.astype(np.int64).reshape(cfg.ACC_DEPTH, cfg.BATCH, cfg.BLOCK_OUT)
    window = [np.zeros((cfg.BATCH, cfg.BLOCK_IN), np.int64)] * cfg.BLOCK_IN
    for i in range(f["iter_out"]):
        for j in range(f["iter_in"]):
            for d0, s0, w0 in uops:
                d = d0 + i * f["dst_factor_out"] + j * f["dst_factor_in"]
                s = s0 + i * f["src_factor_out"] + j * f["src_factor_in"]
                w = w0 + i * f["wgt_factor_out"] + j * f["wgt_factor_in"]
                window = [dev.inp[s].astype(np.int64)] + window[:-1]
                if f.get("reset"):
                    acc[d] = 0
                    continue
                for b in range(cfg.BATCH):
                    for lane in range(cfg.BLOCK_OUT):
                        acc[d, b, lane] = sum(int(window[k][b, lane]) * int(dev.wgt[w][lane, k])
                                              for k in range(cfg.BLOCK_IN))
    return acc.astype(np.int32).reshape(dev.acc.shape)


def fresh(config, rng, **changes):
    cfg = load_config(config).with_changes(**changes) if changes else load_config(config)
    dev = FsimDevice(cfg, dram_bytes=DRAM)
    dev.inp[...] = rng.integers(-128, 128, size=dev.inp.shape, dtype=np.int8)
    dev.wgt[...] = rng.integers(-128, 128, size=dev.wgt.shape, dtype=np.int8)
    dev.acc[...] = rng.integers(-2**31, 2**31, size=dev.acc.shape, dtype=np.int64).astype(np.int32)
    return dev


def dw(**f):
    return dict(dict(opcode=Opcode.DEPTHWISE, uop_bgn=0, iter_out=1, iter_in=1, dst_factor_out=0, dst_factor_in=0,
                     src_factor_out=0, src_factor_in=0, wgt_factor_out=0, wgt_factor_in=0, reset=0), **f)


@pytest.mark.parametrize("config", ["default", "batch2", "small+dw"])
def test_depthwise_matches_the_loop_over_executions(config, rng):
    """Windows across inner and outer iterations, rows written again at distance 1 and later (the last execution's
    value stays), rows the instruction does not reach untouched; then a second DEPTHWISE whose window starts empty, a
    reset, and a GEMM accumulating onto a DEPTHWISE's rows. BATCH = 2 on batch2; BLOCK_IN = 8 on small with DEPTHWISE."""
    dev = fresh("small", rng, DEPTHWISE=1) if config == "small+dw" else fresh(config, rng)
    uops = [(0, 3, 1), (1, 4, 2), (1, 5, 0), (0, 9, 3)]
    put_uops(dev, uops)
    f = dw(uop_end=4, iter_out=3, iter_in=5, dst_factor_out=7, dst_factor_in=2, src_factor_out=6, src_factor_in=1,
           wgt_factor_out=2, wgt_factor_in=1)
    want = naive_depthwise(dev, f, uops)
    counters = run(dev, [f, finish()])
    np.testing.assert_array_equal(dev.acc, want)
    assert counters["gemm_counter"] == 3 * 5 * 4
    g = dw(uop_bgn=1, uop_end=3, iter_in=3, dst_factor_in=1)              # the window starts empty again
    want = naive_depthwise(dev, g, uops[1:3])
    run(dev, [g, finish()])
    np.testing.assert_array_equal(dev.acc, want)
    r = dw(uop_end=2, iter_out=2, dst_factor_out=5, reset=1)
    want = naive_depthwise(dev, r, uops[:2])
    assert run(dev, [r, finish()])["gemm_counter"] == 0                   # a reset is not counted
    np.testing.assert_array_equal(dev.acc, want)
    before = dev.acc.astype(np.int64)
    put_uops(dev, [(1, 2, 3)], at=8)
    run(dev, [dict(dw(uop_bgn=8, uop_end=9), opcode=Opcode.GEMM), finish()])
    cfg = dev.cfg
    prod = dev.inp[2].astype(np.int64) @ dev.wgt[3].astype(np.int64).T
    want = (before[1] + prod.reshape(-1) + 2**31) % 2**32 - 2**31
    np.testing.assert_array_equal(dev.acc[1], want.astype(np.int32))
    assert dev.acc.shape[1] == cfg.BATCH * cfg.BLOCK_OUT


def test_extremes_and_a_window_across_the_model_s_chunks(rng):
    """-128 x -128 in all 16 slots (2^18, exact: the sum of BLOCK_IN int8 products never wraps), and 4200 executions
    (the golden model computes windows 4096 executions at a time): every window, the ones across the chunk boundary
    included, is the plain loop's."""
    dev = fresh("default", rng)
    dev.inp[0], dev.wgt[0] = -128, -128
    put_uops(dev, [(5, 0, 0)])
    run(dev, [dw(uop_end=1, iter_in=20, dst_factor_in=1), finish()])
    np.testing.assert_array_equal(dev.acc[5:25, 0], [16384 * min(e + 1, 16) for e in range(20)])
    uops = [(e % 300, (7 * e) % 200, e % 40) for e in range(4200)]
    put_uops(dev, uops)
    f = dw(uop_end=4200)
    want = naive_depthwise(dev, dict(f, uop_end=4200), uops)
    run(dev, [f, finish()])
    np.testing.assert_array_equal(dev.acc, want)


def test_depthwise_refused_where_not_built():
    dev = FsimDevice(load_config("small"), dram_bytes=DRAM)
    put_uops(dev, [(0, 0, 0)])
    before = dev.acc.copy()
    with pytest.raises(InsnError, match=r"opcode DEPTHWISE is not built in config small \(DEPTHWISE = 0\)"):
        run(dev, [dw(uop_end=1), finish()])
    np.testing.assert_array_equal(dev.acc, before)
