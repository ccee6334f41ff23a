"""Integer layers of an imported graph: parameters prepared once, and the numpy reference.

:func:`prepare` turns each :class:`~apps.onnx.ir.QNode` into a :class:`Layer` with everything its
handler (:mod:`apps.onnx.handlers`) needs: weights, the per-channel int32 vectors (bias + zero-point
correction + rounding, per-channel multipliers), the ALU steps of the requantization
(:mod:`apps.onnx.numerics`), MACs. Quantized tensors are held in one canonical form: int8 with a zero
point; a uint8 tensor ``q`` is held as ``q - 128`` with zero point ``zp - 128`` (the same real values),
so VTA's signed int8 datapath serves both types (:func:`apps.onnx.numerics.canonical`; re-exported here
with the conversions to and from the ONNX type). Float tensors (graph inputs and outputs, what CPU
islands pass between them) are held as they are.

``Layer.reference(*inputs)`` is the numpy definition of the layer (an island's is onnxruntime's
result); the runner (:mod:`apps.onnx.runner`) computes the same values on the accelerator, bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sw import ops
from sw.ops.epilogue import AluStep

from .ir import QGraph, QNode
from .numerics import QParams, canonical, from_onnx_dtype, rescale_reference, rescale_steps, to_onnx_dtype

__all__ = ["Layer", "prepare", "canonical", "to_onnx_dtype", "from_onnx_dtype", "reference", "bind"]


@dataclass
class Layer:
    """A prepared layer. ``inp``/``out``: canonical QParams of its quantized inputs / first output
    (None where a tensor is float); ``params`` hold the arrays; ``steps`` the ALU requantization."""
    node: QNode
    inp: list[QParams | None]
    out: QParams | None
    params: dict = field(default_factory=dict)
    steps: list[AluStep] = field(default_factory=list)
    macs_per_item: int = 0
    cpu_reason: str = ""            # why this layer cannot run on the accelerator ('' if it can)

    @property
    def kind(self) -> str:
        return self.node.kind

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def handler(self):
        from .handlers import for_kind
        return for_kind(self.kind)

    @property
    def epilogue(self) -> ops.Epilogue:
        """The requantization as the accelerator's epilogue (its vectors in ``params['vectors']``)."""
        return ops.Epilogue(tuple(self.steps))

    def reference(self, *xs):
        """The layer in numpy (canonical int8 / float in and out; a tuple for several outputs)."""
        return self.handler.reference(self, *xs)

    def rescale(self, x: np.ndarray) -> np.ndarray:
        """An int8 tensor at the input's quantization -> the output's (identity when they agree)."""
        if self.params.get("identity", True):
            return x.astype(np.int8)
        return rescale_reference([x], [self.inp[0].zero_point], self.params["factors"], self.steps)

    def prepare_rescale(self) -> None:
        """Parameters of :meth:`rescale`."""
        same = self.inp[0].scale == self.out.scale and self.inp[0].zero_point == self.out.zero_point
        self.params["identity"] = same
        if not same:
            self.params["factors"], self.steps = rescale_steps([self.inp[0].scale / self.out.scale],
                                                               [self.inp[0].zero_point], self.out)


def prepare(graph: QGraph, alu_mul: bool = True) -> list[Layer]:
    """Prepare every node of ``graph``; ``alu_mul`` = the config has the ALU's MUL."""
    layers = []
    qp = {k: canonical(v) for k, v in graph.qparams.items()}
    for node in graph.nodes:
        lay = Layer(node, [qp.get(i) for i in node.inputs], qp.get(node.output))
        lay.handler.prepare(lay, graph, alu_mul)
        layers.append(lay)
    return layers


def bind(env: dict, lay: Layer, y) -> None:
    """Put a layer's output(s) into ``env``."""
    if len(lay.node.outputs) == 1:
        env[lay.node.output] = y
    else:
        env.update(zip(lay.node.outputs, y))


def reference(graph_or_layers, inputs: dict, alu_mul: bool = True) -> dict:
    """Run the reference; returns every tensor (canonical int8, float where a tensor is float)."""
    layers = prepare(graph_or_layers, alu_mul) if isinstance(graph_or_layers, QGraph) else graph_or_layers
    env = dict(inputs)
    for lay in layers:
        bind(env, lay, lay.reference(*[env[i] for i in lay.node.inputs]))
    return env
