"""BatchNormalization on a quantized tensor (left in float by the quantizer where no convolution precedes
it to fold into: DenseNet's BN after a Concat): a depthwise 1x1 convolution on the accelerator.

In real values the node is ``y = g_c x + b_c`` per channel (``g = scale / sqrt(var + eps)``,
``b = B - mean g``). It runs as a conv of one input channel per group with the weight ``sign(g_c)`` (so the
accumulator is ``+-(x - z_x)``, the zero point in the bias vector v0) and an epilogue of its own, in a finer
fixed point than a conv's requantization needs: ``MUL A_c``, ``ADD B_c``, ``SHR s``, the output zero point
and saturation, with ``A_c = round(s_x |g_c| / s_y 2^s)`` and ``B_c = round(b_c / s_y 2^s) + 2^(s-1)`` (a
rounding shift) and the largest ``s`` that keeps ``255 A_c + |B_c|`` in 31 bits: its error is ``2^-s`` of
an output LSB against the 2^-8 of a requantization of a conv's wide accumulators. Every path of a grouped
conv (placement, lowering, configs without MUL: the CPU does the steps from the MUL on) serves it unchanged.

A Mul by a per-channel constant (``mul_channels``) runs the same way. A ReLU between the node and its
QuantizeLinear is the saturation when that quantization's zero point is its type's minimum (what a calibration
of a ReLU output gives), and is taken into the node then.
"""

from __future__ import annotations

import numpy as np

from sw import ops
from sw.isa import AluOp

from ..ir import QNode
from ..numerics import qrange
from ..proto import attrs_of
from .base import Unsupported
from .conv import Conv
from .registry import register


@register
class BatchNorm(Conv):
    kind = "batchnorm"
    op_types = ("BatchNormalization",)

    def match(self, node, ctx):
        a = attrs_of(node)
        if a.get("training_mode", 0) or len([o for o in node.output if o]) > 1:
            raise Unsupported("training mode (taken: inference, one output)")
        params = [_constant(ctx, node, i) for i in range(1, 5)]
        if any(p is None for p in params):
            raise Unsupported("scale, bias, mean or variance is not a constant (or a dequantized one)")
        x = ctx.act_input(node, 0)
        scale, bias, mean, var = (np.asarray(p, np.float64).ravel() for p in params)
        g = scale / np.sqrt(var + float(a.get("epsilon", 1e-5)))
        return self._affine(node, x, self._output(node, ctx), g, bias - mean * g)

    def _affine(self, node, x: str, out: str, g: np.ndarray, b: np.ndarray) -> QNode:
        """The node of ``y = g_c x + b_c``: a depthwise 1x1 conv of weight ``sign(g_c)``."""
        return QNode(self.kind, node.name or node.output[0], [x], [out],
                     dict(weight=np.where(g < 0, -1, 1).astype(np.int8).reshape(-1, 1, 1, 1), g=g, b=b,
                          pads=[0, 0, 0, 0], strides=[1, 1], groups=g.size))

    @staticmethod
    def _output(node, ctx) -> str:
        """The quantized output: the node's own, or that of a ReLU after it that the saturation implies."""
        users = ctx.consumers.get(node.output[0], [])
        if len(users) == 1 and users[0].op_type == "Relu" and node.output[0] not in ctx.graph_outputs:
            relu = users[0]
            out = ctx.output_q(relu)
            qp = ctx.qparams[out]
            if qp.zero_point != qrange(qp.dtype)[0]:
                raise Unsupported(f"a ReLU after it whose quantization's zero point ({qp.zero_point}) is not its "
                                  f"type's minimum")
            ctx._pending.append(("claim", relu))
            return out
        return ctx.output_q(node)

    def prepare(self, lay, graph, alu_mul):
        a = lay.node.attrs
        w = a["weight"]
        lay.params.update(weight=w, pads=a["pads"], strides=a["strides"], groups=a["groups"])
        sx, zx, sy = lay.inp[0].scale, lay.inp[0].zero_point, lay.out.scale
        m, c = np.abs(a["g"]) * sx / sy, a["b"] / sy
        s = 30
        while s > 0 and np.max(255 * np.rint(m * 2.0 ** s) + np.abs(np.rint(c * 2.0 ** s)) + 2.0 ** s) >= 2 ** 31:
            s -= 1
        mul, add = np.rint(m * 2.0 ** s), np.rint(c * 2.0 ** s) + (1 << s >> 1)
        qmin, qmax = qrange(lay.out.dtype)
        lay.steps = [(AluOp.ADD, "v0"), (AluOp.MUL, "v1"), (AluOp.ADD, "v2"), (AluOp.SHR, s),
                     (AluOp.ADD, lay.out.zero_point), (AluOp.MAX, qmin), (AluOp.MIN, qmax)]
        lay.params["vectors"] = np.stack([-zx * w.reshape(-1).astype(np.int64), mul, add]).astype(np.int32)
        lay.params["split"] = None if alu_mul else (ops.Epilogue(tuple(lay.steps[:1]), 2), tuple(lay.steps[1:]))
        lay.macs_per_item = int(w.size)          # one MAC per element (Conv.macs divides by the channels)

    def placement(self, lay, xs):
        where, why = super().placement(lay, xs)
        return where, "as a depthwise 1x1 conv" + (f"; {why}" if why else "") if where == "vta" else why


@register
class MulChannels(BatchNorm):
    """Mul of an NCHW activation by a per-channel constant (shape (C, 1, 1) or (1, C, 1, 1): a batch norm an
    exporter wrote as Mul and Add): the same depthwise conv with ``g`` the constant and ``b`` 0. A scalar
    constant stays a pointwise table (which the conv before it may take into its epilogue)."""
    kind = "mul_channels"
    op_types = ("Mul",)

    def match(self, node, ctx):
        ctx.only_output(node)
        consts = [i for i in (0, 1) if _constant(ctx, node, i) is not None]
        if len(consts) != 1:
            raise Unsupported("not one activation and one constant")
        g = _constant(ctx, node, consts[0])
        x = ctx.act_input(node, 1 - consts[0])
        shape = ctx.shapes.get(x)
        channels = shape[1] if shape is not None and len(shape) == 4 else None
        if not (isinstance(channels, int) and channels > 1 and 3 <= g.ndim <= 4 and g.shape[-3:] == (channels, 1, 1)
                and g.size == channels):
            raise Unsupported(f"a constant of shape {g.shape} on an input of shape {shape}; taken: one value per "
                              f"channel of an NCHW input, (C, 1, 1) or (1, C, 1, 1)")
        g = g.ravel()
        return self._affine(node, x, self._output(node, ctx), g, np.zeros_like(g))

    def placement(self, lay, xs):
        where, why = super().placement(lay, xs)
        return where, why.replace("as a depthwise", "per-channel multiply as a depthwise", 1)


def _constant(ctx, node, idx: int):
    """Input ``idx`` of ``node`` as float64: a constant, or a DequantizeLinear of one (the quantizer's QDQ form
    quantizes a BatchNormalization's scale and bias as weights); None otherwise."""
    name = node.input[idx]
    if name in ctx.inits:
        return np.asarray(ctx.inits[name], np.float64)
    if name not in ctx.dq_const:
        return None
    q, scale, zp, axis = ctx.const_input(node, idx, "parameter")
    shape = [1] * q.ndim
    if scale.size > 1:
        shape[axis % q.ndim] = -1
    return (q.astype(np.float64) - zp.reshape(shape)) * scale.astype(np.float32).astype(np.float64).reshape(shape)
