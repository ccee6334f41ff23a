"""The partition of a Relax module imported from a QDQ model: each pattern on the accelerator equals the importer."""

import numpy as np
import pytest
from onnxruntime.quantization import QuantType

from apps.onnx import Model
from apps.tvm_vta import compile_model
from tests.apps.onnx.qdq import quantized

# (single-op model of tests/apps/onnx/qdq.py, its options) -> the vta.qdq.* calls the partition makes of it
CASES = {
    "conv-stride2": (("conv", {"stride": 2, "c": 8, "h": 8, "o": 16}), {"conv2d": 1}),
    "grouped-per-channel-uint8": (("conv", {"group": 2, "c": 16, "h": 6, "o": 16, "per_channel": True,
                                            "activation_type": QuantType.QUInt8}), {"conv2d": 1}),
    "depthwise": (("conv", {"group": 16, "c": 16, "h": 6, "o": 16}), {"conv2d": 1}),
    "transposed": (("deconv", {"c": 8, "h": 4, "o": 8}), {"conv2d_transpose": 1}),
    "gemm": (("gemm", {"k": 24, "m": 16}), {"dense": 1}),
    "linear3d-uint8": (("linear3d", {"k": 24, "m": 16, "seq": 3, "activation_type": QuantType.QUInt8}),
                       {"dense": 1, "add_const": 1}),
    "attention": (("attention", {"heads": 2, "seq": 4, "d": 16}), {"matmul": 2}),
    "residual": (("residual", {"c": 8, "h": 6}), {"conv2d": 1, "conv2d_add": 1}),
    "add-to-input": (("add", {"c": 8, "h": 6}), {"conv2d_add": 1}),
    # the conv's output also feeds a ReLU (on TVM's CPU): no fusion, the add alone
    "add": (("relu", {"c": 8, "h": 6}), {"conv2d": 1, "add": 1}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_pattern_equals_the_importer(case):
    (op, kw), ops = CASES[case]
    q, shape, rng = quantized(op, **dict(kw))
    c = compile_model(q, "default")
    assert c.partition.mac_share == 1.0
    assert sorted(r.op for r in c.partition.rows) == sorted(k for k, n in ops.items() for _ in range(n))
    x = {"x": rng.normal(0, 1, shape).astype(np.float32)}
    run = c.run(x, "fsim", check=True, keep_tensors=True)
    assert sorted(t["op"] for t in run.trace) == sorted(r.op for r in c.partition.rows)
    assert all(r["where"] == "vta" for r in run.records)           # nothing fell back to numpy
    res = Model(q, "default").run(x, target="fsim")
    assert res.exact
    for t in run.trace:                                             # every offloaded int8 output, bit for bit
        assert t["exact"] and np.array_equal(t["output"], res.tensors[t["tensor"]]), t["name"]
    assert np.array_equal(run.outputs["y"], res.tensors["y"])       # and the dequantized graph output


def test_a_layer_the_accelerator_cannot_take_stays_on_the_cpu_with_its_reason():
    q, shape, rng = quantized("conv", dilation=2, c=8, h=8, o=16)
    c = compile_model(q, "default")
    (row,) = c.partition.rows
    assert (row.where, row.op, row.macs) == ("cpu", "conv2d", 16 * 6 * 6 * 8 * 9)     # (output 6x6: (8 + 2 - 5) + 1)
    assert row.reason == "dilations = [2, 2]; the accelerator's conv2d takes 1"
    assert c.partition.mac_share == 0.0 and "call_dps_packed" not in c.partition.mod.script()
    x = {"x": rng.normal(0, 1, shape).astype(np.float32)}
    run = c.run(x, "fsim")
    assert run.trace == []
    # what runs is TVM's own CPU build of the imported module, unchanged
    import tvm
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx

    vm = relax.VirtualMachine(tvm.compile(from_onnx(q, shape_dict={"x": shape}), "llvm"), tvm.cpu())
    assert np.array_equal(run.outputs["y"], vm["main"](tvm.runtime.tensor(x["x"])).numpy())


def test_report_names_onnx_layers_and_the_fused_add():
    q, _, _ = quantized("residual", c=8, h=6)
    c = compile_model(q, "default")
    convs = [n.name or n.output[0] for n in q.graph.node if n.op_type == "Conv"]
    add = next(n.name or n.output[0] for n in q.graph.node if n.op_type == "Add")
    assert [r.name for r in c.partition.rows] == [convs[0], f"{convs[1]} + {add}"]
    text = c.partition.table()
    assert "conv2d_add" in text and "VTA" in text
    assert c.partition.summary().endswith("100.00% of the MACs on VTA")
    script = c.partition.mod.script()
    assert 'R.call_dps_packed("vta.qdq.conv2d_add"' in script and "R.nn.conv2d" not in script


@pytest.mark.rtl
def test_patterns_on_the_rtl(tmp_path):
    """The patterns the reduced ResNet does not hold (tests/apps/tvm_vta/test_flow.py runs it on the RTL), their
    exported libraries in one simulator launch: equal to the golden model's run bit for bit."""
    from apps.tvm_vta import runtime
    from sw.runtime import runners

    calls, expected = [], []
    for case in ("transposed", "linear3d-uint8", "attention", "add"):
        (op, kw), _ = CASES[case]
        q, shape, rng = quantized(op, **dict(kw))
        c = compile_model(q, "default")
        x = rng.normal(0, 1, shape).astype(np.float32)
        lib = c.export(tmp_path / f"{case}.so")
        calls.append((runtime.run_library, (lib, [x]), {}))
        expected.append(c.run({"x": x}, "fsim", library=lib))
    batch = runners.run_batch("rtl", calls, "default")
    for (outputs, trace), fsim in zip(batch.values, expected):
        assert np.array_equal(outputs[0], fsim.outputs["y"])
        assert [t["op"] for t in trace] == [t["op"] for t in fsim.trace]
        assert all(r["counters"]["cycles"] > 0 for t in trace for r in t["records"])
