"""Gemm and MatMul with a constant weight: a dense layer on the accelerator.

A MatMul's input may have any rank >= 2 (a transformer's (batch, sequence, hidden) activation, as PyTorch
exports ``nn.Linear``): its leading dimensions are the dense layer's rows."""

from __future__ import annotations

import numpy as np

from sw import ops

from ..ir import QNode
from ..proto import attrs_of
from .base import Handler, Unsupported
from .gemm import compact_epilogue, describe_split, prepare_gemm, run_epilogue
from .registry import register


@register
class Dense(Handler):
    kind = "dense"
    op_types = ("Gemm", "MatMul")
    accelerated = True

    def match(self, node, ctx):
        ctx.only_output(node)
        a = attrs_of(node)
        x = ctx.act_input(node, 0)
        if node.op_type == "Gemm":
            if a.get("transA", 0):
                raise Unsupported("transA = 1; the accelerator's dense takes 0")
            if a.get("alpha", 1.0) != 1.0 or a.get("beta", 1.0) != 1.0:
                raise Unsupported(f"alpha/beta = {a.get('alpha', 1.0)}/{a.get('beta', 1.0)}; taken: 1")
            trans_b = a.get("transB", 0)
            w, sw = ctx.weight(node, 1, channel_axis=0 if trans_b else 1)
            w = w if trans_b else w.T
            b, sb = ctx.bias(node, 2)
        else:
            w, sw = ctx.weight(node, 1, channel_axis=1)
            w, b, sb = w.T, None, None
        if w.ndim != 2:
            raise Unsupported(f"weight of rank {w.ndim}; the accelerator's dense takes 2")
        shape = ctx.shapes.get(node.input[0])
        if shape is not None and node.op_type == "Gemm" and len(shape) != 2:
            raise Unsupported(f"input of rank {len(shape)}; Gemm takes (N, K)")
        out = ctx.output_q(node)
        return self.make_node(node.name or node.output[0], x, out, w, sw, b, sb, node.op_type == "MatMul")

    @classmethod
    def make_node(cls, name, x, out, weight, w_scale, bias, b_scale, leading_rows: bool) -> QNode:
        """The integer node of a dense layer from its values, as every front end builds it: int8 weight (M, K)
        (outputs, inputs) of rank 2 (:class:`Unsupported` otherwise) with scales (1,) or (M,), int64 bias or None
        and its scales; ``leading_rows``: an input of rank > 2 has its leading dimensions as rows (a MatMul's)."""
        if weight.ndim != 2:
            raise Unsupported(f"weight of rank {weight.ndim}; the accelerator's dense takes 2")
        return QNode(cls.kind, name, [x], [out], dict(weight=np.ascontiguousarray(weight), w_scale=w_scale, bias=bias,
                                                      b_scale=b_scale, leading_rows=bool(leading_rows)))

    def prepare(self, lay, graph, alu_mul):
        prepare_gemm(lay, alu_mul)

    @staticmethod
    def _rows(lay, x) -> np.ndarray:
        """The (N, K) matrix of the input: a MatMul's leading dimensions flattened into rows, a Gemm's input
        as it is."""
        return x.reshape(-1, x.shape[-1]) if lay.node.attrs.get("leading_rows") else x.reshape(x.shape[0], -1)

    @staticmethod
    def _shaped(lay, x, y) -> np.ndarray:
        return y.reshape(*x.shape[:-1], y.shape[-1]) if lay.node.attrs.get("leading_rows") else y

    def reference(self, lay, x):
        acc = ops.gemm_ref(self._rows(lay, x), lay.params["weight"])
        return self._shaped(lay, x, lay.epilogue.reference(acc, lay.params["vectors"], 1))

    def placement(self, lay, xs):
        return "vta", "; ".join(n for n in ("leading dimensions as rows" if np.ndim(xs[0]) > 2 else "",
                                            describe_split(lay)) if n)

    def lower(self, lay, xs, vt):
        x = self._rows(lay, xs[0])
        epi, vecs = compact_epilogue(lay, keep_bias=ops.spare_lanes(x.shape[1]) >= 2)   # (the GEMM may take the bias)
        y, counters = ops.dense(x, lay.params["weight"], vecs, epilogue=epi,
                                virtual_threads=vt, return_counters=True)
        return self._shaped(lay, xs[0], run_epilogue(lay, y)), counters

    def macs(self, lay, xs, y):
        return int(np.prod(y.shape[:-1])) * lay.params["weight"].size
