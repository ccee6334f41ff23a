"""The accelerator path (sw.ops on the golden model) equals the numpy int8 reference bit for bit."""

import numpy as np
import pytest
from onnxruntime.quantization import QuantFormat, QuantType

from apps.onnx import graph, layers, runner
from sw import runtime
from sw.config import load_config
from tests.sw.ops import ALU_ONLY

from .qdq import dynamic, quantized, with_custom_op, with_zero_point

ISLANDS = ["between:Softmax", "between:LayerNormalization", "between:Resize", "custom"]


def _islanded(name):
    if name == "custom":
        q, shape, rng = quantized("between:Sigmoid")
        return with_custom_op(q), shape, rng
    return quantized(name)

OPS = [("conv", {}), ("conv", {"stride": 2, "k": 1, "pad": 0}), ("conv", {"k": 7, "pad": 3, "stride": 2, "c": 3, "h": 16}),
       ("gemm", {}), ("matmul", {}), ("add", {}), ("relu", {}), ("maxpool", {}), ("gap", {}), ("flatten", {}),
       ("avgpool", {}), ("gap", {"c": 40, "h": 7}), ("conv_leaky", {"c": 48}),
       ("conv", {"group": 2, "o": 8}), ("conv", {"group": 8, "o": 8}),
       ("conv", {"group": 16, "c": 16, "o": 32, "stride": 2}),
       ("deconv", {}), ("deconv", {"k": 3, "stride": 2, "pad": 1, "out_pad": 1}),
       ("deconv", {"k": 3, "stride": 1, "pad": 1}),
       ("deconv", {"h": 1, "k": 4, "stride": 1, "pad": 0, "c": 16}), ("linear3d", {}), ("bn_concat", {}),
       ("mul_channels", {}), ("sum", {})]


def _run(q, shape, rng, cfg="default", vt=2):
    g = graph.load(q)
    c = load_config(cfg)
    lays = layers.prepare(g, alu_mul=bool(c.ALU_MUL))
    x = rng.normal(0, 1.2, shape).astype(np.float32)
    with runtime.use_target(c):
        env, records = runner.run(lays, {"x": x}, vt)
    _equal(layers.reference(lays, {"x": x}), env, records)
    return records


def _equal(ref, env, records):
    """Every tensor of the run equals the reference; those a fusion kept on the accelerator are not in it."""
    fused = {t for r in records for t in r.get("fused", ())}
    for k in ref:
        assert k in fused or np.array_equal(ref[k], env[k]), k
    assert not fused & set(env)


@pytest.mark.parametrize("op,kw", OPS, ids=[f"{o}-{i}" for i, (o, _) in enumerate(OPS)])
@pytest.mark.parametrize("vt", [1, 2])
def test_golden_model_equals_reference(op, kw, vt):
    q, shape, rng = quantized(op, **kw)
    records = _run(q, shape, rng, vt=vt)
    where = {r["kind"]: r["where"] for r in records}
    for kind in ("conv", "deconv", "dense", "add", "add_const", "sum", "batchnorm", "mul_channels", "gap", "avgpool"):
        if kind in where:
            assert where[kind] == "vta"
    for kind in ("maxpool", "flatten", "quantize", "dequantize"):
        if kind in where:
            assert where[kind] == "cpu"


@pytest.mark.parametrize("per_channel", [False, True])
def test_residual_add_fused_into_the_conv(per_channel):
    """conv -> conv -> add(second conv, first conv): the add runs in the second conv's epilogue (the first
    conv's output is the residual), one record, the same integers as the two layers apart."""
    q, shape, rng = quantized("residual", per_channel=per_channel, c=64)
    g = graph.load(q)
    lays = layers.prepare(g)
    x = rng.normal(0, 1.2, shape).astype(np.float32)
    with runtime.use_target(load_config("default")):
        env, records = runner.run(lays, {"x": x}, 2)
        apart, records_apart = runner.run(lays, {"x": x}, 2, fuse=False)
    assert [r["kind"] for r in records if r["kind"] in ("conv", "conv+add", "add")] == ["conv", "conv+add"]
    assert [r["kind"] for r in records_apart if r["kind"] in ("conv", "conv+add", "add")] == ["conv", "conv", "add"]
    fused = records[[r["kind"] for r in records].index("conv+add")]
    conv2 = next(lay for lay in lays if lay.kind == "conv" and lay.node.output in fused["fused"])
    ref = layers.reference(lays, {"x": x})
    for k in ref:
        assert np.array_equal(ref[k], apart[k]), k
        assert k == conv2.node.output or np.array_equal(ref[k], env[k]), k
    assert conv2.node.output not in env
    assert fused["macs"] == conv2.handler.macs(conv2, [env[conv2.node.inputs[0]]], ref[conv2.node.output])
    # a conv output that must stay (a graph output, say) is not fused away
    _, kept = runner.run(lays, {"x": x}, 2, force_cpu=False, keep={conv2.node.output})
    assert "conv+add" not in [r["kind"] for r in kept]


def test_uint8_on_the_accelerator():
    q, shape, rng = quantized("add", activation_type=QuantType.QUInt8)
    _run(q, shape, rng)


# zero points of the two MatMuls' operands: x x^T (za, zb) = (z_x, z_xt), then p x (za, zb) = (-128, z_x)
ATTENTION = [{}, {"xt": 0}, {"x": 0}, {"xt": -128}]


def _attention(zero_points):
    q, shape, rng = quantized("attention")
    for tensor, z in zero_points.items():
        q = with_zero_point(q, tensor, z)
    return q, shape, rng


@pytest.mark.parametrize("zero_points", ATTENTION, ids=["doubled-K", "zb-0", "za-0-transposed", "zb-128-tripled"])
@pytest.mark.parametrize("cfg", ["default", "small"])
def test_matmul_of_two_activations_on_the_accelerator(zero_points, cfg):
    records = _run(*_attention(zero_points), cfg=cfg)
    mm = [r for r in records if r["kind"] == "matmul"]
    assert len(mm) == 2 and all(r["where"] == "vta" for r in mm)
    assert mm[0]["macs"] == 2 * 8 * 8 * 16


@pytest.mark.parametrize("cfg", ["small", "ulx3s"])
@pytest.mark.parametrize("op,kw", [("conv", {}), ("conv", {"per_channel": True}), ("gemm", {}),
                                   ("conv", {"group": 8, "o": 8}), ("deconv", {})])
def test_no_mul_config_runs_the_gemms_on_the_accelerator(cfg, op, kw):
    """Configs without ALU MUL: the GEMMs, bias and clip on VTA, the multiply on the CPU, exact."""
    q, shape, rng = quantized(op, **kw)
    records = _run(q, shape, rng, cfg=cfg)
    layer = [r for r in records if r["kind"] in ("conv", "deconv", "dense")][0]
    assert layer["where"] == "vta" and "no ALU MUL" in layer["reason"], layer["reason"]
    assert layer["counters"]["gemm_counter"] > 0


@pytest.mark.parametrize("op", ["conv", "gemm", "matmul"])
def test_per_channel_scales_on_the_accelerator(op):
    q, shape, rng = quantized(op, per_channel=True)
    records = _run(q, shape, rng)
    assert [r["where"] for r in records if r["kind"] in ("conv", "dense")] == ["vta"]


def test_records_count_macs():
    q, shape, rng = quantized("conv", o=20, k=3, pad=1)
    conv = [r for r in _run(q, shape, rng) if r["kind"] == "conv"][0]
    assert conv["macs"] == 20 * 9 * 9 * 8 * 9
    assert conv["counters"]["gemm_counter"] > 0


@pytest.mark.parametrize("name", ISLANDS)
def test_cpu_islands_between_accelerator_layers(name):
    """An operator without a handler runs in an onnxruntime island; the convs around it on VTA; the
    whole run equals the reference (whose island is the same onnxruntime result)."""
    q, shape, rng = _islanded(name)
    records = _run(q, shape, rng)
    assert [r["where"] for r in records if r["kind"] in ("conv", "island")] == ["vta", "cpu", "vta"]
    island = [r for r in records if r["kind"] == "island"][0]
    assert "onnxruntime" in island["reason"] and "no handler" in island["reason"]


@pytest.mark.rtl
def test_every_offloaded_op_on_the_rtl():
    """One simulator launch runs each small graph on the RTL; each equals the numpy reference."""
    import cosim

    cases = [quantized(op, **kw) for op, kw in OPS] + [quantized("add", activation_type=QuantType.QUInt8),
                                                       quantized("conv", per_channel=True),
                                                       quantized("gemm", per_channel=True)]
    cases += [_islanded(name) for name in ISLANDS] + [_attention(z) for z in ATTENTION]
    cases += [quantized("conv", quant_format=QuantFormat.QOperator, activation_type=QuantType.QUInt8),
              dynamic("linear3d"), dynamic("conv", group=2, o=8)]
    calls, refs = [], []
    for q, shape, rng in cases:
        lays = layers.prepare(graph.load(q))
        x = {"x": rng.normal(0, 1.2, shape).astype(np.float32)}
        calls.append((runner.run, (lays, x, 2), {}))
        refs.append(layers.reference(lays, x))
    for (env, records), ref in zip(cosim.run_many(calls, config="default"), refs):
        _equal(ref, env, records)
        assert all(r["counters"].get("cycles", 0) > 0 for r in records if r["where"] == "vta")


def test_averages_the_alu_cannot_round_as_onnxruntime_run_on_the_cpu():
    """count_include_pad = 0 with padding divides each border window by its own count: an onnxruntime island.
    A 2x2 average at the input's scale divides by 4 exactly, and a quarter of its sums are ties: the
    ALU's shift would round them up, onnxruntime's float arithmetic either way: an island too."""
    q, shape, rng = quantized("avgpool", count_include_pad=0)
    island = [r for r in _run(q, shape, rng) if r["kind"] == "island"]
    assert len(island) == 1 and "count_include_pad" in island[0]["reason"]
    q, shape, rng = quantized("avgpool", k=2, stride=2, pad=0, h=8)
    island = [r for r in _run(q, shape, rng) if r["kind"] == "island"]
    assert len(island) == 1 and "many ties" in island[0]["reason"]


@pytest.mark.parametrize("alpha", [0.1, 0.0, 0.3])
def test_a_leaky_relu_runs_in_the_epilogue_of_the_conv_before_it(alpha):
    """conv -> LeakyRelu: the island's 256-entry table is ALU steps on every value the conv can give (two slopes
    in a copy of the values; alpha 0: one clip), run in the conv's epilogue: one record, the reference's values
    (whose LeakyRelu is onnxruntime's table). Over 16 input channels the GEMM has 9 cycles per row, fewer than
    the longer epilogue's ALU passes: the table stays on the CPU; with the post-processing unit a table without
    a copy (alpha 0) is the steps of its POST pass and costs no more, so it fits there too."""
    q, shape, rng = quantized("conv_leaky", c=48, alpha=alpha)
    records = _run(q, shape, rng)
    fused = [r for r in records if r["kind"] == "conv+pointwise"]
    assert len(fused) == 1 and "LeakyRelu" in fused[0]["reason"] and not [r for r in records if r["kind"] == "island"]
    from apps.onnx import Model

    planned = [row for row in Model(q).placement() if row["kind"] == "island"]        # the plan says the same
    assert [(r["where"], r["reason"].split(" conv ")[0]) for r in planned] == [("vta", "in the epilogue of")]
    q, shape, rng = quantized("conv_leaky", c=16, alpha=alpha)
    assert [r["where"] for r in _run(q, shape, rng, ALU_ONLY) if r["kind"] in ("conv", "island")] == ["vta", "cpu"]
    post = [(r["kind"], r["where"]) for r in _run(q, shape, rng) if r["kind"] in ("conv", "island", "conv+pointwise")]
    assert post == ([("conv+pointwise", "vta")] if alpha == 0 else [("conv", "vta"), ("island", "cpu")])


def test_adjacent_pointwise_islands_stay_apart_so_each_conv_takes_its_own():
    """Two LeakyRelus next to each other in the graph, after two convs: two table islands (not one session of
    both), each in the epilogue of its conv."""
    q, shape, rng = quantized("two_leaky", c=48)
    records = _run(q, shape, rng)
    assert [r["kind"] for r in records if r["kind"].startswith("conv") or r["kind"] == "island"] == \
        ["conv+pointwise", "conv+pointwise"]
