"""Add of two quantized tensors, or of a tensor and a quantized constant: the rescaled add on the accelerator's ALU."""

from __future__ import annotations

import numpy as np

from sw import ops
from sw.isa import AluOp

from ..ir import QNode
from ..numerics import QParams, canonical, from_onnx_dtype, rescale_reference, rescale_steps
from .base import Handler, Unsupported
from .registry import register


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
        lay.params["factors"], lay.steps = rescale_steps([q.scale / lay.out.scale for q in lay.inp],
                                                         [q.zero_point for q in lay.inp], lay.out)
        if not alu_mul:
            lay.cpu_reason = f"the rescaled {self.kind} needs the ALU's MUL, which the config has not"

    def reference(self, lay, *xs):
        return rescale_reference(np.broadcast_arrays(*xs), [q.zero_point for q in lay.inp], lay.params["factors"],
                                 lay.steps)

    def placement(self, lay, xs):
        if lay.cpu_reason:
            return "cpu", lay.cpu_reason
        if any(x.shape != xs[0].shape for x in xs):
            return "cpu", f"{self.kind} with broadcasting"
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


@register
class Sum(Add):
    """Sum of two or more quantized tensors of one shape: each rescaled to the sum's fixed point, added, and the
    one rounding of the output (:func:`sw.ops.sum_rescaled`), as onnxruntime's float sum and QuantizeLinear."""
    kind = "sum"
    op_types = ("Sum",)

    def match(self, node, ctx):
        ctx.only_output(node)
        if len(node.input) < 2:
            raise Unsupported(f"a Sum of {len(node.input)} input (taken: two or more)")
        xs = [ctx.act_input(node, i) for i in range(len(node.input))]
        return QNode(self.kind, node.name or node.output[0], xs, [ctx.output_q(node)])

    def lower(self, lay, xs, vt):
        return ops.sum_rescaled(xs, self.operand_steps(lay), lay.steps, virtual_threads=vt, return_counters=True)


@register
class AddConstant(Add):
    """Add of a quantized activation and a quantized constant of more than one element (a bias after a MatMul,
    as PyTorch exports ``nn.Linear`` on a rank-3 input): the constant's codes broadcast to the activation's shape
    and the same rescaled add on the ALU (the MatMul's own rounding stays as written, so the values are
    onnxruntime's). A scalar constant (GELU's ``1 + erf``) is left to a pointwise table, where onnxruntime rounds
    its ties.
    ``lay.inp`` holds both operands' quantization, the constant's included."""
    kind = "add_const"

    def match(self, node, ctx):
        ctx.only_output(node)
        consts = [i for i in (0, 1) if node.input[i] in ctx.dq_const]
        if len(consts) != 1:
            raise Unsupported("not one activation and one constant")
        pos = consts[0]
        codes, scale, zp, _ = ctx.const_input(node, pos, "addend")
        self.check_constant(codes, scale)
        x = ctx.act_input(node, 1 - pos)
        return self.make_node(node.name or node.output[0], x, ctx.output_q(node), pos, codes, scale, zp)

    @staticmethod
    def check_constant(codes, scale) -> None:
        if codes.size == 1:
            raise Unsupported("a scalar constant: a pointwise table (exact, and a conv before it may take it)")
        if np.size(scale) != 1 or codes.dtype not in (np.int8, np.uint8):
            raise Unsupported(f"a constant of type {codes.dtype} with {np.size(scale)} scales; taken: int8/uint8, "
                              f"one scale")

    @classmethod
    def make_node(cls, name, x, out, position: int, codes, scale, zero_point) -> QNode:
        """The integer node from its values, as every front end builds it: the constant's int8/uint8 ``codes``
        (more than one, :class:`Unsupported` otherwise), its one scale and zero point, ``position`` 0 or 1 of
        the constant among the Add's inputs."""
        cls.check_constant(codes, scale)
        qp = QParams(float(np.ravel(scale)[0]), int(np.ravel(zero_point)[0]),
                     "int8" if codes.dtype == np.int8 else "uint8")
        return QNode(cls.kind, name, [x], [out],
                     dict(position=int(position), constant=from_onnx_dtype(codes, qp), constant_q=canonical(qp)))

    @staticmethod
    def _operands(lay, x, c) -> tuple:
        """(x, c) in the node's order of inputs."""
        return (c, x) if lay.node.attrs["position"] == 0 else (x, c)

    def prepare(self, lay, graph, alu_mul):
        lay.inp = list(self._operands(lay, lay.inp[0], lay.node.attrs["constant_q"]))
        super().prepare(lay, graph, alu_mul)

    def reference(self, lay, x):
        return super().reference(lay, *self._operands(lay, x, lay.node.attrs["constant"]))

    def placement(self, lay, xs):
        if lay.cpu_reason:
            return "cpu", lay.cpu_reason
        if np.broadcast_shapes(np.shape(xs[0]), lay.node.attrs["constant"].shape) != np.shape(xs[0]):
            return "cpu", "the constant broadcasts the activation to a larger shape"
        return "vta", "the constant's codes broadcast to the activation's shape"

    def lower(self, lay, xs, vt):
        c = np.ascontiguousarray(np.broadcast_to(lay.node.attrs["constant"], xs[0].shape))
        return super().lower(lay, list(self._operands(lay, xs[0], c)), vt)
