"""The golden model's device on raw instruction streams, against plain-loop references written here."""
import numpy as np
import pytest

from sw.config import load_config
from sw.fsim import FsimDevice, alu_op
from sw.isa import AluOp, MemId, Opcode, isa_for
from sw.pipeline import DeadlockError, InsnError
from tests.sw.fsim.conftest import DRAM, INSN_ADDR, finish, load, put_uops, run, store


def test_load_with_strides_and_padding_every_type(dev, rng):
    cfg = dev.cfg
    for mem, sram in ((MemId.INP, dev.inp), (MemId.WGT, dev.wgt), (MemId.ACC, dev.acc)):
        eb = {MemId.INP: cfg.INP_ELEM_BYTES, MemId.WGT: cfg.WGT_ELEM_BYTES, MemId.ACC: cfg.ACC_ELEM_BYTES}[mem]
        dev.dram[:] = rng.integers(0, 256, DRAM, dtype=np.uint8)
        sram.view(np.uint8)[...] = 0xAA
        y, x, stride, pads = 3, 2, 5, (1, 2, 2, 1)
        base_elem = 0x1000 // eb + 1
        run(dev, [load(mem, 1, base_elem, y, x, stride, pads), finish()])
        pitch, rows = pads[2] + x + pads[3], pads[0] + y + pads[1]
        got = sram.view(np.uint8).reshape(sram.shape[0], -1)[1:1 + pitch * rows].reshape(rows, pitch, eb)
        want = np.zeros((rows, pitch, eb), np.uint8)
        for r in range(y):
            for c in range(x):
                a = (base_elem + r * stride + c) * eb
                want[pads[0] + r, pads[2] + c] = dev.dram[a:a + eb]
        np.testing.assert_array_equal(got, want)
        # rows outside the destination keep their old contents
        assert (sram.view(np.uint8).reshape(sram.shape[0], -1)[0] == 0xAA).all()
        assert (sram.view(np.uint8).reshape(sram.shape[0], -1)[1 + pitch * rows] == 0xAA).all()


def test_acc_8bit_sign_extends(dev, rng):
    cfg = dev.cfg
    lanes = cfg.BATCH * cfg.BLOCK_OUT
    vals = rng.integers(-128, 128, size=(4, lanes), dtype=np.int8)
    dev.dram[lanes * 8: lanes * 12] = vals.view(np.uint8).reshape(-1)
    counters = run(dev, [load(MemId.ACC_8BIT, 3, 8, 2, 2, 2, (0, 0, 1, 0)), finish()])
    np.testing.assert_array_equal(dev.acc[3:9], np.concatenate([np.zeros((1, lanes)), vals[:2],
                                                                np.zeros((1, lanes)), vals[2:]]).astype(np.int32))
    assert counters["acc_load_nbytes"] == 4 * cfg.ACC_ELEM_BYTES


def test_store_writes_only_its_rows(dev, rng):
    cfg = dev.cfg
    dev.acc[...] = rng.integers(-2**31, 2**31, size=dev.acc.shape, dtype=np.int64).astype(np.int32)
    before = dev.dram.copy()
    eb = cfg.OUT_ELEM_BYTES
    counters = run(dev, [store(5, 100, 3, 2, 4, push_prev=1),
                         dict(opcode=Opcode.LOAD, memory_type=MemId.UOP, pop_next=1), finish()])
    changed = np.flatnonzero(dev.dram != before)
    expected = set()
    for r in range(3):
        for c in range(2):
            a = (100 + r * 4 + c) * eb
            np.testing.assert_array_equal(dev.dram[a:a + eb].view(np.int8), dev.acc[5 + r * 2 + c].astype(np.int8))
            expected.update(range(a, a + eb))
    assert set(changed.tolist()) <= expected | set(range(INSN_ADDR, INSN_ADDR + 48))
    assert counters["out_store_nbytes"] == 6 * eb


def naive_gemm(dev, f, uops):
    acc = dev.acc.astype(np.int64).reshape(-1, dev.cfg.BATCH, dev.cfg.BLOCK_OUT)
    for i in range(f["iter_out"]):
        for j in range(f["iter_in"]):
            for (d0, s0, w0) in uops:
                d = d0 + i * f["dst_factor_out"] + j * f["dst_factor_in"]
                s = s0 + i * f["src_factor_out"] + j * f["src_factor_in"]
                w = w0 + i * f["wgt_factor_out"] + j * f["wgt_factor_in"]
                if f.get("reset"):
                    acc[d] = 0
                else:
                    acc[d] += dev.inp[s].astype(np.int64) @ dev.wgt[w].astype(np.int64).T
    return ((acc + 2**31) % 2**32 - 2**31).astype(np.int32).reshape(dev.acc.shape)


@pytest.mark.parametrize("shape", ["reuse_wgt", "reuse_inp", "no_reuse", "unequal_groups", "accumulate_same_row"])
def test_gemm_matches_loops(dev, rng, shape):
    cfg = dev.cfg
    dev.inp[...] = rng.integers(-128, 128, size=dev.inp.shape, dtype=np.int8)
    dev.wgt[...] = rng.integers(-128, 128, size=dev.wgt.shape, dtype=np.int8)
    dev.acc[...] = rng.integers(-2**31, 2**31, size=dev.acc.shape, dtype=np.int64).astype(np.int32)
    f = dict(opcode=Opcode.GEMM, uop_bgn=0, iter_out=1, iter_in=1, dst_factor_out=0, dst_factor_in=0,
             src_factor_out=0, src_factor_in=0, wgt_factor_out=0, wgt_factor_in=0)
    if shape == "reuse_wgt":        # rows loop outside, output blocks inside: weights shared by rows
        uops = [(o, 0, o) for o in range(4)]
        f.update(iter_out=20, dst_factor_out=4, src_factor_out=1)
    elif shape == "reuse_inp":
        uops = [(o, 0, o) for o in range(16)]
        f.update(iter_out=3, dst_factor_out=16, wgt_factor_out=16)
    elif shape == "no_reuse":
        uops = [(int(d), int(s), int(w)) for d, s, w in zip(range(30), rng.permutation(60)[:30],
                                                            rng.permutation(cfg.WGT_DEPTH)[:30])]
    elif shape == "unequal_groups":
        uops = [(d, int(rng.integers(0, 3)), int(rng.integers(0, 2))) for d in range(40)]
        f.update(iter_out=2, dst_factor_out=40)
    else:                           # reduction over k inside one instruction (dst repeats, 3 apart)
        uops = [(o, 0, o * 8) for o in range(3)]
        f.update(iter_out=5, dst_factor_out=3, src_factor_out=8, iter_in=8, src_factor_in=1, wgt_factor_in=1)
    put_uops(dev, uops)
    f["uop_end"] = len(uops)
    want = naive_gemm(dev, f, uops)
    counters = run(dev, [f, finish()])
    np.testing.assert_array_equal(dev.acc, want)
    assert counters["gemm_counter"] == f["iter_out"] * f["iter_in"] * len(uops)
    # reset zeroes exactly the rows the loops reach and is not counted
    f["reset"] = 1
    want = naive_gemm(dev, f, uops)
    counters = run(dev, [f, finish()])
    np.testing.assert_array_equal(dev.acc, want)
    assert counters["gemm_counter"] == 0


def test_gemm_wraps_modulo_2_32(default_cfg):
    dev = FsimDevice(default_cfg, dram_bytes=DRAM)
    dev.inp[0] = -128
    dev.wgt[0] = -128
    dev.acc[0] = 2**31 - 1000
    put_uops(dev, [(0, 0, 0)])
    run(dev, [dict(opcode=Opcode.GEMM, uop_end=1, iter_out=1, iter_in=1), finish()])
    assert dev.acc[0, 0] == np.int32(np.int64(2**31 - 1000 + 16 * 128 * 128) - 2**32)


def test_alu_in_order_when_rows_chain(default_cfg, rng):
    """A micro-op reading a row written earlier in the same instruction sees the new value."""
    dev = FsimDevice(default_cfg, dram_bytes=DRAM)
    dev.acc[...] = rng.integers(-100, 100, size=dev.acc.shape, dtype=np.int32)
    start = dev.acc.copy()
    uops = [(1, 0, 0), (2, 1, 0), (3, 2, 0), (0, 3, 0)]  # acc[i] += acc[i-1], in a ring
    put_uops(dev, uops)
    run(dev, [dict(opcode=Opcode.ALU, uop_end=4, iter_out=1, iter_in=1, alu_opcode=AluOp.ADD), finish()])
    want = start.copy()
    for d, s, _ in uops:
        want[d] = want[d] + want[s]
    np.testing.assert_array_equal(dev.acc, want)


def test_alu_tensor_and_immediate_loops(dev, rng):
    dev.acc[...] = rng.integers(-2**20, 2**20, size=dev.acc.shape, dtype=np.int32)
    start = dev.acc.copy()
    put_uops(dev, [(0, 40, 0), (1, 41, 0)])
    f = dict(opcode=Opcode.ALU, uop_end=2, iter_out=3, iter_in=4, dst_factor_out=8, dst_factor_in=2,
             src_factor_out=8, src_factor_in=2, alu_opcode=AluOp.SHR, use_imm=0)
    counters = run(dev, [f, finish()])
    want = start.copy()
    for i in range(3):
        for j in range(4):
            for d0, s0 in ((0, 40), (1, 41)):
                d, s = d0 + 8 * i + 2 * j, s0 + 8 * i + 2 * j
                want[d] = alu_op(AluOp.SHR, want[d], want[s])
    np.testing.assert_array_equal(dev.acc, want)
    assert counters["alu_counter"] == 24


def test_tokens_order_the_cores(default_cfg, rng):
    """A store waits for compute through g2s even though the store queue could run first."""
    dev = FsimDevice(default_cfg, dram_bytes=DRAM)
    dev.acc[...] = 0
    vals = rng.integers(-100, 100, size=(1, 16), dtype=np.int32)
    dev.dram[64:128] = vals.view(np.uint8).reshape(-1)
    stream = [load(MemId.ACC, 0, 1, 1, 1, 1, push_next=1), store(0, 0x200, 1, 1, 1, pop_prev=1, push_prev=1),
              dict(opcode=Opcode.LOAD, memory_type=MemId.UOP, pop_next=1), finish()]
    run(dev, stream)
    np.testing.assert_array_equal(dev.dram[0x2000:0x2010].view(np.int8), vals[0].astype(np.int8))


def test_deadlock_names_every_queue(default_cfg):
    dev = FsimDevice(default_cfg, dram_bytes=DRAM)
    stream = [load(MemId.INP, 0, 0, 0, 0, 0, pop_next=1),           # load waits on g2l forever
              dict(opcode=Opcode.LOAD, memory_type=MemId.UOP, pop_prev=1), finish()]
    with pytest.raises(DeadlockError) as err:
        run(dev, stream)
    msg = str(err.value)
    assert "load    : waits for a token on g2l at instruction #0" in msg
    assert "compute : waits for a token on l2g at instruction #1" in msg
    assert "store   : idle" in msg
    assert "l2g=0, g2l=0, g2s=0, s2g=0" in msg
    assert err.value.state["heads"] == {"load": 0, "compute": 1, "store": None}


def test_missing_finish_and_leftovers(default_cfg):
    dev = FsimDevice(default_cfg, dram_bytes=DRAM)
    with pytest.raises(DeadlockError, match="without a FINISH"):
        run(dev, [load(MemId.INP, 0, 0, 0, 0, 0)])
    with pytest.raises(DeadlockError, match="left over"):
        run(dev, [load(MemId.INP, 0, 0, 0, 0, 0, push_next=1), finish()])


@pytest.mark.parametrize("bad, words", [
    (load(MemId.INP, 0, 0, 0, 0, 0, pop_prev=1), "pop_prev is reserved on load-module"),
    (load(MemId.WGT, 0, 0, 0, 0, 0, push_prev=1), "push_prev is reserved on load-module"),
    (dict(opcode=Opcode.STORE, memory_type=MemId.OUT, push_next=1), "push_next is reserved on store-module"),
    (load(6, 0, 0, 1, 1, 1), "memory_type = 6"),
    (load(MemId.OUT, 0, 0, 1, 1, 1), "memory_type = 4 is not valid for LOAD"),
    (store(0, 0, 1, 1, 1) | {"memory_type": MemId.ACC}, "memory_type = 3 is not valid for STORE"),
    (load(MemId.INP, 2040, 0, 1, 9, 9), r"INP SRAM range \[2040, 2049\)"),
    (load(MemId.UOP, 0, 0, 2, 1, 1), "y_size = 1"),
    (load(MemId.WGT, 0, 0, 1, 1, 1, (0, 0, 0, 0)) | {"dram_base": 5000}, "outside device memory"),
    (store(0, 0, 1, 1, 1) | {"x_pad_0": 1}, "padding is not allowed"),
    (dict(opcode=Opcode.ALU, alu_opcode=6, uop_end=1, iter_out=1, iter_in=1), "alu_opcode = 6"),
    (dict(opcode=Opcode.ALU, alu_opcode=5, use_imm=1, imm=2047, uop_end=1, iter_out=1, iter_in=1), "POST's parameter rows"),
    (dict(opcode=Opcode.GEMM, uop_bgn=3, uop_end=2, iter_out=1, iter_in=1), "uop range"),
])
def test_bad_instructions_change_nothing(default_cfg, bad, words):
    dev = FsimDevice(default_cfg, dram_bytes=DRAM)
    isa = isa_for(default_cfg)
    stream = [store(0, 0x100, 1, 1, 1), bad, finish()]
    raw = isa.words_to_array(isa.encode(**f) for f in stream)
    dev.dram[INSN_ADDR:INSN_ADDR + raw.size] = raw
    before = dev.dram.copy()
    with pytest.raises(InsnError, match=words):
        dev.run(INSN_ADDR, len(stream))
    np.testing.assert_array_equal(dev.dram, before)


def test_unknown_opcode_in_stream(default_cfg):
    dev = FsimDevice(default_cfg, dram_bytes=DRAM)
    dev.dram[INSN_ADDR] = 6
    with pytest.raises(InsnError, match="opcode = 6"):
        dev.run(INSN_ADDR, 1)


def test_mul_rejected_when_not_built():
    dev = FsimDevice(load_config("small"), dram_bytes=DRAM)
    with pytest.raises(InsnError, match="MUL is not built"):
        run(dev, [dict(opcode=Opcode.ALU, alu_opcode=AluOp.MUL, uop_end=1, iter_out=1, iter_in=1), finish()])


def test_uop_index_out_of_range_is_an_error(default_cfg):
    dev = FsimDevice(default_cfg, dram_bytes=DRAM)
    put_uops(dev, [(2047, 0, 0)])
    with pytest.raises(InsnError, match=r"dst index reaches 2048 over the loops; the acc SRAM allows \[0, 2047\]"):
        run(dev, [dict(opcode=Opcode.GEMM, uop_end=1, iter_out=2, iter_in=1, dst_factor_out=1), finish()])


def test_bad_run_arguments(default_cfg):
    dev = FsimDevice(default_cfg, dram_bytes=DRAM)
    with pytest.raises(Exception, match="insn_count = 0"):
        dev.run(INSN_ADDR, 0)
    with pytest.raises(Exception, match="aligned and inside"):
        dev.run(DRAM - 16, 2)


def test_a_stream_the_runtime_checked_is_executed_without_decoding_it_again(monkeypatch):
    from sw import runtime
    from sw.testing import vta_tests as programs
    dev = FsimDevice("small")
    decoded = []
    original = dev.isa.decode_stream
    monkeypatch.setattr(dev.isa, "decode_stream", lambda raw: decoded.append(len(raw)) or original(raw))
    monkeypatch.setattr("sw.fsim.device.schedule", None)        # nor scheduled: it runs in the order of the dry run
    with runtime.use_target(dev):
        r = programs.vector_add("python")
    assert decoded == [] and np.array_equal(r["result"], r["expected"])


def test_an_announced_stream_whose_bytes_differ_is_decoded_and_checked():
    dev = FsimDevice("small")
    isa = dev.isa
    finish = isa.encode(opcode=Opcode.FINISH)
    dev.dram[:16] = isa.words_to_array([6])                  # opcode 6: no such instruction
    dev.checked_stream(0, isa.words_to_array([finish]), [isa.decode(finish)])
    with pytest.raises(InsnError, match="opcode = 6 is not an instruction"):
        dev.run(0, 1)
    dev.dram[:16] = isa.words_to_array([finish])
    dev.checked_stream(0, isa.words_to_array([finish]), [isa.decode(finish)])
    assert dev.run(0, 1)["gemm_counter"] == 0
