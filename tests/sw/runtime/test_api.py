"""Runtime semantics (docs/architecture.md §5) and one test per bad input."""
import contextlib
import io
import threading
import time

import numpy as np
import pytest
import tvm_ffi

from sw import runtime as rt
from sw.fsim import FsimDevice
from sw.isa import POST_PARAM_ROWS, AluOp, MemId, Opcode
from sw.pipeline import DeadlockError, InsnError, VTAError
from sw.runtime.memory import PAGE_BYTES, BufferError
from sw.testing import vta_tests as programs
from tests.conftest import make_queue, run_threads


def kinds(q):
    return [(i.opcode, i.f.get("memory_type"), {k: v for k, v in i.f.items() if k.startswith(("pop", "push")) and v})
            for i in q.insns]


def alu_kernel(n=4, opcode=AluOp.ADD, imm=1, dst=0):
    def kernel():
        rt.uop_loop_begin(n, 1, 1, 0)
        rt.uop_push(1, 0, dst, 0, 0, int(opcode), 1, imm)
        rt.uop_loop_end()
    return kernel


def test_push_merges_into_the_last_instruction_of_its_stage(queue):
    buf = rt.buffer_alloc(4096)
    rt.load_2d(queue.handle, buf, 0, 1, 1, 1, 0, 0, 0, 0, 0, int(MemId.INP))
    rt.dep_push(queue.handle, 1, 2)
    assert kinds(queue) == [(Opcode.LOAD, MemId.INP, {"push_next": 1})]
    rt.dep_push(queue.handle, 1, 2)              # already set: a load NOP carries the second push
    assert kinds(queue)[-1] == (Opcode.LOAD, MemId.INP, {"push_next": 1}) and len(queue.insns) == 2
    rt.dep_pop(queue.handle, 1, 2)
    rt.dep_pop(queue.handle, 1, 2)               # a second pending pop commits the first as a compute NOP
    assert kinds(queue)[-1] == (Opcode.LOAD, MemId.UOP, {"pop_prev": 1})
    rt.load_2d(queue.handle, buf, 0, 1, 1, 1, 0, 0, 0, 0, 0, int(MemId.ACC))   # the pending pop folds in
    assert kinds(queue)[-1] == (Opcode.LOAD, MemId.ACC, {"pop_prev": 1})
    rt.dep_push(queue.handle, 3, 2)              # nothing of the store stage yet: a store NOP
    assert kinds(queue)[-1] == (Opcode.STORE, MemId.UOP, {"push_prev": 1})
    rt.dep_pop(queue.handle, 3, 2)
    rt.synchronize(queue.handle, 1000)


def test_synchronize_epilogue_and_dump(queue):
    rt.set_debug_mode(queue.handle, rt.DEBUG_DUMP_INSN)
    queue.out = io.StringIO()
    counters = rt.synchronize(queue.handle, 1000)
    text = queue.out.getvalue()
    lines = text.splitlines()[1:]
    assert len(lines) == 4
    assert "STORE  UOP      [--P-] NOP" in lines[0] and "s2g=1" in lines[0]
    assert "LOAD   INP      [---N] NOP" in lines[1] and "l2g=1" in lines[1]
    assert "LOAD   UOP      [pn--] NOP" in lines[2] and "l2g=0 g2l=0 g2s=0 s2g=0" in lines[2]
    assert "FINISH" in lines[3]
    assert counters["gemm_counter"] == 0 and queue.insns == []


def test_kernel_recorded_once_and_cached_in_uop_sram(queue):
    calls = []

    def kernel():
        calls.append(1)
        rt.uop_push(0, 1, 0, 0, 0, 0, 0, 0)
    for _ in range(3):
        rt.push_gemm_op(queue.handle, kernel, 7)
    rt.push_gemm_op(queue.handle, kernel, 8)
    assert len(calls) == 2
    uop_loads = [i for i in queue.insns if i.opcode == Opcode.LOAD and i.f["memory_type"] == MemId.UOP]
    assert [(i.f["sram_base"], i.f["x_size"]) for i in uop_loads] == [(0, 1), (1, 1)]
    rt.synchronize(queue.handle, 1000)
    # after a run the uop SRAM is not assumed to survive: the next push loads again, from the same DRAM words
    first_dram = uop_loads[0].f["dram_base"]
    rt.push_gemm_op(queue.handle, kernel, 7)
    assert len(calls) == 2
    assert queue.insns[0].f["dram_base"] == first_dram
    rt.synchronize(queue.handle, 1000)


def test_uop_sram_evicts_everything_when_full():
    q = make_queue("small")                    # 2048 micro-ops
    prev = rt.set_current(q)

    def kernel(n):
        return lambda: [rt.uop_push(0, 1, i % 500, 0, 0, 0, 0, 0) for i in range(n)]
    big, small, tiny = kernel(1500), kernel(600), kernel(10)
    try:
        for k in (big, small, big, tiny, small):
            rt.push_gemm_op(q.handle, k, 0)
        loads = [(i.f["sram_base"], i.f["x_size"]) for i in q.insns
                 if i.opcode == Opcode.LOAD and i.f["memory_type"] == MemId.UOP and i.f["x_size"]]
        # small does not fit after big: evict all and start at 0; so does big after small; tiny fits after big
        assert loads == [(0, 1500), (0, 600), (0, 1500), (1500, 10), (0, 600)]
        gemms = [(i.f["uop_bgn"], i.f["uop_end"]) for i in q.insns if i.opcode == Opcode.GEMM]
        assert gemms == [(0, 1500), (0, 600), (0, 1500), (1500, 1510), (0, 600)]
        rt.synchronize(q.handle, 1000)
    finally:
        rt.set_current(prev)


def test_loop_placement_gemm_outer_alu_inner(queue):
    def gemm_one_loop():
        rt.uop_loop_begin(5, 1, 2, 3)
        rt.uop_push(0, 0, 0, 0, 0, 0, 0, 0)
        rt.uop_loop_end()
    rt.push_gemm_op(queue.handle, gemm_one_loop, 0)
    rt.push_alu_op(queue.handle, alu_kernel(6), 0)
    g, a = [i.f for i in queue.insns if i.opcode in (Opcode.GEMM, Opcode.ALU)]
    assert (g["iter_out"], g["iter_in"], g["dst_factor_out"], g["src_factor_out"], g["wgt_factor_out"]) == (5, 1, 1, 2, 3)
    assert (a["iter_out"], a["iter_in"], a["dst_factor_in"], a["src_factor_in"]) == (1, 6, 1, 1)
    assert (a["alu_opcode"], a["use_imm"], a["imm"]) == (AluOp.ADD, 1, 1)
    rt.synchronize(queue.handle, 1000)


def test_instruction_queue_flushes_itself():
    q = make_queue("default", max_insns=16)
    prev = rt.set_current(q)
    try:
        x = np.arange(64 * 16, dtype=np.int32).reshape(64, 16)
        src = rt.buffer_alloc(x.nbytes)
        np.from_dlpack(rt.buffer_cpu_ptr(q.handle, src))[:] = x.view(np.uint8).reshape(-1)
        dst = rt.buffer_alloc(64 * 16)
        for i in range(64):   # 64 load/ALU/store rounds do not fit in 16 instructions
            rt.load_2d(q.handle, src, i, 1, 1, 1, 0, 0, 0, 0, i, int(MemId.ACC))
            rt.push_alu_op(q.handle, alu_kernel(1, AluOp.ADD, 1, dst=i), i)
            rt.dep_push(q.handle, 2, 3)
            rt.dep_pop(q.handle, 2, 3)
            rt.store_2d(q.handle, i, int(MemId.OUT), dst, i, 1, 1, 1)
        assert q.runs > 1
        rt.synchronize(q.handle, 1000)
        out = np.from_dlpack(rt.buffer_cpu_ptr(q.handle, dst))[:64 * 16].view(np.int8).reshape(64, 16)
        np.testing.assert_array_equal(out, (x + 1).astype(np.int8))
    finally:
        rt.set_current(prev)


def test_dump_uop_flag(queue):
    queue.out = io.StringIO()
    rt.set_debug_mode(queue.handle, rt.DEBUG_DUMP_UOP)
    rt.push_alu_op(queue.handle, alu_kernel(3, AluOp.SHR, 8), 0)
    text = queue.out.getvalue()
    assert "kernel ALU SHR imm=8 loops=(extent=3, dst=1, src=1, wgt=0)" in text
    assert "uop    0: acc[0] op= acc[0]" in text
    rt.synchronize(queue.handle, 1000)


def test_buffer_views_and_barriers(queue):
    h = rt.buffer_alloc(100)
    v = rt.buffer_cpu_ptr(queue.handle, h)
    assert v.dtype == np.uint8 and v.shape == (100,)
    v[:] = 7
    t = tvm_ffi.get_global_func("buffer_cpu_ptr")(queue.handle, h)
    assert isinstance(t, tvm_ffi.Tensor) and np.from_dlpack(t)[99] == 7
    rt.write_barrier(queue.handle, h, 8, 0, 100)
    rt.read_barrier(queue.handle, h, 32, 0, 25)
    with pytest.raises(BufferError, match="exceeds the buffer"):
        rt.read_barrier(queue.handle, h, 32, 0, 26)
    # a tensor viewing device memory works wherever a handle does
    rt.load_2d(queue.handle, tvm_ffi.from_dlpack(v[64:]), 0, 1, 1, 1, 0, 0, 0, 0, 0, int(MemId.INP))
    assert queue.insns[-1].f["dram_base"] * 16 == queue.memory.get(h).phys + 64
    rt.synchronize(queue.handle, 1000)


def test_ffi_load_2d_from_the_issue(queue):
    h = rt.buffer_alloc(4096)
    view = rt.buffer_cpu_ptr(queue.handle, h)
    cmd = tvm_ffi.get_global_func("command_handle")()
    tensor = tvm_ffi.from_dlpack(view)
    tvm_ffi.get_global_func("load_2d")(cmd, tensor, 0, 4, 4, 4, 0, 0, 0, 0, 0, 2)
    assert queue.insns[-1].f["x_size"] == 4 and queue.insns[-1].f["memory_type"] == MemId.INP
    assert tvm_ffi.get_global_func("vta.synchronize")(cmd, 1000)["inp_load_nbytes"] == 16 * 16


# ---------------------------------------------------------------------- bad inputs
def unchanged(q, call, exc, match):
    before = q.dram.copy()
    with pytest.raises(exc, match=match):
        call()
    np.testing.assert_array_equal(q.dram, before)


@pytest.fixture
def bufs(queue):
    a = rt.buffer_alloc(4096)
    np.from_dlpack(rt.buffer_cpu_ptr(queue.handle, a))[:] = 5
    return a, rt.buffer_alloc(4096)


def test_unknown_memory_type(queue, bufs):
    a, b = bufs
    unchanged(queue, lambda: rt.load_2d(queue.handle, a, 0, 1, 1, 1, 0, 0, 0, 0, 0, 7), InsnError,
              r"dst_memory_type = 7; allowed: 2 INP, 1 WGT, 3 ACC, 5 ACC_8BIT")
    unchanged(queue, lambda: rt.store_2d(queue.handle, 0, int(MemId.ACC), b, 0, 1, 1, 1), InsnError,
              "src_memory_type = 3; allowed: 4 OUT")


def test_unknown_opcode(queue):
    bad = lambda: rt.push_alu_op(queue.handle, lambda: rt.uop_push(1, 0, 0, 0, 0, 6, 1, 0), 0)
    unchanged(queue, bad, InsnError,
              r"alu_opcode = 6 is not an ALU operation; allowed: 0 MIN, 1 MAX, 2 ADD, 3 SHR, 4 MUL, 5 POST")
    bad = lambda: rt.push_alu_op(queue.handle, lambda: rt.uop_push(1, 0, 0, 0, 0, 9, 1, 0), 0)
    unchanged(queue, bad, InsnError, r"uop_push: opcode = 9; allowed range \[0, 7\]")
    unchanged(queue, lambda: rt.push_gemm_op(queue.handle, lambda: rt.uop_push(2, 0, 0, 0, 0, 0, 0, 0), 0),
              VTAError, "mode = 2")


def test_sram_index_or_size_beyond_buffer(queue, bufs):
    a, _ = bufs
    unchanged(queue, lambda: rt.load_2d(queue.handle, a, 0, 8, 1, 8, 0, 0, 0, 0, 2044, int(MemId.INP)), InsnError,
              r"INP SRAM range \[2044, 2052\) exceeds the buffer; allowed range \[0, 2048\]")
    unchanged(queue, lambda: rt.load_2d(queue.handle, a, 0, 1, 1, 1, 0, 0, 0, 0, 70000, int(MemId.INP)), InsnError,
              r"load_2d: dst_sram_index = 70000; allowed range \[0, 2047\]")
    unchanged(queue, lambda: rt.load_2d(queue.handle, a, 0, 1, 1, 1, 16, 0, 0, 0, 0, int(MemId.ACC)), InsnError,
              r"load_2d: x_pad_before = 16; allowed range \[0, 15\]")
    unchanged(queue, lambda: rt.push_gemm_op(queue.handle, lambda: rt.uop_push(0, 0, 2048, 0, 0, 0, 0, 0), 0),
              InsnError, r"uop_push: dst_index = 2048; allowed range \[0, 2047\]")
    assert queue.insns == []


def test_uop_index_beyond_buffer_over_loops(queue):
    def kernel():
        rt.uop_loop_begin(300, 0, 0, 4)
        rt.uop_push(0, 0, 0, 0, 0, 0, 0, 0)
        rt.uop_loop_end()
    unchanged(queue, lambda: rt.push_gemm_op(queue.handle, kernel, 0), InsnError,
              r"wgt index reaches 1196 over the loops; the wgt SRAM allows \[0, 1023\]")


def test_dram_access_outside_its_buffer(queue, bufs):
    a, b = bufs
    unchanged(queue, lambda: rt.load_2d(queue.handle, a, 250, 3, 2, 4, 0, 0, 0, 0, 0, int(MemId.INP)), BufferError,
              r"covers device bytes .* but the buffer is")
    unchanged(queue, lambda: rt.store_2d(queue.handle, 0, int(MemId.OUT), b, 255, 2, 1, 2), BufferError,
              "but the buffer is")
    unchanged(queue, lambda: rt.load_2d(queue.handle, a, 0, 1, 1, 1, 0, 0, 0, 0, 0, int(MemId.WGT)) or
              rt.load_2d(queue.handle, a, 16, 1, 1, 1, 0, 0, 0, 0, 0, int(MemId.WGT)), BufferError, "but the buffer is")
    unchanged(queue, lambda: rt.buffer_copy(np.zeros(10, np.uint8), 0, b, 4090, 10, 1), BufferError,
              r"dst range \[4090, 4100\) exceeds its 4096 bytes")


def test_reserved_dependency_flag(queue):
    unchanged(queue, lambda: rt.dep_push(queue.handle, 1, 3), VTAError,
              r"no token queue from load \(1\) to store \(3\)")
    unchanged(queue, lambda: rt.dep_pop(queue.handle, 3, 1), VTAError, "neighbouring stages only")
    unchanged(queue, lambda: rt.dep_pop(queue.handle, 0, 1), VTAError, r"from_qid = 0; allowed: 1 \(load\)")
    # a stream that sets a reserved flag is refused by the target before it runs
    isa = queue.isa
    raw = isa.words_to_array([isa.encode(opcode=Opcode.LOAD, memory_type=MemId.INP, push_prev=1),
                              isa.encode(opcode=Opcode.FINISH)])
    h = rt.buffer_alloc(raw.size)
    addr = queue.memory.get(h).phys
    queue.dram[addr:addr + raw.size] = raw
    unchanged(queue, lambda: queue.target.run(addr, 2), InsnError,
              r"push_prev is reserved on load-module instructions and must be 0")


def test_kernels_that_rewrite_a_row_are_accepted(queue):
    """No hazard rule (the pipelines forward every earlier write): a micro-op may write the row the one
    before it wrote, within a kernel and across its loop iterations; the result is sequential."""
    out = programs.same_row()
    np.testing.assert_array_equal(out["result"], out["expected"])


def test_alu_instruction_carries_the_kernel_reset_bit(queue):
    def kernel():
        rt.uop_push(1, 1, 0, 0, 0, int(AluOp.ADD), 1, 1)
    rt.push_alu_op(queue.handle, kernel, 0)
    (alu,) = [i for i in queue.insns if i.opcode == Opcode.ALU]
    assert alu.f["reset"] == 1


def test_unmatched_dep_pop_is_a_deadlock(queue, bufs):
    a, b = bufs
    rt.dep_pop(queue.handle, 2, 3)          # nobody pushes compute -> store
    rt.store_2d(queue.handle, 0, int(MemId.OUT), b, 0, 1, 1, 1)
    before = queue.dram.copy()
    with pytest.raises(DeadlockError) as err:
        rt.synchronize(queue.handle, 1000)
    msg = str(err.value)
    assert "store   : waits for a token on g2s at instruction #0" in msg
    assert "compute : waits for a token on s2g" in msg
    assert "tokens  : l2g=1, g2l=0, g2s=0, s2g=0" in msg
    np.testing.assert_array_equal(queue.dram, before)
    # the runtime dropped the bad stream and works again
    assert queue.insns == []
    rt.synchronize(queue.handle, 1000)


def test_use_after_free(queue, bufs):
    a, _ = bufs
    view = rt.buffer_cpu_ptr(queue.handle, a)
    rt.buffer_free(a)
    unchanged(queue, lambda: rt.load_2d(queue.handle, a, 0, 1, 1, 1, 0, 0, 0, 0, 0, int(MemId.INP)), BufferError,
              f"buffer handle {a} was freed")
    unchanged(queue, lambda: rt.buffer_free(a), BufferError, "use after free")
    unchanged(queue, lambda: rt.load_2d(queue.handle, tvm_ffi.from_dlpack(view), 0, 1, 1, 1, 0, 0, 0, 0, 0,
                                        int(MemId.INP)), BufferError, "is not inside a live buffer")


def test_tensor_that_is_not_device_memory(queue):
    host = np.zeros(4096, np.uint8)
    unchanged(queue, lambda: rt.load_2d(queue.handle, host, 0, 1, 1, 1, 0, 0, 0, 0, 0, int(MemId.INP)), BufferError,
              "is not device memory")
    unchanged(queue, lambda: rt.load_2d(queue.handle, tvm_ffi.from_dlpack(host), 0, 1, 1, 1, 0, 0, 0, 0, 0,
                                        int(MemId.INP)), BufferError, "is not device memory")
    unchanged(queue, lambda: rt.load_2d(queue.handle, "buf", 0, 1, 1, 1, 0, 0, 0, 0, 0, int(MemId.INP)),
              BufferError, "neither a buffer handle nor a DLPack tensor")
    unchanged(queue, lambda: rt.load_2d(12345, 1, 0, 1, 1, 1, 0, 0, 0, 0, 0, 2), VTAError,
              "not a live command handle")


@pytest.mark.parametrize("op, flag", [(AluOp.MUL, "ALU_MUL"), (AluOp.POST, "POST_UNIT")])
def test_an_alu_opcode_the_config_does_not_build_is_rejected(op, flag):
    q = make_queue("small")
    prev = rt.set_current(q)
    try:
        unchanged(q, lambda: rt.push_alu_op(q.handle, alu_kernel(2, op, 3), 0), InsnError,
                  rf"^uop_push: alu_opcode {op.name} is not built in config small \({flag} = 0\); allowed: 0 MIN, 1 MAX, "
                  r"2 ADD, 3 SHR$")
        assert q.insns == []
    finally:
        rt.set_current(prev)


def test_post_parameter_rows_must_lie_in_the_acc_sram(queue):
    top = queue.cfg.ACC_DEPTH - POST_PARAM_ROWS
    for imm in (-1, top + 1, 32767):
        unchanged(queue, lambda: rt.push_alu_op(queue.handle, alu_kernel(2, AluOp.POST, imm), 0), InsnError,
                  rf"^push_alu_op: POST's parameter rows \[imm, imm \+ {POST_PARAM_ROWS}\) leave the acc SRAM: "
                  rf"imm = {imm}; allowed range \[0, {top}\]$")
    assert queue.insns == []
    for imm in (0, top):                            # both ends of the range
        rt.push_alu_op(queue.handle, alu_kernel(2, AluOp.POST, imm), 0)
    assert [i.f["imm"] for i in queue.insns if i.opcode == Opcode.ALU] == [0, top]
    assert rt.synchronize(queue.handle, 1 << 20)["alu_counter"] == 4


def test_recording_rules(queue):
    with pytest.raises(VTAError, match="no micro-kernel is being recorded"):
        rt.uop_push(0, 0, 0, 0, 0, 0, 0, 0)

    def late_loop():
        rt.uop_push(0, 0, 0, 0, 0, 0, 0, 0)
        rt.uop_loop_begin(2, 1, 1, 1)
    with pytest.raises(VTAError, match="loops must begin before the first uop_push"):
        rt.push_gemm_op(queue.handle, late_loop, 0)

    def mixed():
        rt.uop_push(1, 0, 0, 0, 0, 2, 1, 1)
        rt.uop_push(1, 0, 1, 0, 0, 2, 1, 2)
    with pytest.raises(VTAError, match="one opcode and one immediate"):
        rt.push_alu_op(queue.handle, mixed, 0)
    with pytest.raises(VTAError, match="recorded ALU micro-ops"):
        rt.push_gemm_op(queue.handle, alu_kernel(), 0)
    with pytest.raises(VTAError, match="recorded no micro-ops"):
        rt.push_gemm_op(queue.handle, lambda: None, 0)
    with pytest.raises(InsnError, match=r"imm_val = 40000; allowed range \[-32768, 32767\]"):
        rt.push_alu_op(queue.handle, alu_kernel(imm=40000), 0)
    assert queue.insns == []


# ---------------------------------------------------------------------- hardening (issue 18), both call paths
@pytest.fixture(params=["python", "ffi"])
def api(request):
    return programs.api(request.param)


def works(api, q):
    """A tiny program (load an acc row, add 3, store) runs and gives the right bytes."""
    a, out = api.buffer_alloc(64), api.buffer_alloc(16)
    x = np.arange(16, dtype=np.int32) - 8
    np.from_dlpack(api.buffer_cpu_ptr(q.handle, a))[:] = x.view(np.uint8)
    api.load_2d(q.handle, a, 0, 1, 1, 1, 0, 0, 0, 0, 0, int(MemId.ACC))
    api.push_alu_op(q.handle, _add3, 0)
    api.dep_push(q.handle, 2, 3)
    api.dep_pop(q.handle, 2, 3)
    api.store_2d(q.handle, 0, int(MemId.OUT), out, 0, 1, 1, 1)
    api.synchronize(q.handle, 100_000)
    got = np.from_dlpack(api.buffer_cpu_ptr(q.handle, out))[:16].view(np.int8)
    np.testing.assert_array_equal(got, (x + 3).astype(np.int8))
    api.buffer_free(a)
    api.buffer_free(out)


def _add3():
    rt.uop_push(1, 0, 0, 0, 0, int(AluOp.ADD), 1, 3)


def rejects(q, call, exc, match):
    """``call`` raises ``exc`` matching ``match``, leaving device memory and the queued stream as they were."""
    before, queued = q.dram.copy(), len(q.insns)
    with pytest.raises(exc, match=match) as err:
        call()
    assert np.array_equal(q.dram, before)        # (assert_array_equal is slow on 16 MiB)
    assert len(q.insns) == queued
    return err.value


def test_arguments_are_exact_integers(queue, api):
    a, c = api.buffer_alloc(4096), queue.handle
    good = dict(src_elem_offset=0, x_size=1, y_size=1, x_stride=1, x_pad_before=0, y_pad_before=0,
                x_pad_after=0, y_pad_after=0, dst_sram_index=0)
    for name in good:
        for bad in (1.5, True, None, "1", -1):
            args = dict(good, **{name: bad})
            rejects(queue, lambda: api.load_2d(c, a, *args.values(), int(MemId.INP)), InsnError,
                    f"load_2d: {name} = {bad!r} must be a non-negative integer")
    rejects(queue, lambda: api.load_2d(c, a, 0, 1, 1, 1, 0, 0, 0, 0, 0, True), InsnError,
            "dst_memory_type = True; allowed: 2 INP, 1 WGT, 3 ACC, 5 ACC_8BIT")
    rejects(queue, lambda: api.load_2d(c, a, 0, 1, 1, 1, 0, 0, 0, 0, 0, 2.0), InsnError, "dst_memory_type = 2.0")
    rejects(queue, lambda: api.store_2d(c, 0, 4.0, a, 0, 1, 1, 1), InsnError, "src_memory_type = 4.0; allowed: 4 OUT")
    rejects(queue, lambda: api.store_2d(c, 0, 4, a, None, 1, 1, 1), InsnError,
            "store_2d: dst_elem_offset = None must be a non-negative integer")
    rejects(queue, lambda: api.dep_pop(c, 2.5, 3), VTAError, r"dep_pop: from_qid = 2.5; allowed: 1 \(load\)")
    rejects(queue, lambda: api.dep_push(c, 2, True), VTAError, r"dep_push: to_qid = True; allowed: 1 \(load\)")
    rejects(queue, lambda: api.buffer_alloc(4096.5), BufferError,
            r"buffer_alloc: nbytes = 4096.5 must be an integer; allowed range \[1, ")
    rejects(queue, lambda: api.buffer_alloc("4096"), BufferError, "buffer_alloc: nbytes = '4096' must be an integer")
    rejects(queue, lambda: api.buffer_free(float(a)), BufferError, "is not a buffer handle from buffer_alloc")
    rejects(queue, lambda: api.synchronize(c, 1.5), VTAError, "synchronize: wait_cycles = 1.5 must be a non-negative")
    rejects(queue, lambda: api.set_debug_mode(c, 0.5), VTAError, "set_debug_mode: flag = 0.5 must be a non-negative")
    rejects(queue, lambda: api.read_barrier(c, a, 8.0, 0, 1), BufferError,
            r"read_barrier: elem_bits = 8.0 must be an integer; allowed range \[1, \d+\]")
    rejects(queue, lambda: api.write_barrier(c, a, 8, -1, 1), BufferError, "start = -1 must be a non-negative")
    rejects(queue, lambda: api.buffer_copy(np.zeros(4, np.uint8), 0, a, 0, 4.0, 1), BufferError,
            "buffer_copy: nbytes = 4.0 must be a non-negative integer")
    rejects(queue, lambda: api.buffer_copy(np.zeros(4, np.uint8), 0, a, 0, 4, 1.0), VTAError,
            "buffer_copy: kind_mask = 1.0 must be a non-negative integer")
    for args, match in [((2.5, 1, 1, 0), r"uop_loop_begin: extent = 2.5 must be an integer; allowed range \[1, 16383\]"),
                        ((2, 1.0, 1, 0), "uop_loop_begin: dst_factor = 1.0 must be a non-negative integer")]:
        rejects(queue, lambda: api.push_alu_op(c, lambda: api.uop_loop_begin(*args), 0), InsnError, match)
    for args, match in [((1, 0, 0.0, 0, 0, 2, 1, 1), "uop_push: dst_index = 0.0 must be a non-negative integer"),
                        ((1, 0, 0, 0, 0, 2, 1, 1.5), r"uop_push: imm_val = 1.5 must be an integer; allowed range "
                                                     r"\[-32768, 32767\]"),
                        ((1, 0, 0, 0, 0, 2, True, 1), r"uop_push: use_imm = True must be a non-negative integer"),
                        ((1, 0, 0, 0, 0, "2", 1, 1), "uop_push: opcode = '2' must be a non-negative integer"),
                        ((1.0, 0, 0, 0, 0, 2, 1, 1), "uop_push: mode = 1.0 must be a non-negative integer")]:
        rejects(queue, lambda: api.push_alu_op(c, lambda: api.uop_push(*args), 0), InsnError, match)
    assert queue.kernels == {}
    # numpy integers stay accepted, on both paths
    api.load_2d(c, a, np.int64(0), np.int32(1), np.uint16(1), np.int64(1), 0, 0, 0, 0, np.int8(0), np.int64(2))
    assert queue.insns[-1].f["x_size"] == 1 and type(queue.insns[-1].f["x_size"]) is int
    api.synchronize(c, np.int64(100_000))
    works(api, queue)


def test_micro_op_after_its_loop_closed_is_an_error(queue, api):
    c = queue.handle

    def after_end():
        api.uop_loop_begin(4, 1, 1, 0)
        api.uop_push(1, 0, 0, 0, 0, int(AluOp.ADD), 1, 1)
        api.uop_loop_end()
        api.uop_push(1, 0, 8, 8, 0, int(AluOp.ADD), 1, 1)

    def end_without_begin():
        api.uop_push(1, 0, 0, 0, 0, int(AluOp.ADD), 1, 1)
        api.uop_loop_end()

    def left_open():
        api.uop_loop_begin(4, 1, 1, 0)
        api.uop_push(1, 0, 0, 0, 0, int(AluOp.ADD), 1, 1)

    def begin_after_end():
        api.uop_loop_begin(4, 1, 1, 0)
        api.uop_loop_end()
        api.uop_loop_begin(2, 4, 4, 0)
    rejects(queue, lambda: api.push_alu_op(c, after_end, 0), VTAError,
            "uop_push: called after uop_loop_end closed a loop of this kernel")
    rejects(queue, lambda: api.push_alu_op(c, end_without_begin, 1), VTAError, "uop_loop_end: no loop is open")
    rejects(queue, lambda: api.push_alu_op(c, left_open, 2), VTAError,
            "push_alu_op: the kernel left 1 loop.s. open; close each uop_loop_begin with uop_loop_end")
    rejects(queue, lambda: api.push_alu_op(c, begin_after_end, 3), VTAError,
            "uop_loop_begin: called after uop_loop_end; a kernel's loops nest")
    assert queue.kernels == {}
    works(api, queue)


def test_tensor_views_are_ranges(queue, api):
    c = queue.handle
    a, b = api.buffer_alloc(4096), api.buffer_alloc(4096)
    va = np.from_dlpack(api.buffer_cpu_ptr(c, a))
    va[:] = np.arange(4096) % 251
    wrap = tvm_ffi.from_dlpack if api is not rt else (lambda t: t)
    rejects(queue, lambda: api.store_2d(c, 0, int(MemId.OUT), wrap(va[::2]), 0, 1, 1, 1), BufferError,
            r"store_2d: the tensor view is not contiguous \(shape \(2048,\), strides \(2,\) bytes\)")
    rejects(queue, lambda: api.store_2d(c, 0, int(MemId.OUT), wrap(va[64:80]), 0, 4, 1, 4), BufferError,
            r"store_2d: the access covers device bytes \[0x\w+, 0x\w+\) but the tensor view is \[0x\w+, 0x\w+\) "
            r"\(16 bytes\)")
    rejects(queue, lambda: api.load_2d(c, wrap(va[16:32]), 1, 1, 1, 1, 0, 0, 0, 0, 0, int(MemId.INP)), BufferError,
            r"but the tensor view is .* \(16 bytes\)")
    phys = queue.memory.get(a).phys
    across = queue.dram[phys + 4064:phys + 4096 + 32]          # runs from a into b
    rejects(queue, lambda: api.load_2d(c, wrap(across), 0, 1, 1, 1, 0, 0, 0, 0, 0, int(MemId.INP)), BufferError,
            r"the tensor view covers device bytes .* past the end of its buffer")
    rejects(queue, lambda: api.write_barrier(c, wrap(va[:32]), 8, 16, 17), BufferError,
            r"exceeds the buffer \(32 bytes\)")
    rejects(queue, lambda: api.buffer_copy(wrap(va[:8]), 0, b, 0, 16, 3), BufferError,
            r"src range \[0, 16\) exceeds its 8 bytes")
    # a view that fits: exactly its 16 bytes change
    np.from_dlpack(api.buffer_cpu_ptr(c, b))[:64] = np.arange(16, dtype=np.int32).view(np.uint8)
    api.load_2d(c, b, 0, 1, 1, 1, 0, 0, 0, 0, 0, int(MemId.ACC))
    api.dep_push(c, 2, 3)
    api.dep_pop(c, 2, 3)
    api.store_2d(c, 0, int(MemId.OUT), wrap(va[64:80]), 0, 1, 1, 1)
    before = va.copy()
    api.synchronize(c, 100_000)
    expect = before.copy()
    expect[64:80] = np.arange(16, dtype=np.int8).view(np.uint8)
    np.testing.assert_array_equal(va, expect)
    works(api, queue)


def test_freeing_a_buffer_that_queued_work_uses(queue, api):
    c = queue.handle
    src, dst = api.buffer_alloc(4096), api.buffer_alloc(4096)
    np.from_dlpack(api.buffer_cpu_ptr(c, src))[:64] = np.full(16, 7, np.int32).view(np.uint8)
    old = queue.memory.get(dst).phys
    api.load_2d(c, src, 0, 1, 1, 1, 0, 0, 0, 0, 0, int(MemId.ACC))
    api.dep_push(c, 2, 3)
    api.dep_pop(c, 2, 3)
    api.store_2d(c, 0, int(MemId.OUT), dst, 0, 1, 1, 1)
    api.buffer_free(dst)                         # the queued store still holds dst's pages
    api.buffer_free(src)                         # and the queued load src's
    new = api.buffer_alloc(4096)
    assert queue.memory.get(new).phys not in (old, old - 4096)
    view = np.from_dlpack(api.buffer_cpu_ptr(c, new))
    view[:] = 0xAB
    rejects(queue, lambda: api.store_2d(c, 0, int(MemId.OUT), dst, 0, 1, 1, 1), BufferError,
            f"store_2d: buffer handle {dst} was freed \\(use after free\\)")
    api.synchronize(c, 100_000)
    assert (view == 0xAB).all()                  # the new buffer is untouched
    np.testing.assert_array_equal(queue.dram[old:old + 16], np.full(16, 7, np.uint8))
    again = api.buffer_alloc(8192)               # the held pages came back after the run
    assert queue.memory.get(again).phys == old - 4096
    works(api, queue)


def test_kernel_cache_through_tvm_ffi(queue):
    ffi = programs.api("ffi")
    calls = []

    def kernel():
        calls.append(1)
        rt.uop_push(1, 0, 0, 0, 0, int(AluOp.ADD), 1, 1)
    rt.push_alu_op(queue.handle, kernel, 5)      # the Python path first, then 5,000 pushes through tvm-ffi
    free = queue.memory.free_bytes()
    for _ in range(5000):
        ffi.push_alu_op(queue.handle, kernel, 5)
    assert len(calls) == 1 and len(queue.kernels) == 1
    assert queue.memory.free_bytes() == free
    ffi.synchronize(queue.handle, 1 << 20)
    ffi.push_alu_op(queue.handle, kernel, 6)     # another key is another kernel
    assert len(calls) == 2 and len(queue.kernels) == 2
    ffi.synchronize(queue.handle, 1 << 20)
    works(ffi, queue)


def test_kernel_cache_and_its_staging_memory_are_bounded(api):
    q = make_queue("default", uop_stage_bytes=64 << 10, max_kernels=50)
    prev = rt.set_current(q)
    try:
        api.synchronize(q.handle, 1000)          # the instruction buffer is allocated by the first run
        free = q.memory.free_bytes()
        for i in range(600):                     # a fresh callable each time: nothing hits
            api.push_alu_op(q.handle, lambda i=i: rt.uop_push(1, 0, i % 8, 0, 0, int(AluOp.ADD), 1, 1), 0)
            assert len(q.kernels) <= 50
            assert free - q.memory.free_bytes() <= 2 * (64 << 10)
        api.synchronize(q.handle, 1 << 20)
        assert free - q.memory.free_bytes() <= 64 << 10
        works(api, q)
    finally:
        rt.set_current(prev)


def test_evicted_kernels_still_compute_right(api):
    q = make_queue("default", max_kernels=2)     # every third new kernel empties the cache
    prev = rt.set_current(q)
    try:
        x = np.arange(64 * 16, dtype=np.int32).reshape(64, 16) % 100
        src, out = api.buffer_alloc(x.nbytes), api.buffer_alloc(64 * 16)
        np.from_dlpack(api.buffer_cpu_ptr(q.handle, src))[:] = x.view(np.uint8).reshape(-1)
        api.load_2d(q.handle, src, 0, 64, 1, 64, 0, 0, 0, 0, 0, int(MemId.ACC))
        kernels = [alu_kernel(8, AluOp.ADD, r + 1, dst=8 * r) for r in range(8)]
        for r in (*range(8), *range(8)):        # rows 8r..8r+7 get 2 (r + 1)
            api.push_alu_op(q.handle, kernels[r], r)
        api.dep_push(q.handle, 2, 3)
        api.dep_pop(q.handle, 2, 3)
        api.store_2d(q.handle, 0, int(MemId.OUT), out, 0, 64, 1, 64)
        api.synchronize(q.handle, 1 << 20)
        got = np.from_dlpack(api.buffer_cpu_ptr(q.handle, out))[:64 * 16].view(np.int8).reshape(64, 16)
        np.testing.assert_array_equal(got, (x + 2 * (np.arange(64)[:, None] // 8 + 1)).astype(np.int8))
        # 7 evictions; every second one finds the area before still used by the queued stream and runs it first
        assert q.runs == 4
    finally:
        rt.set_current(prev)


# ---------------------------------------------------------------------- threads
def _tiny_program(api, q, lock, tag, i):
    """Allocate, run load/add/store on ``q`` (holding ``lock`` for the program), check, free."""
    a, out = api.buffer_alloc(64 + 4096 * (i % 3)), api.buffer_alloc(16)   # varied sizes fragment the free list
    x = (np.arange(16, dtype=np.int32) + 16 * tag + i) % 100
    src = np.from_dlpack(api.buffer_cpu_ptr(q.handle, a))
    src[:64] = x.view(np.uint8)
    imm = tag + 1

    def kernel():
        time.sleep(0)                            # let another thread record meanwhile
        api.uop_push(1, 0, 0, 0, 0, int(AluOp.ADD), 1, imm)
    with lock:
        api.load_2d(q.handle, a, 0, 1, 1, 1, 0, 0, 0, 0, 0, int(MemId.ACC))
        api.push_alu_op(q.handle, kernel, (tag, i % 5))
        api.dep_push(q.handle, 2, 3)
        api.dep_pop(q.handle, 2, 3)
        api.store_2d(q.handle, 0, int(MemId.OUT), out, 0, 1, 1, 1)
        api.synchronize(q.handle, 100_000)
    got = np.from_dlpack(api.buffer_cpu_ptr(q.handle, out))[:16].view(np.int8)
    assert (got == x + imm).all(), (tag, i, got, x + imm)
    assert (src[:64] == x.view(np.uint8)).all(), "another thread's buffer overlapped this one"
    api.buffer_free(a)
    api.buffer_free(out)


def test_threads_share_the_allocator_and_record_kernels(default_cfg):
    """4 threads x 400 iterations: even ones on the shared handle (its allocator used by all threads at
    once, the program under the handle's lock), odd ones on a fresh handle of the thread's own device
    (kernels recorded while other threads record theirs)."""
    shared = make_queue("default", dram_bytes=8 << 20, max_insns=64)
    prev = rt.set_current(shared)
    start = threading.Barrier(4)

    def worker(tag):
        api = programs.api("ffi" if tag % 2 else "python")
        own = FsimDevice(default_cfg, dram_bytes=1 << 20)
        start.wait()
        for i in range(400):
            if i % 2 == 0:
                _tiny_program(api, shared, shared.lock, tag, i)
            else:
                with rt.use_target(own, max_insns=64) as q:
                    assert api.command_handle() == q.handle
                    _tiny_program(api, q, contextlib.nullcontext(), tag, i)
    try:
        assert run_threads(worker, range(4)) == []
    finally:
        rt.set_current(prev)
    # nothing leaked: only the runtime's instruction buffer and micro-op staging are allocated
    m = shared.memory
    internal = {shared._insn_buf, *shared.cache.chunks}
    assert set(m.buffers) == internal
    assert m.free_bytes() + sum(m.buffers[h].pages for h in internal) == m.size - PAGE_BYTES


def test_two_handles_record_at_the_same_time(default_cfg):
    both_recording = threading.Barrier(2, timeout=10)
    errors = []

    def worker(tag):
        def kernel():
            both_recording.wait()                # each thread is inside its own recording here
            rt.uop_push(1, 0, 0, 0, 0, int(AluOp.ADD), 1, tag)
        try:
            with rt.use_target(FsimDevice(default_cfg, dram_bytes=2 << 20), max_insns=64) as q:
                rt.push_alu_op(q.handle, kernel, 0)
                assert q.kernels[(kernel, 0)].imm == tag
                rt.synchronize(q.handle, 1000)
                works(rt, q)
        except BaseException as err:  # noqa: BLE001
            errors.append(err)
    threads = [threading.Thread(target=worker, args=(t,)) for t in (1, 2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []


@pytest.mark.parametrize("name", ["gemm[blocked-smt]", "same_row", "padded_load[all]", "vector_add"])
def test_force_serial_gives_the_same_results_in_order(name):
    """DEBUG_FORCE_SERIAL rewrites the tokens so every neighbouring pair of instructions is chained."""
    fn, kwargs = programs.PROGRAMS[name]
    q = make_queue("default", debug=rt.DEBUG_FORCE_SERIAL)
    streams = []
    q.target.run = (lambda run: lambda addr, n, wait=None: (streams.append(
        [q.isa.decode(int.from_bytes(q.dram[addr + 16 * i:addr + 16 * (i + 1)].tobytes(), "little"))
         for i in range(n)]), run(addr, n, wait))[1])(q.target.run)
    prev = rt.set_current(q)
    try:
        out = fn(**kwargs)
    finally:
        rt.set_current(prev)
    np.testing.assert_array_equal(out["result"], out["expected"])
    assert streams
    for insns in streams:
        body = insns[:-4]            # before the closing handshake
        for a, b in zip(body, body[1:]):
            if abs(a.stage - b.stage) == 1:
                assert a.f["push_next" if b.stage > a.stage else "push_prev"] == 1
                assert b.f["pop_prev" if b.stage > a.stage else "pop_next"] == 1


def test_every_api_function_says_what_it_does():
    """Each function of the API (and its tvm-ffi twin) has a docstring naming its arguments."""
    import inspect
    for name in rt.API:
        fn = getattr(rt, name)
        doc = inspect.getdoc(fn)
        assert doc and len(doc) > 40, name
        for arg in inspect.signature(fn).parameters:
            if arg not in ("cmd", "key"):
                assert f"``{arg}``" in doc or arg in ("x_pad_before", "x_pad_after", "y_pad_before", "y_pad_after"), \
                    (name, arg)


def test_every_range_error_names_both_ends(queue, bufs):
    a, b = bufs
    for call, match in [
        (lambda: rt.load_2d(queue.handle, a, 0, 1, 1, 1, -1, 0, 0, 0, 0, int(MemId.INP)),
         r"load_2d: x_pad_before = -1 must be a non-negative integer \(allowed range \[0, 15\]\)"),
        (lambda: rt.load_2d(queue.handle, a, 0, 1, 1, 1, 0, 0, 0, 0, -3, int(MemId.WGT)),
         r"load_2d: dst_sram_index = -3 must be a non-negative integer \(allowed range \[0, \d+\]\)"),
        (lambda: rt.store_2d(queue.handle, 0, int(MemId.OUT), b, 0, 1, 1, 70000),
         r"store_2d: x_stride = 70000; allowed range \[0, 65535\]"),
        (lambda: rt.synchronize(queue.handle, -1), r"synchronize: wait_cycles = -1 must be a non-negative integer "
                                                   r"\(allowed range \[0, \d+\]\)"),
    ]:
        unchanged(queue, call, VTAError, match)


def _depthwise_kernel():
    rt.uop_loop_begin(3, 1, 2, 1)
    rt.uop_push(0, 0, 4, 7, 2, 0, 0, 0)
    rt.uop_push(0, 0, 4, 8, 3, 0, 0, 0)
    rt.uop_loop_end()


@pytest.mark.parametrize("queue", ["small"], indirect=True)
def test_push_depthwise_op_is_refused_where_the_mode_is_not_built(queue):
    message = (r"push_depthwise_op: opcode DEPTHWISE is not built in config small \(DEPTHWISE = 0\); "
               r"allowed: 0 LOAD, 1 STORE, 2 GEMM, 3 FINISH, 4 ALU$")
    count = len(queue.insns)
    unchanged(queue, lambda: rt.push_depthwise_op(queue.handle, _depthwise_kernel, 0), InsnError, message)
    unchanged(queue, lambda: tvm_ffi.get_global_func("push_depthwise_op")(queue.handle, _depthwise_kernel, 0),
              InsnError, message)
    assert len(queue.insns) == count                        # nothing queued


def test_push_depthwise_op_queues_opcode_5_with_the_gemm_loop_nest(queue):
    rt.push_depthwise_op(queue.handle, _depthwise_kernel, 0)
    f = queue.insns[-1].f
    assert queue.insns[-1].opcode == Opcode.DEPTHWISE == 5 and queue.insns[-1].kind == "gemm"
    assert (f["reset"], f["uop_end"] - f["uop_bgn"], f["iter_out"], f["iter_in"]) == (0, 2, 3, 1)
    assert (f["dst_factor_out"], f["src_factor_out"], f["wgt_factor_out"]) == (1, 2, 1)
    # the same callable as a GEMM is a GEMM (cached apart), and through tvm-ffi a DEPTHWISE again
    rt.push_gemm_op(queue.handle, _depthwise_kernel, 0)
    assert queue.insns[-1].opcode == Opcode.GEMM
    tvm_ffi.get_global_func("push_depthwise_op")(queue.handle, _depthwise_kernel, 0)
    assert queue.insns[-1].opcode == Opcode.DEPTHWISE
    assert "push_depthwise_op" in rt.API and programs.api("ffi").push_depthwise_op is not None
    counters = rt.synchronize(queue.handle, 1 << 20)
    assert counters["gemm_counter"] == 3 * 6
