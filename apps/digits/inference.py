"""A quantized network run: its bit-exact numpy definition (:func:`reference`) and its execution through
:mod:`sw.ops` on the current runtime target (:func:`run`), with the prediction and accuracy.

The readout's int32 logits are ``W_q . h + b``: :func:`sw.ops.gemm` (which stores all four bytes of
each accumulator) and one int32 addition on the host; the prediction is the argmax (first index on ties).
"""

from __future__ import annotations

import numpy as np

from sw import ops

from .quantization import QuantNet

__all__ = ["reference", "run", "add_counters", "predict", "accuracy"]


def _as_input(net: QuantNet, x_q):
    x_q = np.asarray(x_q)
    if x_q.dtype != np.int8:
        raise TypeError(f"network input must be int8 (use quantize_input); got {x_q.dtype}")
    return x_q.reshape((x_q.shape[0],) + tuple(net.input_shape))


def _readout_bias(acc, bias):
    out = acc.astype(np.int64) + bias.astype(np.int64)[None]
    if out.min(initial=0) < -2**31 or out.max(initial=0) >= 2**31:   # pragma: no cover - guarded by scales
        raise OverflowError("readout logits overflow int32")
    return out.astype(np.int32)


def reference(net: QuantNet, x_q) -> np.ndarray:
    """The bit-exact definition of the int8 network in numpy: int32 logits (n, 10)."""
    x = _as_input(net, x_q)
    for layer in net.layers:
        if layer.kind == "conv2d":
            x = ops.conv2d_ref(x, layer.weight, layer.bias, 1, layer.padding, layer.shift, True)
            continue
        x = x.reshape(x.shape[0], -1)
        if layer.kind == "dense":
            x = ops.dense_ref(x, layer.weight, layer.bias, layer.shift, True)
        else:
            x = _readout_bias(ops.gemm_ref(x, layer.weight), layer.bias)
    return x


def run(net: QuantNet, x_q, virtual_threads=2):
    """Run the network through :mod:`sw.ops` on the current runtime: (int32 logits (n, 10), counters).

    Module-level so that a runner (:mod:`sw.runtime.runners`) runs it on the RTL or a board. The counters of every layer
    are summed (``cycles`` / n is the cost per image on the RTL).
    """
    x = _as_input(net, x_q)
    total: dict = {}
    for layer in net.layers:
        if layer.kind == "conv2d":
            x, c = ops.conv2d(x, layer.weight, layer.bias, 1, layer.padding, layer.shift, True,
                              virtual_threads=virtual_threads, return_counters=True)
        else:
            x = np.ascontiguousarray(x.reshape(x.shape[0], -1))
            if layer.kind == "dense":
                x, c = ops.dense(x, layer.weight, layer.bias, layer.shift, True,
                                 virtual_threads=virtual_threads, return_counters=True)
            else:
                acc, c = ops.gemm(x, layer.weight, virtual_threads=virtual_threads, return_counters=True)
                x = _readout_bias(acc, layer.bias)
        add_counters(total, c)
    return x, total


def add_counters(total: dict, counters: dict) -> dict:
    """Add the integer counters of one operator call into ``total`` (in place); return it."""
    for k, v in dict(counters).items():
        if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
            total[str(k)] = total.get(str(k), 0) + int(v)
    return total


def predict(logits) -> np.ndarray:
    return np.argmax(np.asarray(logits), axis=1)


def accuracy(pred, labels) -> float:
    return float(np.mean(np.asarray(pred) == np.asarray(labels)))
