"""TVM 0.27 front end: int8 Relax graphs whose dense and conv2d layers run on VTA through sw.ops.

Needs the ``tvm`` extra (``pip install -e '.[tvm]'``). The flow:

1. :func:`relax_module` writes a quantized network (:class:`apps.digits.QuantNet`) as a Relax
   ``IRModule`` in plain Relax operators, with exactly our requantization semantics::

       requantized layer:  astype(clip(add(right_shift(matmul(x, permute_dims(W), out_dtype=int32), s), b), 0, 127), int8)
                           (conv2d: nn.conv2d(x, W, padding=p, out_dtype=int32), bias as (1, O, 1, 1))
       readout:            add(matmul(x, permute_dims(W), out_dtype=int32), b)             -> int32 logits

   ``right_shift`` on int32 is arithmetic and ``clip`` then ``astype`` equals VTA's MIN/MAX and
   STORE, so TVM's own CPU build of this module (``tvm.compile(mod, "llvm")``) computes what
   :func:`apps.digits.reference` defines, bit for bit.
2. :func:`offload` rewrites those patterns (Relax dataflow patterns, ``rewrite_call``) into
   ``relax.call_dps_packed`` of the tvm-ffi global functions ``vta.dense_int8``,
   ``vta.conv2d_int8`` and ``vta.gemm_int8`` (registered by importing this module). A matched
   pattern that VTA cannot run (not 2-D / 4-D NCHW, symbolic shapes, non-constant weights, a shift
   outside 0..31, dilation or groups) raises :class:`UnsupportedError` naming the layer and the
   reason, so nothing falls back to the CPU silently.
3. :func:`build` compiles with ``tvm.compile`` and returns a Relax VM; the offloaded functions call
   :func:`sw.ops.dense`, :func:`sw.ops.conv2d` and :func:`sw.ops.gemm` on the current runtime
   target (the golden model, or the RTL inside ``cosim.run``). :data:`calls` counts their calls.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import tvm
import tvm_ffi
from tvm import relax
from tvm.relax.dpl import is_const, is_op, rewrite_call, wildcard

from sw import ops

from ..digits import add_counters

__all__ = ["relax_module", "offload", "build", "run", "run_digits", "calls", "register", "UnsupportedError",
           "FUNCTIONS"]

VIRTUAL_THREADS = 2
"""Virtual threads of the offloaded operators (1 or 2: loads overlap compute with 2)."""

FUNCTIONS = ("vta.dense_int8", "vta.conv2d_int8", "vta.gemm_int8")

calls: Counter = Counter()
"""How often each offloaded function ran (name -> count); tests use it to rule out a CPU fallback."""

last_counters: dict = {}
"""Accelerator counters summed over the offloaded calls since :func:`run` started."""


class UnsupportedError(ValueError):
    """A matched int8 layer that VTA cannot run (the message names the layer and why)."""


# ---------------------------------------------------------------------- the offloaded functions
def _np(t):
    return np.asarray(t.numpy())


def _check(name, cond, msg):
    if not cond:
        raise UnsupportedError(f"{name}: {msg}")


def _dense_int8(x, w, b, shift, out):
    """out = clip((x . w^T) >> shift + b, 0, 127) as int8, on VTA (ops.dense)."""
    xn, wn, bn = _np(x), _np(w), _np(b)
    _check("vta.dense_int8", xn.ndim == 2 and wn.ndim == 2 and xn.shape[1] == wn.shape[1],
           f"needs data (N, K) and weight (M, K); got {xn.shape} and {wn.shape}")
    y, c = ops.dense(xn, wn, bn, int(shift), True, virtual_threads=VIRTUAL_THREADS, return_counters=True)
    _done("vta.dense_int8", c)
    out.copyfrom(np.ascontiguousarray(y))


def _conv2d_int8(x, w, b, shift, stride, padding, out):
    """out = clip(conv2d(x, w) >> shift + b, 0, 127) as int8 (NCHW / OIHW), on VTA (ops.conv2d)."""
    xn, wn, bn = _np(x), _np(w), _np(b)
    y, c = ops.conv2d(xn, wn, bn.reshape(-1), int(stride), int(padding), int(shift), True,
                      virtual_threads=VIRTUAL_THREADS, return_counters=True)
    _done("vta.conv2d_int8", c)
    out.copyfrom(np.ascontiguousarray(y))


def _gemm_int8(x, w, b, out):
    """out = x . w^T + b in exact int32 (ops.gemm, bias added on the host)."""
    xn, wn, bn = _np(x), _np(w), _np(b)
    _check("vta.gemm_int8", xn.ndim == 2 and wn.ndim == 2 and xn.shape[1] == wn.shape[1],
           f"needs data (N, K) and weight (M, K); got {xn.shape} and {wn.shape}")
    acc, c = ops.gemm(xn, wn, virtual_threads=VIRTUAL_THREADS, return_counters=True)
    _done("vta.gemm_int8", c)
    out.copyfrom((acc.astype(np.int64) + bn.astype(np.int64).reshape(1, -1)).astype(np.int32))


def _done(name, counters):
    calls[name] += 1
    add_counters(last_counters, counters)


def register():
    """Register the offloaded functions as tvm-ffi globals (done on import; register before the VM)."""
    for name, fn in zip(FUNCTIONS, (_dense_int8, _conv2d_int8, _gemm_int8)):
        tvm_ffi.register_global_func(name, fn, override=True)


register()


# ---------------------------------------------------------------------- Relax graph of a QuantNet
def _requant(x, shift, bias_const):
    y = relax.op.right_shift(x, relax.const(int(shift), "int32"))
    y = relax.op.add(y, bias_const)
    return relax.op.astype(relax.op.clip(y, 0, 127), "int8")


def relax_module(net, batch: int) -> tvm.IRModule:
    """The quantized network as a Relax module ``main(x: int8 (batch, *input_shape)) -> int32 logits``."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((batch,) + tuple(net.input_shape), "int8"))
    with bb.function("main", [x]):
        with bb.dataflow():
            h = x
            for layer in net.layers:
                w = relax.const(np.ascontiguousarray(layer.weight))
                if layer.kind == "conv2d":
                    acc = bb.emit(relax.op.nn.conv2d(h, w, strides=1, padding=layer.padding, out_dtype="int32"))
                    b = relax.const(layer.bias.astype(np.int32).reshape(1, -1, 1, 1))
                    h = bb.emit(_requant(acc, layer.shift, b))
                    continue
                if len(h.ty.shape) != 2:
                    h = bb.emit(relax.op.reshape(h, (batch, -1)))
                acc = bb.emit(relax.op.matmul(h, relax.op.permute_dims(w), out_dtype="int32"))
                b = relax.const(layer.bias.astype(np.int32))
                if layer.kind == "dense":
                    h = bb.emit(_requant(acc, layer.shift, b))
                else:
                    h = bb.emit(relax.op.add(acc, b))
            out = bb.emit_output(h)
        bb.emit_func_output(out)
    return bb.get()


# ---------------------------------------------------------------------- pattern rewrite
def _static_shape(name, expr):
    shape = getattr(expr.ty, "shape", None)
    dims = []
    for d in (shape if shape is not None else ()):
        if not (isinstance(d, int) or type(d).__name__ == "IntImm"):
            raise UnsupportedError(f"{name}: needs static shapes; got {shape}")
        dims.append(int(d))
    if shape is None:
        raise UnsupportedError(f"{name}: needs a tensor of known shape")
    return tuple(dims), str(expr.ty.dtype)


def _const_int(name, expr, what):
    value = np.asarray(expr.value.numpy())
    if value.size != 1 or value.dtype.kind not in "iu":
        raise UnsupportedError(f"{name}: {what} must be one integer constant; got {value.dtype} {value.shape}")
    return int(value.reshape(-1)[0])


def _prim_int(expr):
    """The integer of a PrimValue (or constant) argument, or None when it is not a known integer."""
    v = getattr(expr, "value", expr)
    v = getattr(v, "value", v)
    if hasattr(v, "numpy"):
        v = v.numpy()
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _patterns():
    p = {k: wildcard() for k in ("x", "lo", "hi")}
    p.update({k: is_const() for k in ("w", "b", "s")})
    dense = is_op("relax.matmul")(p["x"], is_op("relax.permute_dims")(p["w"]))
    conv = is_op("relax.nn.conv2d")(p["x"], p["w"])
    acc = dense | conv
    req = is_op("relax.astype")(is_op("relax.clip")(
        is_op("relax.add")(is_op("relax.right_shift")(acc, p["s"]), p["b"]), p["lo"], p["hi"]))
    readout = is_op("relax.add")(dense, p["b"])
    return p, dense, conv, req, readout


def _requant_rewriter(p, dense, conv):
    def rewrite(expr, m):
        call = m[conv] if conv in m else m[dense]
        kind = "vta.conv2d_int8" if conv in m else "vta.dense_int8"
        xshape, xdtype = _static_shape(kind, m[p["x"]])
        wshape, wdtype = _static_shape(kind, m[p["w"]])
        oshape, odtype = _static_shape(kind, expr)
        _check(kind, xdtype == "int8" and wdtype == "int8", f"needs int8 data and weight; got {xdtype}, {wdtype}")
        _check(kind, str(call.attrs.out_dtype) == "int32", f"needs an int32 accumulator; got {call.attrs.out_dtype}")
        _check(kind, odtype == "int8", f"needs an int8 result; got {odtype}")
        shift = _const_int(kind, m[p["s"]], "the shift")
        _check(kind, 0 <= shift < 32, f"the shift must be in 0..31; got {shift}")
        lo, hi = _prim_int(m[p["lo"]]), _prim_int(m[p["hi"]])
        _check(kind, (lo, hi) == (0, 127), f"the clip must be [0, 127] (VTA's requantization); got [{lo}, {hi}]")
        bias = np.asarray(m[p["b"]].value.numpy())
        _check(kind, bias.dtype == np.int32, f"the bias must be int32; got {bias.dtype}")
        if kind == "vta.dense_int8":
            _check(kind, len(xshape) == 2 and len(wshape) == 2,
                   f"supports data (N, K) x weight (M, K) only; got data {xshape}, weight {wshape}")
            _check(kind, bias.shape in ((wshape[0],), (1, wshape[0])),
                   f"the bias must have one value per output ({wshape[0]},); got {bias.shape}")
            args = [m[p["x"]], m[p["w"]], relax.const(bias.reshape(-1)), relax.prim_value(shift)]
        else:
            a = call.attrs
            _check(kind, len(xshape) == 4 and len(wshape) == 4, f"needs 4-D data and weight; got {xshape}, {wshape}")
            _check(kind, (str(a.data_layout), str(a.kernel_layout), str(a.out_layout)) == ("NCHW", "OIHW", "NCHW"),
                   f"supports NCHW / OIHW only; got {a.data_layout} / {a.kernel_layout} / {a.out_layout}")
            _check(kind, int(a.groups) == 1, f"supports groups = 1 only; got {a.groups}")
            _check(kind, all(int(d) == 1 for d in a.dilation), f"supports dilation 1 only; got {list(a.dilation)}")
            strides = [int(s) for s in a.strides]
            pads = [int(v) for v in a.padding]
            _check(kind, len(set(strides)) == 1, f"needs equal strides; got {strides}")
            _check(kind, len(set(pads)) == 1, f"needs the same padding on every side; got {pads}")
            _check(kind, bias.size == wshape[0] and bias.shape[-2:] in ((1, 1),) and bias.ndim == 4,
                   f"the bias must be (1, {wshape[0]}, 1, 1); got {bias.shape}")
            args = [m[p["x"]], m[p["w"]], relax.const(bias.reshape(-1)), relax.prim_value(shift),
                    relax.prim_value(strides[0]), relax.prim_value(pads[0])]
        return relax.call_dps_packed(kind, args, out_ty=expr.ty)
    return rewrite


def _readout_rewriter(p, dense):
    def rewrite(expr, m):
        kind = "vta.gemm_int8"
        xshape, xdtype = _static_shape(kind, m[p["x"]])
        wshape, wdtype = _static_shape(kind, m[p["w"]])
        _check(kind, xdtype == "int8" and wdtype == "int8", f"needs int8 data and weight; got {xdtype}, {wdtype}")
        _check(kind, str(m[dense].attrs.out_dtype) == "int32",
               f"needs an int32 accumulator; got {m[dense].attrs.out_dtype}")
        _check(kind, len(xshape) == 2 and len(wshape) == 2,
               f"supports data (N, K) x weight (M, K) only; got data {xshape}, weight {wshape}")
        bias = np.asarray(m[p["b"]].value.numpy())
        _check(kind, bias.dtype == np.int32 and bias.size == wshape[0] and bias.shape[-1] == wshape[0],
               f"the bias must be int32 ({wshape[0]},); got {bias.dtype} {bias.shape}")
        return relax.call_dps_packed(kind, [m[p["x"]], m[p["w"]], relax.const(bias.reshape(-1))], out_ty=expr.ty)
    return rewrite


def _collecting(rewriter, errors):
    """Wrap a rewriter so that UnsupportedError reaches the caller as itself (not through the FFI)."""
    def rewrite(expr, m):
        try:
            return rewriter(expr, m)
        except UnsupportedError as err:
            errors.append(err)
            return expr
    return rewrite


def offload(mod: tvm.IRModule, strict: bool = True) -> tvm.IRModule:
    """Rewrite every requantized int8 dense / conv2d and every int8 readout of ``main`` into VTA calls.

    A matched layer that VTA cannot run raises :class:`UnsupportedError`; with ``strict=False`` it
    stays on the CPU instead (:data:`calls` then shows what ran on VTA).
    """
    errors: list = []
    p, dense, conv, req, readout = _patterns()
    func = rewrite_call(req, _collecting(_requant_rewriter(p, dense, conv), errors), mod["main"])
    p, dense, conv, req, readout = _patterns()
    func = rewrite_call(readout, _collecting(_readout_rewriter(p, dense), errors), func)
    if errors and strict:
        raise errors[0]
    out = tvm.IRModule(dict(mod.functions))
    out["main"] = func
    return out


def build(mod: tvm.IRModule, target: str = "llvm"):
    """``tvm.compile`` the module and return a Relax VM on the CPU (the VTA calls run through tvm-ffi)."""
    register()
    dev = tvm.cpu()
    return relax.VirtualMachine(tvm.compile(mod, target=target), dev)


def run(vm, x: np.ndarray) -> np.ndarray:
    """Run ``main`` of a VM on a numpy input; returns a numpy array."""
    last_counters.clear()
    return vm["main"](tvm.runtime.tensor(np.ascontiguousarray(x), tvm.cpu())).numpy()


def run_digits(net, x_q, offloaded=True):
    """The digits network through TVM: (int32 logits, calls of each VTA function, accelerator counters).

    Module-level so that ``cosim.run(run_digits, net, x_q)`` runs the offloaded layers on the RTL.
    """
    mod = relax_module(net, len(x_q))
    if offloaded:
        mod = offload(mod)
    before = Counter(calls)
    x = np.asarray(x_q).reshape((len(x_q),) + tuple(net.input_shape))
    out = run(build(mod), x)
    return out, dict(calls - before), dict(last_counters)
