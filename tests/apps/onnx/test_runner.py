"""The accelerator path (sw.ops on the golden model) equals the numpy int8 reference bit for bit."""

import numpy as np
import pytest
from onnxruntime.quantization import QuantType

from apps.onnx import graph, layers, runner
from sw import runtime
from sw.config import load_config

from .qdq import quantized

OPS = [("conv", {}), ("conv", {"stride": 2, "k": 1, "pad": 0}), ("conv", {"k": 7, "pad": 3, "stride": 2, "c": 3, "h": 16}),
       ("gemm", {}), ("matmul", {}), ("add", {}), ("relu", {}), ("maxpool", {}), ("gap", {}), ("flatten", {})]


def _run(q, shape, rng, cfg="default", vt=2):
    g = graph.load(q)
    c = load_config(cfg)
    lays = layers.prepare(g, alu_mul=bool(c.ALU_MUL))
    x = rng.normal(0, 1.2, shape).astype(np.float32)
    with runtime.use_target(c):
        env, records = runner.run(lays, {"x": x}, vt)
    ref = layers.reference(lays, {"x": x})
    for k in ref:
        assert np.array_equal(ref[k], env[k]), k
    return records


@pytest.mark.parametrize("op,kw", OPS, ids=[f"{o}-{i}" for i, (o, _) in enumerate(OPS)])
@pytest.mark.parametrize("vt", [1, 2])
def test_golden_model_equals_reference(op, kw, vt):
    q, shape, rng = quantized(op, **kw)
    records = _run(q, shape, rng, vt=vt)
    where = {r["kind"]: r["where"] for r in records}
    for kind in ("conv", "dense", "add"):
        if kind in where:
            assert where[kind] == "vta"
    for kind in ("maxpool", "gap", "flatten", "quantize", "dequantize"):
        if kind in where:
            assert where[kind] == "cpu"


def test_uint8_on_the_accelerator():
    q, shape, rng = quantized("add", activation_type=QuantType.QUInt8)
    _run(q, shape, rng)


def test_no_mul_config_keeps_requantization_on_the_cpu():
    """configs/small.json has no ALU MUL: conv layers with non-power-of-two scales run on the CPU."""
    q, shape, rng = quantized("conv")
    records = _run(q, shape, rng, cfg="small")
    conv = [r for r in records if r["kind"] == "conv"][0]
    assert conv["where"] == "cpu" and "MUL" in conv["reason"]


def test_records_count_macs():
    q, shape, rng = quantized("conv", o=20, k=3, pad=1)
    conv = [r for r in _run(q, shape, rng) if r["kind"] == "conv"][0]
    assert conv["macs"] == 20 * 9 * 9 * 8 * 9
    assert conv["counters"]["gemm_counter"] > 0


@pytest.mark.rtl
def test_every_offloaded_op_on_the_rtl():
    """One simulator launch runs each small graph on the RTL; each equals the numpy reference."""
    import cosim

    cases = [quantized(op, **kw) for op, kw in OPS] + [quantized("add", activation_type=QuantType.QUInt8)]
    calls, refs = [], []
    for q, shape, rng in cases:
        lays = layers.prepare(graph.load(q))
        x = {"x": rng.normal(0, 1.2, shape).astype(np.float32)}
        calls.append((runner.run, (lays, x, 2), {}))
        refs.append(layers.reference(lays, x))
    for (env, records), ref in zip(cosim.run_many(calls, config="default"), refs):
        for k in ref:
            assert np.array_equal(ref[k], env[k]), k
        assert all(r["counters"].get("cycles", 0) > 0 for r in records if r["where"] == "vta")
