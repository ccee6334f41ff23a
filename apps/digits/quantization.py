"""Post-training quantization of a trained float network to VTA's arithmetic: :class:`QuantNet`.

* hidden layers (dense or conv2d): int8 weights, int32 accumulation, ``>> shift``, ``+ bias``
  (int32, in output units), clip to [0, 127], int8 -- exactly :func:`sw.ops.dense` /
  :func:`sw.ops.conv2d`. The activation scale comes from the largest training-set activation; the
  shift is the largest power of two for which the weights still fit in [-127, 127], and the weight
  scale absorbs the power of two, so the output scale is exactly the calibrated one. The bias takes
  half an output unit more to cancel the floor of the arithmetic shift on average;
* the readout (last dense layer): int8 weights and an int32 bias in accumulator units, giving exact
  int32 logits (:func:`apps.digits.inference.reference` defines them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .data import splits
from .training import float_forward

__all__ = ["Layer", "QuantNet", "quantize", "describe"]


@dataclass(frozen=True)
class Layer:
    """One quantized layer.

    kind ``"dense"``: weight (M, K) int8, bias (M,) int32 -> ops.dense(x, weight, bias, shift), int8.
    kind ``"conv2d"``: weight (O, C, kh, kw) int8, bias (O,) int32, padding -> ops.conv2d, int8.
    kind ``"readout"``: weight (M, K) int8, bias (M,) int32 in accumulator units -> int32 logits
    ``ops.gemm(x, weight) + bias``. A 4-D input is flattened (N, C*H*W) before a dense/readout.
    """
    kind: str
    weight: np.ndarray
    bias: np.ndarray
    shift: int = 0
    padding: int = 0


@dataclass(frozen=True)
class QuantNet:
    """A quantized network: ``layers`` applied in order to int8 input of ``input_shape`` per image."""
    name: str
    input_shape: tuple
    layers: tuple


def _fit_shift(w, s_in, s_out, what):
    """(shift, weight scale): the largest shift with |W| * s_out * 2^shift / s_in <= 127."""
    wmax = float(np.abs(w).max())
    shift = int(np.floor(np.log2(127.0 / wmax * s_in / s_out)))
    if shift < 0:
        raise ValueError(f"{what}: weights too large for an int8 layer at this activation scale")
    return shift, s_out * 2.0 ** shift / s_in


def quantize(net, params) -> QuantNet:
    """Post-training quantization (see the module docstring), calibrated on the training split."""
    x_raw = splits()[0]
    s_in = 112.0                                     # int8 units per unit of pixel / 16
    _, h = float_forward(net, params, x_raw / 16.0)
    s_h = 127.0 / float(h.max())                     # hidden int8 units per float unit
    shift, s_w = _fit_shift(params["w1"], s_in, s_h, "hidden layer")
    w1 = np.clip(np.round(params["w1"] * s_w), -127, 127).astype(np.int8)
    b1 = np.round(params["b1"] * s_h + 0.5).astype(np.int32)
    if net == "mlp":
        first = Layer("dense", w1, b1, shift)
        shape = (64,)
    else:
        first = Layer("conv2d", w1, b1, shift, padding=1)
        shape = (1, 8, 8)
    s_w2 = 127.0 / float(np.abs(params["w2"]).max())
    w2 = np.clip(np.round(params["w2"] * s_w2), -127, 127).astype(np.int8)
    b2 = np.round(params["b2"] * s_w2 * s_h).astype(np.int32)
    return QuantNet(net, shape, (first, Layer("readout", w2, b2)))


def describe(net: QuantNet) -> str:
    parts = []
    for layer in net.layers:
        w = layer.weight.shape
        if layer.kind == "conv2d":
            parts.append(f"conv2d {w[1]}->{w[0]} {w[2]}x{w[3]} pad {layer.padding} >>{layer.shift} clip")
        elif layer.kind == "dense":
            parts.append(f"dense {w[1]}->{w[0]} >>{layer.shift} clip")
        else:
            parts.append(f"readout {w[1]}->{w[0]} int32")
    return " | ".join(parts)
