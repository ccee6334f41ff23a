"""MaxPool (2-D, floor or ceil mode, dilation 1) on quantized tensors (numpy, on the CPU)."""

from __future__ import annotations

import numpy as np

from sw import ops

from ..ir import QNode
from .base import Handler, Unsupported, ceil_pads, pool_window
from .registry import register


@register
class MaxPool(Handler):
    kind = "maxpool"
    op_types = ("MaxPool",)

    def match(self, node, ctx):
        attrs, _ = pool_window(node, ceil_ok=True)
        if len(node.output) > 1 and node.output[1]:
            raise Unsupported("the Indices output")
        return QNode(self.kind, node.name or node.output[0], [ctx.act_input(node, 0)], [ctx.output_q(node)], attrs)

    def prepare(self, lay, graph, alu_mul):
        lay.params = dict(lay.node.attrs)
        lay.prepare_rescale()

    def reference(self, lay, x):
        # (padding -128 never wins: a window holds at least one value of the input, which is no less)
        p = lay.params
        pads = ceil_pads(x.shape[2:], p["kernel"], p["strides"], p["pads"]) if p["ceil"] else p["pads"]
        y = ops.pool2d_ref(x, p["kernel"], p["strides"], pads, -128, "max")
        return lay.rescale(y.astype(np.int8))
