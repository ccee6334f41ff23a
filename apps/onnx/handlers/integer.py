"""MatMulInteger and ConvInteger (dynamic quantization): exact int32 products on the accelerator.

``onnxruntime.quantization.quantize_dynamic`` writes a MatMul as ``DynamicQuantizeLinear`` (the
activation's scale and zero point computed from each input: it stays on the CPU, in an island),
``MatMulInteger`` of the uint8 activation and the int8 weight with both zero points, and a float rescale
after it (``Cast``, ``Mul``: the CPU again). The integer product ``sum_k (a - z_a)(b - z_b)`` runs here on
the accelerator, with the zero point known only at run time: its term goes into the bias vector v0 of each
run (:func:`apps.onnx.handlers.matmul.zero_point_gemm`), and the four bytes of every accumulator are read
back (:meth:`sw.ops.Epilogue` with four planes), so the int32 result is numpy's exactly. A uint8 operand
``q`` is used as the int8 ``q - 128`` with zero point ``z - 128`` (the same differences).

ConvInteger runs as a conv (:func:`sw.ops.conv2d`, grouped and depthwise too) of its input padded with its
zero point (a padded tap adds nothing), the zero point's term in v0; where that does not apply (an asymmetric
weight, two strides), as the same product over the im2col matrix, one GEMM per group.
"""

from __future__ import annotations

import numpy as np

from sw import ops
from sw.isa import AluOp
from sw.runtime import current_config

from ..ir import QNode
from ..proto import attrs_of
from .base import Handler, Unsupported, check_auto_pad
from .conv import im2col
from .gemm import add_counters
from .matmul import each_head, zero_point_gemm
from .registry import register

__all__ = ["IntegerMatMul", "IntegerConv"]

_EXACT = ops.Epilogue(((AluOp.ADD, "v0"),), 4)        # v0: the zero-point term; four bytes read back
_NO_EXTRA = (0, [])


def _int8(x) -> np.ndarray:
    """An int8 / uint8 array as int8 codes with the same differences (uint8 minus 128)."""
    x = np.asarray(x)
    return (x.astype(np.int16) - 128).astype(np.int8) if x.dtype == np.uint8 else x.astype(np.int8)


def _zero_point(z, operand) -> int:
    """A scalar zero point of ``operand``'s type in the int8 form of :func:`_int8`."""
    z = np.asarray(z)
    if z.size != 1:
        raise ValueError(f"a zero point of {z.size} elements where one is taken")
    return int(z.reshape(())) - (128 if np.asarray(operand).dtype == np.uint8 else 0)


def _operands(node, ctx, names: tuple[str, ...]):
    """(runtime input names, {position: constant}) of ``node``'s inputs: each one a runtime tensor or a
    constant (an initializer or Constant); an absent optional zero point is None (0 of its operand's type)."""
    runtime, consts = [], {}
    for pos in range(len(names)):
        name = node.input[pos] if pos < len(node.input) else ""
        if name in ctx.inits:
            consts[pos] = ctx.inits[name]
        elif name:
            runtime.append(name)
        else:
            consts[pos] = None
    return runtime, consts


def _gather(lay, xs) -> list:
    """The node's operands in order, runtime tensors from ``xs`` and constants from the layer."""
    consts, it = lay.node.attrs["consts"], iter(xs)
    ops_ = [consts[p] if p in consts else next(it) for p in range(lay.node.attrs["arity"])]
    data = ops_[:2]
    zps = [np.zeros((), np.asarray(d).dtype) if z is None else z for d, z in zip(data, ops_[2:4])]
    return data + zps


class _Integer(Handler):
    accelerated = True
    names: tuple[str, ...] = ()

    def _node(self, node, ctx, **attrs) -> QNode:
        ctx.only_output(node)
        runtime, consts = _operands(node, ctx, self.names)
        for pos in (2, 3):
            z = consts.get(pos)
            if z is not None and np.any(np.asarray(z) != np.asarray(z).flat[0]):
                raise Unsupported(f"{self.names[pos]} of {np.asarray(z).size} different values; taken: one")
        return QNode(self.kind, node.name or node.output[0], runtime, [node.output[0]],
                     dict(consts=consts, arity=len(self.names), **attrs))

    def placement(self, lay, xs):
        return "vta", "exact int32 (zero points at run time in the bias vector; four bytes read back)"


@register
class IntegerMatMul(_Integer):
    kind = "matmul_integer"
    op_types = ("MatMulInteger",)
    names = ("A", "B", "a_zero_point", "b_zero_point")

    def match(self, node, ctx):
        sa, sb = ctx.shapes.get(node.input[0]), ctx.shapes.get(node.input[1])
        if node.input[1] not in ctx.inits and sa is not None and sb is not None and len(sa) != len(sb):
            raise Unsupported(f"operands of ranks {len(sa)} and {len(sb)}; taken: a constant B, or equal ranks")
        if node.input[1] in ctx.inits and ctx.inits[node.input[1]].ndim != 2:
            raise Unsupported(f"a constant B of rank {ctx.inits[node.input[1]].ndim}; taken: 2")
        return self._node(node, ctx)

    def reference(self, lay, *xs):
        a, b, za, zb = _gather(lay, xs)
        acc = np.matmul(a.astype(np.int64) - _flat_zp(za), b.astype(np.int64) - _flat_zp(zb))
        return acc.astype(np.int32)

    def placement(self, lay, xs):
        a, b, _, _ = _gather(lay, xs)
        if b.ndim > 2 and a.shape[:-2] != b.shape[:-2]:
            return "cpu", f"leading dimensions {a.shape[:-2]} and {b.shape[:-2]} differ (broadcasting)"
        return super().placement(lay, xs)

    def lower(self, lay, xs, vt):
        a, b, za, zb = _gather(lay, xs)
        za, zb = _zero_point(za, a), _zero_point(np.asarray(zb).flat[0], b)
        a8, b8 = _int8(a), _int8(b)
        if b8.ndim == 2:                       # a constant weight: one dense layer over the leading dimensions
            y, counters = _product(a8.reshape(-1, a8.shape[-1]), b8, za, zb, vt)
            return y.reshape(*a.shape[:-1], b.shape[-1]), counters
        return each_head(a8, b8, lambda x, w: _product(x, w, za, zb, vt))

    def macs(self, lay, xs, y):
        return int(np.prod(y.shape)) * int(np.shape(xs[0])[-1])


@register
class IntegerConv(_Integer):
    kind = "conv_integer"
    op_types = ("ConvInteger",)
    names = ("x", "w", "x_zero_point", "w_zero_point")

    def match(self, node, ctx):
        a = attrs_of(node)
        if node.input[1] not in ctx.inits or ctx.inits[node.input[1]].ndim != 4:
            raise Unsupported("a weight that is not a constant of rank 4 (taken: a 2-D convolution's)")
        if any(d != 1 for d in a.get("dilations", [1, 1])):
            raise Unsupported(f"dilations = {list(a['dilations'])}; taken: 1")
        check_auto_pad(a)
        return self._node(node, ctx, pads=list(a.get("pads", [0, 0, 0, 0])), strides=list(a.get("strides", [1, 1])),
                          groups=int(a.get("group", 1)))

    def _columns(self, lay, x, zx):
        """The im2col matrix (N*Ho*Wo, C*kh*kw) of ``x`` padded with ``zx``, and (n, ho, wo)."""
        t, l, b, r = lay.node.attrs["pads"]
        x = np.pad(x, ((0, 0), (0, 0), (t, b), (l, r)), constant_values=zx)
        kh, kw = lay.node.attrs["consts"][1].shape[2:]
        return im2col(x, kh, kw, lay.node.attrs["strides"])

    def _each_group(self, lay, x, w, zx, zw, product):
        g = lay.node.attrs["groups"]
        o, cg = w.shape[:2]
        outs, total = [], {}
        for i in range(g):
            cols, (n, ho, wo) = self._columns(lay, x[:, i * cg:(i + 1) * cg], zx)
            y, counters = product(cols, w[i * o // g:(i + 1) * o // g].reshape(o // g, -1).T, zx, zw)
            outs.append(y.reshape(n, ho, wo, o // g))
            add_counters(total, counters)
        return np.ascontiguousarray(np.concatenate(outs, axis=3).transpose(0, 3, 1, 2)), total

    def reference(self, lay, *xs):
        x, w, zx, zw = _gather(lay, xs)
        y, _ = self._each_group(lay, x, w, _flat_zp(zx), _flat_zp(zw), lambda c, k, za, zb: (
            ((c.astype(np.int64) - za) @ (k.astype(np.int64) - zb)).astype(np.int32), {}))
        return y

    def lower(self, lay, xs, vt):
        x, w, zx, zw = _gather(lay, xs)
        za, zb = _zero_point(zx, x), _zero_point(np.asarray(zw).flat[0], w)
        x8, w8 = _int8(x), _int8(w)
        if self._direct(lay, x8, w8, zb):
            return self._conv(lay, x8, w8, za, vt)
        return self._each_group(lay, x8, w8, za, zb, lambda c, k, za_, zb_: _product(c, k, za_, zb_, vt))

    @staticmethod
    def _direct(lay, x8, w8, zb: int) -> bool:
        """Whether :func:`sw.ops.conv2d` takes the layer (a symmetric weight, one stride, and for a grouped conv
        three output blocks per tile), which a grouped or depthwise conv needs: the im2col path runs one GEMM
        per group."""
        a = lay.node.attrs
        if zb != 0 or a["strides"][0] != a["strides"][1]:
            return False
        o, cg, kh, kw = w8.shape
        t, l, b, r = a["pads"]
        ho = (x8.shape[2] + t + b - kh) // a["strides"][0] + 1
        wo = (x8.shape[3] + l + r - kw) // a["strides"][1] + 1
        obg = ops.block_groups(cg * a["groups"], o, a["groups"], current_config())[3]
        return a["groups"] == 1 or obg * ho * wo >= 3

    @staticmethod
    def _conv(lay, x8, w8, za: int, vt: int):
        """The product as a conv on the accelerator: the input padded with its zero point on the host, the zero
        point's term ``-z_a sum w`` in v0, the four bytes of each accumulator read back."""
        a = lay.node.attrs
        t, l, b, r = a["pads"]
        xp = np.pad(x8, ((0, 0), (0, 0), (t, b), (l, r)), constant_values=za)
        v0 = (-za * w8.reshape(w8.shape[0], -1).astype(np.int64).sum(axis=1)).astype(np.int32)[None]
        return ops.conv2d(xp, w8, v0, stride=int(a["strides"][0]), padding=0, epilogue=_EXACT, groups=a["groups"],
                          virtual_threads=vt, return_counters=True)

    def macs(self, lay, xs, y):
        w = lay.node.attrs["consts"][1]
        return int(np.prod(y.shape)) * int(np.prod(w.shape[1:]))


def _flat_zp(z) -> np.ndarray | int:
    """A zero point for numpy's broadcast: a scalar, or per column of B (the last axis)."""
    z = np.asarray(z).astype(np.int64)
    return int(z.reshape(())) if z.size == 1 else z.reshape(-1)


def _product(a8, b8, za: int, zb: int, vt: int):
    """Exact int32 ``(a8 - za)(b8 - zb)`` of int8 (M, K) and (K, N) on the accelerator."""
    if not -128 <= zb <= 127 or not -128 <= za <= 127:
        raise ValueError(f"zero points {za}, {zb} out of the int8 range [-128, 127] after the uint8 shift")
    y, counters, _, transposed = zero_point_gemm(a8, b8, za, zb, _EXACT, _NO_EXTRA, vt)
    return (y.T if transposed else y).astype(np.int32), counters
