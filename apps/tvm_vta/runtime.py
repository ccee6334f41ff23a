"""The accelerator's side of a compiled TVM module: the tvm-ffi functions its offloaded layers call.

Importing this module registers them (:data:`FUNCTIONS`); it is all that a process loading an exported library
needs besides TVM's runtime (:func:`load`, :func:`run_library`). It imports nothing of TVM's compiler.

An offloaded layer is, in the compiled module::

    R.call_dps_packed("vta.qdq.conv2d", (spec, x_q, [other_q,] weight, w_scale, [bias, b_scale]), out)

``spec`` is a JSON string (:class:`tvm.ir.StringImm` in the IR, a constant of the executable): the layer's kind,
the ONNX names, the quantization of its activations and output (scale as the model's float32, zero point, int8 /
uint8), its attributes (pads, strides, ...), the names of the array arguments that follow the activations and a
SHA-1 digest of them. The arrays are the model's own constants (int8 weights, float32 scales, int32 bias), held
by the executable. On a layer's first call in a process, :func:`layers_of` builds from them the
:class:`apps.onnx.ir.QNode` that the ONNX importer builds for the same node (the handlers' ``make_node``) and
prepares it with :func:`apps.onnx.layers.prepare` (the requantization of :mod:`apps.onnx.numerics`), for the
config of the current runtime target; the prepared layers are cached per (spec, config). Each call then runs
:func:`apps.onnx.runner.run` on them, the importer's runner: conv, transposed conv, dense, activation matmul and
residual add lowered through :mod:`sw.ops` exactly as ``apps.onnx`` lowers them (the residual add fused into
the conv's epilogue where the runner fuses it), on whatever target is current: the golden model, the RTL inside
``cosim.run``, or a board. The micro-kernels are JIT-compiled by the runtime at their first use.

So the requantization exists once, in :mod:`apps.onnx`; the executable carries only the model's values, and the
integer parameters are derived from them at run time by the same code that derives them for ``apps.onnx``.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from contextlib import contextmanager

import numpy as np
import tvm_ffi

from sw.runtime import current_config

from ..onnx.handlers import for_kind
from ..onnx.ir import QGraph, QNode
from ..onnx.layers import from_onnx_dtype, prepare, reference, to_onnx_dtype
from ..onnx.numerics import QParams
from ..onnx.runner import run as run_layers

__all__ = ["FUNCTIONS", "OPS", "SpecError", "layers_of", "digest", "register", "calls", "tracing", "load",
           "run_library", "VIRTUAL_THREADS"]

VIRTUAL_THREADS = 2
"""Virtual threads of the offloaded layers (as ``apps.onnx.Model.run``'s default)."""

OPS = ("conv2d", "conv2d_add", "conv2d_transpose", "dense", "matmul", "add", "add_const")
"""The offloaded layer kinds: ``vta.qdq.<op>``."""

FUNCTIONS = tuple(f"vta.qdq.{op}" for op in OPS)

_KIND = {"conv2d": "conv", "conv2d_add": "conv", "conv2d_transpose": "deconv", "dense": "dense", "matmul": "matmul",
         "add": "add", "add_const": "add_const"}

calls: Counter = Counter()
"""How often each ``vta.qdq.*`` function ran in this process (name -> count)."""

_prepared: dict = {}
_specs: dict = {}
_trace: list | None = None
_trace_opts: dict = {}


class SpecError(ValueError):
    """A layer's spec or arguments that do not describe a layer (a damaged or foreign library)."""


def digest(arrays) -> str:
    """SHA-1 of the arrays' dtypes, shapes and bytes, in order (the spec's ``digest``)."""
    h = hashlib.sha1()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _qp(spec: dict, field: str, value) -> QParams:
    try:
        scale, zp, dtype = value
        return QParams(float(scale), int(zp), str(dtype))
    except (TypeError, ValueError) as err:
        raise SpecError(f"layer {spec.get('name')!r}: {field} = {value!r}; must be [scale > 0, zero point, "
                        f"'int8' | 'uint8'] ({err})") from None


def _field(spec: dict, key: str):
    if key not in spec:
        raise SpecError(f"layer spec without {key!r}: has {sorted(spec)}")
    return spec[key]


def layers_of(spec: dict, arrays: list, alu_mul: bool) -> list:
    """The prepared :class:`apps.onnx.layers.Layer` list of an offloaded layer (two for ``conv2d_add``: the conv
    and the add), built from ``spec`` and its ``arrays`` (in ``spec['arrays']`` order) by the importer's own
    node builders and :func:`apps.onnx.layers.prepare`; its graph's tensors are ``x0`` [``x1``] -> ``y``."""
    op = _field(spec, "op")
    if op not in OPS:
        raise SpecError(f"op = {op!r}; allowed: {', '.join(OPS)}")
    names = list(_field(spec, "arrays"))
    if len(names) != len(arrays):
        raise SpecError(f"layer {spec.get('name')!r}: {len(arrays)} arrays for the {len(names)} of its spec {names}")
    arr = dict(zip(names, (np.asarray(x) for x in arrays)))
    a = spec.get("attrs", {})
    inputs = [_qp(spec, f"inputs[{i}]", v) for i, v in enumerate(_field(spec, "inputs"))]
    qparams = {f"x{i}": q for i, q in enumerate(inputs)}
    qparams["y"] = _qp(spec, "output", _field(spec, "output"))
    name = str(_field(spec, "name"))

    def f64(key):
        return np.asarray(arr[key], np.float64).ravel()
    bias = arr["bias"].astype(np.int64) if "bias" in arr else None
    b_scale = f64("b_scale") if "b_scale" in arr else None
    handler = for_kind(_KIND[op])
    if op in ("conv2d", "conv2d_add"):
        conv_out = "c" if op == "conv2d_add" else "y"
        nodes = [handler.make_node(name, "x0", conv_out, arr["weight"], f64("w_scale"), bias, b_scale, a["pads"],
                                   a["strides"], a["groups"])]
        if op == "conv2d_add":
            qparams["c"] = _qp(spec, "conv_output", _field(spec, "conv_output"))
            ins = ["c", "x1"] if int(_field(spec, "index")) == 0 else ["x1", "c"]
            nodes.append(QNode("add", str(_field(spec, "add_name")), ins, ["y"]))
    elif op == "conv2d_transpose":
        nodes = [handler.make_node(name, "x0", "y", arr["weight"], f64("w_scale"), bias, b_scale, a["pads"],
                                   a["strides"], a["output_padding"], a["group"])]
    elif op == "dense":
        w = arr["weight"] if a["transposed"] else arr["weight"].T       # (M, K) as the importer holds it
        nodes = [handler.make_node(name, "x0", "y", w, f64("w_scale"), bias, b_scale, True)]
    elif op == "add_const":
        nodes = [handler.make_node(name, "x0", "y", a["position"], arr["constant"], arr["c_scale"],
                                   arr["c_zero_point"])]
    else:
        nodes = [QNode(_KIND[op], name, [f"x{i}" for i in range(len(inputs))], ["y"])]
    shapes = {k: tuple(v) for k, v in spec.get("shapes", {}).items()}
    return prepare(QGraph(nodes, qparams, {}, ["y"], shapes), alu_mul)


def _spec(spec_text: str) -> dict:
    spec = _specs.get(spec_text)
    if spec is None:
        try:
            spec = json.loads(spec_text)
        except json.JSONDecodeError as err:
            raise SpecError(f"a layer spec that is not JSON ({err}): {spec_text[:80]!r}") from None
        if not isinstance(spec, dict):
            raise SpecError(f"a layer spec must be a JSON object, not {type(spec).__name__}")
        _specs[spec_text] = spec
    return spec


def _call(function: str, spec_text, *args):
    """``vta.qdq.<op>(spec, *activations, *arrays, out)``: run the layer on the current target, write ``out``."""
    spec_text = str(spec_text)
    spec = _spec(spec_text)
    if f"vta.qdq.{spec.get('op')}" != function:
        raise SpecError(f"{function} called with the spec of a {spec.get('op')!r} layer")
    inputs = [_qp(spec, f"inputs[{i}]", v) for i, v in enumerate(_field(spec, "inputs"))]
    if len(args) != len(inputs) + len(_field(spec, "arrays")) + 1:
        raise SpecError(f"{function} ({spec.get('name')!r}): {len(args)} arguments after the spec; its spec takes "
                        f"{len(inputs)} activations, {len(spec['arrays'])} arrays and the output")
    out = args[-1]
    cfg = current_config()
    key = (spec_text, cfg)
    layers = _prepared.get(key)
    if layers is None:
        arrays = [t.numpy() for t in args[len(inputs):-1]]
        if spec.get("digest") != digest(arrays):
            raise SpecError(f"layer {spec.get('name')!r}: its arrays do not match the spec's digest (another "
                            f"model's constants?)")
        layers = _prepared[key] = layers_of(spec, arrays, bool(cfg.ALU_MUL))
    ins = {f"x{i}": from_onnx_dtype(t.numpy(), q) for i, (t, q) in enumerate(zip(args[:len(inputs)], inputs))}
    env, records = run_layers(layers, ins, VIRTUAL_THREADS, keep=["y"])
    y = to_onnx_dtype(env["y"], _qp(spec, "output", spec["output"]))
    calls[function] += 1
    if _trace is not None:
        entry = {"op": spec["op"], "name": spec["name"], "tensor": spec.get("tensor"), "records": records}
        if _trace_opts.get("check"):
            entry["exact"] = bool(np.array_equal(reference(layers, ins)["y"], env["y"]))
        if _trace_opts.get("keep_tensors"):
            entry["inputs"], entry["output"] = dict(ins), env["y"]
        _trace.append(entry)
    out.copyfrom(np.ascontiguousarray(y))


def register() -> None:
    """Register :data:`FUNCTIONS` as tvm-ffi globals (done on import)."""
    for name in FUNCTIONS:
        tvm_ffi.register_global_func(name, (lambda n: lambda spec, *args: _call(n, spec, *args))(name), override=True)


register()


@contextmanager
def tracing(check: bool = False, keep_tensors: bool = False):
    """Record each offloaded call of the block: a list of dicts with ``op``, ``name`` (ONNX node), ``tensor``
    (its quantized output), ``records`` (the runner's rows: where, MACs, counters); with ``check``, ``exact``: the
    output equals :func:`apps.onnx.layers.reference` of its inputs; with ``keep_tensors``, ``inputs`` and
    ``output`` (canonical int8)."""
    global _trace
    previous, previous_opts = _trace, dict(_trace_opts)
    _trace = []
    _trace_opts.clear()
    _trace_opts.update(check=check, keep_tensors=keep_tensors)
    try:
        yield _trace
    finally:
        _trace = previous
        _trace_opts.clear()
        _trace_opts.update(previous_opts)


def load(path: str):
    """A Relax VM on the CPU over the exported library ``path``."""
    import tvm.runtime
    from tvm.runtime import vm as _vm

    return _vm.VirtualMachine(tvm.runtime.load_module(str(path)), tvm.cpu())


def _numpy_outputs(value) -> list:
    if hasattr(value, "numpy"):
        return [value.numpy()]
    return [o for v in value for o in _numpy_outputs(v)]


def run_library(path: str, inputs: list, check: bool = False, keep_tensors: bool = False) -> tuple[list, list]:
    """Run ``main`` of the exported library ``path`` on ``inputs`` (numpy arrays in the graph inputs' order) on
    the current runtime target; returns (outputs as numpy arrays, the offloaded calls' trace, :func:`tracing`).
    Module-level, so that ``runners.run("rtl", run_library, path, inputs)`` runs it on the RTL."""
    import tvm.runtime

    vm = load(path)
    args = [tvm.runtime.tensor(np.ascontiguousarray(x), tvm.cpu()) for x in inputs]
    with tracing(check, keep_tensors) as trace:
        out = vm["main"](*args)
    return _numpy_outputs(out), list(trace)
