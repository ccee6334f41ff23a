"""python -m apps.tvm_vta: the partition, the run and its checks, printed."""

import onnx

from apps.tvm_vta.__main__ import main
from tests.apps.onnx.qdq import quantized


def test_command_line(tmp_path, capsys):
    q, _, _ = quantized("residual", c=8, h=6)
    onnx.save(q, tmp_path / "m.onnx")
    assert main([str(tmp_path / "m.onnx"), "--export", str(tmp_path / "m.so")]) == 0
    out = capsys.readouterr().out
    assert "2 layers on VTA (" in out and "100.00% of the MACs on VTA" in out
    assert "offloaded layers equal to the importer's reference of their inputs: 2/2; equal to apps.onnx's " \
           "reference of the whole model: 2/2" in out
    assert "output y: argmax identical to onnxruntime's" in out
    assert (tmp_path / "m.so").exists()


def test_a_bad_file_is_one_line(tmp_path, capsys):
    (tmp_path / "bad.onnx").write_bytes(b"not a model")
    assert main([str(tmp_path / "bad.onnx")]) == 2
    assert capsys.readouterr().err.startswith("error: ")
