"""Model builds: cached per config and sources, clear errors when the toolchain or the build fails."""
import time

import pytest

from cosim import build


def test_cached_build_is_reused():
    first = build.build_model("small")
    t = time.time()
    again = build.build_model("small")
    assert again.build_dir == first.build_dir and again.seconds == 0.0
    assert time.time() - t < 10
    assert (again.build_dir / "BUILT").exists()


def test_build_failure_shows_the_compiler_message(tmp_path, monkeypatch):
    monkeypatch.setattr(build, "CACHE_DIR", tmp_path)
    monkeypatch.setattr(build, "_verilog_for", lambda cfg: "module vta_top(input clk; endmodule\n")
    with pytest.raises(build.BuildError) as err:
        build.build_model("small")
    msg = str(err.value)
    assert "building the Verilator model of config small failed" in msg
    assert "syntax error" in msg or "Error" in msg


def test_missing_toolchain_is_a_clear_error(monkeypatch):
    import builtins
    real_import = builtins.__import__

    def no_verilator(name, *args, **kwargs):
        if name == "verilator":
            raise ImportError("no module")
        return real_import(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", no_verilator)
    with pytest.raises(build.ToolchainError, match="'verilator' package is not installed"):
        build.verilator_root()
