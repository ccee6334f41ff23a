"""The numpy int8 reference of every supported operator against onnxruntime on small QDQ graphs."""

import numpy as np
import pytest
from onnxruntime.quantization import QuantType

from apps.onnx import graph, layers, ort

from .qdq import quantized, with_custom_op

CASES = [
    ("conv", {}), ("conv", {"stride": 2, "pad": 1, "k": 3}), ("conv", {"k": 1, "pad": 0, "stride": 2}),
    ("conv", {"k": 7, "pad": 3, "stride": 2, "c": 3, "h": 16}), ("conv_relu", {}), ("gemm", {}), ("matmul", {}),
    ("add", {}), ("relu", {}), ("maxpool", {}), ("gap", {}), ("flatten", {}), ("avgpool", {}),
    ("avgpool", {"k": 2, "stride": 2, "pad": 0, "h": 8}), ("avgpool", {"count_include_pad": 0}),
    ("conv", {"per_channel": True}), ("conv", {"per_channel": True, "k": 1, "pad": 0, "stride": 2}),
    ("gemm", {"per_channel": True}), ("matmul", {"per_channel": True}),
    ("between:Softmax", {}), ("between:LayerNormalization", {}), ("between:Resize", {}), ("between:Sigmoid", {}),
    ("attention", {}),
    ("conv", {"group": 2, "o": 8}), ("conv", {"group": 8, "o": 8}), ("conv", {"group": 8, "o": 16, "per_channel": True}),
    ("deconv", {}), ("deconv", {"k": 3, "stride": 2, "pad": 1, "out_pad": 1}), ("deconv", {"k": 3, "stride": 1, "pad": 1}),
    ("deconv", {"h": 1, "k": 4, "stride": 1, "pad": 0, "c": 16}), ("deconv", {"per_channel": True}),
]


def _agreement(q, shape, rng, n=6):
    g = graph.load(q)
    lays = layers.prepare(g)
    sess = ort.session(q)
    total = ort.Agreement()
    for _ in range(n):
        x = rng.normal(0, 1.2, shape).astype(np.float32)
        theirs = ort.run_all(sess, {"x": x}, g)
        total.rows += ort.layer_agreement(lays, theirs, {"x": x}).rows
        ours = layers.reference(lays, {"x": x})
        # the whole graph: every int8 tensor within 1 LSB of onnxruntime's
        for k, v in theirs.items():
            if k in g.qparams:
                assert np.abs(ours[k].astype(np.int32) - v.astype(np.int32)).max() <= 1, k
    return total


@pytest.mark.parametrize("op,kw", CASES, ids=[f"{o}-{i}" for i, (o, _) in enumerate(CASES)])
def test_reference_agrees_with_onnxruntime(op, kw):
    q, shape, rng = quantized(op, **kw)
    ag = _agreement(q, shape, rng)
    assert ag.max_diff <= 1, ag.table()
    assert ag.worst_layer_fraction >= 0.999, ag.table()


@pytest.mark.parametrize("op", ["conv", "add", "gemm", "maxpool", "avgpool"])
def test_uint8_activations(op):
    q, shape, rng = quantized(op, activation_type=QuantType.QUInt8)
    g = graph.load(q)
    assert any(p.dtype == "uint8" for p in g.qparams.values())
    ag = _agreement(q, shape, rng)
    assert ag.max_diff <= 1 and ag.worst_layer_fraction >= 0.999, ag.table()


def test_canonical_form_roundtrip():
    from apps.onnx.numerics import QParams
    qp = QParams(0.1, 200, "uint8")
    c = layers.canonical(qp)
    assert (c.zero_point, c.dtype) == (72, "int8")
    u = np.arange(256, dtype=np.uint8)
    assert np.array_equal(layers.to_onnx_dtype(layers.from_onnx_dtype(u, qp), qp), u)


def test_zero_padding_is_the_zero_point():
    """A conv whose input zero point is not 0 pads with the zero point (real 0), as onnxruntime does."""
    q, shape, rng = quantized("conv", pad=1)
    g = graph.load(q)
    lay = [l for l in layers.prepare(g) if l.kind == "conv"][0]
    assert lay.inp[0].zero_point != 0
    x = np.full(shape, 7, np.int8)
    assert (lay.handler.pad_input(lay, x)[0, 0, 0] == lay.inp[0].zero_point).all()


def test_custom_domain_island_agrees_with_onnxruntime():
    q, shape, rng = quantized("between:Sigmoid")
    ag = _agreement(with_custom_op(q), shape, rng)
    assert ag.max_diff <= 1 and ag.worst_layer_fraction >= 0.999, ag.table()


def test_pointwise_islands_are_tables_equal_to_onnxruntime():
    """An island that maps one int8 tensor element by element (Sigmoid) becomes a 256-entry table made by
    onnxruntime; one that does not (Softmax, along an axis) stays a session."""
    for op, tabled in (("between:Sigmoid", True), ("between:Softmax", False)):
        q, shape, rng = quantized(op)
        lays = layers.prepare(graph.load(q))
        isl = next(lay for lay in lays if lay.kind == "island")
        assert (isl.params["table"] is not None) == tabled, op
        if tabled:
            x = rng.integers(-128, 128, (2, 8, 9, 9)).astype(np.int8)
            assert np.array_equal(isl.reference(x), isl.handler._run(isl, x))
            assert "256-entry table" in isl.handler.placement(isl, [x])[1]
