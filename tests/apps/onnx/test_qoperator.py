"""QOperator models (onnxruntime's quantize_static with QuantFormat.QOperator) run as their QDQ twins: on the
accelerator, equal to the reference, within 1 LSB of onnxruntime running the user's own file."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import QuantFormat, QuantType

from apps.onnx import Model, graph, layers, qoperator, runner
from apps.onnx.handlers.island import node_macs
from sw import runtime
from sw.config import load_config

from .qdq import quantized

QOP = {"quant_format": QuantFormat.QOperator}
U8 = {**QOP, "activation_type": QuantType.QUInt8}

# (op of qdq.single_op, its options, the QOperator node onnxruntime writes, the kind it runs as on the accelerator)
CASES = [("conv", {}, "QLinearConv", "conv"), ("conv", {"per_channel": True}, "QLinearConv", "conv"),
         ("conv", {"group": 8, "o": 8}, "QLinearConv", "conv"), ("gemm", {}, "QGemm", "dense"),
         ("matmul", {}, "QLinearMatMul", "dense"), ("attention", {}, "QLinearSoftmax", "matmul"),
         ("add", {}, "QLinearAdd", "conv+add"), ("residual", {}, "QLinearAdd", "conv+add"),
         ("gap", {}, "QLinearGlobalAveragePool", "gap"), ("avgpool", {}, "QLinearAveragePool", "avgpool"),
         ("conv_leaky", {"c": 48}, "QLinearLeakyRelu", "conv+pointwise"), ("maxpool", {}, "MaxPool", "maxpool"),
         ("bn_concat", {}, "QLinearConcat", "batchnorm")]


def _run(q, shape, rng, cfg="default"):
    lays = layers.prepare(graph.load(q), alu_mul=bool(load_config(cfg).ALU_MUL))
    x = {"x": rng.normal(0, 1.2, shape).astype(np.float32)}
    with runtime.use_target(load_config(cfg)):
        env, records = runner.run(lays, x, 2)
    ref = layers.reference(lays, x)
    fused = {t for r in records for t in r.get("fused", ())}
    assert all(k in fused or np.array_equal(ref[k], env[k]) for k in ref)
    return x, records


@pytest.mark.parametrize("act", [QOP, U8], ids=["int8", "uint8"])
@pytest.mark.parametrize("op,kw,qop,kind", CASES, ids=[f"{c[0]}-{c[2]}-{i}" for i, c in enumerate(CASES)])
def test_qoperator_node_runs_on_the_accelerator(op, kw, qop, kind, act):
    q, shape, rng = quantized(op, **kw, **act)
    assert qop in [n.op_type for n in q.graph.node]
    x, records = _run(q, shape, rng)
    island_ops = {op for r in records if r["kind"] == "island" for op in r["ops"].split()}
    # (the attention graph transposes its float input before quantizing it, and its Softmax is an island)
    assert island_ops <= ({"Transpose", "Softmax", "QuantizeLinear"} if op == "attention" else set()), island_ops
    if kind != "maxpool":
        assert kind in [r["kind"] for r in records if r["where"] == "vta"], [(r["kind"], r["where"]) for r in records]
    ag, _ = Model(q).compare_ort(x)
    assert ag.rows and ag.max_diff <= 1 and ag.equal_fraction >= 0.999, ag.table()


def test_the_rewrite_keeps_every_quantized_tensor_and_leaves_no_qoperator_node():
    q, _, _ = quantized("residual", **U8)
    twin = qoperator.to_qdq(q)
    onnx.checker.check_model(twin)
    assert not [n for n in twin.graph.node if n.op_type in qoperator.QOPERATOR]
    original = [n.output[0] for n in q.graph.node if n.op_type in qoperator.QOPERATOR or n.op_type == "QuantizeLinear"]
    assert set(original) <= set(qoperator.quantized_tensors(q))
    assert qoperator.quantized_tensors(q) == qoperator.quantized_tensors(twin)
    assert qoperator.is_qoperator(q) and not qoperator.is_qoperator(twin)


def test_a_config_without_mul_splits_the_requantization_with_the_cpu():
    q, shape, rng = quantized("conv", **U8)
    _, records = _run(q, shape, rng, cfg="small")
    conv = next(r for r in records if r["kind"] == "conv")
    assert conv["where"] == "vta" and "no ALU MUL" in conv["reason"]


def _qlinearconv_with_a_computed_scale():
    """x (uint8 graph input) -> QLinearConv whose output scale is a graph input: not a constant, so no rewrite."""
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(np.array(v, dtype=t), n) for n, v, t in (
        ("xs", 0.05, np.float32), ("xz", 128, np.uint8), ("w", rng.integers(-50, 50, (4, 3, 3, 3)), np.int8),
        ("ws", 0.02, np.float32), ("wz", 0, np.int8), ("yz", 128, np.uint8))]
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"], pads=[1, 1, 1, 1])
    g = helper.make_graph([node], "t", [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 3, 6, 6]),
                                        helper.make_tensor_value_info("ys", TensorProto.FLOAT, [])],
                          [helper.make_tensor_value_info("y", TensorProto.UINT8, [1, 4, 6, 6])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def test_a_qoperator_node_with_a_computed_scale_stays_in_an_island_that_counts_its_macs():
    m = _qlinearconv_with_a_computed_scale()
    assert [n.op_type for n in qoperator.to_qdq(m).graph.node] == ["QLinearConv"]
    g = graph.load(m)
    assert [n.kind for n in g.nodes] == ["island"]
    isl = g.nodes[0].attrs["island"]
    assert isl.ops == ["QLinearConv"] and isl.macs == 4 * 6 * 6 * 3 * 9
    assert node_macs(m.graph.node[0], {"y": (1, 4, 6, 6), "w": (4, 3, 3, 3)}) == 4 * 6 * 6 * 27
