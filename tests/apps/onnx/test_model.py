"""Model: the whole pipeline on a small network with every supported op, golden model and onnxruntime."""

import numpy as np
import pytest

from apps import resnet18
from apps.onnx import Model  # the package's export: the documented entry point
from apps.onnx.__main__ import main


@pytest.fixture(scope="module")
def tiny():
    """A reduced ResNet-18 (width 8, 32x32 image): conv, max pool, add, global average pool, flatten, gemm."""
    _, q = resnet18.quantized_model(8, 32, calib=4)
    return q


def test_run_is_exact_and_agrees_with_onnxruntime(tiny):
    m = Model(tiny)
    x = resnet18.calibration_images(2, 32, seed=5)
    for i in range(2):
        res = m.run({"input": x[i:i + 1]}, target="fsim")
        assert res.exact
        # (every residual add runs in the epilogue of the conv producing one of its inputs)
        assert {r["kind"] for r in res.records if r["where"] == "vta"} == {"conv", "conv+add", "gap", "dense"}
        fused = [t for r in res.records for t in r.get("fused", ())]
        ref = m.reference({"input": x[i:i + 1]})
        assert fused and all(t not in res.tensors and np.array_equal(res.tensors[t], ref[t]) for t in fused)
        ag, theirs = m.compare_ort({"input": x[i:i + 1]})
        assert ag.max_diff <= 1 and ag.worst_layer_fraction >= 0.999, ag.table()
        assert np.argmax(theirs["logits"]) == np.argmax(res.tensors["logits"])
    # the plan before a run names the same fusions
    planned = {row["name"] for row in m.placement() if row["reason"].startswith("in the epilogue of conv")}
    assert planned == {r["name"].split(" + ")[1] for r in res.records if r["kind"] == "conv+add"}


def test_cpu_target_is_the_reference(tiny):
    m = Model(tiny)
    x = resnet18.calibration_images(1, 32, seed=6)
    res = m.run({"input": x}, target="cpu")
    assert res.exact and all(r["where"] == "cpu" for r in res.records)
    with pytest.raises(ValueError, match="target = 'gpu'"):
        m.run({"input": x}, target="gpu")


def test_command_line(tiny, tmp_path, capsys):
    import onnx
    path = tmp_path / "tiny.onnx"
    onnx.save(tiny, path)
    assert main([str(path), "--csv", str(tmp_path / "r.csv"), "--png", str(tmp_path / "r.png")]) == 0
    out = capsys.readouterr().out
    assert "equal to the numpy int8 reference: PASS" in out
    assert "top-1 identical True" in out
    assert (tmp_path / "r.csv").exists() and (tmp_path / "r.png").exists()


def test_command_line_on_a_config_without_mul(tiny, tmp_path, capsys):
    import onnx
    path = tmp_path / "tiny.onnx"
    onnx.save(tiny, path)
    assert main([str(path), "--config", "ulx3s", "--no-ort"]) == 0
    out = capsys.readouterr().out
    plan = out.split("placement (before the run):")[1].split("layer ")[0]
    convs = [line for line in plan.splitlines() if " conv " in line]
    assert convs and all(" vta " in line and "no ALU MUL" in line for line in convs)
    assert "equal to the numpy int8 reference: PASS" in out


@pytest.mark.rtl
def test_a_batch_of_inputs_on_the_rtl_in_one_launch(tiny, tmp_path, capsys):
    import onnx
    path = tmp_path / "tiny.onnx"
    onnx.save(tiny, path)
    np.savez(tmp_path / "batch.npz", input=resnet18.calibration_images(2, 32, seed=7))
    assert main([str(path), "--input", str(tmp_path / "batch.npz"), "--target", "rtl"]) == 0
    out = capsys.readouterr().out
    assert "(2 inputs); equal to the numpy int8 reference: PASS" in out
    assert "top-1 identical True (2/2)" in out
