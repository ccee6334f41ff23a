"""ResNet-18 built in code, quantized with quantize_static, run whole on the golden model and the RTL."""

import numpy as np
import pytest

from apps import resnet18
from apps.onnx.model import Model


def test_architecture_is_torchvision_resnet18():
    m = resnet18.build(width=8, image=32)
    ops = [n.op_type for n in m.graph.node]
    assert ops.count("Conv") == 20 and ops.count("Add") == 8 and ops.count("Gemm") == 1
    assert ops.count("MaxPool") == 1 and ops.count("GlobalAveragePool") == 1
    dims = [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim[1:]]
    assert dims == [3, 32, 32]
    assert resnet18.build(8, 32).SerializeToString() == m.SerializeToString()     # deterministic


def test_calibration_images_are_normalized_and_seeded():
    a = resnet18.calibration_images(3, 32)
    assert a.shape == (3, 3, 32, 32) and a.dtype == np.float32
    assert np.allclose([x.std() for x in a], 1.0, atol=1e-5)
    assert np.array_equal(a, resnet18.calibration_images(3, 32))


@pytest.mark.slow
def test_whole_resnet18_on_the_golden_model():
    """ImageNet shape, batch 1: bit-exact with the numpy reference, every layer within 1 LSB of onnxruntime
    (>= 99.9 % equal), the same top-1."""
    _, q = resnet18.quantized_model(64, 224)
    m = Model(q)
    x = resnet18.calibration_images(1, 224, seed=1000)
    res = m.run({resnet18.INPUT: x}, target="fsim")
    assert res.exact
    macs = sum(r["macs"] for r in res.records if r["where"] == "vta")
    assert macs == 1_814_073_344          # 20 convs + fc of torchvision's ResNet-18 at 224x224
    ag, theirs = m.compare_ort({resnet18.INPUT: x})
    assert ag.max_diff <= 1 and ag.worst_layer_fraction >= 0.999, ag.table()
    assert np.argmax(theirs["logits"]) == np.argmax(res.tensors["logits"])


def _reduced():
    _, q = resnet18.quantized_model(16, 64, calib=4)
    return q


@pytest.mark.rtl
def test_reduced_resnet18_on_the_rtl():
    """Width 16, 64x64 image: the RTL computes what the golden model and the reference compute."""
    m = Model(_reduced())
    x = resnet18.calibration_images(1, 64, seed=7)
    res = m.run({resnet18.INPUT: x}, target="rtl")
    assert res.exact
    cycles = [r["counters"].get("cycles", 0) for r in res.records if r["where"] == "vta"]
    assert all(c > 0 for c in cycles)


@pytest.mark.parametrize("config", ["small", "ulx3s"])
def test_no_mul_configs_run_every_gemm_on_the_accelerator(config):
    """Configs without ALU MUL: every conv and the fc on VTA (the multiply of their requantization on
    the CPU), bit-exact, within 1 LSB of onnxruntime, the same top-1."""
    m = Model(_reduced(), config)
    x = resnet18.calibration_images(1, 64, seed=8)
    res = m.run({resnet18.INPUT: x}, target="fsim")
    assert res.exact
    gemm = [r for r in res.records if r["kind"] in ("conv", "dense")]
    assert len(gemm) == 21 and all(r["where"] == "vta" and "no ALU MUL" in r["reason"] for r in gemm)
    assert sum(r["macs"] for r in res.records if r["where"] == "vta") == sum(r["macs"] for r in res.records)
    ag, theirs = m.compare_ort({resnet18.INPUT: x})
    assert ag.max_diff <= 1 and ag.worst_layer_fraction >= 0.999, ag.table()
    assert np.argmax(theirs["logits"]) == np.argmax(res.tensors["logits"])


@pytest.mark.rtl
def test_small_resnet18_on_the_rtl_of_a_config_without_mul():
    _, q = resnet18.quantized_model(8, 32, calib=4)
    m = Model(q, "small")
    res = m.run({resnet18.INPUT: resnet18.calibration_images(1, 32, seed=9)}, target="rtl")
    assert res.exact
    assert all(r["counters"].get("cycles", 0) > 0 for r in res.records if r["kind"] in ("conv", "dense"))
