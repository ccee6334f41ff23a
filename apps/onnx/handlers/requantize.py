"""A second QuantizeLinear of one float result: the first quantized tensor rescaled (numpy, CPU).

Made by the importer (``Context.output_q``) when an operator's output is quantized twice."""

from __future__ import annotations

from .base import Handler
from .registry import register


@register
class Requantize(Handler):
    kind = "requantize"

    def prepare(self, lay, graph, alu_mul):
        lay.prepare_rescale()

    def reference(self, lay, x):
        return lay.rescale(x)
