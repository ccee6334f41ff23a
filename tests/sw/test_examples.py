"""Every example runs on the golden model of the default config and checks itself against numpy."""
import importlib.util
from pathlib import Path

import pytest

from sw import runtime

from tests.conftest import make_queue

EXAMPLES = Path(__file__).resolve().parent.parent.parent / "examples"
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
    assert "gemm_counter" in out or name == "get_started_vector_add"


def test_example_on_small_config(capsys):
    assert load("simple_gemm").main(["--config", "small"]) == 0
    assert "PASSED" in capsys.readouterr().out
