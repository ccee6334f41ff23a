"""A trained and quantized network with its test accuracies, memoised in the process (nothing is cached on disk)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from .data import quantize_input, splits
from .inference import accuracy, predict, reference
from .quantization import QuantNet, quantize
from .training import float_forward, train

__all__ = ["Model", "model"]


@dataclass(frozen=True)
class Model:
    """A trained network: float parameters, its quantized form and the test accuracies."""
    name: str
    params: dict
    qnet: QuantNet
    float_accuracy: float
    int8_accuracy: float


@cache
def model(net="mlp", seed=0) -> Model:
    """Train (deterministically) and quantize ``net``; memoised in this process."""
    params = train(net, seed)
    qnet = quantize(net, params)
    _, _, x_test, y_test = splits()
    logits, _ = float_forward(net, params, x_test / 16.0)
    acc_f = accuracy(predict(logits), y_test)
    acc_q = accuracy(predict(reference(qnet, quantize_input(x_test))), y_test)
    return Model(net, params, qnet, acc_f, acc_q)
