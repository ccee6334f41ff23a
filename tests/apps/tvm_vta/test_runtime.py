"""The offloaded functions: an exported library in a fresh process, and what they refuse."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from apps.tvm_vta import compile_model, runtime
from tests.apps.onnx.qdq import quantized

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def residual():
    q, shape, rng = quantized("residual", c=8, h=6)
    return q, {"x": rng.normal(0, 1, shape).astype(np.float32)}


def test_exported_library_runs_in_a_fresh_process(residual, tmp_path):
    q, x = residual
    c = compile_model(q, "default")
    lib = c.export(tmp_path / "residual.so")
    ours = c.run(x, "fsim", library=lib)
    np.save(tmp_path / "x.npy", x["x"])
    code = textwrap.dedent(f"""
        import sys
        import numpy as np
        from apps.tvm_vta import runtime
        from sw.runtime import runners
        outputs, trace = runners.run("fsim", runtime.run_library, {lib!r}, [np.load({str(tmp_path / 'x.npy')!r})],
                                     config="default")
        np.save({str(tmp_path / 'y.npy')!r}, outputs[0])
        print(sorted(t["op"] for t in trace), "apps.tvm_vta.patterns" in sys.modules, "apps.tvm_vta.flow" in sys.modules)
    """)
    res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.split("\n")[-2] == "['conv2d', 'conv2d_add'] False False"   # no compiler imported
    assert np.array_equal(np.load(tmp_path / "y.npy"), ours.outputs["y"])


def test_layers_of_builds_the_importers_layer(residual):
    from apps.onnx import Model

    q, _ = residual
    c = compile_model(q, "default")
    call = next(b.value for b in c.partition.mod["main"].body.blocks[0].bindings
                if "conv2d_add" in str(getattr(b.value, "args", [None])[0]))
    fields = list(call.args[1].fields)          # (spec, x, residual, weight, w_scale, bias, b_scale)
    spec = json.loads(str(fields[0].value))
    arrays = [a.value.numpy() for a in fields[3:]]
    conv, add = runtime.layers_of(spec, arrays, alu_mul=True)
    theirs = {lay.name: lay for lay in Model(q, "default").layers}
    for lay in (conv, add):
        ref = theirs[lay.name]
        assert lay.steps == ref.steps and lay.inp == ref.inp and lay.out == ref.out
        for key in ("vectors", "weight", "factors"):
            if key in ref.params:
                assert np.array_equal(np.asarray(lay.params[key]), np.asarray(ref.params[key])), key


def test_a_spec_that_is_not_a_layer_is_refused():
    with pytest.raises(runtime.SpecError, match="op = 'conv3d'; allowed: conv2d, conv2d_add"):
        runtime.layers_of({"op": "conv3d", "arrays": []}, [], True)
    with pytest.raises(runtime.SpecError, match="2 arrays for the 1 of its spec"):
        runtime.layers_of({"op": "dense", "arrays": ["weight"], "name": "d"}, [np.zeros(1), np.zeros(1)], True)
    with pytest.raises(runtime.SpecError, match=r"inputs\[0\] = \[0.5, 300, 'int8'\]"):
        runtime.layers_of({"op": "add", "arrays": [], "name": "a", "inputs": [[0.5, 300, "int8"]],
                           "output": [0.5, 0, "int8"]}, [], True)
    assert runtime.digest([np.zeros(2, np.int8)]) != runtime.digest([np.zeros(2, np.int16)])
