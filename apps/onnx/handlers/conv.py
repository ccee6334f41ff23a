"""Conv (2-D, any group count, dilation 1): the GEMMs and the requantization on the accelerator.

Import: a Conv in QDQ form with an int8 symmetric weight (per tensor or per output channel) and an
int32 bias. Lowering: :func:`sw.ops.conv2d` with the layer's epilogue, padding done by the LOADs
when the padding value is 0 (the input zero point) and symmetric, else on the host; a conv with
fewer input channels than a block (an RGB stem) runs as a GEMM over its im2col matrix, which fills
the blocks. Grouped and depthwise convolutions run with block-diagonal weights
(``ops.conv2d(groups=...)``): one GEMM micro-op per kernel tap, output pixel and block of channels,
where the tensor ALU (a MUL and an ADD with a vector operand per tap, each two cycles) would take
four.
"""

from __future__ import annotations

import numpy as np

from sw import ops
from sw.isa import AluOp
from sw.runtime import current_config

from ..ir import QNode
from ..numerics import table_steps
from .base import Handler, Unsupported, check_auto_pad
from .gemm import acc_range, alu_per_row, compact_epilogue, describe_split, match_conv, prepare_gemm, run_epilogue
from .registry import for_kind, register


@register
class Conv(Handler):
    kind = "conv"
    op_types = ("Conv",)
    accelerated = True

    def match(self, node, ctx):
        a, x, w, sw = match_conv(node, ctx, 0, "conv")
        check_auto_pad(a)
        self.check_strides(list(a.get("strides", [1, 1])))
        b, sb = ctx.bias(node, 2)
        out = ctx.output_q(node)
        return self.make_node(node.name or node.output[0], x, out, w, sw, b, sb, list(a.get("pads", [0, 0, 0, 0])),
                              list(a.get("strides", [1, 1])), int(a.get("group", 1)))

    @staticmethod
    def check_strides(strides) -> None:
        if strides[0] != strides[1]:
            raise Unsupported(f"strides {list(strides)}: the accelerator's conv2d takes one stride for both axes")

    @classmethod
    def make_node(cls, name, x, out, weight, w_scale, bias, b_scale, pads, strides, groups) -> QNode:
        """The integer node of a conv from its values, as every front end builds it (this importer, and
        :mod:`apps.tvm_vta` from a Relax graph): int8 weight (O, C/groups, kh, kw) and its scales (1,) or (O,)
        (:func:`apps.onnx.graph.check_weight`), int64 bias or None and its scales, ``pads`` [top, left, bottom,
        right], ``strides`` [sh, sw] (equal: :class:`Unsupported` otherwise)."""
        cls.check_strides(strides)
        return QNode(cls.kind, name, [x], [out], dict(weight=weight, w_scale=w_scale, bias=bias, b_scale=b_scale,
                                                      pads=[int(p) for p in pads], strides=[int(s) for s in strides],
                                                      groups=int(groups)))

    def prepare(self, lay, graph, alu_mul):
        lay.params.update(pads=lay.node.attrs["pads"], strides=lay.node.attrs["strides"],
                          groups=lay.node.attrs["groups"])
        prepare_gemm(lay, alu_mul)

    def pad_input(self, lay, x):
        """Pad with the input zero point (ONNX pads [top, left, bottom, right])."""
        t, l, b, r = lay.params["pads"]
        if not (t or l or b or r):
            return x
        return np.pad(x, ((0, 0), (0, 0), (t, b), (l, r)), constant_values=lay.inp[0].zero_point)

    def reference(self, lay, x):
        acc = ops.conv2d_nchw(self.pad_input(lay, x), lay.params["weight"], stride=tuple(lay.params["strides"]),
                              padding=0, groups=lay.params["groups"])
        return lay.epilogue.reference(acc, lay.params["vectors"], 1)

    def placement(self, lay, xs):
        g = lay.params["groups"]
        how = ""
        if g > 1:
            cfg = current_config()
            o, cg, kh, kw = lay.params["weight"].shape
            ho, wo = self._out_hw(lay, xs[0].shape[2:]) if xs[0].ndim == 4 else (1, 1)
            plan = self._depthwise_plan(lay, xs) if xs[0].ndim == 4 else None
            if plan is not None:
                how = (f"depthwise on the DEPTHWISE mode, strips of {plan.r} output rows (the planner's estimate "
                       f"beats the block-diagonal GEMM)")
            else:
                _, per, _, obg = ops.block_groups(cg * g, o, g, cfg)
                if obg * ho * wo < 3:
                    return "cpu", (f"a grouped conv with a {ho}x{wo} output and {obg} output block per block-group: "
                                   f"VTA's GEMM needs 3 output blocks per tile")
                how = (f"{'depthwise' if cg == 1 else 'grouped'}, {g} groups as {per} per block-diagonal block")
        notes = [n for n in (describe_split(lay), "im2col on the host (few input channels)"
                             if self._im2col_pays(lay) else "", how) if n]
        return "vta", "; ".join(notes)

    @staticmethod
    def _load_padding(lay) -> int | None:
        """The padding the accelerator's LOADs insert for this conv (zeros: where the zero point is 0 and the
        padding is the same on every side), or None where the host pads the input with the zero point."""
        t, l, b, r = lay.params["pads"]
        kh, kw = lay.params["weight"].shape[2:]
        return t if lay.inp[0].zero_point == 0 and t == l == b == r and t < min(kh, kw) else None

    def _depthwise_plan(self, lay, xs):
        """The DEPTHWISE plan :func:`sw.ops.conv2d` takes for this layer at the runner's two virtual threads, or None
        (not depthwise, or the block-diagonal GEMM is estimated faster)."""
        p = lay.params
        o, cg, kh, kw = p["weight"].shape
        n, c, h, w = xs[0].shape
        if cg != 1 or o != c or p["groups"] != c or len(set(p["strides"])) != 1:
            return None
        pad = self._load_padding(lay)
        if pad is None:
            t, l, b, r = p["pads"]
            h, w, pad = h + t + b, w + l + r, 0
        epi = compact_epilogue(lay, keep_bias=False)[0]
        return ops.depthwise_choice(n, c, h, w, kh, kw, int(p["strides"][0]), pad, 2, epi, current_config())[0]

    @staticmethod
    def _out_hw(lay, hw):
        t, l, b, r = lay.params["pads"]
        kh, kw = lay.params["weight"].shape[2:]
        s = lay.params["strides"]
        return (hw[0] + t + b - kh) // s[0] + 1, (hw[1] + l + r - kw) // s[1] + 1

    @staticmethod
    def _im2col_pays(lay) -> bool:
        """A conv with fewer input channels than a block (an RGB stem) wastes most of each GEMM block;
        as a GEMM over its im2col matrix (K = C*kh*kw) it fills the blocks."""
        if lay.params["groups"] > 1:
            return False
        c, kh, kw = lay.params["weight"].shape[1:]
        block = current_config().BLOCK_IN
        direct = c / (-(-c // block) * block)
        k = c * kh * kw
        return direct < 0.5 and k / (-(-k // block) * block) > 2 * direct

    def residual_epilogue(self, lay, add, index: int, xs, other) -> tuple[ops.Epilogue, np.ndarray] | None:
        """The epilogue of this conv with the residual add ``add`` fused in (this conv's output is the add's
        input ``index``, ``other`` its other input) and its vectors, or None where the fusion does not apply: a
        grouped or im2col conv, a requantization split with the CPU, an add on the CPU, another shape, a
        requantization whose result could leave int8 (then STORE's truncation is part of the value).

        The conv's requantization, the add's rescaling of both inputs and its own requantization are one list
        of steps, compacted (:func:`sw.ops.compact`: the conv's rounding shift, the add's zero point and
        multiplier share passes). It pays even where the conv is bound by the ALU (a 1x1 conv over few
        channels): the add's own steps cost fewer ALU passes per row than the separate add's whole pass through
        DRAM."""
        p = lay.params
        if p["groups"] > 1 or self._im2col_pays(lay) or p["split"] or add.cpu_reason or xs[0].ndim != 4:
            return None
        o = p["weight"].shape[0]
        if np.shape(other) != (xs[0].shape[0], o, *self._out_hw(lay, xs[0].shape[2:])):
            return None
        values = self._int8_values(lay)
        if values is None:
            return None
        lo, hi, _ = values
        memo = p.setdefault("fused", {})
        if (add.name, index) not in memo:
            pre = for_kind("add").operand_steps(add)
            steps, residual, vecs = ops.compact(list(lay.steps) + pre[index] + [(AluOp.ADD, "r")] + list(add.steps),
                                                p["vectors"], lo, hi, residual=pre[1 - index])
            memo[add.name, index] = ops.Epilogue(tuple(steps), 1, tuple(residual)), vecs
        return memo[add.name, index]

    def table_epilogue(self, lay, isl, xs) -> tuple[ops.Epilogue, np.ndarray] | None:
        """The epilogue of this conv with the pointwise table island ``isl`` after it (a LeakyRelu: its 256-entry
        table) and its vectors, or None: the table must be ALU steps on every value the conv's output can take
        (:func:`apps.onnx.numerics.table_steps`: one slope, or two meeting at the zero point, computed in a
        copy of the values, ``Epilogue.branch``), and the longer epilogue must still hide behind the GEMMs (its
        ALU cycles per accumulator row as the config runs it, :func:`~apps.onnx.handlers.gemm.alu_per_row`, at
        most the GEMM's cycles per row: otherwise the CPU's table lookup costs the accelerator nothing). A
        requantization split with the CPU never fuses."""
        p = lay.params
        if p["split"] or xs[0].ndim != 4:
            return None
        c, kh, kw = p["weight"].shape[1:]
        cfg = current_config()
        block = cfg.BLOCK_IN
        gemm = -(-c * kh * kw // block) if self._im2col_pays(lay) else -(-c // block) * kh * kw
        rows, blocks = self._tile_rows(lay, xs[0].shape)
        least = 0 if cfg.POST_UNIT else 4       # the table's steps: 4 ALU passes at least (or in a POST pass)
        if alu_per_row(compact_epilogue(lay)[0], rows, blocks) + least > gemm:     # (no fit needed to refuse)
            return None
        memo = p.setdefault("tails", {})
        if isl.name not in memo:
            memo[isl.name] = self._table_epilogue(lay, isl)
        fusion = memo[isl.name]
        return fusion if fusion is not None and alu_per_row(fusion[0], rows, blocks) <= gemm else None

    def _tile_rows(self, lay, shape) -> tuple[int, int]:
        """(accumulator rows per channel block, channel blocks) of the conv's output of input ``shape``: its
        tiles' largest (an im2col conv's as the GEMM's)."""
        cfg = current_config()
        o = lay.params["weight"].shape[0]
        ho, wo = self._out_hw(lay, shape[2:])
        if self._im2col_pays(lay):
            return -(-shape[0] * ho * wo // cfg.BATCH), -(-o // cfg.BLOCK_OUT)
        return ho * wo, -(-o // cfg.BLOCK_OUT)

    @staticmethod
    def _int8_values(lay):
        """(lo, hi, (qmin, qmax)): the accumulators' interval per channel and the interval of the requantized
        values, or None when those could leave int8 (then STORE's truncation is part of the value, which no
        fused step sees). The steps are monotonic: the ends of the accumulators' interval give the values'."""
        lo, hi = acc_range(lay)
        ends = lay.epilogue.apply(np.stack([lo, hi]), lay.params["vectors"], channel_axis=1)
        if ends.min() < -128 or ends.max() > 127:
            return None
        return lo, hi, (int(ends.min()), int(ends.max()))

    def _table_epilogue(self, lay, isl):
        p = lay.params
        values = self._int8_values(lay)
        fit = None if values is None else table_steps(isl.params["table"], *values[2], lay.out.zero_point)
        if fit is None:
            return None
        lo, hi, _ = values
        pre, branch, post = fit
        steps, _, vecs = ops.compact(list(lay.steps) + pre, p["vectors"], lo, hi)
        if branch is not None:
            branch, vecs = ops.with_operands(branch, vecs)
        post, vecs = ops.with_operands(post, vecs)
        return ops.Epilogue(tuple(steps + post), 1, None, None if branch is None else (len(steps), tuple(branch))), vecs

    def lower(self, lay, xs, vt, fused=None):
        """The conv on the accelerator; ``fused`` = (epilogue, vectors, residual tensor or None): with a residual
        add (:meth:`residual_epilogue`) or a pointwise table (:meth:`table_epilogue`) in its epilogue, returning
        the add's or the table's output."""
        p = lay.params
        o, c, kh, kw = p["weight"].shape
        by_columns = self._im2col_pays(lay)
        keep = by_columns and ops.spare_lanes(c * kh * kw) >= 2           # (the GEMM may take the bias)
        epi, vecs, residual = fused if fused is not None else (*compact_epilogue(lay, keep_bias=keep), None)
        extra = {} if residual is None else {"residual": residual}
        if by_columns:
            cols, (n, ho, wo) = im2col(self.pad_input(lay, xs[0]), kh, kw, p["strides"])
            y, counters = ops.dense(cols, p["weight"].reshape(o, -1), vecs, epilogue=epi,
                                    virtual_threads=vt, return_counters=True)
            y = np.ascontiguousarray(y.reshape(n, ho, wo, o).transpose(0, 3, 1, 2))
        else:
            x, pad = xs[0], self._load_padding(lay)
            if pad is None:
                x, pad = self.pad_input(lay, x), 0    # pad with the zero point on the host
            y, counters = ops.conv2d(x, p["weight"], vecs, stride=int(p["strides"][0]), padding=pad,
                                     epilogue=epi, virtual_threads=vt, return_counters=True, groups=p["groups"],
                                     **extra)
        return (run_epilogue(lay, y) if fused is None else y), counters

    def macs(self, lay, xs, y):
        return int(np.prod(y.shape)) * lay.macs_per_item // lay.params["weight"].shape[0]


def im2col(x, kh, kw, stride):
    """(N, C, H, W) already padded -> (N*Ho*Wo, C*kh*kw), rows in (n, oh, ow) order, columns (c, ky, kx)."""
    n, c, h, w = x.shape
    sh, sw = stride
    ho, wo = (h - kh) // sh + 1, (w - kw) // sw + 1
    cols = np.empty((n, ho, wo, c, kh, kw), x.dtype)
    for ky in range(kh):
        for kx in range(kw):
            cols[:, :, :, :, ky, kx] = x[:, :, ky:ky + sh * (ho - 1) + 1:sh, kx:kx + sw * (wo - 1) + 1:sw].transpose(
                0, 2, 3, 1)
    return cols.reshape(n * ho * wo, c * kh * kw), (n, ho, wo)
