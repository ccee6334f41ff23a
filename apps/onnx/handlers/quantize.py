"""QuantizeLinear of a float graph input: the network's entry into integers (numpy, on the CPU)."""

from __future__ import annotations

from ..ir import QNode
from ..numerics import from_onnx_dtype, quantize_float
from .base import Handler, Unsupported
from .registry import register


@register
class Quantize(Handler):
    kind = "quantize"
    op_types = ("QuantizeLinear",)

    def match(self, node, ctx):
        if node.input[0] not in ctx.graph_inputs:
            raise Unsupported("quantizes a tensor computed in float (not a graph input)")
        if node.output[0] not in ctx.qparams:
            raise Unsupported("not a per-tensor int8/uint8 quantization")
        return QNode(self.kind, node.name or node.output[0], [node.input[0]], [node.output[0]])

    def prepare(self, lay, graph, alu_mul):
        lay.params = {"qp": graph.qparams[lay.node.output]}      # the ONNX type of the quantized tensor

    def reference(self, lay, x):
        qp = lay.params["qp"]
        return from_onnx_dtype(quantize_float(x, qp), qp)
