"""Every example runs on the golden model of the default config and checks itself against numpy; one runs on the RTL
as a user runs it (``python examples/simple_gemm.py --target rtl``)."""
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sw import runtime
from tests.conftest import make_queue

ROOT = Path(__file__).resolve().parent.parent.parent
EXAMPLES = ROOT / "examples"
NAMES = ["get_started_vector_add", "simple_gemm", "blocked_matrix_multiply", "conv2d"]


def load(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", NAMES)
def test_example(name, capsys):
    q = make_queue("default", dram_bytes=64 << 20)
    previous = runtime.set_current(q)
    try:
        assert load(name).main([]) == 0
    finally:
        runtime.set_current(previous)
    out = capsys.readouterr().out
    assert "PASSED" in out and "FAILED" not in out
    assert "gemm_counter" in out and ("useful MACs" in out) == (name != "get_started_vector_add")
    assert "cycles" not in out                  # the golden model counts work, not time


@pytest.mark.parametrize("name", NAMES)
def test_each_example_says_how_to_run_it_on_the_rtl(name):
    doc = load(name).__doc__
    assert f".venv/bin/python examples/{name}.py" in doc and "--target rtl" in doc


def test_example_on_small_config(capsys):
    assert load("simple_gemm").main(["--config", "small"]) == 0
    assert "PASSED" in capsys.readouterr().out


@pytest.mark.rtl
def test_example_on_the_rtl_as_a_script():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    res = subprocess.run([sys.executable, "examples/simple_gemm.py", "--config", "small", "--target", "rtl"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.count("check against numpy PASSED") == 2
    assert "    cycles" in res.stdout and "    gemm_counter         1024" in res.stdout
