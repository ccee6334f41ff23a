"""QOperator models as their QDQ twins: one lowering for both formats.

onnxruntime's ``quantize_static(..., quant_format=QuantFormat.QOperator)`` (and the ONNX model zoo's int8
models) write each quantized operator as one node that takes its inputs' and output's scales and zero points
(``QLinearConv``, ``QLinearMatMul``, com.microsoft's ``QGemm``, ``QLinearAdd``, ``QLinearGlobalAveragePool``,
...), and run the operators that only move or select values (``MaxPool``, ``Reshape``, ``Transpose``, ...)
on the int8 codes themselves. :func:`to_qdq` rewrites such a model into the QDQ form the importer reads:
each QOperator node becomes ``DequantizeLinear`` on its inputs, the float operator, and ``QuantizeLinear``
on its output (which keeps the node's output name), and each operator on int8 codes is bracketed by the
quantization of its input. The two forms compute the same real values: onnxruntime runs a QDQ bracket and
its QOperator node with the same integer kernels. Every quantized tensor keeps its name, so the
comparison with onnxruntime runs the user's own file.

A node whose scales or zero points are not constants, or an operator not listed here, is left as it is
(and runs in a CPU island).
"""

from __future__ import annotations

import numpy as np

__all__ = ["to_qdq", "is_qoperator", "QOPERATOR", "ON_CODES", "quantized_tensors"]

# op type -> (the float operator, its inputs as (data, scale, zero point) index triples, the output's
# (scale, zero point) indices, the int32 bias's index or None)
QOPERATOR = {
    "QLinearConv": ("Conv", [(0, 1, 2), (3, 4, 5)], (6, 7), 8),
    "QLinearMatMul": ("MatMul", [(0, 1, 2), (3, 4, 5)], (6, 7), None),
    "QGemm": ("Gemm", [(0, 1, 2), (3, 4, 5)], (7, 8), 6),            # no y_scale: a float output
    "QLinearAdd": ("Add", [(0, 1, 2), (3, 4, 5)], (6, 7), None),
    "QLinearMul": ("Mul", [(0, 1, 2), (3, 4, 5)], (6, 7), None),
    "QLinearGlobalAveragePool": ("GlobalAveragePool", [(0, 1, 2)], (3, 4), None),
    "QLinearAveragePool": ("AveragePool", [(0, 1, 2)], (3, 4), None),
    "QLinearLeakyRelu": ("LeakyRelu", [(0, 1, 2)], (3, 4), None),
    "QLinearSigmoid": ("Sigmoid", [(0, 1, 2)], (3, 4), None),
    "QLinearSoftmax": ("Softmax", [(0, 1, 2)], (3, 4), None),
    "QLinearConcat": ("Concat", None, (0, 1), None),     # Y_scale, Y_zero_point, then (X, scale, zp) per input
}


def _channel_axis(op_type: str, attrs: dict, weight) -> int:
    """The output-channel axis of a weight quantized per channel: a conv's 0, a Gemm's B 0 (transB) or 1, a
    MatMul's B its last."""
    if op_type == "QLinearConv" or attrs.get("transB", 0):
        return 0
    return weight.ndim - 1 if weight is not None else 1

# operators that onnxruntime runs on int8 / uint8 codes as they are: the output has the input's quantization
ON_CODES = {"MaxPool", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Slice", "Split", "Gather",
            "Concat", "Identity", "Resize", "Pad", "DepthToSpace", "SpaceToDepth", "Tile", "Expand"}


def is_qoperator(model) -> bool:
    """True when the model has a QOperator node (one of :data:`QOPERATOR`)."""
    return any(n.op_type in QOPERATOR for n in model.graph.node)


def quantized_tensors(model) -> list[str]:
    """The names of the quantized (int8 / uint8) tensors of a QDQ or QOperator model, in node order: the
    outputs of its QuantizeLinear nodes once written as QDQ."""
    m = to_qdq(model) if is_qoperator(model) else model
    return [n.output[0] for n in m.graph.node if n.op_type == "QuantizeLinear"]


class _Rewrite:
    def __init__(self, model):
        from onnx import numpy_helper

        self.inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
        self.new_inits: list = []
        self.nodes: list = []
        self.quant: dict[str, tuple[str, str]] = {}         # int8 tensor -> (scale, zero point) tensor names
        g = model.graph
        self.taken = ({n.name for n in g.node} | {t for n in g.node for t in list(n.input) + list(n.output)}
                      | set(self.inits) | {i.name for i in g.input})

    def _fresh(self, stem: str) -> str:
        """A node or tensor name not yet in the model: ``stem``, else ``stem_2``, ``stem_3``, ..."""
        name, k = stem, 1
        while name in self.taken:
            k += 1
            name = f"{stem}_{k}"
        self.taken.add(name)
        return name

    def const(self, stem: str, value) -> str:
        from onnx import numpy_helper

        name = self._fresh(stem)
        self.new_inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def dq(self, x: str, scale: str, zp: str, axis: int | None = None) -> str:
        from onnx import helper

        out = self._fresh(f"{x}_DequantizeLinear")
        kw = {} if axis is None else {"axis": axis}
        self.nodes.append(helper.make_node("DequantizeLinear", [x, scale, zp] if zp else [x, scale], [out],
                                           name=out, **kw))
        return out

    def q(self, x: str, scale: str, zp: str, out: str):
        from onnx import helper

        self.nodes.append(helper.make_node("QuantizeLinear", [x, scale, zp] if zp else [x, scale], [out],
                                           name=self._fresh(f"{out}_QuantizeLinear")))
        self.quant[out] = (scale, zp)

    def _constant(self, name: str) -> bool:
        return name == "" or name in self.inits

    def qoperator(self, node) -> bool:
        """Write ``node`` as DQ -> float op -> Q; False when it cannot be (leave it)."""
        from onnx import helper

        float_op, triples, out_q, bias = QOPERATOR[node.op_type]
        ins = list(node.input) + [""] * 10
        if triples is None:                                  # QLinearConcat: output first, then input triples
            triples = [(i, i + 1, i + 2) for i in range(2, len(node.input), 3)]
        if any(not self._constant(ins[s]) or not self._constant(ins[z]) for _, s, z in triples):
            return False
        if out_q is not None and (not self._constant(ins[out_q[0]]) or not self._constant(ins[out_q[1]])):
            return False
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if attrs.pop("channels_last", 0):
            return False
        if node.op_type == "QLinearSoftmax" and attrs.pop("opset", 13) < 13 and attrs.get("axis", -1) != -1:
            return False                                     # (before opset 13 a Softmax flattens at its axis)
        if ins[out_q[0]] == "":
            out_q = None
        data = []
        for d, s, z in triples:
            per_channel = np.size(self.inits[ins[s]]) > 1
            axis = _channel_axis(node.op_type, attrs, self.inits.get(ins[d])) if per_channel else None
            data.append(self.dq(ins[d], ins[s], ins[z], axis))
        if bias is not None and ins[bias]:                  # the int32 bias at s_x s_w
            sx, sw = self.inits[ins[1]].astype(np.float32), self.inits[ins[4]].astype(np.float32)
            data.append(self.dq(ins[bias], self.const(f"{ins[bias]}_scale", (sx * sw).astype(np.float32)), "",
                                0 if np.size(sw) > 1 else None))
        y = node.output[0]
        mid = y if out_q is None else self._fresh(f"{y}_float")
        self.nodes.append(helper.make_node(float_op, data, [mid], name=node.name or y, **attrs))
        if out_q is not None:
            self.q(mid, ins[out_q[0]], ins[out_q[1]], y)
        return True

    def on_codes(self, node) -> bool:
        """Bracket an operator on int8 codes by its first quantized input's quantization."""
        from onnx import helper

        quantized = [i for i in node.input if i in self.quant]
        if not quantized:
            return False
        scale, zp = self.quant[quantized[0]]
        ins = [self.dq(i, *self.quant[i]) if i in self.quant else i for i in node.input]
        if node.op_type == "Pad" and len(ins) > 2 and ins[2] and node.input[2] not in self.quant:
            ins[2] = self.dq(ins[2], scale, zp)              # the padding value: a code of the input's quantization
        outs = []
        for o in node.output:
            outs.append(self._fresh(f"{o}_float") if o else "")
        self.nodes.append(helper.make_node(node.op_type, ins, outs, name=node.name or node.output[0],
                                           domain=node.domain,
                                           **{a.name: helper.get_attribute_value(a) for a in node.attribute}))
        for o, mid in zip(node.output, outs):
            if o:
                self.q(mid, scale, zp, o)
        return True


def to_qdq(model):
    """A copy of ``model`` with its QOperator nodes written in QDQ form (the module's docstring)."""
    import onnx

    m = onnx.ModelProto()
    m.CopyFrom(model)
    rw = _Rewrite(m)
    for node in m.graph.node:
        if node.op_type == "QuantizeLinear" and len(node.input) >= 3:
            rw.quant[node.output[0]] = (node.input[1], node.input[2])
        done = False
        if node.domain in ("", "ai.onnx", "com.microsoft") and node.op_type in QOPERATOR:
            done = rw.qoperator(node)
        elif node.domain in ("", "ai.onnx") and node.op_type in ON_CODES:
            done = rw.on_codes(node)
        if not done:
            rw.nodes.append(node)
    del m.graph.node[:]
    m.graph.node.extend(rw.nodes)
    m.graph.initializer.extend(rw.new_inits)
    del m.graph.value_info[:]                # inferred again by the importer
    return m
