"""Integer layers of an imported graph: parameters prepared once, and the numpy int8 reference.

:func:`prepare` turns each :class:`~apps.onnx.graph.QNode` into a :class:`Layer` with everything the
integer arithmetic needs: weights, the per-channel int32 vector (bias + zero-point correction +
rounding), the ALU steps of the requantization (:mod:`apps.onnx.numerics`), MACs. Tensors are held in
one canonical form: int8 with a zero point; a uint8 tensor ``q`` is held as ``q - 128`` with zero
point ``zp - 128`` (the same real values), so VTA's signed int8 datapath serves both types.

``Layer.reference(*inputs)`` is the numpy definition of the layer; the runner (:mod:`apps.onnx.runner`)
computes the same integers on the accelerator, bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sw import ops
from sw.ops.epilogue import AluStep

from .graph import QGraph, QNode
from .numerics import (
    NumericsError,
    QParams,
    dequantize,
    quantize_float,
    requant_steps,
    rescale_reference,
    rescale_steps,
)

__all__ = ["Layer", "prepare", "canonical", "to_onnx_dtype", "reference", "VTA_KINDS"]

VTA_KINDS = ("conv", "dense", "add")


def canonical(qp: QParams) -> QParams:
    """The int8 form of a tensor's quantization (uint8 -> int8 with the zero point moved by -128)."""
    return qp if qp.dtype == "int8" else QParams(qp.scale, qp.zero_point - 128, "int8")


def to_onnx_dtype(q: np.ndarray, qp: QParams) -> np.ndarray:
    """Canonical int8 values back to the tensor's ONNX type (uint8 adds 128)."""
    return q if qp.dtype == "int8" else (q.astype(np.int16) + 128).astype(np.uint8)


def from_onnx_dtype(q: np.ndarray, qp: QParams) -> np.ndarray:
    return q.astype(np.int8) if qp.dtype == "int8" else (q.astype(np.int16) - 128).astype(np.int8)


@dataclass
class Layer:
    """A prepared integer layer. ``inp``/``out`` are canonical QParams; ``params`` hold the arrays."""
    node: QNode
    inp: list[QParams]
    out: QParams | None
    params: dict = field(default_factory=dict)
    steps: list[AluStep] = field(default_factory=list)
    macs_per_item: int = 0
    cpu_reason: str = ""            # why this layer cannot run on the accelerator ('' if it can)

    @property
    def epilogue(self) -> ops.Epilogue:
        """conv/dense/gap: the requantization as the accelerator's epilogue (its vectors in params)."""
        return ops.Epilogue(tuple(self.steps))

    @property
    def kind(self):
        return self.node.kind

    @property
    def name(self):
        return self.node.name

    # ------------------------------------------------------------------ reference
    def accumulate(self, x: np.ndarray) -> np.ndarray:
        """conv/dense: the exact int32 accumulators before the vector (zero padding already the zero
        point)."""
        p = self.params
        if self.kind == "conv":
            return ops.conv2d_nchw(self.pad_input(x), p["weight"], stride=tuple(p["strides"]), padding=0)
        return ops.gemm_ref(x.reshape(x.shape[0], -1), p["weight"])

    def pad_input(self, x: np.ndarray) -> np.ndarray:
        """conv: pad with the input zero point (ONNX pads [top, left, bottom, right])."""
        t, l, b, r = self.params["pads"]
        if not (t or l or b or r):
            return x
        return np.pad(x, ((0, 0), (0, 0), (t, b), (l, r)), constant_values=self.inp[0].zero_point)

    def reference(self, *xs):
        """The layer in numpy integers (canonical int8 in, canonical int8 out)."""
        k, p = self.kind, self.params
        if k == "quantize":
            qp = self.params["qp"]          # the ONNX type of the quantized input
            return from_onnx_dtype(quantize_float(xs[0], qp), qp)
        if k == "dequantize":
            return dequantize(xs[0], self.inp[0])
        if k in ("conv", "dense"):
            return self.finish(self.accumulate(xs[0]))
        if k == "add":
            a, b = np.broadcast_arrays(*xs)
            return rescale_reference([a, b], [q.zero_point for q in self.inp], p["factors"], self.steps)
        if k == "relu":
            return self._rescale(np.maximum(xs[0], np.int8(self.inp[0].zero_point)))
        if k == "maxpool":
            return self._rescale(_maxpool(xs[0], p["kernel"], p["strides"], p["pads"]))
        if k in ("flatten", "requantize"):
            x = xs[0]
            if k == "flatten":
                ax = p["axis"]
                x = x.reshape(int(np.prod(x.shape[:ax], dtype=np.int64)), -1)
            return self._rescale(x)
        if k == "gap":
            x = xs[0].astype(np.int64) - self.inp[0].zero_point
            acc = x.sum(axis=(2, 3))
            return self.finish(acc).reshape(acc.shape + (1, 1))
        raise ValueError(f"layer kind {k!r}")

    def finish(self, acc: np.ndarray) -> np.ndarray:
        """conv/dense: requantize int32 accumulators (the ALU steps) to canonical int8."""
        return self.epilogue.reference(acc, self.params["vectors"], 1)

    def _rescale(self, x):
        if self.params.get("identity", True):
            return x.astype(np.int8)
        return rescale_reference([x], [self.inp[0].zero_point], self.params["factors"], self.steps)


def _maxpool(x, kernel, strides, pads):
    kh, kw = kernel
    sh, sw = strides
    t, l, b, r = pads
    xp = np.pad(x.astype(np.int16), ((0, 0), (0, 0), (t, b), (l, r)), constant_values=-1000)
    n, c, h, w = xp.shape
    ho, wo = (h - kh) // sh + 1, (w - kw) // sw + 1
    out = np.full((n, c, ho, wo), -1000, np.int16)
    for i in range(kh):
        for j in range(kw):
            out = np.maximum(out, xp[:, :, i:i + sh * (ho - 1) + 1:sh, j:j + sw * (wo - 1) + 1:sw])
    return out.astype(np.int8)


def prepare(graph: QGraph, alu_mul: bool = True) -> list[Layer]:
    """Prepare every node of ``graph``; ``alu_mul`` = the config has the ALU's MUL."""
    layers = []
    qp = {k: canonical(v) for k, v in graph.qparams.items()}
    for node in graph.nodes:
        ins = [qp[i] for i in node.inputs if i in qp]
        out = qp.get(node.output)
        lay = Layer(node, ins, out)
        a = node.attrs
        if node.kind == "quantize":
            lay.params = {"qp": graph.qparams[node.output]}
        elif node.kind in ("conv", "dense"):
            w = a["weight"].astype(np.int8)
            sx, zx = ins[0].scale, ins[0].zero_point
            b = a["bias"]
            if b is None:
                b = np.zeros(w.shape[0], np.int64)
            elif abs(a["b_scale"] / (sx * a["w_scale"]) - 1) > 1e-6:   # a bias at another scale: rescale it
                b = np.rint(b * (a["b_scale"] / (sx * a["w_scale"]))).astype(np.int64)
            wsum = w.reshape(w.shape[0], -1).astype(np.int64).sum(axis=1)
            vector = b - zx * wsum
            absw = np.abs(w.reshape(w.shape[0], -1).astype(np.int64)).sum(axis=1)
            # x - zx lies in [-128 - zx, 127 - zx]
            bound = int(np.max(absw * max(128 + zx, 127 - zx) + np.abs(vector))) + 1
            M = sx * a["w_scale"] / out.scale
            lay.params = dict(weight=w, pads=a.get("pads", [0, 0, 0, 0]), strides=a.get("strides", [1, 1]),
                              multiplier=M)
            try:
                lay.steps, extra = requant_steps(M, out, bound, alu_mul)
            except NumericsError as e:
                lay.cpu_reason = str(e)
                lay.steps, extra = requant_steps(M, out, bound, True)
            if np.any(np.abs(vector) >= 1 << 31):
                raise NumericsError(f"node {node.name!r}: the bias vector leaves int32")
            lay.params["vectors"] = _vectors(vector, extra)
            lay.macs_per_item = int(w.size)      # per output pixel (conv) / per row (dense)
            if node.kind == "conv":
                st = lay.params["strides"]
                if st[0] != st[1]:
                    lay.cpu_reason = f"strides {st}: the accelerator's conv2d takes one stride for both axes"
        elif node.kind == "add":
            factors, tail = rescale_steps([ins[0].scale / out.scale, ins[1].scale / out.scale],
                                          [ins[0].zero_point, ins[1].zero_point], out)
            lay.params = dict(factors=factors)
            lay.steps = tail
            if not alu_mul:
                lay.cpu_reason = "the config has no ALU MUL"
        elif node.kind in ("relu", "maxpool", "flatten", "requantize"):
            lay.params = dict(a)
            same = ins[0].scale == out.scale and ins[0].zero_point == out.zero_point
            lay.params["identity"] = same
            if not same:
                factors, tail = rescale_steps([ins[0].scale / out.scale], [ins[0].zero_point], out)
                lay.params["factors"] = factors
                lay.steps = tail
        elif node.kind == "gap":
            lay.params = {}
        elif node.kind == "dequantize":
            pass
        layers.append(lay)
    return layers


def _prepare_gap(lay: Layer, hw: int):
    """GlobalAveragePool's steps depend on H*W, known at the first run."""
    M = lay.inp[0].scale / (lay.out.scale * hw)
    steps, extra = requant_steps(M, lay.out, 256 * hw, True)
    lay.steps, lay.params["hw"] = steps, hw
    lay.params["vectors"] = _vectors(np.zeros(1, np.int64), extra)


def _vectors(v0, extra):
    """The (V, channels) int32 vector operands: v0 plus the clip bounds of ``extra``."""
    off, clips = extra
    rows = [np.asarray(v0, np.int64) + off] + [np.full(len(v0), c, np.int64) for c in clips]
    return np.stack(rows).astype(np.int32)


def reference(graph_or_layers, inputs: dict, alu_mul: bool = True, keep: bool = True) -> dict:
    """Run the numpy int8 reference; returns every tensor (canonical int8, float graph outputs)."""
    layers = prepare(graph_or_layers, alu_mul) if isinstance(graph_or_layers, QGraph) else graph_or_layers
    env = dict(inputs)
    for lay in layers:
        xs = [env[i] for i in lay.node.inputs]
        if lay.kind == "gap" and lay.params.get("hw") != xs[0].shape[2] * xs[0].shape[3]:
            _prepare_gap(lay, xs[0].shape[2] * xs[0].shape[3])
        env[lay.node.output] = lay.reference(*xs)
    return env
