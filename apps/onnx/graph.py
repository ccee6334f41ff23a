"""Read an int8 ONNX model in QDQ form into a graph of integer operators (:class:`QGraph`).

The QDQ form (what ``onnxruntime.quantization.quantize_static`` writes by default) keeps every
operator in float and brackets it with ``DequantizeLinear`` on its inputs and ``QuantizeLinear`` on
its output. This reader folds each such bracket into one integer node (:class:`QNode`) whose inputs
and output are int8/uint8 tensors with per-tensor :class:`~apps.onnx.numerics.QParams`:

========================  ==========================================================================
ONNX (inside DQ -> Q)      integer node
========================  ==========================================================================
QuantizeLinear (input)     ``quantize``: float graph input -> int tensor
Conv                       ``conv``: int8 weight (O, C, kh, kw), symmetric per-tensor; int32 bias
Gemm / MatMul              ``dense``: int8 weight (M, K) (Gemm transB, MatMul's (K, M) transposed)
Add                        ``add``: two int tensors at any scales
Relu                       ``relu``
MaxPool                    ``maxpool`` (kernel, strides, pads; floor mode)
GlobalAveragePool          ``gap``
Flatten                    ``flatten``
DequantizeLinear (output)  ``dequantize``: int tensor -> float graph output
========================  ==========================================================================

Anything else raises :class:`OnnxImportError` naming the node and what is allowed: other operators,
per-channel or asymmetric weights, grouped or dilated convolutions, an operator output that is not
quantized, a malformed file.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .numerics import QParams

__all__ = ["OnnxImportError", "QNode", "QGraph", "load", "SUPPORTED_OPS"]

SUPPORTED_OPS = ("Conv", "Gemm", "MatMul", "Add", "Relu", "MaxPool", "GlobalAveragePool", "Flatten")


class OnnxImportError(ValueError):
    """The model is not an int8 QDQ model this importer supports; the message names the node."""


@dataclass
class QNode:
    """One integer operator: kind, the ONNX node name, int tensor inputs/output and attributes."""
    kind: str
    name: str
    inputs: list[str]
    output: str
    attrs: dict = field(default_factory=dict)

    def __repr__(self):
        return f"QNode({self.kind} {self.name!r}: {self.inputs} -> {self.output})"


@dataclass
class QGraph:
    """Integer operators in topological order; ``qparams`` of every int tensor; float graph inputs
    and outputs with their shapes."""
    nodes: list[QNode]
    qparams: dict[str, QParams]
    inputs: dict[str, tuple]
    outputs: list[str]
    shapes: dict[str, tuple] = field(default_factory=dict)


def _np(tensor):
    from onnx import numpy_helper
    return numpy_helper.to_array(tensor)


def _attrs(node) -> dict:
    from onnx import helper
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _where(node) -> str:
    return f"node {node.name or '(unnamed)'!r} ({node.op_type})"


def load(model) -> QGraph:
    """Read a QDQ ONNX model (a path or an ``onnx.ModelProto``) into a :class:`QGraph`."""
    import onnx

    if not isinstance(model, onnx.ModelProto):
        try:
            model = onnx.load(str(model))
        except Exception as e:  # noqa: BLE001 - protobuf raises several types for a damaged file
            raise OnnxImportError(f"{model}: not a readable ONNX model ({type(e).__name__}: {e})") from None
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as e:
        raise OnnxImportError(f"the model is malformed: {str(e).splitlines()[0]}") from None
    g = model.graph
    for imp in model.opset_import:
        if imp.domain in ("", "ai.onnx") and imp.version < 13:
            raise OnnxImportError(f"opset {imp.version}; QDQ import needs opset >= 13")
    inits = {t.name: _np(t) for t in g.initializer}
    for n in g.node:
        if n.op_type == "Constant":
            inits[n.output[0]] = _np(_attrs(n)["value"])

    def scalar_param(node, idx, what):
        name = node.input[idx] if len(node.input) > idx else ""
        if name == "":
            if what == "zero point":
                return None
            raise OnnxImportError(f"{_where(node)}: missing {what}")
        if name not in inits:
            raise OnnxImportError(f"{_where(node)}: {what} {name!r} must be a constant")
        return inits[name]

    def qparams_of(node):
        scale = scalar_param(node, 1, "scale")
        zp = scalar_param(node, 2, "zero point")
        if scale.size != 1 or (zp is not None and zp.size != 1):
            raise OnnxImportError(f"{_where(node)}: per-channel quantization ({scale.size} scales); only "
                                  f"per-tensor scales are supported")
        if zp is None:
            return float(scale.reshape(())), 0, np.dtype(np.uint8)
        return float(scale.reshape(())), int(zp.reshape(())), zp.dtype

    graph_inputs = {i.name: tuple(d.dim_value if d.HasField("dim_value") else 1 for d in i.type.tensor_type.shape.dim)
                    for i in g.input if i.name not in inits}
    graph_outputs = [o.name for o in g.output]

    dq_act = {}      # DQ output name -> int tensor name
    dq_const = {}    # DQ output name -> (int array, scale, zp)
    q_of_float = {}  # float tensor -> (Q node, int tensor name)
    for n in g.node:
        if n.op_type == "DequantizeLinear":
            s, z, dt = qparams_of(n)
            if n.input[0] in inits:
                dq_const[n.output[0]] = (inits[n.input[0]], s, z)
            else:
                dq_act[n.output[0]] = n.input[0]
        elif n.op_type == "QuantizeLinear":
            q_of_float.setdefault(n.input[0], []).append(n)

    nodes: list[QNode] = []
    qparams: dict[str, QParams] = {}

    def add_q(qnode):
        s, z, dt = qparams_of(qnode)
        if dt not in (np.int8, np.uint8):
            raise OnnxImportError(f"{_where(qnode)}: activations of type {dt}; allowed int8, uint8")
        qp = QParams(s, z, "int8" if dt == np.int8 else "uint8")
        qparams[qnode.output[0]] = qp
        return qnode.output[0], qp

    def act_input(node, idx):
        name = node.input[idx]
        if name not in dq_act:
            raise OnnxImportError(f"{_where(node)}: input {idx} ({name!r}) is not a dequantized int8/uint8 "
                                  f"activation (a DequantizeLinear of a QuantizeLinear output)")
        q = dq_act[name]
        if q not in qparams:
            raise OnnxImportError(f"{_where(node)}: input {name!r} dequantizes {q!r}, which no supported "
                                  f"node produced")
        return q

    def const_input(node, idx, what):
        name = node.input[idx]
        if name in dq_const:
            return dq_const[name]
        raise OnnxImportError(f"{_where(node)}: {what} {name!r} must be a DequantizeLinear of a constant "
                              f"(a quantized initializer)")

    def weight(node, idx):
        w, s, z = const_input(node, idx, "weight")
        if w.dtype != np.int8:
            raise OnnxImportError(f"{_where(node)}: weight of type {w.dtype}; allowed: int8")
        if z != 0:
            raise OnnxImportError(f"{_where(node)}: asymmetric weight (zero point {z}); allowed: symmetric "
                                  f"int8 weights (zero point 0)")
        return w, s

    def bias(node, idx):
        if len(node.input) <= idx or node.input[idx] == "":
            return None, None
        b, s, z = const_input(node, idx, "bias")
        if b.dtype != np.int32 or z != 0:
            raise OnnxImportError(f"{_where(node)}: bias of type {b.dtype}, zero point {z}; allowed: int32, 0")
        return b.astype(np.int64), s

    def output_q(node):
        outs = q_of_float.get(node.output[0], [])
        if not outs:
            raise OnnxImportError(f"{_where(node)}: output {node.output[0]!r} is not quantized (no "
                                  f"QuantizeLinear follows it); every supported node must be in QDQ form")
        first = add_q(outs[0])
        for other in outs[1:]:
            add_q(other)
            extra.append(QNode("requantize", other.name, [first[0]], other.output[0]))
        return first[0]

    extra: list[QNode] = []

    def flush_extra():
        nodes.extend(extra)
        extra.clear()

    for n in g.node:
        op, a = n.op_type, _attrs(n)
        if op in ("DequantizeLinear", "Constant"):
            continue
        if op == "QuantizeLinear":
            if n.input[0] in graph_inputs:
                out, _ = add_q(n)
                nodes.append(QNode("quantize", n.name, [n.input[0]], out))
            elif n.input[0] in inits:
                raise OnnxImportError(f"{_where(n)}: quantizes a float constant at run time; quantize the "
                                      f"weights offline (quantize_static does)")
            continue
        if op not in SUPPORTED_OPS:
            raise OnnxImportError(f"{_where(n)}: operator {op} is not supported; supported: "
                                  f"{', '.join(SUPPORTED_OPS)} in QDQ form")
        if op == "Conv":
            x = act_input(n, 0)
            w, sw = weight(n, 1)
            if w.ndim != 4:
                raise OnnxImportError(f"{_where(n)}: weight of rank {w.ndim}; allowed: 2-D convolution")
            if a.get("group", 1) != 1:
                raise OnnxImportError(f"{_where(n)}: group = {a['group']}; allowed: 1")
            if any(d != 1 for d in a.get("dilations", [1, 1])):
                raise OnnxImportError(f"{_where(n)}: dilations = {a['dilations']}; allowed: 1")
            if a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET", b"VALID", "VALID"):
                raise OnnxImportError(f"{_where(n)}: auto_pad = {a['auto_pad']}; allowed: NOTSET, VALID")
            b, sb = bias(n, 2)
            pads = list(a.get("pads", [0, 0, 0, 0]))
            strides = list(a.get("strides", [1, 1]))
            out = output_q(n)
            nodes.append(QNode("conv", n.name or n.output[0], [x], out,
                              dict(weight=w, w_scale=sw, bias=b, b_scale=sb, pads=pads, strides=strides)))
            flush_extra()
        elif op in ("Gemm", "MatMul"):
            x = act_input(n, 0)
            w, sw = weight(n, 1)
            if w.ndim != 2:
                raise OnnxImportError(f"{_where(n)}: weight of rank {w.ndim}; allowed: 2")
            if op == "Gemm":
                if a.get("transA", 0):
                    raise OnnxImportError(f"{_where(n)}: transA = 1; allowed: 0")
                if a.get("alpha", 1.0) != 1.0 or a.get("beta", 1.0) != 1.0:
                    raise OnnxImportError(f"{_where(n)}: alpha/beta = {a.get('alpha', 1.0)}/{a.get('beta', 1.0)}; "
                                          f"allowed: 1")
                w = w if a.get("transB", 0) else w.T
                b, sb = bias(n, 2)
            else:
                w, b, sb = w.T, None, None
            out = output_q(n)
            nodes.append(QNode("dense", n.name or n.output[0], [x], out,
                               dict(weight=np.ascontiguousarray(w), w_scale=sw, bias=b, b_scale=sb)))
            flush_extra()
        elif op == "Add":
            xs = [act_input(n, 0), act_input(n, 1)]
            out = output_q(n)
            nodes.append(QNode("add", n.name or n.output[0], xs, out))
            flush_extra()
        elif op in ("Relu", "GlobalAveragePool", "Flatten", "MaxPool"):
            x = act_input(n, 0)
            attrs = {}
            if op == "MaxPool":
                if a.get("ceil_mode", 0) or any(d != 1 for d in a.get("dilations", [1, 1])):
                    raise OnnxImportError(f"{_where(n)}: ceil_mode/dilations; allowed: floor mode, dilation 1")
                if len(n.output) > 1 and n.output[1]:
                    raise OnnxImportError(f"{_where(n)}: the Indices output is not supported")
                k = list(a["kernel_shape"])
                attrs = dict(kernel=k, strides=list(a.get("strides", [1] * len(k))),
                             pads=list(a.get("pads", [0] * 2 * len(k))))
            if op == "Flatten":
                attrs = dict(axis=a.get("axis", 1))
            out = output_q(n)
            kind = {"Relu": "relu", "GlobalAveragePool": "gap", "Flatten": "flatten", "MaxPool": "maxpool"}[op]
            nodes.append(QNode(kind, n.name or n.output[0], [x], out, attrs))
            flush_extra()
    outputs = []
    for o in graph_outputs:
        producer = [n for n in g.node if o in n.output]
        if not producer or producer[0].op_type != "DequantizeLinear" or producer[0].input[0] not in qparams:
            raise OnnxImportError(f"graph output {o!r} must be a DequantizeLinear of a quantized tensor")
        nodes.append(QNode("dequantize", producer[0].name or o, [producer[0].input[0]], o))
        outputs.append(o)
    if not any(nd.kind == "quantize" for nd in nodes):
        raise OnnxImportError("no graph input is quantized (QuantizeLinear of a graph input)")
    return QGraph(nodes, qparams, graph_inputs, outputs)

