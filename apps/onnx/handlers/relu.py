"""Relu that quantize_static did not fold into the producer's output range (numpy, on the CPU)."""

from __future__ import annotations

import numpy as np

from ..ir import QNode
from .base import Handler
from .registry import register


@register
class Relu(Handler):
    kind = "relu"
    op_types = ("Relu",)

    def match(self, node, ctx):
        return QNode(self.kind, node.name or node.output[0], [ctx.act_input(node, 0)], [ctx.output_q(node)])

    def prepare(self, lay, graph, alu_mul):
        lay.prepare_rescale()

    def reference(self, lay, x):
        return lay.rescale(np.maximum(x, np.int8(lay.inp[0].zero_point)))
