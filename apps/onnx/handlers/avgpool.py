"""Average pools of a quantized tensor on the tensor ALU: GlobalAveragePool and AveragePool.

The sum of each window of ``x - z_x`` (padding, counted in the average, holds the zero point and adds
nothing), requantized by ``M = s_x / (s_y k)`` for a window of ``k`` elements. On the accelerator
:func:`sw.ops.pool2d` sums the raw int8 windows on the ALU; the zero point's ``-z_x k`` joins the
requantization's first vector. A global pool is one ALU instruction per channel block (the window in
its micro-op loops). Configs without the ALU's MUL keep a pool whose multiplier is not a power of two
on the CPU.
"""

from __future__ import annotations

import math

import numpy as np

from sw import ops

from ..ir import QNode
from ..numerics import NumericsError, requant_steps
from .base import Handler, Unsupported, pool_window
from .registry import register


def _check_ties(ctx, node, k) -> None:
    """Decline an average of ``k`` elements whose multiplier ``s_x / (s_y k)`` is a power of two (a 2x2
    average at the input's scale): a quarter of its sums are ties, which the ALU's rounding shift rounds up
    while onnxruntime's float arithmetic rounds them either way; in an island they are onnxruntime's."""
    users = ctx.consumers.get(node.output[0], [])
    qx = ctx.qparams.get(ctx.dq_act.get(node.input[0]))
    qy = ctx.qparams.get(users[0].output[0]) if users else None
    m = qx.scale / (qy.scale * k) if k and qx is not None and qy is not None else 1.0
    if math.frexp(m)[0] == 0.5 and m < 1:          # (a multiplier of 1 or more leaves no fraction)
        raise Unsupported(f"an average of {k} at a power-of-two ratio of scales: its many ties round as "
                          f"onnxruntime's float arithmetic rounds them, not as the ALU's shift")


class _AveragePool(Handler):
    """Shared by the two: ``lay.params`` kernel (None: the whole input), strides, pads."""
    accelerated = True

    def prepare(self, lay, graph, alu_mul):
        lay.params.update(lay.node.attrs, alu_mul=alu_mul)

    def _window(self, lay, hw):
        """(kernel, strides, pads) for an input of spatial shape ``hw``."""
        p = lay.params
        if p.get("kernel") is None:
            return tuple(hw), (1, 1), (0, 0, 0, 0)
        return tuple(p["kernel"]), tuple(p["strides"]), tuple(p["pads"])

    def _steps(self, lay, k: int):
        """The requantization of a sum over ``k`` elements (memoised: a global pool's k is known from its input)."""
        if lay.params.get("k") != k:
            M = lay.inp[0].scale / (lay.out.scale * k)
            try:
                steps, (off, clips) = requant_steps(M, lay.out, 256 * k, lay.params["alu_mul"])
                lay.params["cpu_reason"] = ""
            except NumericsError as err:
                steps, (off, clips) = requant_steps(M, lay.out, 256 * k, True)
                lay.params["cpu_reason"] = str(err)
            lay.steps, lay.params["k"] = steps, k
            lay.params["vectors"] = np.array([[off]] + [[c] for c in clips], np.int64)

    def reference(self, lay, x):
        kernel, strides, pads = self._window(lay, x.shape[2:])
        self._steps(lay, kernel[0] * kernel[1])
        zx = lay.inp[0].zero_point
        acc = ops.pool2d_ref(x, kernel, strides, pads, zx, "sum").astype(np.int64) - zx * kernel[0] * kernel[1]
        return lay.epilogue.reference(acc, lay.params["vectors"].astype(np.int32), 1)

    def placement(self, lay, xs):
        if xs[0].ndim != 4:
            return "cpu", f"a {xs[0].ndim}-D input (the accelerator's pool is 2-D)"
        kernel, strides, _ = self._window(lay, xs[0].shape[2:])
        self._steps(lay, kernel[0] * kernel[1])
        if lay.params["cpu_reason"]:
            return "cpu", lay.params["cpu_reason"]

        return "vta", f"sums of {kernel[0]}x{kernel[1]} windows on the tensor ALU"

    def lower(self, lay, xs, vt):
        x = xs[0]
        kernel, strides, pads = self._window(lay, x.shape[2:])
        k = kernel[0] * kernel[1]
        self._steps(lay, k)
        v = np.repeat(lay.params["vectors"], x.shape[1], axis=1)
        v[0] -= lay.inp[0].zero_point * k                 # the raw sums: minus z_x k
        return ops.pool2d(x, kernel, strides, pads, lay.inp[0].zero_point, "sum", lay.epilogue, v.astype(np.int32),
                          virtual_threads=vt, return_counters=True)


@register
class GlobalAveragePool(_AveragePool):
    kind = "gap"
    op_types = ("GlobalAveragePool",)

    def match(self, node, ctx):
        shape = ctx.shapes.get(node.input[0])
        if shape is not None and len(shape) == 4 and all(isinstance(d, int) for d in shape[2:]):
            _check_ties(ctx, node, shape[2] * shape[3])
        return QNode(self.kind, node.name or node.output[0], [ctx.act_input(node, 0)], [ctx.output_q(node)],
                     dict(kernel=None))


@register
class AveragePool(_AveragePool):
    kind = "avgpool"
    op_types = ("AveragePool",)

    def match(self, node, ctx):
        attrs, a = pool_window(node)
        if any(attrs["pads"]) and not a.get("count_include_pad", 0):
            raise Unsupported("padding not counted in the average (count_include_pad = 0): a divisor per position")
        _check_ties(ctx, node, attrs["kernel"][0] * attrs["kernel"][1])
        return QNode(self.kind, node.name or node.output[0], [ctx.act_input(node, 0)], [ctx.output_q(node)], attrs)
