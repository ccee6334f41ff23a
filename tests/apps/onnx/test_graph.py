"""Import of QDQ models: the integer nodes, and clear errors that name the node."""

import re

import numpy as np
import onnx
import pytest

from apps.onnx import graph
from apps.onnx.graph import OnnxImportError

from .qdq import quantized


def test_kinds_of_a_small_network():
    q, _, _ = quantized("add")
    g = graph.load(q)
    assert [n.kind for n in g.nodes] == ["quantize", "conv", "add", "dequantize"]
    conv = g.nodes[1]
    assert conv.attrs["weight"].dtype == np.int8 and conv.attrs["bias"].dtype == np.int64
    assert g.outputs == ["y"] and g.inputs == {"x": (1, 8, 9, 9)}


def test_gemm_and_matmul_weights_are_m_by_k():
    for op in ("gemm", "matmul"):
        q, _, _ = quantized(op, k=40, m=24)
        dense = [n for n in graph.load(q).nodes if n.kind == "dense"][0]
        assert dense.attrs["weight"].shape == (24, 40)


def _island_reasons(q):
    g = graph.load(q)
    return g, {k: v for n in g.nodes if n.kind == "island" for k, v in n.attrs["island"].reasons.items()}


def test_an_operator_without_handler_becomes_an_island():
    g, reasons = _island_reasons(quantized("sigmoid")[0])
    assert [n.kind for n in g.nodes] == ["quantize", "conv", "island", "dequantize"]
    isl = g.nodes[2].attrs["island"]
    assert isl.ops == ["Sigmoid", "QuantizeLinear"] and "no handler for Sigmoid" in reasons.values()
    assert isl.inputs == [g.nodes[1].output] and isl.outputs == [g.nodes[3].inputs[0]]


@pytest.mark.parametrize("op,kw,why", [
    ("conv", {"extra_options": {"WeightSymmetric": False}}, r"asymmetric weight \(zero point -?\d+\)"),
    ("conv", {"dilation": 2}, r"dilations = \[2, 2\]; the accelerator's conv takes 1"),
])
def test_declined_nodes_say_why(op, kw, why):
    _, reasons = _island_reasons(quantized(op, **kw)[0])
    assert any(re.search(why, r) for r in reasons.values()), reasons


def test_a_model_left_in_float_asks_for_calibration():
    q, _, _ = quantized("float_relu")           # quantize_static leaves a ReLU of the graph input in float
    with pytest.raises(OnnxImportError, match=r"a float model .*--calibrate DATA.npy \(N samples of the input: x"):
        graph.load(q)


def test_per_channel_weights_are_taken():
    q, _, _ = quantized("conv", per_channel=True, o=20)
    conv = [n for n in graph.load(q).nodes if n.kind == "conv"][0]
    assert conv.attrs["w_scale"].shape == (20,) and len(np.unique(conv.attrs["w_scale"])) > 1


def test_an_operator_onnxruntime_cannot_run_is_an_error_naming_it():
    q, _, _ = quantized("sigmoid")
    bad = onnx.ModelProto.FromString(q.SerializeToString())
    node = next(n for n in bad.graph.node if n.op_type == "Sigmoid")
    node.op_type, node.domain = "NoSuchOp", "com.example"
    bad.opset_import.append(onnx.helper.make_opsetid("com.example", 1))
    with pytest.raises(OnnxImportError, match=r"'y_QuantizeLinear_Input'.*com.example.NoSuchOp.*onnxruntime cannot"):
        graph.load(bad)


def test_malformed_file(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07garbage that is not a protobuf \xff\xff")
    with pytest.raises(OnnxImportError, match="bad.onnx: not a readable ONNX model|malformed"):
        graph.load(bad)


def test_missing_file(tmp_path):
    with pytest.raises(OnnxImportError, match="not a readable ONNX model"):
        graph.load(tmp_path / "none.onnx")


def test_invalid_graph_is_malformed():
    q, _, _ = quantized("conv")
    broken = onnx.ModelProto.FromString(q.SerializeToString())
    broken.graph.node[-1].input[0] = "no_such_tensor"
    with pytest.raises(OnnxImportError, match="malformed"):
        graph.load(broken)
