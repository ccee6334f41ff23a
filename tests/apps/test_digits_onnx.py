"""The digits MLP and CNN through ONNX: export, quantize_static on the training split, test accuracy."""

import numpy as np
import pytest

from apps import digits, digits_onnx


def test_export_matches_the_float_network():
    """The exported float model computes apps.digits' float forward pass."""
    from apps.onnx import ort
    x_test = digits.load_data()[2][:50]
    for net in digits.NETS:
        m = digits.model(net)
        f = digits_onnx.export(net, m.params)
        theirs = ort.session(f, all_tensors=False).run(["logits"], {digits_onnx.INPUT: digits_onnx.inputs(net, x_test)})[0]
        ours, _ = digits.float_forward(net, m.params, x_test / 16.0)
        assert np.allclose(theirs, ours, atol=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("net", digits.NETS)
def test_test_split_accuracy_on_the_golden_model(net):
    r = digits_onnx.evaluate(net, "fsim")
    assert r["images"] == 360 and r["exact"]
    assert r["vta_int8_accuracy"] >= r["float_accuracy"] - 0.01 >= 0.96
    assert r["top1_equal_ort"] >= 0.99
    assert r["layer_max_diff"] <= 1 and r["layer_equal"] >= 0.999
    with pytest.raises(ValueError, match="net = 'rnn'"):
        digits_onnx.export("rnn", {})


@pytest.mark.rtl
def test_digits_onnx_on_the_rtl():
    r = digits_onnx.evaluate("cnn", "rtl", images=32)
    assert r["exact"] and r["vta_int8_accuracy"] >= 0.9
    assert sum(rec["counters"].get("cycles", 0) for rec in r["records"]) > 0
