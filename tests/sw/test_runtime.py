"""Runtime semantics (reference §5) and one test per bad input."""
import io

import numpy as np
import pytest
import tvm_ffi

from sw import runtime as rt
from sw.isa import AluOp, MemId, Opcode
from sw.memory import BufferError
from sw.pipeline import DeadlockError, InsnError, VTAError

from tests.conftest import make_queue


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
    bad = lambda: rt.push_alu_op(queue.handle, lambda: rt.uop_push(1, 0, 0, 0, 0, 9, 1, 0), 0)
    unchanged(queue, bad, InsnError, r"alu_opcode = 9 is not an ALU operation; allowed: 0 MIN, 1 MAX, 2 ADD, 3 SHR, 4 MUL")
    unchanged(queue, lambda: rt.push_gemm_op(queue.handle, lambda: rt.uop_push(2, 0, 0, 0, 0, 0, 0, 0), 0),
              VTAError, "mode = 2")


def test_sram_index_or_size_beyond_buffer(queue, bufs):
    a, _ = bufs
    unchanged(queue, lambda: rt.load_2d(queue.handle, a, 0, 8, 1, 8, 0, 0, 0, 0, 2044, int(MemId.INP)), InsnError,
              r"INP SRAM range \[2044, 2052\) exceeds the buffer; allowed range \[0, 2048\]")
    unchanged(queue, lambda: rt.load_2d(queue.handle, a, 0, 1, 1, 1, 0, 0, 0, 0, 70000, int(MemId.INP)), InsnError,
              r"sram_base = 70000 does not fit its 16-bit field; allowed range \[0, 65535\]")
    unchanged(queue, lambda: rt.load_2d(queue.handle, a, 0, 1, 1, 1, 16, 0, 0, 0, 0, int(MemId.ACC)), InsnError,
              r"x_pad_0 = 16 does not fit its 4-bit field; allowed range \[0, 15\]")
    unchanged(queue, lambda: rt.push_gemm_op(queue.handle, lambda: rt.uop_push(0, 0, 2048, 0, 0, 0, 0, 0), 0),
              InsnError, r"dst_idx = 2048 does not fit")
    assert queue.insns == []


def test_uop_index_beyond_buffer_over_loops(queue):
    def kernel():
        rt.uop_loop_begin(300, 0, 0, 4)
        rt.uop_push(0, 0, 0, 0, 0, 0, 0, 0)
        rt.uop_loop_begin  # noqa: B018  (one loop is enough)
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


def test_micro_op_hazard_rule(queue):
    def twice():
        rt.uop_push(0, 0, 3, 0, 0, 0, 0, 0)
        rt.uop_push(0, 0, 4, 1, 1, 0, 0, 0)
        rt.uop_push(0, 0, 3, 2, 2, 0, 0, 0)
    unchanged(queue, lambda: rt.push_gemm_op(queue.handle, twice, 0), InsnError,
              "micro-op hazard: dst_index 3 is also written by the micro-op 2 before it")

    def loop_hazard():          # one uop, loop with dst factor 0: every execution writes row 0
        rt.uop_loop_begin(4, 0, 1, 1)
        rt.uop_push(0, 0, 0, 0, 0, 0, 0, 0)
        rt.uop_loop_end()
    unchanged(queue, lambda: rt.push_gemm_op(queue.handle, loop_hazard, 0), InsnError,
              "execution 1 writes acc row 0, which the micro-op 1 before it also writes")
    assert queue.insns == []

    def reset_ok():             # resets read nothing: repeated rows are fine
        rt.uop_loop_begin(4, 0, 0, 0)
        rt.uop_push(0, 1, 0, 0, 0, 0, 0, 0)
        rt.uop_loop_end()
    rt.push_gemm_op(queue.handle, reset_ok, 0)
    rt.synchronize(queue.handle, 1000)


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


def test_mul_rejected_on_a_config_without_it():
    q = make_queue("small")
    prev = rt.set_current(q)
    try:
        unchanged(q, lambda: rt.push_alu_op(q.handle, alu_kernel(2, AluOp.MUL, 3), 0), InsnError,
                  "MUL is not built in config small")
    finally:
        rt.set_current(prev)


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
    with pytest.raises(InsnError, match=r"imm = 40000 does not fit"):
        rt.push_alu_op(queue.handle, alu_kernel(imm=40000), 0)
    assert queue.insns == []
