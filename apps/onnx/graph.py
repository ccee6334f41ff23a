"""Import an ONNX model into a graph of integer nodes and CPU islands (:class:`~apps.onnx.ir.QGraph`).

The QDQ form (what ``onnxruntime.quantization.quantize_static`` writes) keeps every operator in
float and brackets it with ``DequantizeLinear`` on its inputs and ``QuantizeLinear`` on its output.
The importer checks the model, infers every tensor's shape (``onnx.shape_inference``) and walks the
nodes in order. Each node goes to the handler of its operator (:mod:`apps.onnx.handlers`), which folds
its QDQ bracket into one integer node, or declines it with a reason: an operator without a handler,
a float input, a grouped convolution, ... A run of declined nodes between two integer nodes becomes one
CPU island (:mod:`apps.onnx.handlers.island`), which onnxruntime runs as written: nothing a valid
model contains is refused. ``DequantizeLinear`` and ``Constant`` nodes are not nodes of their own:
an integer node reads the quantized tensor behind a ``DequantizeLinear``, and an island takes the ones
it reads along.

Errors (:class:`~apps.onnx.ir.OnnxImportError`) are left for what no path can run: an unreadable or
malformed file, an opset below 13, a node onnxruntime cannot run either. They name the node.
"""

from __future__ import annotations

import numpy as np

from . import handlers
from .calibrate import input_shapes, is_float_model
from .handlers.base import Unsupported
from .handlers.island import POINTWISE, make_island
from .ir import OnnxImportError, QGraph, QNode
from .numerics import QParams
from .proto import attrs_of, read_model, to_array
from .qoperator import is_qoperator, to_qdq

__all__ = ["OnnxImportError", "QNode", "QGraph", "load", "Context", "read_model", "check_weight", "check_bias"]


def check_weight(w: np.ndarray, scales: np.ndarray, zero_points: np.ndarray, axis: int, channel_axis: int):
    """(int8 weight, float64 scales (1,) or (channels,)) of a dequantized constant weight ``w`` (its
    DequantizeLinear's ``scales``, ``zero_points`` and ``axis``) that the accelerator takes: int8, symmetric
    (zero points 0), per tensor or per output channel (``channel_axis`` of the weight); :class:`Unsupported`
    naming the rule otherwise. The rule of every front end (this importer, :mod:`apps.tvm_vta`)."""
    s = np.asarray(scales, np.float64).ravel()
    z = np.asarray(zero_points, np.int64).ravel()
    if w.dtype != np.int8:
        raise Unsupported(f"weight of type {w.dtype}; the accelerator takes int8 weights")
    if np.any(z != 0):
        raise Unsupported(f"asymmetric weight (zero point {int(z[np.nonzero(z)[0][0]])}); the accelerator "
                          f"takes symmetric weights (zero point 0)")
    if s.size > 1 and (axis % w.ndim) != channel_axis:
        raise Unsupported(f"weight scales along axis {axis}; per-channel scales must be along the "
                          f"output channels (axis {channel_axis})")
    return w, s


def check_bias(b: np.ndarray, scales: np.ndarray, zero_points: np.ndarray):
    """(int64 bias, float64 scales) of a dequantized constant bias that the accelerator takes (int32, zero point
    0); :class:`Unsupported` otherwise. Shared like :func:`check_weight`."""
    if b.dtype != np.int32 or np.any(np.asarray(zero_points) != 0):
        raise Unsupported(f"bias of type {b.dtype}; the accelerator takes an int32 bias with zero point 0")
    return b.astype(np.int64), np.asarray(scales, np.float64).ravel()


class Context:
    """The importer's view of a model's QDQ brackets, for the handlers' ``match``."""

    def __init__(self, model):
        import onnx

        g = model.graph
        self.model = model
        self.inits = {t.name: to_array(t) for t in g.initializer}
        for n in g.node:
            if n.op_type == "Constant" and n.output and "value" in attrs_of(n):
                self.inits[n.output[0]] = to_array(attrs_of(n)["value"])
        self.graph_inputs = {i.name: tuple(d.dim_value if d.HasField("dim_value") else 1
                                           for d in i.type.tensor_type.shape.dim)
                             for i in g.input if i.name not in self.inits}
        self.graph_outputs = [o.name for o in g.output]
        self.consumers: dict[str, list] = {}
        self.producer: dict[str, tuple] = {}
        for idx, n in enumerate(g.node):
            for i in n.input:
                self.consumers.setdefault(i, []).append(n)
            for o in n.output:
                self.producer[o] = (idx, n)
        try:
            inferred = onnx.shape_inference.infer_shapes(model)
        except Exception:  # noqa: BLE001 - inference is a help (MAC counts), not a requirement
            inferred = model
        self.shapes, self.types = {}, {}
        for vi in list(inferred.graph.value_info) + list(inferred.graph.input) + list(inferred.graph.output):
            t = vi.type.tensor_type
            if t.elem_type:
                self.types[vi.name] = onnx.helper.tensor_dtype_to_np_dtype(t.elem_type)
            if t.HasField("shape"):
                self.shapes[vi.name] = tuple(d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim)
        for k, v in self.inits.items():
            self.shapes[k], self.types[k] = v.shape, v.dtype
        # every tensor quantized per tensor (a QuantizeLinear output), and what each DequantizeLinear reads
        self.qparams: dict[str, QParams] = {}
        self.dq_act, self.dq_const = {}, {}
        for n in g.node:
            if n.op_type == "QuantizeLinear":
                qp = self._qparams(n)
                if qp is not None:
                    self.qparams[n.output[0]] = qp
        for n in g.node:
            if n.op_type == "DequantizeLinear":
                if n.input[0] in self.inits:
                    self.dq_const[n.output[0]] = n
                else:
                    self.dq_act[n.output[0]] = n.input[0]
        self.claimed: set[int] = set()           # ids of QuantizeLinear nodes folded into integer nodes
        self._pending: list = []

    # ------------------------------------------------------------------ helpers for handlers
    def _param(self, node, idx):
        name = node.input[idx] if len(node.input) > idx else ""
        return self.inits.get(name) if name else None

    def _qparams(self, node) -> QParams | None:
        scale, zp = self._param(node, 1), self._param(node, 2)
        if scale is None or scale.size != 1 or (zp is not None and zp.size != 1):
            return None
        dt = np.dtype(np.uint8) if zp is None else zp.dtype
        if dt not in (np.int8, np.uint8):
            return None
        return QParams(float(scale.reshape(())), 0 if zp is None else int(zp.reshape(())),
                       "int8" if dt == np.int8 else "uint8")

    def act_input(self, node, idx: int) -> str:
        """The int8/uint8 tensor behind input ``idx`` (a DequantizeLinear of a per-tensor quantized tensor)."""
        name = node.input[idx]
        q = self.dq_act.get(name)
        if q is None:
            raise Unsupported(f"input {idx} ({name!r}) is not a dequantized int8/uint8 activation")
        if q not in self.qparams:
            raise Unsupported(f"input {name!r} dequantizes {q!r}, which is not quantized per tensor")
        return q

    def const_input(self, node, idx: int, what: str):
        """(int array, scales (1,) or (C,), zero points, axis) of a DequantizeLinear of a constant."""
        name = node.input[idx]
        dq = self.dq_const.get(name)
        if dq is None:
            raise Unsupported(f"{what} {name!r} is not a DequantizeLinear of a constant")
        scale, zp = self._param(dq, 1), self._param(dq, 2)
        if scale is None:
            raise Unsupported(f"{what} {name!r}: its scale is not a constant")
        zp = np.zeros(scale.shape, np.int64) if zp is None else zp.astype(np.int64)
        return self.inits[dq.input[0]], scale.astype(np.float64).ravel(), zp.ravel(), attrs_of(dq).get("axis", 1)

    def weight(self, node, idx: int, channel_axis: int):
        """(int8 weight, scales (1,) or (channels,)): symmetric, per tensor or per output channel
        (``channel_axis`` of the weight)."""
        w, s, z, axis = self.const_input(node, idx, "weight")
        return check_weight(w, s, z, axis, channel_axis)

    def bias(self, node, idx: int):
        """(int64 bias, scales) or (None, None)."""
        if len(node.input) <= idx or node.input[idx] == "":
            return None, None
        b, s, z, _ = self.const_input(node, idx, "bias")
        return check_bias(b, s, z)

    def output_q(self, node, index: int = 0) -> str:
        """The quantized tensor of ``node``'s output ``index``: every consumer of that float output must be a
        per-tensor QuantizeLinear (the first is the output; others become ``requantize`` nodes)."""
        out = node.output[index]
        if not out:
            raise Unsupported(f"output {index} left unnamed")
        users = self.consumers.get(out, [])
        if out in self.graph_outputs:
            raise Unsupported(f"output {out!r} is a float graph output")
        if not users or any(u.op_type != "QuantizeLinear" or u.output[0] not in self.qparams for u in users):
            raise Unsupported(f"output {out!r} is not (only) quantized per tensor by QuantizeLinear")
        first = users[0].output[0]
        for u in users:
            self._pending.append(("claim", u))
        for u in users[1:]:
            self._pending.append(("extra", QNode("requantize", u.name or u.output[0], [first], [u.output[0]])))
        return first

    def only_output(self, node) -> None:
        if len([o for o in node.output if o]) > 1:
            raise Unsupported(f"{len(node.output)} outputs")


def _split_pointwise(run: list, dequantized: dict) -> list[list]:
    """A run of declined nodes as islands: each connected part that is a chain of pointwise operators (two
    LeakyRelus after two convs) an island of its own, which the conv before it may take into its epilogue
    (:func:`apps.onnx.runner.table_tails`), the other parts together, as one onnxruntime session. Nodes are
    connected through the tensors they pass, also through a QuantizeLinear / DequantizeLinear pair
    (``dequantized``: a DequantizeLinear's output -> its input)."""
    part_of = list(range(len(run)))

    def root(i):
        while part_of[i] != i:
            part_of[i] = part_of[part_of[i]]
            i = part_of[i]
        return i

    producer = {o: i for i, n in enumerate(run) for o in n.output if o}
    for i, n in enumerate(run):
        for t in n.input:
            t = t if t in producer else dequantized.get(t, t)
            if t in producer:
                part_of[root(i)] = root(producer[t])
    parts: dict[int, list] = {}
    for i, n in enumerate(run):
        parts.setdefault(root(i), []).append(n)
    alone = [p for p in parts.values() if all(n.op_type in POINTWISE for n in p)]
    rest = [n for n in run if not any(n in p for p in alone)]
    return ([rest] if rest else []) + alone if len(alone) > 1 or rest else [run]


def load(model) -> QGraph:
    """Import an ONNX model (a path or an ``onnx.ModelProto``) into a :class:`QGraph`."""
    model = read_model(model)
    if is_float_model(model):
        shapes = ", ".join(f"{k} {list(v)}" for k, v in input_shapes(model).items())
        raise OnnxImportError(f"a float model (nothing quantized: no QDQ, QOperator or dynamic quantization): "
                              f"quantize it first with --calibrate DATA.npy (N samples of the input: {shapes}) "
                              f"[--per-channel] [--format qoperator], or with --format dynamic (no data), or "
                              f"apps.onnx.calibrate.quantize_file(path, data)")
    if is_qoperator(model):
        model = to_qdq(model)
    ctx = Context(model)
    nodes: list[QNode] = []
    island: list = []
    reasons: dict[int, str] = {}

    def flush():
        if island:
            for part in _split_pointwise(island, ctx.dq_act):
                nodes.append(make_island(part, {id(n): reasons[id(n)] for n in part}, ctx, len(nodes)))
            island.clear()

    for n in model.graph.node:
        if n.op_type == "Constant" or id(n) in ctx.claimed:
            continue
        if n.op_type == "DequantizeLinear" and n.output[0] not in ctx.graph_outputs:
            continue                            # read through by integer nodes, or pulled into an island
        qn, reason = None, f"no handler for {n.op_type}" + (f" (domain {n.domain})" if n.domain else "")
        why = []
        for handler in handlers.for_op(n.op_type):        # the first handler that takes the node
            ctx._pending = []
            try:
                qn = handler.match(n, ctx)
                break
            except Unsupported as e:
                why.append(str(e))
        if why and qn is None:
            reason = "; ".join(why)
        if qn is None:
            reasons[id(n)] = reason
            island.append(n)
            continue
        flush()
        nodes.append(qn)
        for what, item in ctx._pending:
            if what == "claim":
                ctx.claimed.add(id(item))
            else:
                nodes.append(item)
    flush()
    produced = {o for nd in nodes for o in nd.outputs} | set(ctx.graph_inputs)
    missing = [o for o in ctx.graph_outputs if o not in produced]
    if missing:
        raise OnnxImportError(f"graph outputs {missing} are produced by no node")
    return QGraph(nodes, ctx.qparams, ctx.graph_inputs, list(ctx.graph_outputs), ctx.shapes)
