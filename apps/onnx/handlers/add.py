"""Add of two quantized tensors: the rescaled residual add on the accelerator's ALU."""

from __future__ import annotations

import numpy as np

from sw import ops
from sw.isa import AluOp

from ..ir import QNode
from ..numerics import rescale_reference, rescale_steps
from . import register
from .base import Handler


@register
class Add(Handler):
    kind = "add"
    op_types = ("Add",)
    accelerated = True

    def match(self, node, ctx):
        ctx.only_output(node)
        xs = [ctx.act_input(node, 0), ctx.act_input(node, 1)]
        return QNode(self.kind, node.name or node.output[0], xs, [ctx.output_q(node)])

    def prepare(self, lay, graph, alu_mul):
        a, b = lay.inp
        lay.params["factors"], lay.steps = rescale_steps([a.scale / lay.out.scale, b.scale / lay.out.scale],
                                                         [a.zero_point, b.zero_point], lay.out)
        if not alu_mul:
            lay.cpu_reason = "the rescaled add needs the ALU's MUL, which the config has not"

    def reference(self, lay, a, b):
        a, b = np.broadcast_arrays(a, b)
        return rescale_reference([a, b], [q.zero_point for q in lay.inp], lay.params["factors"], lay.steps)

    def placement(self, lay, xs):
        if lay.cpu_reason:
            return "cpu", lay.cpu_reason
        if xs[0].shape != xs[1].shape:
            return "cpu", "add with broadcasting"
        return "vta", ""

    @staticmethod
    def operand_steps(lay) -> list[list]:
        """Per input, the ALU steps that take it to the sum's fixed point: minus its zero point, times
        the two factors (identities left out)."""
        pre = [[(AluOp.ADD, -q.zero_point), (AluOp.MUL, m1), (AluOp.MUL, m2)]
               for q, (m1, m2) in zip(lay.inp, lay.params["factors"])]
        return [[s for s in st if not (s[0] == AluOp.MUL and s[1] == 1) and not (s[0] == AluOp.ADD and s[1] == 0)]
                for st in pre]

    def lower(self, lay, xs, vt):
        pre = self.operand_steps(lay)
        return ops.add_rescaled(xs[0], xs[1], pre[0], pre[1], lay.steps, virtual_threads=vt, return_counters=True)
