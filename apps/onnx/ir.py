"""The imported graph: integer nodes (:class:`QNode`) in run order and the quantization of each tensor."""

from __future__ import annotations

from dataclasses import dataclass, field

from .numerics import QParams

__all__ = ["OnnxImportError", "QNode", "QGraph"]


class OnnxImportError(ValueError):
    """A malformed model, or a node that no path (accelerator or CPU) can run; the message names it."""


@dataclass
class QNode:
    """One node of the imported graph: its kind (the handler's), the ONNX node name, the tensors it
    reads and writes (int8/uint8 tensors of the QDQ model, or float ones) and its attributes."""
    kind: str
    name: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict = field(default_factory=dict)

    @property
    def output(self) -> str:
        return self.outputs[0]

    def __repr__(self):
        return f"QNode({self.kind} {self.name!r}: {self.inputs} -> {self.outputs})"


@dataclass
class QGraph:
    """Nodes in run order; ``qparams`` of every per-tensor quantized tensor (its ONNX type); float graph
    inputs and their shapes; graph outputs; inferred shapes of every tensor onnx knows."""
    nodes: list[QNode]
    qparams: dict[str, QParams]
    inputs: dict[str, tuple]
    outputs: list[str]
    shapes: dict[str, tuple] = field(default_factory=dict)
