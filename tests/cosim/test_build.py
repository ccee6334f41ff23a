"""Model builds: cached by the generated Verilog, clear errors when the toolchain or the build fails."""
import shutil
import sys

import pytest

from cosim import build, verilog


def test_cached_build_is_reused_without_elaborating(monkeypatch):
    first = build.build_model("small")
    verilog._MEMO.clear()
    monkeypatch.setattr(verilog, "_elaborate", lambda *a: pytest.fail("a warm build elaborated the hardware"))
    again = build.build_model("small")
    assert again.build_dir == first.build_dir and again.seconds == 0.0
    assert (again.build_dir / "BUILT").exists() and again.executable.exists()


def test_a_source_edit_that_keeps_the_verilog_rebuilds_nothing(tmp_path, monkeypatch):
    first = build.build_model("small")
    edited = tmp_path / "hw_doc.py"
    edited.write_text('"""a docstring edit in hw/"""\n')
    real = verilog.source_files()
    monkeypatch.setattr(verilog, "source_files", lambda: real + [edited])   # the hardware's sources changed
    monkeypatch.setattr(verilog, "cache_dir", lambda: tmp_path / "cache")    # so the Verilog is regenerated
    again = build.build_model("small")
    assert (tmp_path / "cache" / "verilog").is_dir()                        # it was elaborated again ...
    assert again.build_dir == first.build_dir and again.seconds == 0.0      # ... and the model was not rebuilt


def test_build_failure_shows_the_compiler_message(tmp_path, monkeypatch):
    good = verilog.generate("small")
    broken = tmp_path / "gen"
    shutil.copytree(good.directory, broken, ignore=shutil.ignore_patterns(".lock"))
    (broken / "vta_top.v").write_text("module vta_top(input clk; endmodule\n")
    monkeypatch.setattr(build, "CACHE_DIR", tmp_path)
    monkeypatch.setattr(build, "_verilog_for", lambda cfg, src=False: verilog.Generated(cfg, broken))
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


def test_missing_lz4_names_the_make_target(tmp_path, monkeypatch):
    assert (build.lz4_dir() / "liblz4.a").exists()          # installed by the venv step of the Makefile
    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    monkeypatch.setattr(build, "verilator_root", lambda: tmp_path / "site" / "verilator")
    with pytest.raises(build.ToolchainError, match=r"waveforms need lz4.*run `make venv`"):
        build.build_model("small", waves=True)
