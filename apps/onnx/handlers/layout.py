"""Layout operators on int8 codes, on the host: no dequantize / quantize round trip, no CPU island.

Reshape, Transpose, Squeeze, Unsqueeze, Flatten, Slice, Gather, Split, Concat, Identity, Pad,
DepthToSpace and SpaceToDepth only move, select or repeat values, so on a quantized tensor they move
its codes (canonical int8, :func:`apps.onnx.layers.canonical`) exactly. ``quantize_static`` gives most
of them (Reshape, Transpose, Squeeze, Unsqueeze, Flatten, Slice, Gather, Split, Pad with 0) the input's
quantization on the output: the layer is then the move alone. Where an output's quantization differs
(Concat of tensors of several scales, Identity / DepthToSpace / SpaceToDepth bracketed with their own
calibrated range, a Pad with a non-zero value), the moved codes are rescaled with the integer rescale of
:mod:`apps.onnx.numerics` (within 1 LSB of onnxruntime's float round trip).

Every input other than the data (a Reshape's shape, a Slice's starts, a Gather's indices, ...) must be a
constant; otherwise the handler declines the node with the reason and it runs in a CPU island as before.
"""

from __future__ import annotations

import numpy as np

from ..ir import QNode
from ..numerics import QParams, from_onnx_dtype, quantize_float, rescale_reference, rescale_steps
from ..proto import attrs_of
from .base import Handler, Unsupported
from .registry import register

__all__ = ["LayoutHandler"]

MOVED = "int8 codes moved on the host (no dequantize/quantize)"
RESCALED = "int8 codes moved on the host, then rescaled to the output's quantization (integer steps)"


def _const(node, ctx, idx: int, what: str, attr: str | None = None):
    """The constant input ``idx`` of ``node`` (an initializer or a Constant's value), else attribute ``attr``,
    else None when neither is given; :class:`Unsupported` when the input is a computed tensor."""
    name = node.input[idx] if len(node.input) > idx else ""
    if name:
        if name not in ctx.inits:
            raise Unsupported(f"{what} {name!r} is not a constant")
        return np.asarray(ctx.inits[name])
    if attr is not None:
        value = attrs_of(node).get(attr)
        return None if value is None else np.asarray(value)
    return None


def _ints(value) -> list[int] | None:
    return None if value is None else [int(v) for v in np.asarray(value).reshape(-1)]


def _rescaler(inp: QParams, out: QParams):
    """None when canonical ``inp`` and ``out`` agree, else (factors, steps, input zero point) of the rescale."""
    if inp.scale == out.scale and inp.zero_point == out.zero_point:
        return None
    factors, steps = rescale_steps([inp.scale / out.scale], [inp.zero_point], out)
    return factors, steps, inp.zero_point


def _rescaled(r, x: np.ndarray) -> np.ndarray:
    return np.asarray(x).astype(np.int8) if r is None else rescale_reference([x], [r[2]], r[0], r[1])


class LayoutHandler(Handler):
    """One data input (a per-tensor quantized activation), one quantized output; ``attrs`` (constants and
    attributes, checked at import) define the move, :meth:`move` does it on codes."""

    def attrs(self, node, ctx) -> dict:
        return {}

    def move(self, p: dict, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError(self.kind)

    def match(self, node, ctx):
        ctx.only_output(node)
        x = ctx.act_input(node, 0)
        attrs = self.attrs(node, ctx)
        return QNode(self.kind, node.name or node.output[0], [x], [ctx.output_q(node)], attrs)

    def prepare(self, lay, graph, alu_mul):
        lay.params = dict(lay.node.attrs)
        lay.prepare_rescale()

    def reference(self, lay, x):
        return lay.rescale(self.move(lay.params, x))

    def placement(self, lay, xs):
        return "cpu", MOVED if lay.params.get("identity", True) else RESCALED


@register
class Reshape(LayoutHandler):
    kind = "reshape"
    op_types = ("Reshape",)

    def attrs(self, node, ctx):
        shape = _ints(_const(node, ctx, 1, "shape", "shape"))
        if shape is None:
            raise Unsupported("no shape")
        return dict(shape=shape, allowzero=int(attrs_of(node).get("allowzero", 0)))

    def move(self, p, x):
        shape = [x.shape[i] if d == 0 and not p["allowzero"] else d for i, d in enumerate(p["shape"])]
        return x.reshape(shape)


@register
class Flatten(LayoutHandler):
    kind = "flatten"
    op_types = ("Flatten",)

    def attrs(self, node, ctx):
        return dict(axis=int(attrs_of(node).get("axis", 1)))

    def move(self, p, x):
        ax = p["axis"] + x.ndim if p["axis"] < 0 else p["axis"]
        return x.reshape(int(np.prod(x.shape[:ax], dtype=np.int64)), int(np.prod(x.shape[ax:], dtype=np.int64)))


@register
class Transpose(LayoutHandler):
    kind = "transpose"
    op_types = ("Transpose",)

    def attrs(self, node, ctx):
        return dict(perm=_ints(attrs_of(node).get("perm")))        # None: the axes reversed

    def move(self, p, x):
        return np.transpose(x, p["perm"])


@register
class Squeeze(LayoutHandler):
    kind = "squeeze"
    op_types = ("Squeeze",)

    def attrs(self, node, ctx):
        return dict(axes=_ints(_const(node, ctx, 1, "axes", "axes")))     # None: every axis of size 1

    def move(self, p, x):
        return np.squeeze(x, None if p["axes"] is None else tuple(p["axes"]))


@register
class Unsqueeze(LayoutHandler):
    kind = "unsqueeze"
    op_types = ("Unsqueeze",)

    def attrs(self, node, ctx):
        axes = _ints(_const(node, ctx, 1, "axes", "axes"))
        if axes is None:
            raise Unsupported("no axes")
        return dict(axes=axes)

    def move(self, p, x):
        return np.expand_dims(x, tuple(p["axes"]))          # axes of the output, negative ones counted from its end


@register
class Identity(LayoutHandler):
    kind = "identity"
    op_types = ("Identity",)

    def move(self, p, x):
        return x


def _slice_of(start: int, end: int, step: int, dim: int) -> slice:
    """ONNX Slice on one axis of size ``dim``: negative indices count from the end, then clamping to
    [0, dim] (step > 0) or [0, dim - 1] and [-1, dim - 1] (step < 0; end -1: through index 0)."""
    start = start + dim if start < 0 else start
    end = end + dim if end < 0 else end
    if step > 0:
        return slice(min(max(start, 0), dim), min(max(end, 0), dim), step)
    start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
    return slice(start, None if end < 0 else end, step)


@register
class Slice(LayoutHandler):
    kind = "slice"
    op_types = ("Slice",)

    def attrs(self, node, ctx):
        starts = _ints(_const(node, ctx, 1, "starts", "starts"))
        ends = _ints(_const(node, ctx, 2, "ends", "ends"))
        if starts is None or ends is None or len(starts) != len(ends):
            raise Unsupported("starts and ends of one length are required")
        axes = _ints(_const(node, ctx, 3, "axes", "axes")) or list(range(len(starts)))
        steps = _ints(_const(node, ctx, 4, "steps")) or [1] * len(starts)
        if len(axes) != len(starts) or len(steps) != len(starts) or 0 in steps:
            raise Unsupported(f"axes {axes} and steps {steps} do not fit starts {starts} (or a step is 0)")
        return dict(starts=starts, ends=ends, axes=axes, steps=steps)

    def move(self, p, x):
        index = [slice(None)] * x.ndim
        for s, e, a, st in zip(p["starts"], p["ends"], p["axes"], p["steps"]):
            a = a + x.ndim if a < 0 else a
            index[a] = _slice_of(s, e, st, x.shape[a])
        return x[tuple(index)]


@register
class Gather(LayoutHandler):
    kind = "gather"
    op_types = ("Gather",)

    def attrs(self, node, ctx):
        idx = _const(node, ctx, 1, "indices")
        if idx is None or idx.dtype.kind not in "iu":
            raise Unsupported("the indices are not integers")
        return dict(indices=idx.astype(np.int64), axis=int(attrs_of(node).get("axis", 0)))

    def move(self, p, x):
        return np.take(x, p["indices"], axis=p["axis"])         # (negative indices count from the end, as in ONNX)


def _block(node) -> tuple[int, str]:
    a = attrs_of(node)
    mode = a.get("mode", b"DCR")
    return int(a["blocksize"]), mode.decode() if isinstance(mode, bytes) else str(mode)


@register
class DepthToSpace(LayoutHandler):
    kind = "depth_to_space"
    op_types = ("DepthToSpace",)

    def attrs(self, node, ctx):
        bs, mode = _block(node)
        if mode not in ("DCR", "CRD"):
            raise Unsupported(f"mode {mode!r}")
        return dict(blocksize=bs, mode=mode)

    def move(self, p, x):
        b, c, h, w = x.shape
        bs = p["blocksize"]
        if p["mode"] == "DCR":
            t = x.reshape(b, bs, bs, c // bs ** 2, h, w).transpose(0, 3, 4, 1, 5, 2)
        else:
            t = x.reshape(b, c // bs ** 2, bs, bs, h, w).transpose(0, 1, 4, 2, 5, 3)
        return t.reshape(b, c // bs ** 2, h * bs, w * bs)


@register
class SpaceToDepth(LayoutHandler):
    kind = "space_to_depth"
    op_types = ("SpaceToDepth",)

    def attrs(self, node, ctx):
        return dict(blocksize=_block(node)[0])

    def move(self, p, x):
        b, c, h, w = x.shape
        bs = p["blocksize"]
        t = x.reshape(b, c, h // bs, bs, w // bs, bs).transpose(0, 3, 5, 1, 2, 4)
        return t.reshape(b, c * bs * bs, h // bs, w // bs)


@register
class Pad(LayoutHandler):
    """Pad in mode constant (negative pads crop), reflect, edge or wrap. The padding holds the output's code of
    ``constant_value`` (0.0 unless given: then the output's zero point, a real 0)."""
    kind = "pad"
    op_types = ("Pad",)
    MODES = {"constant": "constant", "reflect": "reflect", "edge": "edge", "wrap": "wrap"}

    def attrs(self, node, ctx):
        from ..numerics import dequantize

        a = attrs_of(node)
        mode = a.get("mode", b"constant")
        mode = mode.decode() if isinstance(mode, bytes) else str(mode)
        if mode not in self.MODES:
            raise Unsupported(f"mode {mode!r}")
        pads = _ints(_const(node, ctx, 1, "pads", "pads"))
        if pads is None or len(pads) % 2:
            raise Unsupported(f"pads {pads}")
        if mode != "constant" and min(pads, default=0) < 0:
            raise Unsupported(f"negative pads {pads} in mode {mode!r}")
        axes = _ints(_const(node, ctx, 3, "axes"))
        if axes is not None and len(axes) * 2 != len(pads):
            raise Unsupported(f"pads {pads} do not fit axes {axes}")
        value = 0.0
        name = node.input[2] if len(node.input) > 2 else ""
        if name in ctx.dq_const:                            # quantize_static may quantize the value too
            q, s, z, _ = ctx.const_input(node, 2, "constant_value")
            if s.size != 1:
                raise Unsupported("constant_value quantized per channel")
            value = float(dequantize(q.reshape(()), QParams(float(s[0]), int(z[0]),
                                                            "int8" if q.dtype == np.int8 else "uint8")))
        elif name:
            v = _const(node, ctx, 2, "constant_value")
            if v.size != 1:
                raise Unsupported("constant_value of more than one element")
            value = float(np.float32(v.reshape(())))
        elif "value" in a:
            value = float(np.float32(a["value"]))
        return dict(mode=mode, pads=pads, axes=axes, value=value)

    def prepare(self, lay, graph, alu_mul):

        super().prepare(lay, graph, alu_mul)
        value = np.float32(lay.params["value"])
        qp = graph.qparams[lay.node.output]         # the padding: the output's code of the value, as QuantizeLinear
        lay.params["code"] = int(from_onnx_dtype(quantize_float(value, qp), qp))

    def reference(self, lay, x):
        p = lay.params
        x = lay.rescale(x)
        n = x.ndim
        axes = [a + n if a < 0 else a for a in (p["axes"] if p["axes"] is not None else range(n))]
        k = len(axes)
        before, after = [0] * n, [0] * n
        for i, a in enumerate(axes):
            before[a], after[a] = p["pads"][i], p["pads"][i + k]
        x = x[tuple(slice(max(-b, 0), d - max(-e, 0)) for b, e, d in zip(before, after, x.shape))]
        widths = [(max(b, 0), max(e, 0)) for b, e in zip(before, after)]
        if p["mode"] == "constant":
            return np.pad(x, widths, constant_values=np.int8(p["code"]))
        return np.pad(x, widths, mode=self.MODES[p["mode"]])


@register
class Split(LayoutHandler):
    """Split into several outputs, each quantized per tensor (quantize_static: the input's quantization). One
    layer per output (``NAME[i]``, the importer's extra nodes after the first), each taking its part of the
    input: every layer has one output, as the comparison with onnxruntime and the reports expect."""
    kind = "split"
    op_types = ("Split",)

    def match(self, node, ctx):
        x = ctx.act_input(node, 0)
        a = attrs_of(node)
        sizes = _ints(_const(node, ctx, 1, "split", "split"))
        if sizes is not None and len(sizes) != len(node.output):
            raise Unsupported(f"split sizes {sizes} for {len(node.output)} outputs")
        outs = [ctx.output_q(node, i) for i in range(len(node.output))]
        base = node.name or node.output[0]
        parts = [QNode(self.kind, f"{base}[{i}]", [x], [o], dict(axis=int(a.get("axis", 0)), sizes=sizes,
                                                                 parts=len(outs), part=i))
                 for i, o in enumerate(outs)]
        ctx._pending[:0] = [("extra", p) for p in parts[1:]]         # before any requantize of an output
        return parts[0]

    def move(self, p, x):
        sizes = p["sizes"]
        if sizes is None:                                   # equal parts (the last one smaller if they do not fit)
            dim, n = x.shape[p["axis"]], p["parts"]
            size = -(-dim // n)
            sizes = [size] * (n - 1) + [dim - size * (n - 1)]
        start = sum(sizes[:p["part"]])
        index = [slice(None)] * x.ndim
        index[p["axis"]] = slice(start, start + sizes[p["part"]])
        return x[tuple(index)]


@register
class Concat(Handler):
    """Concat of quantized tensors, each rescaled to the output's quantization (none where they agree)."""
    kind = "concat"
    op_types = ("Concat",)

    def match(self, node, ctx):
        ctx.only_output(node)
        xs = [ctx.act_input(node, i) for i in range(len(node.input))]
        return QNode(self.kind, node.name or node.output[0], xs, [ctx.output_q(node)],
                     dict(axis=int(attrs_of(node)["axis"])))

    def prepare(self, lay, graph, alu_mul):
        lay.params = dict(lay.node.attrs)
        lay.params["rescale"] = [_rescaler(q, lay.out) for q in lay.inp]

    def reference(self, lay, *xs):
        return np.concatenate([_rescaled(r, x) for r, x in zip(lay.params["rescale"], xs)], axis=lay.params["axis"])

    def placement(self, lay, xs):
        return "cpu", MOVED if all(r is None for r in lay.params["rescale"]) else RESCALED
