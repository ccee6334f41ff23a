"""VTA's instruction-level test programs (docs/architecture.md §7.3), written once against the runtime API, and
the programs of this project's post-processing unit (:func:`post`, ALU opcode POST) and depthwise mode
(:func:`depthwise`, opcode DEPTHWISE).

Each program is a module-level function ``name(api="python", seed=0, ...)`` that builds its data,
drives the API, and returns ``{"result": ..., "expected": ..., "counters": ...}`` with numpy arrays
to compare exactly. ``api`` selects how the API is called: ``"python"`` calls :mod:`sw.runtime`
directly, ``"ffi"`` calls the same functions through their tvm-ffi global registrations. The
programs run on whatever target is current, so ``cosim.run(program, ...)`` runs them on the RTL.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType, SimpleNamespace

import numpy as np
import numpy.typing as npt

from sw import runtime
from sw.fsim.alu import post_op
from sw.isa import POST_PARAM_ROWS, POST_RESIDUAL_STEPS, POST_STAGES, AluOp, MemId

Api = ModuleType | SimpleNamespace     # the runtime API: sw.runtime, or its tvm-ffi functions (api())
Result = dict      # {"result", "expected", "counters"}

__all__ = ["api", "to_device", "from_device", "runtime_array", "save_load_out", "padded_load", "gemm", "alu",
           "relu", "shift_and_scale", "vector_add", "same_row", "post", "post_fast_busy", "depthwise", "alu_rows",
           "PADDING_CASES", "ALU_CASES", "POST_CASES", "PROGRAMS"]

QLOAD, QCOMPUTE, QSTORE = 1, 2, 3


def api(kind: str = "python") -> Api:
    """The runtime API as a namespace: the Python functions, or their tvm-ffi registrations."""
    if kind == "python":
        return runtime
    if kind == "ffi":
        import tvm_ffi
        return SimpleNamespace(**{name: tvm_ffi.get_global_func(name) for name in runtime.API})
    raise ValueError(f"api = {kind!r}; allowed: 'python', 'ffi'")


def view(rt: Api, cmd: int, handle: int) -> np.ndarray:
    """The device bytes of a buffer as a writable numpy array (no copy)."""
    return np.from_dlpack(rt.buffer_cpu_ptr(cmd, handle))


def to_device(rt: Api, cmd: int, arr: np.ndarray) -> int:
    arr = np.ascontiguousarray(arr)
    handle = rt.buffer_alloc(arr.nbytes)
    view(rt, cmd, handle)[:arr.nbytes] = arr.reshape(-1).view(np.uint8)
    return handle


def from_device(rt: Api, cmd: int, handle: int, shape: tuple[int, ...], dtype: npt.DTypeLike) -> np.ndarray:
    n = int(np.prod(shape)) * np.dtype(dtype).itemsize
    return view(rt, cmd, handle)[:n].copy().view(dtype).reshape(shape)


def _counters(c) -> dict:
    return {str(k): int(v) for k, v in dict(c).items()}


def _store_and_sync(rt, cmd, dst, n, shape):
    """Hand the acc rows [0, n) to the store stage, store them to ``dst``, run; return (int8 result, counters)."""
    rt.dep_push(cmd, QCOMPUTE, QSTORE)
    rt.dep_pop(cmd, QCOMPUTE, QSTORE)
    rt.store_2d(cmd, 0, int(MemId.OUT), dst, 0, n, 1, n)
    counters = _counters(rt.synchronize(cmd, 1 << 31))
    return from_device(rt, cmd, dst, shape, np.int8), counters


def _alu_kernel(rt, opcode, n, dst=0, src=0, use_imm=1, imm=0):
    """An ALU micro-kernel over n consecutive acc rows: acc[dst+i] = op(acc[dst+i], imm or acc[src+i])."""
    def kernel():
        rt.uop_loop_begin(n, 1, 1, 0)
        rt.uop_push(1, 0, dst, src, 0, int(opcode), use_imm, imm)
        rt.uop_loop_end()
    return kernel


# ---------------------------------------------------------------------- the programs
def runtime_array(api_kind: str = "python", seed: int = 0) -> Result:
    """A buffer round trip through buffer_alloc and buffer_copy (test_runtime_array)."""
    rt = api(api_kind)
    cfg = runtime.current_config()
    rng = np.random.default_rng(seed)
    x = rng.integers(1, 10, size=(100, 100, cfg.BATCH, cfg.BLOCK_OUT), dtype=np.int8)
    handle = rt.buffer_alloc(x.nbytes)
    rt.buffer_copy(x, 0, handle, 0, x.nbytes, 1)
    y = np.zeros_like(x)
    rt.buffer_copy(handle, 0, y, 0, x.nbytes, 2)
    rt.buffer_free(handle)
    return {"result": y, "expected": x, "counters": {}}


def save_load_out(api_kind: str = "python", seed: int = 0) -> Result:
    """LOAD ACC, ALU SHR 0, STORE (test_save_load_out)."""
    rt = api(api_kind)
    cfg = runtime.current_config()
    rng = np.random.default_rng(seed)
    x = rng.integers(1, 10, size=(6, 6, cfg.BATCH, cfg.BLOCK_OUT), dtype=np.int32)
    cmd = rt.command_handle()
    src = to_device(rt, cmd, x)
    dst = rt.buffer_alloc(x.size)
    rt.load_2d(cmd, src, 0, 6, 6, 6, 0, 0, 0, 0, 0, int(MemId.ACC))
    rt.push_alu_op(cmd, _alu_kernel(rt, AluOp.SHR, 36, imm=0), 0)
    rt.dep_push(cmd, QCOMPUTE, QSTORE)
    rt.dep_pop(cmd, QCOMPUTE, QSTORE)
    rt.store_2d(cmd, 0, int(MemId.OUT), dst, 0, 6, 6, 6)
    counters = _counters(rt.synchronize(cmd, 1 << 31))
    y = from_device(rt, cmd, dst, x.shape, np.int8)
    rt.buffer_free(src), rt.buffer_free(dst)
    return {"result": y, "expected": x.astype(np.int8), "counters": counters}


def same_row(api_kind: str = "python", depth: int = 5, seed: int = 0) -> Result:
    """Micro-ops that write the acc row an earlier one just wrote, at distance 1 and 2 (no hazard rule:
    the GEMM and ALU pipelines forward every earlier write).

    GEMM: a one-micro-op reduction into row 0 (distance 1) and a two-micro-op one into rows 1 and 2
    (distance 2), ``depth`` steps each; ALU: ``depth`` immediate ADDs into row 3, tensor ADDs of row 0
    into row 4, and a row doubled by tensor ADDs of itself (row 5). The immediate ADDs are recorded with
    ``reset_out`` = 1, which the ALU instruction carries (as VTA's runtime writes it) and ignores."""
    rt = api(api_kind)
    cfg = runtime.current_config()
    B, I, O = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, size=(depth, B, I), dtype=np.int8)
    w = rng.integers(-128, 128, size=(depth, O, I), dtype=np.int8)
    cmd = rt.command_handle()
    xd, wd = to_device(rt, cmd, x), to_device(rt, cmd, w)
    yd = rt.buffer_alloc(6 * cfg.OUT_ELEM_BYTES)
    rt.load_2d(cmd, xd, 0, depth, 1, depth, 0, 0, 0, 0, 0, int(MemId.INP))
    rt.load_2d(cmd, wd, 0, depth, 1, depth, 0, 0, 0, 0, 0, int(MemId.WGT))
    rt.dep_push(cmd, QLOAD, QCOMPUTE)
    rt.dep_pop(cmd, QLOAD, QCOMPUTE)

    def reduce(rows):
        def kernel():
            rt.uop_loop_begin(depth, 0, 1, 1)              # dst factor 0: every step writes the same rows
            for r in rows:
                rt.uop_push(0, 0, r, 0, 0, 0, 0, 0)
            rt.uop_loop_end()
        return kernel

    def reset():
        rt.uop_loop_begin(6, 1, 0, 0)
        rt.uop_push(0, 1, 0, 0, 0, 0, 0, 0)
        rt.uop_loop_end()

    def repeat(dst, src, use_imm, imm, n, reset_out=0):
        def kernel():
            rt.uop_loop_begin(n, 0, 0, 0)
            rt.uop_push(1, reset_out, dst, src, 0, int(AluOp.ADD), use_imm, imm)
            rt.uop_loop_end()
        return kernel

    rt.push_gemm_op(cmd, reset, 0)
    rt.push_gemm_op(cmd, reduce((0,)), 0)
    rt.push_gemm_op(cmd, reduce((1, 2)), 0)
    rt.push_gemm_op(cmd, reduce((5,)), 0)
    rt.push_alu_op(cmd, repeat(3, 3, 1, 3, depth, reset_out=1), 0)    # an ALU instruction ignores reset
    rt.push_alu_op(cmd, repeat(4, 0, 0, 0, 3), 0)
    rt.push_alu_op(cmd, repeat(5, 5, 0, 0, 3), 0)
    y, counters = _store_and_sync(rt, cmd, yd, 6, (6, B, O))
    s = np.einsum("kbi,koi->bo", x.astype(np.int64), w.astype(np.int64))
    expected = np.stack([s, s, s, np.full_like(s, 3 * depth), 3 * s, 8 * s]).astype(np.int32).astype(np.int8)
    rt.buffer_free(xd), rt.buffer_free(wd), rt.buffer_free(yd)
    return {"result": y, "expected": expected, "counters": counters}


# (y_pad_0, x_pad_0, y_pad_1, x_pad_1) of test_padded_load's cases
PADDING_CASES = {"Y0": (2, 0, 0, 0), "Y1": (0, 2, 0, 0), "X0": (0, 0, 2, 0), "X1": (0, 0, 0, 2), "all": (1, 1, 1, 1)}


def padded_load(api_kind: str = "python", case: str = "all", seed: int = 0) -> Result:
    """A zero-padded ACC load, SHR 0, STORE of the padded block (test_padded_load)."""
    rt = api(api_kind)
    cfg = runtime.current_config()
    yp0, xp0, yp1, xp1 = PADDING_CASES[case]
    n, m = 3, 5
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 10, size=(n, m, cfg.BATCH, cfg.BLOCK_OUT), dtype=np.int32)
    rows, pitch = n + yp0 + yp1, m + xp0 + xp1
    cmd = rt.command_handle()
    src = to_device(rt, cmd, x)
    dst = rt.buffer_alloc(rows * pitch * cfg.OUT_ELEM_BYTES)
    rt.load_2d(cmd, src, 0, m, n, m, xp0, yp0, xp1, yp1, 0, int(MemId.ACC))
    rt.push_alu_op(cmd, _alu_kernel(rt, AluOp.SHR, rows * pitch, imm=0), 0)
    rt.dep_push(cmd, QCOMPUTE, QSTORE)
    rt.dep_pop(cmd, QCOMPUTE, QSTORE)
    rt.store_2d(cmd, 0, int(MemId.OUT), dst, 0, pitch, rows, pitch)
    counters = _counters(rt.synchronize(cmd, 1 << 31))
    y = from_device(rt, cmd, dst, (rows, pitch, cfg.BATCH, cfg.BLOCK_OUT), np.int8)
    expected = np.zeros_like(y)
    expected[yp0:yp0 + n, xp0:xp0 + m] = x.astype(np.int8)
    rt.buffer_free(src), rt.buffer_free(dst)
    return {"result": y, "expected": expected, "counters": counters}


def gemm(api_kind: str = "python", virtual_threads: int = 1, rows: int = 4, cols: int = 4, blocks: int = 1,
         seed: int = 0) -> Result:
    """Blocked GEMM, then SHR 8, MAX 0, MIN 127, STORE (test_gemm; 2 virtual threads = "smt").

    x: (rows, blocks, BATCH, BLOCK_IN) int8, w: (cols, blocks, BLOCK_OUT, BLOCK_IN) int8. The rows are
    split between the virtual threads; each thread has its own inp/wgt/acc regions, loads its blocks
    inside the reduction loop, and the loads of one thread overlap the GEMMs of the other through the
    l2g (RAW) and g2l (WAR) token queues.
    """
    rt = api(api_kind)
    cfg = runtime.current_config()
    B, I, O = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
    if rows % virtual_threads:
        raise ValueError(f"rows = {rows} must be a multiple of virtual_threads = {virtual_threads}")
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, size=(rows, blocks, B, I), dtype=np.int8)
    w = rng.integers(-128, 128, size=(cols, blocks, O, I), dtype=np.int8)
    cmd = rt.command_handle()
    xd, wd = to_device(rt, cmd, x), to_device(rt, cmd, w)
    yd = rt.buffer_alloc(rows * cols * cfg.OUT_ELEM_BYTES)
    tr = rows // virtual_threads                       # rows per thread
    inp_base = [t * tr for t in range(virtual_threads)]
    wgt_base = [t * cols for t in range(virtual_threads)]
    acc_base = [t * tr * cols for t in range(virtual_threads)]

    def gemm_kernel(t, reset):
        def kernel():
            rt.uop_loop_begin(tr, cols, 1, 0)          # outer: this thread's rows
            for j in range(cols):                      # inner uops: output blocks, distinct acc rows
                rt.uop_push(0, reset, acc_base[t] + j, 0 if reset else inp_base[t], 0 if reset else wgt_base[t] + j,
                            0, 0, 0)
            rt.uop_loop_end()
        return kernel

    kernels = [(gemm_kernel(t, 1), gemm_kernel(t, 0)) for t in range(virtual_threads)]
    for ko in range(blocks):
        for t in range(virtual_threads):
            if ko > 0:
                rt.dep_pop(cmd, QCOMPUTE, QLOAD)       # WAR: the previous GEMM of thread t read these SRAM rows
            # x[t*tr:(t+1)*tr, ko] : tr elements with stride `blocks`; w[:, ko] : cols elements, stride `blocks`
            rt.load_2d(cmd, xd, (t * tr) * blocks + ko, 1, tr, blocks, 0, 0, 0, 0, inp_base[t], int(MemId.INP))
            rt.load_2d(cmd, wd, ko, 1, cols, blocks, 0, 0, 0, 0, wgt_base[t], int(MemId.WGT))
            rt.dep_push(cmd, QLOAD, QCOMPUTE)
            rt.dep_pop(cmd, QLOAD, QCOMPUTE)
            if ko == 0:
                rt.push_gemm_op(cmd, kernels[t][0], 2 * t)
            rt.push_gemm_op(cmd, kernels[t][1], 2 * t + 1)
            if ko + 1 < blocks:
                rt.dep_push(cmd, QCOMPUTE, QLOAD)
    for t in range(virtual_threads):
        n = tr * cols
        for opcode, imm in ((AluOp.SHR, 8), (AluOp.MAX, 0), (AluOp.MIN, 127)):
            rt.push_alu_op(cmd, _alu_kernel(rt, opcode, n, dst=acc_base[t], src=acc_base[t], imm=imm),
                           0)
        rt.dep_push(cmd, QCOMPUTE, QSTORE)
        rt.dep_pop(cmd, QCOMPUTE, QSTORE)
        rt.store_2d(cmd, acc_base[t], int(MemId.OUT), yd, t * tr * cols, n, 1, n)
    counters = _counters(rt.synchronize(cmd, 1 << 31))
    y = from_device(rt, cmd, yd, (rows, cols, B, O), np.int8)
    acc = np.einsum("inbk,jnok->ijbo", x.astype(np.int32), w.astype(np.int32))
    expected = np.clip(acc >> 8, 0, 127).astype(np.int8)
    for h in (xd, wd, yd):
        rt.buffer_free(h)
    return {"result": y, "expected": expected, "counters": counters}


# name -> (opcode, use_imm, numpy reference(a, b_or_imm)) of test_alu, plus MIN and MUL
ALU_CASES = {
    "shl_imm": (AluOp.SHR, 1, lambda a, i: a << i),
    "max_imm": (AluOp.MAX, 1, lambda a, i: np.maximum(a, i)),
    "max_tensor": (AluOp.MAX, 0, lambda a, b: np.maximum(a, b)),
    "min_imm": (AluOp.MIN, 1, lambda a, i: np.minimum(a, i)),
    "min_tensor": (AluOp.MIN, 0, lambda a, b: np.minimum(a, b)),
    "add_imm": (AluOp.ADD, 1, lambda a, i: a + i),
    "add_tensor": (AluOp.ADD, 0, lambda a, b: a + b),
    "shr_imm": (AluOp.SHR, 1, lambda a, i: a >> i),
    "shr_tensor": (AluOp.SHR, 0, lambda a, b: np.where(b >= 0, a >> np.clip(b, 0, 31), a << np.clip(-b, 0, 31))),
    "mul_imm": (AluOp.MUL, 1, lambda a, i: a * i),
    "mul_tensor": (AluOp.MUL, 0, lambda a, b: a * b),
}


def alu(api_kind: str = "python", case: str = "add_tensor", seed: int = 0) -> Result:
    """One ALU operation over (8, 8) acc blocks, with an immediate or a tensor operand (test_alu)."""
    rt = api(api_kind)
    cfg = runtime.current_config()
    opcode, use_imm, ref = ALU_CASES[case]
    rng = np.random.default_rng(seed)
    shape = (8, 8, cfg.BATCH, cfg.BLOCK_OUT)
    a = rng.integers(-16, 16, size=shape, dtype=np.int32)
    b = rng.integers(-16, 16, size=shape, dtype=np.int32)
    imm = int(rng.integers(1, 5))
    n = 64
    cmd = rt.command_handle()
    ad, bd = to_device(rt, cmd, a), to_device(rt, cmd, b)
    yd = rt.buffer_alloc(n * cfg.OUT_ELEM_BYTES)
    rt.load_2d(cmd, ad, 0, n, 1, n, 0, 0, 0, 0, 0, int(MemId.ACC))
    if not use_imm:
        rt.load_2d(cmd, bd, 0, n, 1, n, 0, 0, 0, 0, n, int(MemId.ACC))
    imm_field = -imm if case == "shl_imm" else imm
    rt.push_alu_op(cmd, _alu_kernel(rt, opcode, n, dst=0, src=n, use_imm=use_imm, imm=imm_field if use_imm else 0), 0)
    y, counters = _store_and_sync(rt, cmd, yd, n, shape)
    expected = ref(a.astype(np.int64), imm if use_imm else b.astype(np.int64)).astype(np.int32).astype(np.int8)
    for h in (ad, bd, yd):
        rt.buffer_free(h)
    return {"result": y, "expected": expected, "counters": counters}


def relu(api_kind: str = "python", seed: int = 0) -> Result:
    """MAX 0 then MIN 127 (test_relu)."""
    rt = api(api_kind)
    cfg = runtime.current_config()
    rng = np.random.default_rng(seed)
    shape = (8, 10, cfg.BATCH, cfg.BLOCK_OUT)
    a = rng.integers(-256, 256, size=shape, dtype=np.int32)
    n = 80
    cmd = rt.command_handle()
    ad = to_device(rt, cmd, a)
    yd = rt.buffer_alloc(n * cfg.OUT_ELEM_BYTES)
    rt.load_2d(cmd, ad, 0, n, 1, n, 0, 0, 0, 0, 0, int(MemId.ACC))
    rt.push_alu_op(cmd, _alu_kernel(rt, AluOp.MAX, n, imm=0), 0)
    rt.push_alu_op(cmd, _alu_kernel(rt, AluOp.MIN, n, imm=127), 1)
    y, counters = _store_and_sync(rt, cmd, yd, n, shape)
    for h in (ad, yd):
        rt.buffer_free(h)
    return {"result": y, "expected": np.clip(a, 0, 127).astype(np.int8), "counters": counters}


def shift_and_scale(api_kind: str = "python", seed: int = 0) -> Result:
    """ADD imm then SHR imm (test_shift_and_scale)."""
    rt = api(api_kind)
    cfg = runtime.current_config()
    rng = np.random.default_rng(seed)
    shape = (2, 8, cfg.BATCH, cfg.BLOCK_OUT)
    a = rng.integers(-10, 10, size=shape, dtype=np.int32)
    shift = int(rng.integers(0, 8))
    scale = int(rng.integers(1, 5))
    n = 16
    cmd = rt.command_handle()
    ad = to_device(rt, cmd, a)
    yd = rt.buffer_alloc(n * cfg.OUT_ELEM_BYTES)
    rt.load_2d(cmd, ad, 0, n, 1, n, 0, 0, 0, 0, 0, int(MemId.ACC))
    rt.push_alu_op(cmd, _alu_kernel(rt, AluOp.ADD, n, imm=shift), 0)
    rt.push_alu_op(cmd, _alu_kernel(rt, AluOp.SHR, n, imm=scale), 1)
    y, counters = _store_and_sync(rt, cmd, yd, n, shape)
    for h in (ad, yd):
        rt.buffer_free(h)
    return {"result": y, "expected": ((a + shift) >> scale).astype(np.int8), "counters": counters}


def vector_add(api_kind: str = "python", n: int = 64, seed: int = 0) -> Result:
    """VTA's get-started tutorial: C = (A + B) for two int32 (1, n, BATCH, BLOCK_OUT) tensors, cast to int8."""
    rt = api(api_kind)
    cfg = runtime.current_config()
    rng = np.random.default_rng(seed)
    shape = (1, n, cfg.BATCH, cfg.BLOCK_OUT)
    a = rng.integers(-128, 128, size=shape, dtype=np.int32)
    b = rng.integers(-128, 128, size=shape, dtype=np.int32)
    cmd = rt.command_handle()
    ad, bd = to_device(rt, cmd, a), to_device(rt, cmd, b)
    cd = rt.buffer_alloc(n * cfg.OUT_ELEM_BYTES)
    rt.load_2d(cmd, ad, 0, n, 1, n, 0, 0, 0, 0, 0, int(MemId.ACC))
    rt.load_2d(cmd, bd, 0, n, 1, n, 0, 0, 0, 0, n, int(MemId.ACC))
    rt.push_alu_op(cmd, _alu_kernel(rt, AluOp.ADD, n, dst=0, src=n, use_imm=0), 0)
    c, counters = _store_and_sync(rt, cmd, cd, n, shape)
    for h in (ad, bd, cd):
        rt.buffer_free(h)
    return {"result": c, "expected": (a + b).astype(np.int8), "counters": counters}


# ---------------------------------------------------------------------- POST (ALU opcode 5, POST_UNIT)
I32_MIN, I32_MAX = -2**31, 2**31 - 1
POST_IDENTITY = {AluOp.ADD: 0, AluOp.MAX: I32_MIN, AluOp.MIN: I32_MAX, AluOp.MUL: 1, AluOp.SHR: 0}
# the edge values of each stage's operand, one per lane (cycled), and of the accumulators
POST_EDGES = {AluOp.ADD: [I32_MAX, I32_MIN, -1, 0, 0x55555555, -0x55555556, 1, 1 << 30],
              AluOp.MAX: [I32_MIN, -1, 0, 0x55555555, -0x55555556, I32_MAX, -128, 127],
              AluOp.MIN: [I32_MAX, 0, -1, -0x55555556, 0x55555555, I32_MIN, 127, 255],
              AluOp.MUL: [-1, 0x55555555, 0x12345, 65535, 32767, -32768, I32_MIN, 3],
              AluOp.SHR: [-1, 0x55555555, -0x55555556, 31, 32, -31, -32, 1, 0, 7, 40, -40]}
ACC_EDGES = [I32_MIN, I32_MAX, 0, -1, 0x55555555, -0x55555556, 1, -2, 1 << 30, -(1 << 30), 12345, -54321]
POST_CASES = ("per_tensor", "per_channel", "residual", "irregular", "edges")


def _post_params(lanes: int, **stages) -> np.ndarray:
    """A parameter block (POST_PARAM_ROWS, lanes) int32: row k's identity (stage k's, then the residual's steps'), or
    ``s<k>=`` a value or a per-lane array."""
    rows = np.array([[POST_IDENTITY[op]] * lanes for op in POST_STAGES + POST_RESIDUAL_STEPS], np.int64)
    for name, v in stages.items():
        rows[int(name[1:])] = v
    return rows.astype(np.int32)


def alu_rows(uops: list[tuple[int, int]], loops: list[tuple[int, int, int, int]]) -> list[tuple[int, int]]:
    """(dst, src) of each micro-op execution, in order, of an ALU kernel of ``uops`` [(dst, src)] under ``loops``
    [(extent, dst_factor, src_factor, wgt_factor)] as :func:`sw.runtime.uop_loop_begin` opens them (one loop is the
    inner one)."""
    (eo, do, so), (ei, di, si) = [(1, 0, 0)] * (2 - len(loops)) + [(e, d, s) for e, d, s, _ in loops]
    return [(ud + i * do + j * di, us + i * so + j * si) for i in range(eo) for j in range(ei) for ud, us in uops]


def _post_kernel(rt, uops, loops, use_imm, imm):
    def kernel():
        for loop in loops:
            rt.uop_loop_begin(*loop)
        for d, s in uops:
            rt.uop_push(1, 0, d, s, 0, int(AluOp.POST), use_imm, imm)
        for _ in loops:
            rt.uop_loop_end()
    return kernel


def _post_reference(acc: np.ndarray, uops, loops, use_imm: int, imm: int) -> None:
    """One POST instruction on the host copy ``acc`` (rows, lanes) int32, in place: the parameter rows as the
    instruction starts, then micro-op by micro-op in order (each sees the rows earlier ones wrote)."""
    params = acc[imm:imm + POST_PARAM_ROWS].copy()
    for d, s in alu_rows(uops, loops):
        acc[d] = post_op(acc[d], params, None if use_imm else acc[s])


def _store_planes(rt, cmd, dst, first: int, n: int) -> None:
    """Queue the stores of acc rows [first, first + n) as four int8 planes into ``dst`` (4 n OUT elements): plane k
    holds byte k of every lane (SHR 8 in place between the stores, each after the store before has read its rows)."""
    for k in range(4):
        if k:
            rt.dep_pop(cmd, QSTORE, QCOMPUTE)
            rt.push_alu_op(cmd, _alu_kernel(rt, AluOp.SHR, n, dst=first, src=first, imm=8), 0)
        rt.dep_push(cmd, QCOMPUTE, QSTORE)
        rt.dep_pop(cmd, QCOMPUTE, QSTORE)
        rt.store_2d(cmd, first, int(MemId.OUT), dst, k * n, n, 1, n)
        if k < 3:
            rt.dep_push(cmd, QSTORE, QCOMPUTE)


def _planes(v: np.ndarray) -> np.ndarray:
    """The four int8 byte planes of int32 values (what :func:`_store_planes` stores)."""
    return np.stack([(v.astype(np.int32) >> (8 * k)).astype(np.int8) for k in range(4)])


def post(api_kind: str = "python", case: str = "per_tensor", seed: int = 0) -> Result:
    """The post-processing unit (ALU opcode POST, on configs with POST_UNIT): a parameter block loaded into
    POST_PARAM_ROWS acc rows, then POST with imm at them (docs/architecture.md §2.8).

    - ``per_tensor``: a requantization (bias, a clip of the accumulators, a multiplier beyond int16, the rounding constant
      and shift, the int8 clip) with one value per stage, parameters at the last rows of the acc SRAM (the top of
      imm's range), a one-micro-op kernel over increasing rows: the unit's fast shape;
    - ``per_channel``: a two-multiplier requantization with per-lane bias, multiplier and shift and a ReLU clip,
      parameters at row 0, two loops whose rows strictly increase (the fast shape);
    - ``residual``: a requantization with the residual (a tensor operand in rows apart from the destinations),
      multiplied and offset by its own steps, added after the rounding constant of the last shift (the fast shape
      with the residual);
    - ``irregular``: the shapes that run one micro-op at a time: three micro-ops in decreasing order under a loop,
      one destination three times in a row with a residual, residual rows that the micro-op before wrote, and
      destinations that run through the parameter rows (the parameters stay as the instruction found them);
    - ``edges``: parameter blocks of int32's ends and alternating bit patterns per lane (multipliers beyond int16,
      negative and over-range shifts, inverted clips) and their bitwise complements, on accumulators of the same
      kind, with and without the residual, at both ends of imm's range.

    The requantizations are checked against numpy formulas on their int8 results; ``irregular`` and ``edges``
    against :func:`sw.fsim.alu.post_op` micro-op by micro-op on every bit (four byte planes per row)."""
    if case not in POST_CASES:
        raise ValueError(f"post: case = {case!r}; allowed: {', '.join(POST_CASES)}")
    rt = api(api_kind)
    cfg = runtime.current_config()
    B, O = cfg.BATCH, cfg.BLOCK_OUT
    lanes = B * O
    rng = np.random.default_rng(seed)
    cmd = rt.command_handle()
    handles: list[int] = []
    acc = np.zeros((cfg.ACC_DEPTH, lanes), np.int32)        # the rows this program defines, as the host sees them
    top = cfg.ACC_DEPTH - POST_PARAM_ROWS

    def load(row: int, values: np.ndarray) -> None:
        values = np.ascontiguousarray(values, np.int32).reshape(-1, lanes)
        h = to_device(rt, cmd, values)
        handles.append(h)
        rt.load_2d(cmd, h, 0, len(values), 1, len(values), 0, 0, 0, 0, row, int(MemId.ACC))
        acc[row:row + len(values)] = values

    def per_channel(v: np.ndarray) -> np.ndarray:
        return np.tile(v, B)                                # lanes are [batch][channel]

    def run(uops, loops, use_imm, imm):
        rt.push_alu_op(cmd, _post_kernel(rt, uops, loops, use_imm, imm), 0)
        _post_reference(acc, uops, loops, use_imm, imm)

    n = 64
    if case in ("per_tensor", "per_channel", "residual"):
        a = rng.integers(-2**16, 2**16, size=(n, lanes), dtype=np.int64)
        data = POST_PARAM_ROWS if case == "per_channel" else 0            # after the parameters at row 0
        load(data, a)
        x = a.copy()
        if case == "per_tensor":
            b, m, sh = int(rng.integers(-2**12, 2**12)), int(rng.integers(2**15, 2**16)), int(rng.integers(22, 25))
            load(top, _post_params(lanes, s0=b, s1=-2**15, s2=2**15 - 1, s3=m, s4=1 << (sh - 1), s5=sh, s12=-128,
                                   s13=127))
            rt.push_alu_op(cmd, _post_kernel(rt, [(0, 0)], [(n, 1, 1, 0)], 1, top), 0)
            expected = np.clip((np.clip(x + b, -2**15, 2**15 - 1) * m + (1 << (sh - 1))) >> sh, -128, 127)
        elif case == "per_channel":
            bias = per_channel(rng.integers(-2**10, 2**10, O))
            mul, shift = per_channel(rng.integers(1, 2**14, O)), per_channel(rng.integers(8, 16, O))
            m2, s2 = int(rng.integers(1, 257)), int(rng.integers(14, 17))
            load(0, _post_params(lanes, s0=bias, s1=-2**15, s2=2**15 - 1, s3=mul, s4=1 << (shift - 1), s5=shift,
                                 s6=m2, s7=1 << (s2 - 1), s8=s2, s12=0, s13=127))
            rt.push_alu_op(cmd, _post_kernel(rt, [(data, 0)], [(8, 8, 0, 0), (8, 1, 0, 0)], 1, 0), 0)
            y = (np.clip(x + bias, -2**15, 2**15 - 1) * mul + (1 << (shift - 1))) >> shift
            expected = np.clip((y * m2 + (1 << (s2 - 1))) >> s2, 0, 127)
        else:
            res = rng.integers(-2**12, 2**12, size=(n, lanes), dtype=np.int64)
            load(n, res)
            b, m1, s1, s3 = int(rng.integers(-2**10, 2**10)), int(rng.integers(1, 2**14)), int(rng.integers(12, 16)), 8
            mr, zr = int(rng.integers(2, 2**6)), int(rng.integers(-2**12, 2**12))       # the residual's MUL, ADD
            load(2 * n, _post_params(lanes, s0=b, s1=-2**15, s2=2**15 - 1, s3=m1, s4=1 << (s1 - 1), s5=s1,
                                     s10=1 << (s3 - 1), s11=s3, s12=-128, s13=127, s14=mr, s15=zr))
            rt.push_alu_op(cmd, _post_kernel(rt, [(0, n)], [(n, 1, 1, 0)], 0, 2 * n), 0)
            y = (np.clip(x + b, -2**15, 2**15 - 1) * m1 + (1 << (s1 - 1))) >> s1
            expected = np.clip((y + (1 << (s3 - 1)) + res * mr + zr) >> s3, -128, 127)
        yd = rt.buffer_alloc(n * cfg.OUT_ELEM_BYTES)
        rt.dep_push(cmd, QCOMPUTE, QSTORE)
        rt.dep_pop(cmd, QCOMPUTE, QSTORE)
        rt.store_2d(cmd, data, int(MemId.OUT), yd, 0, n, 1, n)
        counters = _counters(rt.synchronize(cmd, 1 << 31))
        y8 = from_device(rt, cmd, yd, (n, B, O), np.int8)
        expected = expected.astype(np.int8).reshape(n, B, O)
    else:
        rows = 96 if case == "irregular" else 32
        load(0, rng.choice(ACC_EDGES, size=(rows, lanes)) if case == "edges"
             else rng.integers(-2**24, 2**24, size=(rows, lanes)))
        if case == "irregular":
            load(40, _post_params(lanes, s0=rng.integers(-2**20, 2**20, lanes), s1=-2**23, s2=2**23,
                                  s3=rng.integers(-2**15, 2**15, lanes), s4=1 << 9, s5=10, s6=rng.integers(1, 2**8, lanes),
                                  s8=rng.integers(-2, 12, lanes), s12=-2**20, s13=2**20))
            run([(30, 0), (20, 1), (10, 2)], [(3, 1, 0, 0)], 1, 40)           # several micro-ops, decreasing
            run([(5, 6)], [(3, 0, 0, 0)], 0, 40)                             # one row three times, a residual
            run([(60, 59)], [(8, 1, 1, 0)], 0, 40)                           # the residual the row just written
            run([(34, 0)], [(14, 1, 0, 0)], 1, 40)                           # destinations over the parameters
        else:
            edges = np.array([[POST_EDGES[op][(lane + k) % len(POST_EDGES[op])] for lane in range(lanes)]
                              for k, op in enumerate(POST_STAGES + POST_RESIDUAL_STEPS)], np.int64).astype(np.int32)
            load(0, edges)
            load(top, ~edges)                                   # every bit of every parameter the other way
            g1, g2 = POST_PARAM_ROWS, POST_PARAM_ROWS + 8         # two groups of 8 rows after the parameters at 0
            run([(g1, 0)], [(8, 1, 0, 0)], 1, 0)
            run([(g2, g1)], [(8, 1, 1, 0)], 0, top)
            run([(g1, g2)], [(8, 1, 1, 0)], 0, 0)
            run([(g2, 0)], [(8, 1, 0, 0)], 1, top)
        yd = rt.buffer_alloc(4 * rows * cfg.OUT_ELEM_BYTES)
        expected = _planes(acc[:rows]).reshape(4, rows, B, O)
        _store_planes(rt, cmd, yd, 0, rows)
        counters = _counters(rt.synchronize(cmd, 1 << 31))
        y8 = from_device(rt, cmd, yd, (4, rows, B, O), np.int8)
    for h in handles + [yd]:
        rt.buffer_free(h)
    return {"result": y8, "expected": expected, "counters": counters}


def post_fast_busy(api_kind: str = "python", rows: int = 200, use_imm: int = 1) -> dict:
    """Two runs that each load a parameter block of identities at the top of the acc SRAM and run one POST of the
    unit's fast shape (one micro-op, destinations from row 0 up; with ``use_imm`` = 0 the residual from the rows
    after ``2 rows``), over ``rows`` rows and over ``2 rows`` rows: ``{"counters": (first, second)}``. On the RTL
    the difference of their ``compute_busy`` is what ``rows`` more rows of the fast shape cost."""
    rt = api(api_kind)
    cfg = runtime.current_config()
    top = cfg.ACC_DEPTH - POST_PARAM_ROWS
    cmd = rt.command_handle()
    ph = to_device(rt, cmd, _post_params(cfg.BATCH * cfg.BLOCK_OUT))
    counters = []
    for n in (rows, 2 * rows):
        rt.load_2d(cmd, ph, 0, POST_PARAM_ROWS, 1, POST_PARAM_ROWS, 0, 0, 0, 0, top, int(MemId.ACC))
        rt.push_alu_op(cmd, _post_kernel(rt, [(0, 2 * rows)], [(n, 1, 1, 0)], use_imm, top), 0)
        counters.append(_counters(rt.synchronize(cmd, 1 << 31)))
    rt.buffer_free(ph)
    return {"counters": tuple(counters)}


# ---------------------------------------------------------------------- DEPTHWISE (opcode 5, DEPTHWISE)
def depthwise(api_kind: str = "python", seed: int = 0, height: int = 5, width: int = 6) -> Result:
    """A depthwise k x k convolution, stride 1, zero padding (k - 1) / 2 ("same"), over one block of BLOCK_IN channels
    and BATCH images through :func:`sw.runtime.push_depthwise_op` (docs/isa.md "DEPTHWISE"; configs with DEPTHWISE):
    k = 3 where BLOCK_IN >= 9, else the largest k with k * k <= BLOCK_IN (the taps must fit the window).

    The input (``height`` x ``width`` pixels) is loaded with its padding; one DEPTHWISE over every output: an outer loop
    over output rows, an inner one over output columns, k * k micro-ops reading the pixel's neighbourhood row by row,
    all writing its acc row (the last read's value stays: slot s then holds tap k * k - 1 - s; the weight row of
    channel j holds its taps there and zeros in the other slots, which hold the neighbourhood before). The int32 sums
    are stored as four byte planes and checked against numpy on every bit."""
    rt = api(api_kind)
    cfg = runtime.current_config()
    B, I = cfg.BATCH, cfg.BLOCK_IN
    k = min(3, int(np.sqrt(I)))
    pad = (k - 1) // 2
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, size=(height, width, B, I), dtype=np.int8)
    taps = rng.integers(-128, 128, size=(I, k, k), dtype=np.int8)
    wgt = np.zeros((1, cfg.BLOCK_OUT, I), np.int8)
    for ky in range(k):
        for kx in range(k):
            wgt[0, :, k * k - 1 - (ky * k + kx)] = taps[:, ky, kx]
    cmd = rt.command_handle()
    xd, wd = to_device(rt, cmd, x), to_device(rt, cmd, wgt)
    pitch, n = width + 2 * pad, height * width
    rt.load_2d(cmd, xd, 0, width, height, width, pad, pad, k - 1 - pad, k - 1 - pad, 0, int(MemId.INP))
    rt.load_2d(cmd, wd, 0, 1, 1, 1, 0, 0, 0, 0, 0, int(MemId.WGT))
    rt.dep_push(cmd, QLOAD, QCOMPUTE)
    rt.dep_pop(cmd, QLOAD, QCOMPUTE)

    def kernel():
        rt.uop_loop_begin(height, width, pitch, 0)          # output rows
        rt.uop_loop_begin(width, 1, 1, 0)                   # output columns
        for ky in range(k):
            for kx in range(k):
                rt.uop_push(0, 0, 0, ky * pitch + kx, 0, 0, 0, 0)
        rt.uop_loop_end()
        rt.uop_loop_end()
    rt.push_depthwise_op(cmd, kernel, 0)
    yd = rt.buffer_alloc(4 * n * cfg.OUT_ELEM_BYTES)
    _store_planes(rt, cmd, yd, 0, n)
    counters = _counters(rt.synchronize(cmd, 1 << 31))
    y = from_device(rt, cmd, yd, (4, height, width, B, I), np.int8)
    xp = np.pad(x.astype(np.int64), ((pad, k - 1 - pad), (pad, k - 1 - pad), (0, 0), (0, 0)))
    acc = np.zeros((height, width, B, I), np.int64)
    for ky in range(k):
        for kx in range(k):
            acc += xp[ky:ky + height, kx:kx + width] * taps[:, ky, kx].astype(np.int64)
    for h in (xd, wd, yd):
        rt.buffer_free(h)
    return {"result": y, "expected": _planes(acc), "counters": counters}


PROGRAMS: dict[str, tuple[Callable[..., dict], dict]] = {
    "vector_add": (vector_add, {}),
    "runtime_array": (runtime_array, {}),
    "save_load_out": (save_load_out, {}),
    **{f"padded_load[{c}]": (padded_load, {"case": c}) for c in PADDING_CASES},
    "gemm[default]": (gemm, {"virtual_threads": 1}),
    "gemm[smt]": (gemm, {"virtual_threads": 2}),
    "gemm[blocked-smt]": (gemm, {"virtual_threads": 2, "rows": 8, "cols": 4, "blocks": 3}),
    **{f"alu[{c}]": (alu, {"case": c}) for c in ALU_CASES},
    "same_row": (same_row, {}),
    "relu": (relu, {}),
    "shift_and_scale": (shift_and_scale, {}),
    **{f"post[{c}]": (post, {"case": c}) for c in POST_CASES},
    "depthwise": (depthwise, {}),
}
