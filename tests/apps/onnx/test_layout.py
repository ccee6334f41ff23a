"""Layout operators (Reshape, Transpose, Slice, Concat, ...) on int8 codes on the host: no CPU island, equal to
the reference bit for bit, and to onnxruntime's QDQ result (exactly for a pure move, within 1 LSB where the
output's quantization differs and the codes are rescaled)."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import QuantType

from apps.onnx import graph, layers, ort, runner
from apps.onnx.handlers.layout import MOVED, RESCALED
from apps.onnx.model import Model
from sw import runtime
from sw.config import load_config

from .qdq import quantize_with

C, H = 4, 6
N = helper.make_node


def i64(a):
    return np.asarray(a, np.int64)


def _model(nodes, inits, outs, post, seed=0, opset=17):
    """x -> Conv -> t (and Conv -> u with larger weights, if read) -> ``nodes`` -> ``outs``: graph outputs, or
    each read by a 1x1 Conv (``post``: the channels of each output)."""
    rng = np.random.default_rng(seed)
    f = {"w1": rng.normal(0, 0.3, (C, C, 3, 3)), "b1": rng.normal(0, 0.1, C)}
    pre = [N("Conv", ["x", "w1", "b1"], ["t"], pads=[1] * 4)]
    if any("u" in n.input for n in nodes):
        f.update(w2=rng.normal(0, 1.5, (C, C, 3, 3)), b2=rng.normal(0, 0.1, C))
        pre.append(N("Conv", ["x", "w2", "b2"], ["u"], pads=[1] * 4))
    nodes = pre + list(nodes)
    if post:
        for o, ch in zip(outs, post):
            f["w_" + o] = rng.normal(0, 0.3, (3, ch, 1, 1))
            nodes.append(N("Conv", [o, "w_" + o], ["z_" + o]))
        outs = ["z_" + o for o in outs]
    inits = {k: np.asarray(v, np.float32) for k, v in f.items()} | dict(inits)
    g = helper.make_graph(nodes, "t", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, H, H])],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs],
                          [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def _quantized(model, **kw):
    cal = np.random.default_rng(1).normal(0, 1, (8, C, H, H)).astype(np.float32)
    return quantize_with(model, cal, [1, C, H, H], **kw)


PAD = i64([0, 0, 1, 2, 0, 0, 2, 1])
# id: (kind, the op node (named "op", reading t; or a list of nodes, the last one the op), constants, outputs,
# post Conv channels, a pure move (None: quantize_static leaves the op in float, its neighbours bracket it))
CASES = {
    "reshape": ("reshape", N("Reshape", ["t", "s"], ["y"]), {"s": i64([0, -1, 12])}, ["y"], None, True),
    "reshape-4d": ("reshape", N("Reshape", ["t", "s"], ["y"]), {"s": i64([1, 2, -1, 6])}, ["y"], [2], True),
    "transpose": ("transpose", N("Transpose", ["t"], ["y"], perm=[0, 2, 3, 1]), {}, ["y"], [H], True),
    "transpose-reversed": ("transpose", N("Transpose", ["t"], ["y"]), {}, ["y"], None, True),
    "squeeze": ("squeeze", N("Squeeze", ["t", "a"], ["y"]), {"a": i64([0])}, ["y"], None, True),
    "squeeze-all": ("squeeze", N("Squeeze", ["t"], ["y"]), {}, ["y"], None, True),
    "unsqueeze": ("unsqueeze", N("Unsqueeze", ["t", "a"], ["y"]), {"a": i64([0, -1])}, ["y"], None, True),
    "flatten": ("flatten", N("Flatten", ["t"], ["y"], axis=2), {}, ["y"], None, True),
    "flatten-negative": ("flatten", N("Flatten", ["t"], ["y"], axis=-1), {}, ["y"], None, True),
    "slice": ("slice", N("Slice", ["t", "st", "en", "ax", "sp"], ["y"]),
              {"st": i64([1, -4]), "en": i64([100, -1]), "ax": i64([1, 3]), "sp": i64([1, 2])}, ["y"], [3], True),
    "slice-negative-steps": ("slice", N("Slice", ["t", "st", "en", "ax", "sp"], ["y"]),
                             {"st": i64([-1, 5]), "en": i64([-100, 0]), "ax": i64([2, -1]), "sp": i64([-2, -3])},
                             ["y"], None, True),
    "slice-default-axes": ("slice", N("Slice", ["t", "st", "en"], ["y"]), {"st": i64([0, 1]), "en": i64([1, 3])},
                           ["y"], None, True),
    "gather": ("gather", N("Gather", ["t", "i"], ["y"], axis=1), {"i": i64([[2, 0], [1, -1]])}, ["y"], None, True),
    "gather-scalar": ("gather", N("Gather", ["t", "i"], ["y"], axis=-1), {"i": i64(3)}, ["y"], None, True),
    "split": ("split", N("Split", ["t", "s"], ["y0", "y1"], axis=1), {"s": i64([1, 3])}, ["y0", "y1"], [1, 3], True),
    "split-equal": ("split", N("Split", ["t"], ["y0", "y1", "y2"], axis=2), {}, ["y0", "y1", "y2"], None, True),
    "split-num_outputs": ("split", [N("Flatten", ["t"], ["f"], axis=3), N("Split", ["f"], ["y0", "y1", "y2", "y3", "y4"],
                                                                         axis=0, num_outputs=5)],
                          {}, ["y0", "y1", "y2", "y3", "y4"], None, True),
    "concat": ("concat", N("Concat", ["t", "u"], ["y"], axis=1), {}, ["y"], [2 * C], False),
    "concat-same": ("concat", N("Concat", ["t", "t"], ["y"], axis=-2), {}, ["y"], None, True),
    "identity": ("identity", N("Identity", ["t"], ["y"]), {}, ["y"], [C], None),
    "pad": ("pad", N("Pad", ["t", "p"], ["y"]), {"p": PAD}, ["y"], [C], True),
    "pad-value": ("pad", N("Pad", ["t", "p", "v"], ["y"]), {"p": PAD, "v": np.float32(8.0)}, ["y"], None, False),
    "pad-negative": ("pad", N("Pad", ["t", "p"], ["y"]), {"p": i64([0, 0, -1, 2, 0, 0, 1, -2])}, ["y"], None, True),
    "pad-reflect-axes": ("pad", N("Pad", ["t", "p", "", "a"], ["y"], mode="reflect"),
                         {"p": i64([1, 2, 2, 1]), "a": i64([-1, 2])}, ["y"], None, True),
    "pad-edge": ("pad", N("Pad", ["t", "p"], ["y"], mode="edge"), {"p": PAD}, ["y"], None, True),
    "depth_to_space": ("depth_to_space", N("DepthToSpace", ["t"], ["y"], blocksize=2), {}, ["y"], [1], None),
    "depth_to_space-crd": ("depth_to_space", N("DepthToSpace", ["t"], ["y"], blocksize=2, mode="CRD"), {}, ["y"],
                           [1], None),
    "space_to_depth": ("space_to_depth", N("SpaceToDepth", ["t"], ["y"], blocksize=3), {}, ["y"], [9 * C], None),
}
OPSET = {"pad-reflect-axes": 18, "split-num_outputs": 18}
UINT8 = ["transpose", "split", "concat", "pad-value"]
PARAMS = [(c, QuantType.QInt8) for c in CASES] + [(c, QuantType.QUInt8) for c in UINT8]


def _run(q):
    g = graph.load(q)
    lays = layers.prepare(g)
    x = np.random.default_rng(2).normal(0, 1.2, (1, C, H, H)).astype(np.float32)
    with runtime.use_target(load_config("default")):
        env, records = runner.run(lays, {"x": x}, 2)
    ref = layers.reference(lays, {"x": x})
    fused = {t for r in records for t in r.get("fused", ())}
    for k in ref:
        assert k in fused or np.array_equal(ref[k], env[k]), k
    return g, lays, x, env, records


@pytest.mark.parametrize("case,act", PARAMS, ids=[f"{c}-{'u8' if a == QuantType.QUInt8 else 'i8'}" for c, a in PARAMS])
def test_layout_op_moves_int8_codes(case, act):
    kind, nodes, inits, outs, post, pure = CASES[case]
    nodes = nodes if isinstance(nodes, list) else [nodes]
    op = nodes[-1]
    nodes = nodes[:-1] + [helper.make_node(op.op_type, op.input, op.output, name="op",
                                           **{a.name: helper.get_attribute_value(a) for a in op.attribute})]
    q = _quantized(_model(nodes, inits, outs, post, opset=OPSET.get(case, 17)), activation_type=act)
    g, lays, x, env, records = _run(q)

    assert "island" not in [r["kind"] for r in records], [(r["name"], r["reason"]) for r in records]
    mine = [lay for lay in lays if lay.name == "op" or lay.name.startswith("op[")]      # a Split: a layer per output
    recs = [r for r in records if r["name"] == "op" or r["name"].startswith("op[")]
    assert len(mine) == len(recs) == (len(outs) if kind == "split" else 1)
    outputs = [o for lay in mine for o in lay.node.outputs]
    inputs = {i for lay in mine for i in lay.node.inputs}
    same = all(g.qparams[o] == g.qparams[i] for o in outputs for i in inputs)
    for rec in recs:
        assert rec["kind"] == kind and rec["where"] == "cpu" and rec["macs"] == 0
        assert rec["reason"] == (MOVED if same else RESCALED)
    assert all(t in g.qparams for t in inputs | set(outputs))
    assert g.qparams[outputs[0]].dtype == ("uint8" if act == QuantType.QUInt8 else "int8")
    if pure is not None:            # quantize_static gives a pure move the input's quantization (a rescale otherwise)
        assert same == pure

    theirs = ort.run_all(ort.session(q), {"x": x}, g)
    for o in outputs:
        d = np.abs(env[o].astype(np.int32) - theirs[o].astype(np.int32))
        assert env[o].shape == theirs[o].shape and d.max() <= (0 if same else 1), (o, d.max())
        assert np.abs(env[o].astype(np.int32)).max() > 0


def test_concat_of_two_scales_rescales_one_input_at_least():
    kind, node, inits, outs, post, _ = CASES["concat"]
    q = _quantized(_model([node], inits, outs, post))
    g, lays, *_ = _run(q)
    lay = next(lay for lay in lays if lay.kind == "concat")
    scales = [g.qparams[i].scale for i in lay.node.inputs]
    assert scales[0] != scales[1] and any(r is not None for r in lay.params["rescale"])


def test_model_compares_a_split_with_onnxruntime():
    """Each part of a Split is a layer of one output: the layer-by-layer comparison with onnxruntime takes them."""
    kind, node, inits, outs, post, _ = CASES["split"]
    q = _quantized(_model([node], inits, outs, post))
    m = Model(q, "default")
    x = np.random.default_rng(2).normal(0, 1.2, (1, C, H, H)).astype(np.float32)
    assert m.run({"x": x}).exact
    agreement, _ = m.compare_ort({"x": x})
    assert [r[1] for r in agreement.rows].count("split") == 2
    assert all(r[4] == 0 for r in agreement.rows if r[1] == "split")


@pytest.mark.parametrize("case", ["pad", "concat", "split", "transpose"])
def test_qoperator_model_moves_codes_too(case):
    """A QOperator model (its Pad, Concat, ... on codes, rewritten as QDQ on import): the same layers, equal to
    onnxruntime on the user's own file. Its Pad's constant_value is the input's zero point (a code)."""
    from onnxruntime.quantization import QuantFormat

    kind, node, inits, outs, post, _ = CASES[case]
    q = _quantized(_model([node], inits, outs, post), quant_format=QuantFormat.QOperator)
    m = Model(q, "default")
    x = np.random.default_rng(2).normal(0, 1.2, (1, C, H, H)).astype(np.float32)
    assert m.run({"x": x}).exact
    assert kind in [r["kind"] for r in m.placement()] and "island" not in [r["kind"] for r in m.placement()]
    agreement, _ = m.compare_ort({"x": x})
    assert [r[4] for r in agreement.rows if r[1] == kind] and all(r[4] == 0 for r in agreement.rows if r[1] == kind)


def test_reshape_to_a_computed_shape_is_an_island_with_the_reason():
    nodes = [N("Shape", ["t"], ["s"], name="shape"), N("Reshape", ["t", "s"], ["y"], name="op")]
    q = _quantized(_model(nodes, {}, ["y"], [C]))
    g, lays, x, env, records = _run(q)
    islands = [n.attrs["island"] for n in g.nodes if n.kind == "island"]
    reasons = {k: v for isl in islands for k, v in isl.reasons.items()}
    assert "Reshape" in [op for isl in islands for op in isl.ops]
    assert "shape 's' is not a constant" in reasons["op"], reasons
    assert "reshape" not in [r["kind"] for r in records]


def test_split_output_quantized_twice_gets_a_requantize():
    """A Split output read by two QuantizeLinear nodes of different scales: the first is the split's output, the
    second a requantize of it; both QuantizeLinear nodes are folded (no island)."""
    kind, node, inits, outs, post, _ = CASES["split"]
    q = _quantized(_model([node], inits, outs, post))
    ql = next(n for n in q.graph.node if n.op_type == "QuantizeLinear" and n.input[0].startswith("y1"))
    scale = numpy_helper.to_array(next(t for t in q.graph.initializer if t.name == ql.input[1]))
    q.graph.initializer.append(numpy_helper.from_array(np.float32(scale * 2), "twice"))
    q.graph.node.append(N("QuantizeLinear", [ql.input[0], "twice", ql.input[2]], ["y1_again"], name="again"))
    q.graph.node.append(N("DequantizeLinear", ["y1_again", "twice", ql.input[2]], ["y1_again_f"]))
    q.graph.output.append(helper.make_tensor_value_info("y1_again_f", TensorProto.FLOAT, [1, 3, H, H]))
    g, lays, x, env, records = _run(q)
    assert [r["kind"] for r in records].count("requantize") == 1 and "island" not in [r["kind"] for r in records]
    theirs = ort.run_all(ort.session(q), {"x": x}, g)
    assert np.abs(env["y1_again"].astype(np.int32) - theirs["y1_again"]).max() <= 1
