"""GlobalAveragePool of a quantized tensor: the sum over H x W, requantized (numpy, on the CPU)."""

from __future__ import annotations

import numpy as np

from ..ir import QNode
from ..numerics import requant_steps
from . import register
from .base import Handler


@register
class GlobalAveragePool(Handler):
    kind = "gap"
    op_types = ("GlobalAveragePool",)

    def match(self, node, ctx):
        return QNode(self.kind, node.name or node.output[0], [ctx.act_input(node, 0)], [ctx.output_q(node)])

    def _steps(self, lay, hw: int):
        """The steps depend on H * W, known from the input."""
        if lay.params.get("hw") != hw:
            M = lay.inp[0].scale / (lay.out.scale * hw)
            steps, (off, clips) = requant_steps(M, lay.out, 256 * hw, True)
            lay.steps, lay.params["hw"] = steps, hw
            lay.params["vectors"] = np.array([[off]] + [[c] for c in clips], np.int64).astype(np.int32)

    def reference(self, lay, x):
        self._steps(lay, x.shape[2] * x.shape[3])
        acc = (x.astype(np.int64) - lay.inp[0].zero_point).sum(axis=(2, 3))
        return lay.epilogue.reference(acc, lay.params["vectors"], 1).reshape(acc.shape + (1, 1))
