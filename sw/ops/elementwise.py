"""Element-wise operators on the tensor ALU: vector add, ReLU, bias, requantization."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Literal, overload

import numpy as np

from sw import runtime as rt
from sw.isa import AluOp, MemId
from sw.ops.base import TileError, _check_vt, _finish, _from_device, _halves, _to_device, cdiv, config
from sw.ops.epilogue import AluStep, Epilogue, TileOperands
from sw.ops.kernels import Alu, Gemm, Load, Store, _alu_rows, _alu_tensor, _k_alu, _k_dense
from sw.ops.layout import pack_bias
from sw.ops.schedule import _Step, _Tile, run_tiles


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

    ops: list of ("imm", opcode, imm) | ("imm_b", opcode, imm) (on b) | ("tensor_add",) | ("bias_add",),
    applied in order.
    """
    _check_vt(virtual_threads)
    cfg = config()
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
            comps = [Load(handles[0], r0 * C + c0, nc, nr, stride, base, acc_id)]
            if bd is not None:
                comps.append(Load(bd, r0 * C + c0, nc, nr, stride, other, acc_id))
            if pd is not None:
                comps.append(Load(pd, c0, nc, 1, nc, bias_base, acc_id))
            for op in ops:
                if op[0] == "imm":
                    comps.append(_alu_rows(op[1], op[2], base, rows))
                elif op[0] == "imm_b":
                    comps.append(_alu_rows(op[1], op[2], other, rows))
                elif op[0] == "tensor_add":
                    comps.append(Alu(_k_alu(int(AluOp.ADD), 0, 0, base, other, ((rows, 1, 1),)), passes=2))
                elif op[0] == "bias_add":
                    comps.append(Alu(_k_alu(int(AluOp.ADD), 0, 0, base, bias_base,
                                                ((nr, nc, 0), (nc, 1, 1))), passes=2))
            stores = [Store(base, yd, r0 * C + c0, nc, nr, stride)]
            tiles.append(_Tile(acc=a_half, computes=comps, stores=stores))
        counters = run_tiles(tiles)
        counters["tiles"] = len(tiles)
        y = _from_device(cmd, yd, (R, C, cfg.BATCH, cfg.BLOCK_OUT), np.int8).reshape(shape)
    finally:
        for h_ in handles:
            rt.buffer_free(h_)
    return _finish(y, counters, return_counters)


@overload
def vadd(a: np.ndarray, b: np.ndarray, virtual_threads: int = ..., return_counters: Literal[False] = ...) -> np.ndarray: ...
@overload
def vadd(a: np.ndarray, b: np.ndarray, virtual_threads: int = ..., *,
         return_counters: Literal[True]) -> tuple[np.ndarray, dict[str, int]]: ...
@overload
def vadd(a: np.ndarray, b: np.ndarray, virtual_threads: int = ...,
         return_counters: bool = ...) -> np.ndarray | tuple[np.ndarray, dict[str, int]]: ...


def vadd(a: np.ndarray, b: np.ndarray, virtual_threads: int = 1,
         return_counters: bool = False) -> np.ndarray | tuple[np.ndarray, dict[str, int]]:
    """a + b on the ALU for int32 tensors in the packed layout (n, BATCH, BLOCK_OUT) (or (r, c, BATCH,
    BLOCK_OUT)); returns the int8 that STORE writes (the low 8 bits), like VTA's get-started tutorial."""
    return _elementwise(a, b, None, [("tensor_add",)], virtual_threads, return_counters)


@overload
def relu(a: np.ndarray, virtual_threads: int = ..., return_counters: Literal[False] = ...) -> np.ndarray: ...
@overload
def relu(a: np.ndarray, virtual_threads: int = ..., *,
         return_counters: Literal[True]) -> tuple[np.ndarray, dict[str, int]]: ...
@overload
def relu(a: np.ndarray, virtual_threads: int = ...,
         return_counters: bool = ...) -> np.ndarray | tuple[np.ndarray, dict[str, int]]: ...


def relu(a: np.ndarray, virtual_threads: int = 1,
         return_counters: bool = False) -> np.ndarray | tuple[np.ndarray, dict[str, int]]:
    """MAX 0 then MIN 127 on the ALU (VTA's test_relu); int8 result."""
    return _elementwise(a, None, None, [("imm", AluOp.MAX, 0), ("imm", AluOp.MIN, 127)], virtual_threads,
                        return_counters)


@overload
def add_bias(a: np.ndarray, bias: np.ndarray, virtual_threads: int = ...,
             return_counters: Literal[False] = ...) -> np.ndarray: ...
@overload
def add_bias(a: np.ndarray, bias: np.ndarray, virtual_threads: int = ..., *,
             return_counters: Literal[True]) -> tuple[np.ndarray, dict[str, int]]: ...
@overload
def add_bias(a: np.ndarray, bias: np.ndarray, virtual_threads: int = ...,
             return_counters: bool = ...) -> np.ndarray | tuple[np.ndarray, dict[str, int]]: ...


def add_bias(a: np.ndarray, bias: np.ndarray, virtual_threads: int = 1,
             return_counters: bool = False) -> np.ndarray | tuple[np.ndarray, dict[str, int]]:
    """a + bias per output channel on the ALU; int8 result (the low 8 bits).

    a: int32 (r, c, BATCH, BLOCK_OUT) with bias (c*BLOCK_OUT,) or packed (c, BATCH, BLOCK_OUT);
    or a: (n, BATCH, BLOCK_OUT) with bias (BLOCK_OUT,) or (1, BATCH, BLOCK_OUT).
    """
    return _elementwise(a, None, bias, [("bias_add",)], virtual_threads, return_counters)


@overload
def requantize(a: np.ndarray, shift: int = ..., bias: np.ndarray | None = ..., clip: bool = ...,
               virtual_threads: int = ..., return_counters: Literal[False] = ...) -> np.ndarray: ...
@overload
def requantize(a: np.ndarray, shift: int = ..., bias: np.ndarray | None = ..., clip: bool = ...,
               virtual_threads: int = ..., *, return_counters: Literal[True]) -> tuple[np.ndarray, dict[str, int]]: ...
@overload
def requantize(a: np.ndarray, shift: int = ..., bias: np.ndarray | None = ..., clip: bool = ...,
               virtual_threads: int = ...,
               return_counters: bool = ...) -> np.ndarray | tuple[np.ndarray, dict[str, int]]: ...


def requantize(a: np.ndarray, shift: int = 8, bias: np.ndarray | None = None, clip: bool = True,
               virtual_threads: int = 1, return_counters: bool = False) -> np.ndarray | tuple[np.ndarray, dict[str, int]]:
    """(a >> shift), optional + bias, clip to [0, 127] as MIN 127 then MAX 0, int8 (docs/architecture.md §6.4)."""
    if not 0 <= shift <= 31:
        raise ValueError(f"shift = {shift}; allowed range [0, 31]")
    ops: list[tuple] = [("imm", AluOp.SHR, shift)]
    if bias is not None:
        ops.append(("bias_add",))
    if clip:
        ops += [("imm", AluOp.MIN, 127), ("imm", AluOp.MAX, 0)]
    return _elementwise(a, None, bias, ops, virtual_threads, return_counters)




@overload
def add_rescaled(a: np.ndarray, b: np.ndarray, a_alu: Sequence[AluStep] = ..., b_alu: Sequence[AluStep] = ...,
                 alu: Sequence[AluStep] = ..., virtual_threads: int = ...,
                 return_counters: Literal[False] = ...) -> np.ndarray: ...
@overload
def add_rescaled(a: np.ndarray, b: np.ndarray, a_alu: Sequence[AluStep] = ..., b_alu: Sequence[AluStep] = ...,
                 alu: Sequence[AluStep] = ..., virtual_threads: int = ..., *,
                 return_counters: Literal[True]) -> tuple[np.ndarray, dict[str, int]]: ...
@overload
def add_rescaled(a: np.ndarray, b: np.ndarray, a_alu: Sequence[AluStep] = ..., b_alu: Sequence[AluStep] = ...,
                 alu: Sequence[AluStep] = ..., virtual_threads: int = ...,
                 return_counters: bool = ...) -> np.ndarray | tuple[np.ndarray, dict[str, int]]: ...


def add_rescaled(a: np.ndarray, b: np.ndarray, a_alu: Sequence[AluStep] = (), b_alu: Sequence[AluStep] = (),
                 alu: Sequence[AluStep] = (), virtual_threads: int = 1,
                 return_counters: bool = False) -> np.ndarray | tuple[np.ndarray, dict[str, int]]:
    """A residual add at two scales on the ALU: int8 a and b of one shape (any); ALU steps ``a_alu`` on
    a and ``b_alu`` on b (e.g. subtract the zero point, multiply), then a + b, then ``alu`` (rounding
    shift, zero point, saturation); returns the int8 that STORE writes (the low 8 bits), in the shape
    of a. Steps are (AluOp, immediate) (:mod:`sw.ops.epilogue`). :func:`sum_rescaled` of two operands."""
    return sum_rescaled([a, b], [a_alu, b_alu], alu, virtual_threads, return_counters)


@overload
def sum_rescaled(operands: Sequence[np.ndarray], operand_alu: Sequence[Sequence[AluStep]], alu: Sequence[AluStep] = ...,
                 virtual_threads: int = ..., return_counters: Literal[False] = ...) -> np.ndarray: ...
@overload
def sum_rescaled(operands: Sequence[np.ndarray], operand_alu: Sequence[Sequence[AluStep]], alu: Sequence[AluStep] = ...,
                 virtual_threads: int = ..., *, return_counters: Literal[True]) -> tuple[np.ndarray, dict[str, int]]: ...
@overload
def sum_rescaled(operands: Sequence[np.ndarray], operand_alu: Sequence[Sequence[AluStep]], alu: Sequence[AluStep] = ...,
                 virtual_threads: int = ...,
                 return_counters: bool = ...) -> np.ndarray | tuple[np.ndarray, dict[str, int]]: ...


def sum_rescaled(operands: Sequence[np.ndarray], operand_alu: Sequence[Sequence[AluStep]], alu: Sequence[AluStep] = (),
                 virtual_threads: int = 1,
                 return_counters: bool = False) -> np.ndarray | tuple[np.ndarray, dict[str, int]]:
    """An add of two or more int8 tensors of one shape at their own scales on the ALU: the steps
    ``operand_alu[i]`` on operand i, the sum, then ``alu``; returns the int8 that STORE writes, in the
    operands' shape.

    The operands travel as int8: the load module brings them into the inp SRAM and one GEMM with an
    identity weight block copies them, exact, into the accumulators (a GEMM micro-op per row and
    operand), where loading them as int32 into the acc SRAM would take the compute module four times
    the DMA time. The ALU steps follow while the next tile loads: each list of steps an
    :class:`~sw.ops.epilogue.Epilogue` as the config runs it (:meth:`~sw.ops.epilogue.Epilogue.lowered`: on a
    config with the post-processing unit, passes of it over the operand's rows, their parameter rows after the
    operands'), the sum's tensor adds ALU instructions."""
    _check_vt(virtual_threads)
    cfg = config()
    xs = [np.asarray(x) for x in operands]
    k = len(xs)
    if k < 2 or len(operand_alu) != k:
        raise ValueError(f"{k} operands and {len(operand_alu)} lists of their steps; sum_rescaled takes two or more "
                         f"operands, one list each")
    if any(x.shape != xs[0].shape for x in xs):
        raise ValueError(f"operands have shapes {[x.shape for x in xs]}; sum_rescaled needs one shape")
    if cfg.BLOCK_IN != cfg.BLOCK_OUT:
        raise ValueError(f"sum_rescaled copies through an identity block: BLOCK_IN ({cfg.BLOCK_IN}) must equal "
                         f"BLOCK_OUT ({cfg.BLOCK_OUT})")
    epis = [Epilogue(tuple(s)) for s in list(operand_alu) + [alu]]
    for e in epis:
        e.check(cfg, 0)
    B, blk = cfg.BATCH, cfg.BLOCK_OUT
    size = xs[0].size
    n = max(2, cdiv(size, B * blk))         # at least 2 blocks: the GEMM's 3-row hazard cycle over both
    epis = [e.lowered(cfg, n) for e in epis]
    params = [e.param_rows(1) for e in epis]            # each list's POST parameter rows, after the operands'

    def grid(x):
        g = np.zeros(n * B * blk, np.int8)
        g[:x.size] = x.ravel()
        return g.reshape(n, B, blk)

    h = _halves(cfg, virtual_threads)
    tr = min(n, h["inp"][0] // k, (h["acc"][0] - sum(params)) // k)
    if tr < 2:
        raise TileError(f"the inp and acc SRAMs ({cfg.INP_DEPTH}, {cfg.ACC_DEPTH} rows) cannot hold two rows of "
                        f"each of {k} operands per virtual thread" + (f" and {sum(params)} rows of POST parameters"
                                                                      if sum(params) else ""))
    INP, WGT = int(MemId.INP), int(MemId.WGT)
    cmd = rt.command_handle()
    handles = [_to_device(cmd, grid(x)) for x in xs] + [_to_device(cmd, np.eye(blk, dtype=np.int8))]
    wd = handles[-1]
    yd = rt.buffer_alloc(n * cfg.OUT_ELEM_BYTES)
    handles.append(yd)
    pds: list[int | None] = []              # each list's parameter rows in DRAM (Epilogue.pack), or None
    for e in epis:
        packed = e.pack(None, 1, cfg)
        pd = None if packed is None else _to_device(cmd, packed)
        if pd is not None:
            handles.append(pd)
        pds.append(pd)
    tiles = []
    try:
        for ti, r0 in enumerate(range(0, n, tr)):
            nr = min(tr, n - r0)
            if nr < 2:                          # a last tile of one row: end at the last row instead
                r0, nr = n - 2, 2
            half = ti % virtual_threads
            base = h["acc"][1][half]
            inp, wgt = h["inp"][1][half], h["wgt"][1][half]
            loads = [Load(handles[i], r0, nr, 1, nr, inp + i * nr, INP) for i in range(k)]
            loads.append(Load(wd, 0, 1, 1, 1, wgt, WGT))
            loops = ((1, nr, 1), (nr, 1, 0))
            par = [base + k * nr + sum(params[:i]) for i in range(k + 1)]
            # operand i's steps on its rows, the sum into operand 0's, the sum's steps there
            comps = [a for i in range(k) for a in epis[i].actions(base + i * nr, nr, 1, loops,
                                                                  TileOperands(pds[i], 1, 0, 1), vec_base=par[i])]
            comps += [_alu_tensor(base, base + i * nr, ((nr, 1, 1),)) for i in range(1, k)]
            comps += epis[k].actions(base, nr, 1, loops, TileOperands(pds[k], 1, 0, 1), vec_base=par[k])
            tiles.append(_Tile(acc=half, steps=[_Step(half, loads, [Gemm(_k_dense(base, inp, wgt, k * nr, 1, 1))])],
                               computes=comps, stores=[Store(base, yd, r0, nr, 1, nr)], reset=(base, k * nr),
                               gemm_uops=k * nr))
        counters = run_tiles(tiles)
        counters["tiles"] = len(tiles)
        y = _from_device(cmd, yd, (n * B * blk,), np.int8)
    finally:
        for h_ in handles:
            rt.buffer_free(h_)
    return _finish(y[:size].reshape(xs[0].shape), counters, return_counters)
