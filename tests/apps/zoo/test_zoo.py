"""The zoo at reduced sizes: each model built, quantized and run whole, bit-exact with the numpy reference
on the golden model and the RTL, every accelerator layer within 1 LSB of onnxruntime."""

import numpy as np
import pytest

from apps import zoo
from apps.onnx.model import Model
from apps.zoo import bert, dcgan, densenet, inception, mobilenetv2, resnet50, shufflenet, squeezenet, yolo

# the share of MACs on the accelerator at the reduced sizes (the full sizes are benchmarks)
# (MobileNetV2's and ShuffleNet's last depthwise convs and DenseNet's last BatchNormalization have a 1x1 output at
# 32x32: too few blocks for VTA's GEMM, so the CPU; the dynamically quantized encoder's two-activation MatMuls stay
# float, on the CPU)
SHARE = {"resnet18-pc": 1.0, "resnet50": 1.0, "mobilenetv2": 0.98, "yolov3-tiny": 1.0, "dcgan": 1.0,
         "squeezenet": 1.0, "inception": 1.0, "shufflenet": 0.99, "densenet121": 0.999, "bert": 1.0,
         ("bert", "dynamic"): 0.95}
# what may still run in a CPU island (onnxruntime); never a MaxPool, Concat, BatchNormalization, Split or a layout
# move (a channel shuffle, a head split)
ISLAND_OPS = {"LeakyRelu", "Resize", "Tanh", "Softmax", "LayerNormalization", "Div", "Erf", "Add", "Mul", "AveragePool",
              "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "Cast", "MatMul", "Relu",
              "GlobalAveragePool", "Flatten", "Gemm"}
# what onnxruntime's QOperator quantizer leaves in float besides: the Reshape before each QGemm (of a LayerNorm's
# float output) and DenseNet's last BatchNormalization and ReLU before the classifier; in the dynamic format
# everything but the integer products is float, on the CPU
FLOAT_BY_QUANTIZER = {"qdq": set(), "qoperator": {"Reshape", "BatchNormalization"}}
# every model in QDQ in the fast tier; its other formats (rewritten to the same lowering) in the slow one
RUNS = [pytest.param(name, fmt, id=f"{name}-{fmt}", marks=() if fmt == "qdq" else pytest.mark.slow)
        for name, e in zoo.MODELS.items() for fmt in e.formats if fmt != "dynamic" or name in ("bert", "squeezenet")]


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
    ops = _ops(bert.build(32, 8, 2, 2))          # as torch.onnx.export writes it: MatMul + Add per nn.Linear
    assert ops.count("Gemm") == 0 and ops.count("MatMul") == 12 + 4 and ops.count("Softmax") == 2
    assert ops.count("Add") == 12 + 4 + 2 and ops.count("Reshape") == 8 and ops.count("Transpose") == 10
    assert ops.count("LayerNormalization") == 4 and ops.count("Erf") == 2 and ops.count("Div") == 2 + 2
    ops = _ops(squeezenet.build(0.25, 32))
    assert ops.count("Concat") == 8 and ops.count("Conv") == 26 and ops.count("MaxPool") == 3
    ops = _ops(inception.build(0.125, 32))
    assert ops.count("Concat") == 9 and ops.count("Conv") == 3 + 9 * 6 and ops.count("MaxPool") == 4 + 9
    ops = _ops(shufflenet.build(0.25, 32))
    assert ops.count("Split") == 13 and ops.count("Concat") == 16 and ops.count("Reshape") == 32
    ops = _ops(densenet.build())
    assert ops.count("BatchNormalization") == 58 + 3 + 1 and ops.count("Concat") == 58 and ops.count("Conv") == 120
    assert resnet50.build(8, 32).SerializeToString() == resnet50.build(8, 32).SerializeToString()   # seeded


@pytest.mark.parametrize("name,fmt", RUNS)
def test_reduced_model_on_the_golden_model(name, fmt):
    row = zoo.evaluate(name, "fsim", reduced=True, n_inputs=2 if fmt == "qdq" else 1, fmt=fmt)
    assert row["exact"]
    assert row["max_lsb"] <= 1 and row["equal"] >= 0.999, row
    assert row["mac_share"] >= SHARE.get((name, fmt), SHARE[name]), row
    if fmt in FLOAT_BY_QUANTIZER:
        assert set(row["island_ops"]) <= ISLAND_OPS | FLOAT_BY_QUANTIZER[fmt], row["island_ops"]
    if zoo.MODELS[name].argmax:
        same, n = row["outputs"].split()[1].split("/")
        assert same == n, row


def test_a_format_onnxruntime_does_not_write_is_refused():
    with pytest.raises(ValueError, match=r"dcgan in format 'qoperator': onnxruntime quantizes it as qdq"):
        zoo.evaluate("dcgan", fmt="qoperator")


@pytest.mark.rtl
def test_reduced_zoo_on_the_rtl():
    """Every reduced model (QDQ, and the encoder and DenseNet in the other formats) in one simulator launch: equal
    to the reference bit for bit."""
    import cosim
    from apps.onnx import runner

    calls, models = [], []
    for name, fmt in [(name, "qdq") for name in zoo.MODELS] + [("bert", "qoperator"), ("bert", "dynamic"),
                                                                ("densenet121", "qoperator")]:
        m = Model(zoo.quantized(name, reduced=True, fmt=fmt))
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
    assert a[0]["embeddings"].shape == (1, 8, 32) and np.allclose(a[0]["embeddings"].std(2), 1, atol=1e-5)
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


def test_command_line_formats_into_a_marker(tmp_path, capsys):
    """A model onnxruntime does not quantize in a format (the DCGAN in QOperator form) is left out of it."""
    from apps.zoo.__main__ import main

    doc = tmp_path / "onnx.md"
    assert main(["--target", "fsim", "--reduced", "--models", "dcgan", "squeezenet", "--formats", "qdq", "qoperator",
                 "--markdown", str(doc), "--marker", "formats", "--reports", str(tmp_path / "r")]) == 0
    text = doc.read_text().replace("  ", " ")
    assert "<!-- formats -->" in text and "<!-- /formats -->" in text
    rows = [line for line in text.splitlines() if line.startswith("| dcgan") or line.startswith("| squeezenet")]
    assert [r.split("|")[2].strip() for r in rows] == ["qdq", "qdq", "qoperator"]
    assert (tmp_path / "r" / "squeezenet_reduced_qoperator_fsim.csv").exists()
