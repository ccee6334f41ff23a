"""Dynamic quantization (onnxruntime's quantize_dynamic): MatMulInteger and ConvInteger on the accelerator, their
int32 products equal to numpy's, exactly."""

import numpy as np
import pytest

from apps.onnx import Model, calibrate, graph, layers, runner
from apps.onnx.handlers import integer
from sw import runtime
from sw.config import load_config

from .qdq import dynamic

# (op of qdq.single_op, options, the integer node, its kind)
CASES = [("matmul", {}, "MatMulInteger"), ("linear3d", {}, "MatMulInteger"), ("gemm", {}, "MatMulInteger"),
         ("conv", {}, "ConvInteger"), ("conv", {"stride": 2, "k": 1, "pad": 0}, "ConvInteger"),
         ("conv", {"group": 2, "o": 8}, "ConvInteger"), ("conv", {"group": 8, "o": 8}, "ConvInteger"),
         ("conv", {"extra_options": {"WeightSymmetric": False}, "group": 2, "o": 8}, "ConvInteger"),
         ("matmul", {"extra_options": {"WeightSymmetric": False}}, "MatMulInteger")]


def _numpy_products(model, x) -> dict:
    """Each integer node's int32 product in numpy int64 arithmetic, from its operands as onnxruntime computes them
    (DynamicQuantizeLinear's codes and zero point)."""
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper

    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    m = onnx.ModelProto()
    m.CopyFrom(model)
    dql = [o for n in m.graph.node if n.op_type == "DynamicQuantizeLinear" for o in n.output]
    m.graph.output.extend(onnx.ValueInfoProto(name=o) for o in dql)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    env = dict(zip(dql, ort.InferenceSession(m.SerializeToString(), so).run(dql, x)))
    env.update(inits)
    out = {}
    for n in model.graph.node:
        if n.op_type not in ("MatMulInteger", "ConvInteger"):
            continue
        a, b, za, zb = (env[i].astype(np.int64) for i in n.input)
        if n.op_type == "MatMulInteger":
            out[n.output[0]] = np.matmul(a - za, b - zb)
        else:
            attrs = {at.name: at for at in n.attribute}
            pads = list(attrs["pads"].ints) if "pads" in attrs else [0] * 4
            s = attrs["strides"].ints[0] if "strides" in attrs else 1
            g = attrs["group"].i if "group" in attrs else 1
            xp = np.pad(a - za, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
            w = b - zb
            o, cg, kh, kw = w.shape
            ho, wo = (xp.shape[2] - kh) // s + 1, (xp.shape[3] - kw) // s + 1
            y = np.zeros((xp.shape[0], o, ho, wo), np.int64)
            for oc in range(o):
                gi = oc // (o // g)
                for i in range(kh):
                    for j in range(kw):
                        tap = xp[:, gi * cg:(gi + 1) * cg, i:i + s * (ho - 1) + 1:s, j:j + s * (wo - 1) + 1:s]
                        y[:, oc] += np.einsum("nchw,c->nhw", tap, w[oc, :, i, j])
            out[n.output[0]] = y
    return out


@pytest.mark.parametrize("cfg", ["default", "small"])
@pytest.mark.parametrize("op,kw,node", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_integer_product_on_the_accelerator_is_exact(op, kw, node, cfg):
    q, shape, rng = dynamic(op, **kw)
    assert node in [n.op_type for n in q.graph.node]
    c = load_config(cfg)
    lays = layers.prepare(graph.load(q), alu_mul=bool(c.ALU_MUL))
    x = {"x": rng.normal(0, 1.2, shape).astype(np.float32)}
    with runtime.use_target(c):
        env, records = runner.run(lays, x, 2)
    integer_rows = [r for r in records if r["kind"] in ("matmul_integer", "conv_integer")]
    if kw.get("extra_options"):         # an asymmetric weight: a zero point the GEMM path takes
        assert any(np.any(lay.node.attrs["consts"][3]) for lay in lays if lay.kind in ("matmul_integer", "conv_integer"))
    assert integer_rows and all(r["where"] == "vta" and r["counters"]["gemm_counter"] > 0 for r in integer_rows)
    for name, want in _numpy_products(q, x).items():
        assert env[name].dtype == np.int32 and np.array_equal(env[name], want), name
    ref = layers.reference(lays, x)
    assert all(np.array_equal(ref[k], env[k]) for k in ref)


@pytest.mark.parametrize("za,zb", [(5, 0), (0, -7), (-3, 9), (12, -128), (-128, 127)])
def test_each_zero_point_path(za, zb):
    """zb = 0: the term in v0; za = 0: the transposed product; both: K doubled (tripled for zb = -128)."""
    rng = np.random.default_rng(7)
    a, b = rng.integers(-128, 128, (9, 37)).astype(np.int8), rng.integers(-128, 128, (37, 21)).astype(np.int8)
    with runtime.use_target(load_config("default")):
        y, counters = integer._product(a, b, za, zb, 2)
    assert y.dtype == np.int32 and counters["gemm_counter"] > 0
    assert np.array_equal(y, (a.astype(np.int64) - za) @ (b.astype(np.int64) - zb))


def test_a_dynamically_quantized_model_is_not_called_float_and_reports_its_share():
    q, shape, rng = dynamic("linear3d")
    assert not calibrate.is_float_model(q)
    m = Model(q)
    res = m.run({"x": rng.normal(0, 1, shape).astype(np.float32)})
    assert res.exact
    rows = {r["kind"]: r for r in res.records}
    assert rows["matmul_integer"]["where"] == "vta" and "exact int32" in rows["matmul_integer"]["reason"]
    assert rows["matmul_integer"]["macs"] == 2 * 5 * 40 * 24
    assert any("no handler for DynamicQuantizeLinear" in r["reason"] for r in res.records if r["kind"] == "island")
    ag, _ = m.compare_ort({"x": rng.normal(0, 1, shape).astype(np.float32)})
    assert [r[1] for r in ag.rows] == ["matmul_integer"] and ag.max_diff == 0
