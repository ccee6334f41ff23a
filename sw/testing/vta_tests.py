"""VTA's instruction-level test programs (docs/architecture.md §7.3), written once against the runtime API.

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
from sw.isa import AluOp, MemId

Api = ModuleType | SimpleNamespace     # the runtime API: sw.runtime, or its tvm-ffi functions (api())
Result = dict      # {"result", "expected", "counters"}

__all__ = ["api", "to_device", "from_device", "runtime_array", "save_load_out", "padded_load", "gemm", "alu",
           "relu", "shift_and_scale", "vector_add", "same_row", "PADDING_CASES", "ALU_CASES", "PROGRAMS"]

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
}
