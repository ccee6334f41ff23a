"""A reduced zoo model end to end through TVM: partition, tvm.compile, export, run on the golden model and the RTL."""

import numpy as np
import pytest

from apps import zoo
from apps.onnx import Model
from apps.tvm_vta import compare, compile_model


@pytest.fixture(scope="module")
def resnet():
    """ResNet-18 with per-channel weight scales, reduced (width 8, 32x32): conv, residual add, max pool, GAP, gemm."""
    q = zoo.quantized("resnet18-pc", reduced=True)
    return q, zoo.inputs("resnet18-pc", 1, reduced=True)[0], compile_model(q, "default")


def test_reduced_resnet_through_tvm(resnet):
    q, x, c = resnet
    ops = [r.op for r in c.partition.rows]
    assert ops.count("conv2d_add") == 8 and ops.count("conv2d") == 12 and ops.count("dense") == 1
    assert c.partition.mac_share == 1.0
    run = c.run(x, "fsim", check=True, keep_tensors=True)
    row = compare(q, c, x, run)
    assert row == {"offloaded": 21, "exact": 21, "equal": 21, "argmax": {"logits": True},
                   "max_diff": row["max_diff"]}
    assert np.array_equal(run.outputs["logits"], Model(q, "default").run(x, target="cpu").tensors["logits"])
    with pytest.raises(ValueError, match=r"inputs: missing \['input'\]"):
        c.run({}, "fsim")


@pytest.mark.rtl
def test_reduced_resnet_through_tvm_on_the_rtl(resnet):
    """The exported library inside the co-simulation: the same values as the golden model, the accelerator's cycles
    those of apps.onnx's run of the same layers (the same lowering)."""
    q, x, c = resnet
    rtl = c.run(x, "rtl")
    assert np.array_equal(rtl.outputs["logits"], c.run(x, "fsim").outputs["logits"])
    theirs = Model(q, "default").run(x, target="rtl")
    offloaded = {r["name"] for r in rtl.records}
    ref_cycles = sum(r["counters"].get("cycles", 0) for r in theirs.records if r["name"] in offloaded)
    assert rtl.cycles == ref_cycles > 0
