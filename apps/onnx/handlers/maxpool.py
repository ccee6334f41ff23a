"""MaxPool (2-D, floor mode, dilation 1) on quantized tensors (numpy, on the CPU)."""

from __future__ import annotations

import numpy as np

from ..ir import QNode
from . import register
from .base import Handler, Unsupported


@register
class MaxPool(Handler):
    kind = "maxpool"
    op_types = ("MaxPool",)

    def match(self, node, ctx):
        from ..graph import attrs_of

        a = attrs_of(node)
        if a.get("ceil_mode", 0) or any(d != 1 for d in a.get("dilations", [1, 1])):
            raise Unsupported("ceil_mode or dilations (taken: floor mode, dilation 1)")
        if len(node.output) > 1 and node.output[1]:
            raise Unsupported("the Indices output")
        k = list(a["kernel_shape"])
        if len(k) != 2:
            raise Unsupported(f"a {len(k)}-D pool (taken: 2-D)")
        attrs = dict(kernel=k, strides=list(a.get("strides", [1] * len(k))), pads=list(a.get("pads", [0] * 2 * len(k))))
        return QNode(self.kind, node.name or node.output[0], [ctx.act_input(node, 0)], [ctx.output_q(node)], attrs)

    def prepare(self, lay, graph, alu_mul):
        lay.params = dict(lay.node.attrs)
        lay.prepare_rescale()

    def reference(self, lay, x):
        (kh, kw), (sh, sw) = lay.params["kernel"], lay.params["strides"]
        t, l, b, r = lay.params["pads"]
        xp = np.pad(x.astype(np.int16), ((0, 0), (0, 0), (t, b), (l, r)), constant_values=-1000)
        n, c, h, w = xp.shape
        ho, wo = (h - kh) // sh + 1, (w - kw) // sw + 1
        out = np.full((n, c, ho, wo), -1000, np.int16)
        for i in range(kh):
            for j in range(kw):
                out = np.maximum(out, xp[:, :, i:i + sh * (ho - 1) + 1:sh, j:j + sw * (wo - 1) + 1:sw])
        return lay.rescale(out.astype(np.int8))
