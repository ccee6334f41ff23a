"""onnxruntime as the independent check: the user's own file (QDQ or QOperator), every quantized tensor,
layer by layer.

onnxruntime runs with graph optimizations disabled, so each QDQ bracket is computed as written
(dequantize to float32, the float operator, QuantizeLinear: round half to even, saturate). Its
optimized int8 kernels are not used: on CPUs without VNNI they saturate 16-bit partial sums.
"""

from __future__ import annotations

import numpy as np

from .calibrate import DYNAMIC_OPS
from .ir import QGraph
from .layers import Layer, from_onnx_dtype
from .qoperator import quantized_tensors

__all__ = ["session", "run_all", "layer_agreement", "Agreement"]


def session(model, all_tensors: bool = True):
    """An onnxruntime CPU session of ``model`` (path or ModelProto) with graph optimizations off;
    with ``all_tensors`` every quantized tensor (a QuantizeLinear's output, or a QOperator node's) and every
    exact integer product (MatMulInteger, ConvInteger) and its dynamically quantized input is also a graph
    output."""
    import onnx
    import onnxruntime as ort

    m = onnx.load(str(model)) if not isinstance(model, onnx.ModelProto) else onnx.ModelProto.FromString(
        model.SerializeToString())
    if all_tensors:
        have = {o.name for o in m.graph.output}
        integer = [o for n in m.graph.node if n.op_type in DYNAMIC_OPS for o in n.output if o]
        for name in quantized_tensors(m) + integer:
            if name not in have:
                m.graph.output.append(onnx.ValueInfoProto(name=name))
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    # (no spinning: its threads would keep polling after each run, taking the cores from whatever runs next,
    # our own golden model or simulation included)
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.add_session_config_entry("session.inter_op.allow_spinning", "0")
    return ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])


def run_all(sess, inputs: dict, graph: QGraph) -> dict:
    """Every output of ``sess``; quantized tensors converted to the canonical int8 form."""
    names = [o.name for o in sess.get_outputs()]
    outs = dict(zip(names, sess.run(names, {k: np.asarray(v, np.float32) for k, v in inputs.items()})))
    return {k: (from_onnx_dtype(v, graph.qparams[k]) if k in graph.qparams else v) for k, v in outs.items()}


class Agreement:
    """Per-layer agreement of int8 outputs (and exact int32 products): equal fraction, largest difference in LSB."""

    def __init__(self):
        self.rows = []

    def add(self, layer: str, kind: str, ours: np.ndarray, theirs: np.ndarray):
        d = np.abs(ours.astype(np.int64) - theirs.astype(np.int64))
        self.rows.append((layer, kind, int(d.size), int((d == 0).sum()), int(d.max(initial=0))))

    @property
    def equal_fraction(self):
        total = sum(r[2] for r in self.rows)
        return sum(r[3] for r in self.rows) / max(1, total)

    @property
    def worst_layer_fraction(self):
        return min((r[3] / r[2] for r in self.rows if r[2]), default=1.0)

    @property
    def max_diff(self):
        return max((r[4] for r in self.rows), default=0)

    def table(self) -> str:
        lines = [f"{'layer':32s} {'kind':9s} {'outputs':>9s} {'equal':>9s} {'max |d|':>7s}"]
        for name, kind, n, eq, mx in self.rows:
            lines.append(f"{name[:32]:32s} {kind:9s} {n:9d} {eq / max(1, n):9.4%} {mx:7d}")
        lines.append(f"{'all layers':32s} {'':9s} {sum(r[2] for r in self.rows):9d} {self.equal_fraction:9.4%} "
                     f"{self.max_diff:7d}")
        return "\n".join(lines)


def layer_agreement(layers: list[Layer], ort_tensors: dict, inputs: dict) -> Agreement:
    """Each layer fed onnxruntime's own inputs, compared with onnxruntime's output of that layer."""
    ag = Agreement()
    env = dict(inputs)
    env.update(ort_tensors)
    for lay in layers:
        if lay.kind in ("dequantize", "island") or lay.node.output not in ort_tensors:
            continue
        if any(i not in env for i in lay.node.inputs):
            continue
        ag.add(lay.name, lay.kind, lay.reference(*[env[i] for i in lay.node.inputs]), ort_tensors[lay.node.output])
    return ag
