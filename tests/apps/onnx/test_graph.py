"""Import of QDQ models: the integer nodes, and clear errors that name the node."""

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


def test_unsupported_operator_names_the_node():
    q, _, _ = quantized("sigmoid")
    with pytest.raises(OnnxImportError, match=r"\(Sigmoid\).*not supported"):
        graph.load(q)


def test_float_operator_names_the_node():
    q, _, _ = quantized("float_relu")
    with pytest.raises(OnnxImportError, match=r"\(Relu\): input 0 \('x'\) is not a dequantized"):
        graph.load(q)


def test_per_channel_weights_are_refused():
    q, _, _ = quantized("conv", per_channel=True)
    with pytest.raises(OnnxImportError, match="per-channel quantization"):
        graph.load(q)


def test_asymmetric_weights_are_refused():
    q, _, _ = quantized("conv", extra_options={"WeightSymmetric": False})
    with pytest.raises(OnnxImportError, match=r"\(Conv\): asymmetric weight \(zero point -?\d+\)"):
        graph.load(q)


def test_grouped_convolution_is_refused():
    q, _, _ = quantized("group_conv")
    with pytest.raises(OnnxImportError, match="group = 2; allowed: 1"):
        graph.load(q)


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
