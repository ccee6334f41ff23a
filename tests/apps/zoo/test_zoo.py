"""The zoo at reduced sizes: each model built, quantized and run whole, bit-exact with the numpy reference
on the golden model and the RTL, every accelerator layer within 1 LSB of onnxruntime."""

import numpy as np
import pytest

from apps import zoo
from apps.onnx.model import Model
from apps.zoo import bert, dcgan, mobilenetv2, resnet50, yolo

# the share of MACs on the accelerator at the reduced sizes (the full sizes are benchmarks)
# (MobileNetV2's last depthwise conv has a 1x1 output at 32x32: too few blocks for VTA's GEMM, so the CPU;
# the encoder's two-activation MatMuls run in CPU islands)
SHARE = {"resnet18-pc": 1.0, "resnet50": 1.0, "mobilenetv2": 0.98, "yolov3-tiny": 1.0, "dcgan": 1.0, "bert": 0.9}


def _ops(model):
    return [n.op_type for n in model.graph.node]


def test_architectures():
    ops = _ops(resnet50.build(8, 32))
    assert ops.count("Conv") == 53 and ops.count("Add") == 16 and ops.count("Gemm") == 1    # torchvision's
    m = mobilenetv2.build(1.0, 32)
    convs = [n for n in m.graph.node if n.op_type == "Conv"]
    depthwise = [n for n in convs if next(a.i for a in n.attribute if a.name == "group") > 1]
    assert len(convs) == 52 and len(depthwise) == 17 and _ops(m).count("Add") == 10
    assert _ops(m).count("Clip") == 35
    ops = _ops(yolo.build(4, 64))
    assert ops.count("Conv") == 13 and ops.count("LeakyRelu") == 11 and ops.count("MaxPool") == 6
    assert ops.count("Resize") == 1 and ops.count("Concat") == 1 and [o.name for o in yolo.build(4, 64).graph.output] \
        == ["head1", "head2"]
    ops = _ops(dcgan.build(8))
    assert ops.count("ConvTranspose") == 5 and ops.count("Tanh") == 1
    ops = _ops(bert.build(32, 8, 2, 2))
    assert ops.count("Gemm") == 12 and ops.count("MatMul") == 4 and ops.count("Softmax") == 2
    assert ops.count("LayerNormalization") == 4 and ops.count("Erf") == 2
    assert resnet50.build(8, 32).SerializeToString() == resnet50.build(8, 32).SerializeToString()   # seeded


@pytest.mark.parametrize("name", list(zoo.MODELS))
def test_reduced_model_on_the_golden_model(name):
    row = zoo.evaluate(name, "fsim", reduced=True, n_inputs=2)
    assert row["exact"]
    assert row["max_lsb"] <= 1 and row["equal"] >= 0.999, row
    assert row["mac_share"] >= SHARE[name], row
    if zoo.MODELS[name].argmax:
        same, n = row["outputs"].split()[1].split("/")
        assert same == n, row


@pytest.mark.rtl
def test_reduced_zoo_on_the_rtl():
    """Every reduced model in one simulator launch: equal to the reference bit for bit."""
    import cosim
    from apps.onnx import runner

    calls, models = [], []
    for name in zoo.MODELS:
        m = Model(zoo.quantized(name, reduced=True))
        inp = zoo.inputs(name, 1, reduced=True)[0]
        calls.append((runner.run, (m.layers, inp, 2), {}))
        models.append((m, inp))
    for (env, records), (m, inp) in zip(cosim.run_many(calls, config="default"), models):
        ref = m.reference(inp)
        for k in m.graph.outputs:
            assert np.array_equal(env[k], ref[k]), k
        assert all(r["counters"].get("cycles", 0) > 0 for r in records if r["where"] == "vta")


def test_inputs_are_seeded_and_shaped():
    a = zoo.inputs("bert", 2, reduced=True)
    assert a[0]["embeddings"].shape == (8, 32) and np.allclose(a[0]["embeddings"].std(1), 1, atol=1e-5)
    assert np.array_equal(a[1]["embeddings"], zoo.inputs("bert", 2, reduced=True)[1]["embeddings"])
    assert zoo.inputs("dcgan", 1)[0]["noise"].shape == (1, 100, 1, 1)


def test_command_line_table_and_markdown(tmp_path, capsys):
    from apps.zoo.__main__ import main

    doc = tmp_path / "perf.md"
    assert main(["--target", "fsim", "--reduced", "--models", "dcgan", "bert", "--markdown", str(doc),
                 "--reports", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out
    assert "dcgan" in out and "bert" in out and "outputs vs ORT" in out
    assert "<!-- bench-zoo -->" in doc.read_text() and "| dcgan |" in doc.read_text().replace("  ", " ")
    assert (tmp_path / "r" / "dcgan_reduced_fsim.csv").exists() and (tmp_path / "r" / "bert_reduced_fsim.png").exists()
