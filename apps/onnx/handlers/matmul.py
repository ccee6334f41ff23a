"""MatMul of two activations (attention's Q K^T and A V): GEMMs and requantization on the accelerator.

``acc = sum_k (a - z_a)(b - z_b)`` for A (..., M, K) and B (..., K, N) with the same leading (batch,
head) dimensions, one GEMM per leading index. Unlike a weight, B has a zero point, and its term
``-z_b sum_k a[m, k]`` varies along the rows, where VTA's epilogue vectors vary along the columns. So:

- z_b = 0: one GEMM of A and B, the term ``-z_a sum_k b[k, n]`` in the bias vector v0 (per column);
- else z_a = 0: the transposed product B^T A^T, whose rows are B's, the same way, transposed back;
- else: the GEMM of [A, A] and [B; -z_b] (K doubled; [A, A, A] and [B; 64; 64] for z_b = -128), whose
  sum is ``sum_k a (b - z_b)``; v0 takes ``-z_a sum_k (b - z_b)``.

v0 depends on B, so it is computed for each run (a column sum, on the host). The requantization is
that of a dense layer with multiplier ``s_a s_b / s_y`` (docs/numerics.md).
"""

from __future__ import annotations

import numpy as np

from sw import ops

from ..ir import QNode
from .base import Handler, Unsupported
from .gemm import accelerator_epilogue, add_counters, describe_split, run_epilogue, set_requant, vectors
from .registry import register


def zero_point_gemm(a, b, za: int, zb: int, epi: ops.Epilogue, extra, vt: int):
    """``sum_k (a - za)(b - zb)`` of int8 A (M, K) and B (K, N) on the accelerator, then ``epi`` (whose v0 holds
    the zero-point term, ``extra`` the other vectors: :func:`~apps.onnx.handlers.gemm.vectors`), in the three
    ways of the module's docstring. Returns (what the accelerator read back, counters, the vectors, transposed):
    the result is (M, N), or (N, M) when ``transposed``, and the vectors run along its columns."""
    if zb == 0 or za != 0:
        vec = vectors(-za * (b.astype(np.int64).sum(axis=0) - b.shape[0] * zb), extra, b.shape[1])
        if zb:                              # [A, A] x [B; -zb]: sum_k a (b - zb)
            parts = [np.full_like(b, -zb)] if zb != -128 else [np.full_like(b, 64)] * 2
            a = np.concatenate([a] * (1 + len(parts)), axis=1)
            b = np.concatenate([b] + parts, axis=0)
        y, counters = ops.dense(a, np.ascontiguousarray(b.T), vec, epilogue=epi, virtual_threads=vt,
                                return_counters=True)
        return y, counters, vec, False
    # za == 0, zb != 0: (B^T A^T)^T; the per-column term of the transposed product is -zb sum_k a
    vec = vectors(-zb * a.astype(np.int64).sum(axis=1), extra, a.shape[0])
    y, counters = ops.dense(np.ascontiguousarray(b.T), a, vec, epilogue=epi, virtual_threads=vt, return_counters=True)
    return y, counters, vec, True


def each_head(a, b, product):
    """``product(x, w) -> (y, counters)`` of each (M, K) x (K, N) pair of A (..., M, K) and B (..., K, N) with the
    same leading (batch, head) dimensions: the results stacked to (..., M, N), the counters summed."""
    outs, total = [], {}
    for x, w in zip(a.reshape(-1, *a.shape[-2:]), b.reshape(-1, *b.shape[-2:])):
        y, counters = product(x, w)
        outs.append(y)
        add_counters(total, counters)
    return np.stack(outs).reshape(*a.shape[:-2], *outs[0].shape), total


@register
class MatMulActivations(Handler):
    kind = "matmul"
    op_types = ("MatMul",)
    accelerated = True

    def match(self, node, ctx):
        ctx.only_output(node)
        a, b = ctx.act_input(node, 0), ctx.act_input(node, 1)
        sa, sb = ctx.shapes.get(node.input[0]), ctx.shapes.get(node.input[1])
        if sa is not None and sb is not None and (len(sa) < 2 or len(sb) < 2 or len(sa) != len(sb)):
            raise Unsupported(f"operands of ranks {len(sa)} and {len(sb)}; taken: equal ranks >= 2 (no broadcasting)")
        return QNode(self.kind, node.name or node.output[0], [a, b], [ctx.output_q(node)])

    def prepare(self, lay, graph, alu_mul):
        (qa, qb), k = lay.inp, graph.shapes.get(lay.node.inputs[1], (None,) * 2)[-2]
        za, zb = qa.zero_point, qb.zero_point
        kk = k if isinstance(k, int) and k > 0 else 1 << 14
        bound = kk * max(128 + za, 127 - za) * max(128 + zb, 127 - zb) + 1
        v0_max = abs(za) * kk * 256
        lay.params["extra"] = set_requant(lay, qa.scale * qb.scale / lay.out.scale, bound, alu_mul,
                                          np.array([-v0_max, v0_max]))

    def reference(self, lay, a, b):
        za, zb = lay.inp[0].zero_point, lay.inp[1].zero_point
        acc = np.matmul(a.astype(np.int64) - za, b.astype(np.int64) - zb)
        lead = acc.shape[:-2]
        flat = acc.reshape(-1, *acc.shape[-2:])
        vec = vectors(np.zeros(acc.shape[-1], np.int64), lay.params["extra"], acc.shape[-1])
        out = [lay.epilogue.reference(m.astype(np.int32), vec, 1) for m in flat]
        return np.stack(out).reshape(*lead, *out[0].shape)

    def placement(self, lay, xs):
        if len(xs) == 2 and (xs[0].shape[:-2] != xs[1].shape[:-2]):
            return "cpu", f"leading dimensions {xs[0].shape[:-2]} and {xs[1].shape[:-2]} differ (broadcasting)"
        za, zb = lay.inp[0].zero_point, lay.inp[1].zero_point
        how = ("B^T A^T" if zb and not za else "" if not zb else
               f"K {'tripled' if zb == -128 else 'doubled'} for the zero point of B ({zb})")
        return "vta", "; ".join(n for n in (how, describe_split(lay)) if n)

    def _gemm(self, lay, a, b, epi, vt):
        """One (M, K) x (K, N) product on the accelerator; returns ((M, N) result, counters)."""
        y, counters, vec, transposed = zero_point_gemm(a, b, lay.inp[0].zero_point, lay.inp[1].zero_point, epi,
                                                       lay.params["extra"], vt)
        y = run_epilogue(lay, y, vec)
        return (y.T if transposed else y), counters

    def lower(self, lay, xs, vt):
        epi = accelerator_epilogue(lay)
        return each_head(xs[0], xs[1], lambda x, w: self._gemm(lay, x, w, epi, vt))

    def macs(self, lay, xs, y):
        return int(np.prod(y.shape)) * int(xs[0].shape[-1])
