"""CPU islands: the nodes no handler takes, run by onnxruntime as written.

The importer (:mod:`apps.onnx.graph`) gathers a run of declined nodes between two integer nodes into
one island: a sub-graph of the original nodes, with the ``DequantizeLinear`` and ``Constant`` nodes
that feed it pulled in (copied when two islands read the same one) and the constants it reads, cut
at the tensors it reads and writes. One onnxruntime CPU session per island (graph optimizations off,
as in the comparison with onnxruntime) runs it exactly as onnxruntime runs those nodes inside the
whole model; the numpy reference of the graph uses the same result, so a run with islands is still
equal to the reference bit for bit. An operator of any domain onnxruntime knows runs, custom domains
included (the sub-graph keeps the model's opset imports). Inputs are the quantized tensors in their
ONNX type (int8 / uint8), float graph inputs and other islands' float outputs.
"""

from __future__ import annotations

import numpy as np
from onnx import numpy_helper

from ..ir import OnnxImportError, QNode
from ..numerics import from_onnx_dtype, to_onnx_dtype
from .base import Handler
from .registry import register

__all__ = ["Island", "make_island", "node_macs", "IslandHandler"]


class Island:
    """A sub-graph run by onnxruntime; picklable (the session is made again in each process)."""

    def __init__(self, name: str, nodes: list, inputs: list[str], outputs: list[str], initializers: list,
                 opsets: list, ir_version: int, input_types: dict, reasons: dict[str, str], macs: int = 0):
        self.name = name
        self.nodes = list(nodes)
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.initializers = list(initializers)
        self.opsets = list(opsets)
        self.ir_version = int(ir_version)
        self.input_types = dict(input_types)      # name -> numpy dtype
        self.reasons = dict(reasons)              # own node name -> why no handler took it
        self.macs = int(macs)
        self._session = None
        self._macs_by_shape: dict = {}

    @property
    def ops(self) -> list[str]:
        """The operator types of the island's own nodes (not the DequantizeLinear / Constant pulled in)."""
        return [_op_name(n) for n in self.nodes if (n.name or n.output[0]) in self.reasons]

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_session"] = None
        return state

    def __repr__(self):
        return f"Island({self.name!r}: {', '.join(self.ops)}; {self.inputs} -> {self.outputs})"

    def model(self):
        """The island as an ``onnx.ModelProto`` (inputs typed, shapes left free)."""
        import onnx
        from onnx import helper

        ins = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(np.dtype(self.input_types[k])), None)
               for k in self.inputs]
        outs = [onnx.ValueInfoProto(name=o) for o in self.outputs]
        graph = helper.make_graph(self.nodes, self.name, ins, outs, self.initializers)
        m = helper.make_model(graph, opset_imports=self.opsets)
        m.ir_version = self.ir_version
        return m

    def macs_for(self, shapes: tuple) -> int:
        """The MACs of the island's own nodes for inputs of these shapes (the inferred shapes of the whole
        model may leave a batch dimension symbolic): shape inference on the island, once per shape."""
        if shapes in self._macs_by_shape:
            return self._macs_by_shape[shapes]
        import onnx
        from onnx import helper

        m = self.model()
        for vi, shape in zip(m.graph.input, shapes):
            vi.CopyFrom(helper.make_tensor_value_info(vi.name, vi.type.tensor_type.elem_type, list(shape)))
        try:
            inferred = onnx.shape_inference.infer_shapes(m)
        except Exception:  # noqa: BLE001 - an operator onnx cannot infer: no MAC count
            self._macs_by_shape[shapes] = 0
            return 0
        known = {vi.name: tuple(d.dim_value if d.HasField("dim_value") else None for d in vi.type.tensor_type.shape.dim)
                 for vi in list(inferred.graph.value_info) + list(inferred.graph.input) + list(inferred.graph.output)}
        known.update({t.name: tuple(t.dims) for t in self.initializers})
        own = [n for n in self.nodes if (n.name or n.output[0]) in self.reasons]
        self._macs_by_shape[shapes] = sum(node_macs(n, known) for n in own)
        return self._macs_by_shape[shapes]

    def session(self):
        if self._session is None:
            import onnxruntime as ort

            so = ort.SessionOptions()
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            so.log_severity_level = 3
            self._session = ort.InferenceSession(self.model().SerializeToString(), so,
                                                 providers=["CPUExecutionProvider"])
        return self._session

    def run(self, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        """The outputs for ``feeds`` (every input, in its ONNX type)."""
        return self.session().run(self.outputs, {k: np.asarray(feeds[k], self.input_types[k]) for k in self.inputs})


def _op_name(node) -> str:
    return f"{node.domain}.{node.op_type}" if node.domain not in ("", "ai.onnx") else node.op_type


def _pull_producers(nodes: list, producer: dict) -> list:
    """``nodes`` with the DequantizeLinear / Constant nodes that produce their inputs (transitively),
    all in the model's order (``producer``: tensor name -> (index, node)), so the island is sorted
    topologically as ONNX requires (a DequantizeLinear may read a tensor the island itself quantizes)."""
    have = {id(n) for n in nodes}
    pulled = {}
    todo = [i for n in nodes for i in n.input]
    while todo:
        item = producer.get(todo.pop())
        if item is None or id(item[1]) in have or item[0] in pulled:
            continue
        idx, node = item
        if node.op_type not in ("DequantizeLinear", "Constant"):
            continue
        pulled[idx] = node
        todo.extend(node.input)
    order = {i: n for i, n in pulled.items()}
    for n in nodes:                     # every node in the model's (topological) order
        order[producer[n.output[0]][0] if n.output and n.output[0] in producer else -1 - len(order)] = n
    return [order[i] for i in sorted(order)]


# the weight's input of each convolution operator (its MACs: output elements x the weight's C/g x kh x kw)
_CONV_WEIGHT = {"Conv": 1, "ConvInteger": 1, "QLinearConv": 3}


def node_macs(node, shapes: dict[str, tuple]) -> int:
    """Multiply-accumulates of a convolution or matrix product node (Conv, ConvTranspose, MatMul, Gemm, and
    their integer and QOperator forms) from inferred shapes (0 for other operators or unknown shapes)."""
    def shape(name):
        s = shapes.get(name)
        return s if s is not None and all(isinstance(d, int) and d > 0 for d in s) else None

    op = node.op_type
    out = shape(node.output[0]) if node.output else None
    if op in ("MatMul", "MatMulInteger", "QLinearMatMul", "Gemm", "QGemm") and out is not None:
        a = shape(node.input[0])
        trans_a = next((at.i for at in node.attribute if at.name == "transA"), 0)
        return int(np.prod(out, dtype=np.int64)) * (a[-2] if trans_a else a[-1]) if a else 0
    if op in _CONV_WEIGHT and out is not None:
        w = shape(node.input[_CONV_WEIGHT[op]])
        return int(np.prod(out, dtype=np.int64)) * int(np.prod(w[1:], dtype=np.int64)) if w else 0
    if op == "ConvTranspose":
        x, w = shape(node.input[0]), shape(node.input[1])
        return int(np.prod(x, dtype=np.int64)) * int(np.prod(w[1:], dtype=np.int64)) if x and w else 0
    return 0


def make_island(own: list, reasons: dict, ctx, index: int) -> QNode:
    """The island QNode of declined nodes ``own`` (``reasons``: id(node) -> why); checks that
    onnxruntime can run it (OnnxImportError naming the nodes otherwise)."""
    nodes = _pull_producers(own, ctx.producer)
    own_ids = {id(n) for n in own}
    produced = {o for n in nodes for o in n.output if o}
    read = [i for n in nodes for i in n.input if i]
    inputs = list(dict.fromkeys(i for i in read if i not in produced and i not in ctx.inits))
    initializers = [numpy_helper.from_array(ctx.inits[name], name)
                    for name in dict.fromkeys(i for i in read if i in ctx.inits and i not in produced)]
    # what the rest of the graph reads: graph outputs, and tensors read by any node that is not one of
    # the island's own (a DequantizeLinear copied in may also serve an integer node outside)
    outputs = list(dict.fromkeys(o for n in own for o in n.output
                                 if o and (o in ctx.graph_outputs
                                           or any(id(u) not in own_ids for u in ctx.consumers.get(o, [])))))
    types = {}
    for i in inputs:
        if i in ctx.qparams:
            types[i] = ctx.qparams[i].np_dtype
        elif i in ctx.types:
            types[i] = ctx.types[i]
        else:
            types[i] = np.float32
    names = [n.name or n.output[0] for n in own]
    name = names[0] if len(names) == 1 else f"{names[0]}..{names[-1]}"
    isl = Island(name, nodes, inputs, outputs, initializers, list(ctx.model.opset_import), ctx.model.ir_version,
                 types, {n.name or n.output[0]: reasons[id(n)] for n in own},
                 sum(node_macs(n, ctx.shapes) for n in own))
    try:
        isl.session()
    except Exception as e:  # noqa: BLE001 - onnxruntime raises its own exception types
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise OnnxImportError(f"nodes {', '.join(repr(x) for x in names)} ({', '.join(isl.ops)}): no handler "
                              f"takes them and onnxruntime cannot run them: {first}") from None
    return QNode("island", name, inputs, outputs, {"island": isl})


# operators whose output element depends only on the same element of their inputs (and attributes)
POINTWISE = {"Abs", "Add", "Celu", "Clip", "Cos", "Div", "Elu", "Erf", "Exp", "Gelu", "HardSigmoid", "HardSwish",
             "LeakyRelu", "Log", "Mish", "Mul", "Neg", "Pow", "Reciprocal", "Relu", "Selu", "Sigmoid", "Sin", "Softplus",
             "Softsign", "Sqrt", "Sub", "Tanh", "ThresholdedRelu", "DequantizeLinear", "QuantizeLinear"}


def _pointwise(isl: Island, in_q, out_q) -> bool:
    """True when the island maps one int8 tensor to int8 tensors element by element: every node is
    pointwise and reads the island's input, values computed from it, or constants of one element."""
    if len(isl.inputs) != 1 or in_q[0] is None or any(q is None for q in out_q):
        return False
    scalars = {t.name for t in isl.initializers if int(np.prod(t.dims)) == 1}
    derived = {isl.inputs[0]}
    for n in isl.nodes:
        if n.domain not in ("", "ai.onnx") or n.op_type not in POINTWISE:
            return False
        reads = [i for i in n.input if i]
        if all(i in scalars for i in reads):
            scalars.update(n.output)            # a constant of one element (a DequantizeLinear of one)
        elif all(i in derived or i in scalars for i in reads):
            derived.update(o for o in n.output if o)
        else:
            return False
    return all(o in derived for o in isl.outputs)


@register
class IslandHandler(Handler):
    """Runs an island's sub-graph with onnxruntime (never matched by op type: the importer makes islands).

    An island that is a pointwise function of one int8 tensor (LeakyRelu, Sigmoid, Tanh, a GELU of
    Div, Erf, Add and Mul, ...) has only 256 possible inputs: onnxruntime runs it once on all of them
    at import, and the run looks the results up in that table, equal to what the session would give."""
    kind = "island"

    def prepare(self, lay, graph, alu_mul):
        isl = lay.node.attrs["island"]
        lay.params = {"island": isl, "in_q": [graph.qparams.get(i) for i in isl.inputs],
                      "out_q": [graph.qparams.get(o) for o in isl.outputs], "table": None}
        if _pointwise(isl, lay.params["in_q"], lay.params["out_q"]):
            every = np.arange(-128, 128, dtype=np.int64).astype(np.int8)        # canonical int8 values
            lay.params["table"] = self._run(lay, every)

    def reference(self, lay, *xs):
        table = lay.params["table"]
        if table is None:
            return self._run(lay, *xs)
        idx = xs[0].astype(np.int16) + 128
        return table[idx] if not isinstance(table, tuple) else tuple(t[idx] for t in table)

    def _run(self, lay, *xs):
        p = lay.params
        feeds = {name: (to_onnx_dtype(x, q) if q is not None else x)
                 for name, x, q in zip(p["island"].inputs, xs, p["in_q"])}
        ys = p["island"].run(feeds)
        ys = [from_onnx_dtype(y, q) if q is not None else y for y, q in zip(ys, p["out_q"])]
        return ys[0] if len(ys) == 1 else tuple(ys)

    def placement(self, lay, xs):
        isl = lay.params["island"]
        how = "onnxruntime as a 256-entry table: " if lay.params["table"] is not None else "onnxruntime: "
        return "cpu", how + "; ".join(f"{k}: {v}" for k, v in isl.reasons.items())

    def macs(self, lay, xs, y):
        return lay.params["island"].macs_for(tuple(tuple(np.shape(x)) for x in xs))
