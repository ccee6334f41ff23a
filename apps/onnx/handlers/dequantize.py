"""DequantizeLinear to a float graph output (numpy, on the CPU)."""

from __future__ import annotations

from ..ir import QNode
from ..numerics import dequantize
from .base import Handler, Unsupported
from .registry import register


@register
class Dequantize(Handler):
    kind = "dequantize"
    op_types = ("DequantizeLinear",)

    def match(self, node, ctx):
        if node.input[0] not in ctx.qparams:
            raise Unsupported("dequantizes a tensor that is not quantized per tensor")
        return QNode(self.kind, node.name or node.output[0], [node.input[0]], [node.output[0]])

    def reference(self, lay, x):
        return dequantize(x, lay.inp[0])
