"""A float BatchNormalization on a quantized tensor (after a Concat, nothing to fold it into) runs on the
accelerator as a depthwise 1x1 conv, with onnxruntime's values."""

import numpy as np
import pytest
from onnxruntime.quantization import QuantFormat, QuantType

from apps.onnx import Model, graph, layers, runner
from sw import runtime
from sw.config import load_config

from .qdq import quantized

FORMATS = {"qdq": {}, "qoperator-uint8": {"quant_format": QuantFormat.QOperator, "activation_type": QuantType.QUInt8}}


@pytest.mark.parametrize("cfg", ["default", "small"])
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_batchnorm_as_a_depthwise_conv(fmt, cfg):
    q, shape, rng = quantized("bn_concat", **FORMATS[fmt])
    c = load_config(cfg)
    lays = layers.prepare(graph.load(q), alu_mul=bool(c.ALU_MUL))
    x = {"x": rng.normal(0, 1.2, shape).astype(np.float32)}
    with runtime.use_target(c):
        env, records = runner.run(lays, x, 2)
    ref = layers.reference(lays, x)
    assert all(np.array_equal(ref[k], env[k]) for k in ref)
    bn = [r for r in records if r["kind"] == "batchnorm"]
    assert len(bn) == 1 and bn[0]["where"] == "vta" and bn[0]["reason"].startswith("as a depthwise 1x1 conv")
    assert bn[0]["macs"] == 16 * 9 * 9 and not [r for r in records if r["kind"] == "island"]
    if cfg == "default":
        ag, _ = Model(q).compare_ort(x)
        row = next(r for r in ag.rows if r[1] == "batchnorm")
        assert row[3] == row[2], ag.table()          # every value equal to onnxruntime's


def test_a_relu_the_saturation_does_not_imply_is_not_taken():
    """Symmetric activations put the ReLU's zero point at 0, not at the type's minimum: the BatchNormalization and
    its ReLU stay in an island, which says why."""
    q, shape, rng = quantized("bn_concat", quant_format=QuantFormat.QOperator,
                              extra_options={"ActivationSymmetric": True})
    g = graph.load(q)
    reasons = " ".join(v for n in g.nodes if n.kind == "island" for v in n.attrs["island"].reasons.values())
    assert "is not its type's minimum" in reasons


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_a_per_channel_mul_runs_as_the_same_depthwise_conv(fmt):
    q, shape, rng = quantized("mul_channels", **FORMATS[fmt])
    m = Model(q)
    x = {"x": rng.normal(0, 1.2, shape).astype(np.float32)}
    res = m.run(x)
    assert res.exact and not [r for r in res.records if r["kind"] == "island"]
    mul = next(r for r in res.records if r["kind"] == "mul_channels")
    assert mul["where"] == "vta" and mul["reason"].startswith("per-channel multiply as a depthwise 1x1 conv")
    ag, _ = m.compare_ort(x)
    assert ag.max_diff <= 1 and ag.equal_fraction >= 0.999, ag.table()
