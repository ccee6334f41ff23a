"""Float models quantized on import (onnxruntime quantize_static) and batches of inputs."""

import numpy as np
import onnx
import pytest

from apps.onnx import calibrate
from apps.onnx.__main__ import main
from apps.onnx.ir import OnnxImportError
from apps.onnx.model import Model

from .qdq import single_op


@pytest.fixture
def float_model(tmp_path):
    rng = np.random.default_rng(3)
    model, shape = single_op("between:Softmax", rng)
    path = tmp_path / "f.onnx"
    onnx.save(model, path)
    data = rng.normal(0, 1, (6, *shape[1:])).astype(np.float32)      # 6 samples of a batch-1 input
    np.save(tmp_path / "cal.npy", data)
    return path, shape


def test_samples_split_along_the_batch(float_model, tmp_path):
    path, shape = float_model
    shapes = calibrate.input_shapes(onnx.load(path))
    assert shapes == {"x": tuple(shape)}
    samples = calibrate.split_samples(calibrate.load_samples(tmp_path / "cal.npy", shapes), shapes)
    assert len(samples) == 6 and samples[0]["x"].shape == tuple(shape)
    np.savez(tmp_path / "one.npz", x=np.zeros(shape, np.float32))
    assert len(calibrate.split_samples(calibrate.load_samples(tmp_path / "one.npz", shapes), shapes)) == 1
    with pytest.raises(OnnxImportError, match=r"input 'x': an array of shape \(2, 3\)"):
        calibrate.split_samples({"x": np.zeros((2, 3), np.float32)}, shapes)


@pytest.mark.parametrize("per_channel", [False, True])
def test_quantize_file_writes_a_qdq_model_beside(float_model, tmp_path, per_channel):
    path, _ = float_model
    out = calibrate.quantize_file(path, tmp_path / "cal.npy", per_channel)
    assert out.parent == path.parent and out.name == ("f.qdq-pc.onnx" if per_channel else "f.qdq.onnx")
    q = onnx.load(out)
    assert not calibrate.is_float_model(q)
    scales = [t for t in q.graph.initializer if t.name.endswith("_scale") and len(t.dims) == 1 and t.dims[0] > 1]
    assert bool(scales) == per_channel


def test_batch_norm_is_folded_before_quantization(tmp_path):
    rng = np.random.default_rng(5)
    model, shape = single_op("conv_bn", rng)
    samples = [{"x": rng.normal(0, 1, shape).astype(np.float32)} for _ in range(4)]
    q = calibrate.quantize_model(model, samples)
    assert "BatchNormalization" not in {n.op_type for n in q.graph.node}
    path = tmp_path / "bn.qdq.onnx"
    onnx.save(q, path)
    m = Model(path, "default")
    assert [(r["kind"], r["where"]) for r in m.placement() if r["where"] == "vta"] == [("conv", "vta")]
    assert "island" not in [r["kind"] for r in m.placement()]


def test_float_model_without_calibration_is_one_error_line(float_model, capsys):
    path, _ = float_model
    assert main([str(path), "--no-ort"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: a float model") and "--calibrate" in err[0]


def test_calibrate_and_a_batch_of_inputs_from_the_command_line(float_model, tmp_path, capsys):
    path, shape = float_model
    np.savez(tmp_path / "in.npz", x=np.random.default_rng(4).normal(0, 1, (3, *shape[1:])).astype(np.float32))
    assert main([str(path), "--calibrate", str(tmp_path / "cal.npy"), "--per-channel",
                 "--input", str(tmp_path / "in.npz")]) == 0
    out = capsys.readouterr().out
    assert "wrote" in out and "f.qdq-pc.onnx" in out
    assert "placement (before the run):" in out and "island" in out
    assert "(3 inputs); equal to the numpy int8 reference: PASS" in out
    assert "top-1 identical True (3/3)" in out


@pytest.mark.parametrize("fmt,suffix,node", [("qoperator", "qop", "QLinearConv"), ("dynamic", "dyn", "ConvInteger")])
def test_the_other_formats_from_the_command_line(float_model, tmp_path, capsys, fmt, suffix, node):
    path, _ = float_model
    argv = [str(path), "--format", fmt] + (["--calibrate", str(tmp_path / "cal.npy")] if fmt != "dynamic" else [])
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"f.{suffix}.onnx" in out and "equal to the numpy int8 reference: PASS" in out
    q = onnx.load(path.with_suffix(f".{suffix}.onnx"))
    assert node in {n.op_type for n in q.graph.node}


def test_a_calibrated_format_without_data_is_an_error(float_model):
    with pytest.raises(OnnxImportError, match="format 'qoperator' calibrates on samples"):
        calibrate.quantize_file(float_model[0], None, fmt="qoperator")
