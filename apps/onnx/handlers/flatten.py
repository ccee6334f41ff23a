"""Flatten of a quantized tensor (a reshape, with a rescale if the output quantization differs)."""

from __future__ import annotations

import numpy as np

from ..ir import QNode
from . import register
from .base import Handler


@register
class Flatten(Handler):
    kind = "flatten"
    op_types = ("Flatten",)

    def match(self, node, ctx):
        from ..graph import attrs_of

        return QNode(self.kind, node.name or node.output[0], [ctx.act_input(node, 0)], [ctx.output_q(node)],
                     dict(axis=attrs_of(node).get("axis", 1)))

    def prepare(self, lay, graph, alu_mul):
        lay.params = dict(lay.node.attrs)
        lay.prepare_rescale()

    def reference(self, lay, x):
        ax = lay.params["axis"] + x.ndim if lay.params["axis"] < 0 else lay.params["axis"]
        return lay.rescale(x.reshape(int(np.prod(x.shape[:ax], dtype=np.int64)), -1))
