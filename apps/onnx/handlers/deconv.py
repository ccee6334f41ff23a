"""ConvTranspose (2-D, group 1, dilation 1): the GEMMs and the requantization on the accelerator.

A transposed convolution with stride s writes output pixel ``oy`` from the input pixels
``iy = (oy + pad - ky) / s`` for the kernel rows ``ky`` congruent to ``oy + pad`` modulo s. So the
outputs of one phase (``(oy + pad) mod s``, ``(ox + pad) mod s``) are an ordinary stride-1 convolution
of the input (padded with its zero point) with a sub-kernel: every s-th tap of the kernel, flipped.
The layer runs as s x s such convolutions on the accelerator, whose outputs are interleaved on the
host: exactly the layer's MACs, where zero insertion (upsampling the input with zeros, then one
convolution) would spend s^2 times as many on zeros. An input of 1 x 1 pixels (a generator's first
layer) is one GEMM instead: every output pixel is one column of the weight.

Each phase's zero-point correction ``-z_x * sum(sub-kernel)`` differs, so each phase gets its own v0.
"""

from __future__ import annotations

import numpy as np

from sw import ops

from ..ir import QNode
from .base import Handler, Unsupported
from .gemm import accelerator_epilogue, describe_split, match_conv, prepare_gemm, run_epilogue
from .registry import register


def _phases(k: int, s: int, pad: int, out: int):
    """The output phases r = 0..s-1 along one axis that have outputs: (output positions, first input
    position of the window (may be < 0), window length J, kernel taps r + (J - 1 - j) s for j < J)."""
    out_pos = np.arange(out)
    phases = []
    for r in range(s):
        pos = out_pos[(out_pos + pad) % s == r]
        taps = list(range(r, k, s))
        if len(pos) and taps:
            q0 = (pos[0] + pad - r) // s
            phases.append((pos, q0 - (len(taps) - 1), len(taps), taps[::-1]))
    return phases


@register
class ConvTranspose(Handler):
    kind = "deconv"
    op_types = ("ConvTranspose",)
    accelerated = True

    def match(self, node, ctx):
        a, x, w, sw = match_conv(node, ctx, 1, "transposed conv")
        if a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET") or "output_shape" in a:
            raise Unsupported("auto_pad / output_shape; taken: explicit pads")
        b, sb = ctx.bias(node, 2)
        out = ctx.output_q(node)
        return self.make_node(node.name or node.output[0], x, out, w, sw, b, sb, list(a.get("pads", [0, 0, 0, 0])),
                              list(a.get("strides", [1, 1])), list(a.get("output_padding", [0, 0])),
                              int(a.get("group", 1)))

    @classmethod
    def make_node(cls, name, x, out, weight, w_scale, bias, b_scale, pads, strides, output_padding, group) -> QNode:
        """The integer node of a transposed conv from its values, as every front end builds it: int8 weight in
        ONNX's layout (C, O, kh, kw) with scales (1,) or (O,), int64 bias or None and its scales, ``pads`` [top,
        left, bottom, right], ``strides``, ``output_padding``; ``group`` must be 1 (:class:`Unsupported`)."""
        if group != 1:
            raise Unsupported(f"group = {group}; the accelerator's transposed conv takes group 1")
        return QNode(cls.kind, name, [x], [out],
                     dict(weight=np.ascontiguousarray(weight.transpose(1, 0, 2, 3)), w_scale=w_scale, bias=bias,
                          b_scale=b_scale, pads=[int(p) for p in pads], strides=[int(s) for s in strides],
                          output_padding=[int(p) for p in output_padding]))

    def prepare(self, lay, graph, alu_mul):
        a = lay.node.attrs
        lay.params.update(pads=a["pads"], strides=a["strides"], output_padding=a["output_padding"])
        prepare_gemm(lay, alu_mul)      # weight (O, C, kh, kw): v0 = b - z_x * (sum over every tap)
        w = lay.params["weight"].astype(np.int64)
        lay.params["tap_sums"] = w.sum(axis=1)          # (O, kh, kw)

    def _out_hw(self, lay, h, w):
        t, l, b, r = lay.params["pads"]
        kh, kw = lay.params["weight"].shape[2:]
        sh, sw = lay.params["strides"]
        ph, pw = lay.params["output_padding"]
        return (h - 1) * sh - t - b + kh + ph, (w - 1) * sw - l - r + kw + pw

    def _phase_vectors(self, lay, taps_y, taps_x):
        """The vectors with v0 for a sub-kernel: the correction of its taps, not of the whole kernel."""
        zx = lay.inp[0].zero_point
        sub = lay.params["tap_sums"][:, taps_y][:, :, taps_x].sum(axis=(1, 2))
        v = lay.params["vectors"].astype(np.int64).copy()
        v[0] += zx * (lay.params["tap_sums"].sum(axis=(1, 2)) - sub)
        return v.astype(np.int32)

    def reference(self, lay, x):
        """The integer transposed convolution of (x - z_x), then the epilogue with v0 = the bias."""
        n, c, h, w = x.shape
        wt = lay.params["weight"].astype(np.int64)                  # (O, C, kh, kw)
        o, _, kh, kw = wt.shape
        sh, sw = lay.params["strides"]
        t, l, _, _ = lay.params["pads"]
        ho, wo = self._out_hw(lay, h, w)
        xz = x.astype(np.int64) - lay.inp[0].zero_point
        full = np.zeros((n, o, (h - 1) * sh + kh, (w - 1) * sw + kw), np.int64)
        for ky in range(kh):
            for kx in range(kw):
                full[:, :, ky:ky + (h - 1) * sh + 1:sh, kx:kx + (w - 1) * sw + 1:sw] += np.einsum(
                    "nchw,oc->nohw", xz, wt[:, :, ky, kx])
        acc = np.zeros((n, o, ho, wo), np.int64)
        hh, ww = min(ho, full.shape[2] - t), min(wo, full.shape[3] - l)
        acc[:, :, :hh, :ww] = full[:, :, t:t + hh, l:l + ww]
        v = lay.params["vectors"].astype(np.int64).copy()
        v[0] += lay.inp[0].zero_point * lay.params["tap_sums"].sum(axis=(1, 2))
        return lay.epilogue.reference(acc.astype(np.int32), v.astype(np.int32), 1)

    def _as_gemm(self, lay, h, w) -> bool:
        """A 1x1 input whose output lies within one kernel footprint: one GEMM."""
        if (h, w) != (1, 1):
            return False
        ho, wo = self._out_hw(lay, h, w)
        t, l, _, _ = lay.params["pads"]
        kh, kw = lay.params["weight"].shape[2:]
        return t + ho <= kh and l + wo <= kw

    def placement(self, lay, xs):
        h, w = xs[0].shape[2:] if xs[0].ndim == 4 else (0, 0)
        kh, kw = lay.params["weight"].shape[2:]
        sh, sw = lay.params["strides"]
        if not self._as_gemm(lay, h, w) and (sh > kh or sw > kw):
            return "cpu", f"strides {lay.params['strides']} larger than the kernel {kh}x{kw}: output phases no tap reaches"
        how = ("one GEMM (1x1 input)" if self._as_gemm(lay, h, w) else
               f"{sh * sw} stride-1 convolutions, one per output phase")
        return "vta", "; ".join(n for n in (how, describe_split(lay)) if n)

    def lower(self, lay, xs, vt):
        x = xs[0]
        n, c, h, w = x.shape
        p = lay.params
        wt = p["weight"]
        o, _, kh, kw = wt.shape
        ho, wo = self._out_hw(lay, h, w)
        epi = accelerator_epilogue(lay)
        t, l, _, _ = p["pads"]
        if self._as_gemm(lay, h, w):
            rows = wt.transpose(0, 2, 3, 1).reshape(o * kh * kw, c)          # output (o, ky, kx) = a column
            vec = np.repeat(p["vectors"].astype(np.int64), kh * kw, axis=1)
            vec[0] += lay.inp[0].zero_point * (np.repeat(p["tap_sums"].sum(axis=(1, 2)), kh * kw)
                                               - p["tap_sums"].ravel())     # each column's own correction
            vec = vec.astype(np.int32)
            y, counters = ops.dense(x.reshape(n, c), rows, vec, epilogue=epi, virtual_threads=vt, return_counters=True)
            y = y.reshape(n, o, kh, kw)[:, :, t:t + ho, l:l + wo]
            return run_epilogue(lay, np.ascontiguousarray(y)), counters
        zx = lay.inp[0].zero_point
        out = None
        total: dict = {}
        for pos_y, y0, jy, taps_y in _phases(kh, p["strides"][0], t, ho):
            for pos_x, x0, jx, taps_x in _phases(kw, p["strides"][1], l, wo):
                # the input window rows y0 .. y0 + len(pos_y) - 1 + jy - 1, padded with the zero point
                ny, nx = len(pos_y) + jy - 1, len(pos_x) + jx - 1
                win = np.full((n, c, ny, nx), zx, np.int8)
                sy0, sy1 = max(0, y0), min(h, y0 + ny)
                sx0, sx1 = max(0, x0), min(w, x0 + nx)
                if sy0 < sy1 and sx0 < sx1:
                    win[:, :, sy0 - y0:sy1 - y0, sx0 - x0:sx1 - x0] = x[:, :, sy0:sy1, sx0:sx1]
                sub = np.ascontiguousarray(wt[:, :, taps_y][:, :, :, taps_x])
                y, counters = ops.conv2d(win, sub, self._phase_vectors(lay, taps_y, taps_x), stride=1, padding=0,
                                         epilogue=epi, virtual_threads=vt, return_counters=True)
                if out is None:
                    out = np.zeros((n, o, ho, wo), y.dtype)
                out[:, :, pos_y[:, None], pos_x[None, :]] = y
                for k, v in counters.items():
                    total[k] = total.get(k, 0) + v
        return run_epilogue(lay, out), total

    def macs(self, lay, xs, y):
        return int(np.prod(xs[0].shape)) * int(np.prod(lay.params["weight"].shape)) // lay.params["weight"].shape[1]
