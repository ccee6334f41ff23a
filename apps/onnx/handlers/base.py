"""The handler interface and the exception with which a handler declines a node."""

from __future__ import annotations

import numpy as np

from ..proto import attrs_of

__all__ = ["Handler", "Unsupported", "pool_window", "ceil_pads", "check_auto_pad"]


class Unsupported(Exception):
    """A handler declines a node; the message says why (shown in the placement) and the node runs in a
    CPU island instead."""


class Handler:
    """One operator. ``kind``: the integer node kind it makes; ``op_types``: the ONNX operators it
    may take. Subclasses override what applies; the defaults describe a CPU-only operator."""
    kind: str = ""
    op_types: tuple[str, ...] = ()
    accelerated: bool = False           # has a lowering to the accelerator

    def match(self, node, ctx):
        """The :class:`~apps.onnx.ir.QNode` for ONNX ``node`` (``ctx``: the importer's view of the
        QDQ brackets, :class:`apps.onnx.graph.Context`); raise :class:`Unsupported` to decline."""
        raise Unsupported(f"{node.op_type} has no handler")

    def prepare(self, lay, graph, alu_mul: bool) -> None:
        """Integer preparation of a :class:`~apps.onnx.layers.Layer` (weights, vectors, ALU steps) of
        :class:`~apps.onnx.ir.QGraph` ``graph`` for a config with (``alu_mul``) or without the ALU's MUL."""

    def reference(self, lay, *xs) -> np.ndarray:
        """The numpy definition: canonical int8 (or float) inputs -> output."""
        raise NotImplementedError(self.kind)

    def placement(self, lay, xs) -> tuple[str, str]:
        """('vta' | 'cpu', why) for this layer and these inputs on the current config."""
        return "cpu", f"{self.kind} runs on the CPU"

    def lower(self, lay, xs, virtual_threads: int):
        """Run on the accelerator through :mod:`sw.ops`: (output, counters)."""
        raise NotImplementedError(f"{self.kind} has no accelerator lowering")

    def macs(self, lay, xs, y) -> int:
        """Multiply-accumulates of one run."""
        return 0


def check_auto_pad(attrs: dict) -> None:
    """:class:`Unsupported` unless a convolution's or pool's ``auto_pad`` leaves the pads explicit (NOTSET, VALID)."""
    if attrs.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET", b"VALID", "VALID"):
        raise Unsupported(f"auto_pad = {attrs['auto_pad']!r}; taken: NOTSET, VALID")


def pool_window(node, ceil_ok: bool = False) -> tuple[dict, dict]:
    """(kernel, strides, pads [top, left, bottom, right], ceil) of a 2-D MaxPool or AveragePool without dilation
    in floor mode (or ceil mode, with ``ceil_ok``), and all its attributes; :class:`Unsupported` otherwise."""
    a = attrs_of(node)
    k = list(a["kernel_shape"])
    if len(k) != 2:
        raise Unsupported(f"a {len(k)}-D pool (taken: 2-D)")
    if any(d != 1 for d in a.get("dilations", [1, 1])):
        raise Unsupported("dilations (taken: 1)")
    if a.get("ceil_mode", 0) and not ceil_ok:
        raise Unsupported("ceil_mode (taken: floor mode)")
    check_auto_pad(a)
    return dict(kernel=k, strides=list(a.get("strides", [1, 1])), pads=list(a.get("pads", [0, 0, 0, 0])),
                ceil=bool(a.get("ceil_mode", 0))), a


def ceil_pads(hw, kernel, strides, pads) -> list[int]:
    """``pads`` with the bottom and right grown for a ceil-mode pool of input ``hw``: one more window where the
    stride leaves input over, unless it would start in the padding after the input (ONNX's rule)."""
    pads = list(pads)
    for axis in (0, 1):
        n = hw[axis] + pads[axis] + pads[axis + 2]
        out = -(-(n - kernel[axis]) // strides[axis]) + 1
        if (out - 1) * strides[axis] >= hw[axis] + pads[axis]:
            out -= 1
        pads[axis + 2] += max(0, (out - 1) * strides[axis] + kernel[axis] - n)
    return pads
