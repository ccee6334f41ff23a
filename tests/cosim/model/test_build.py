"""Model builds: cached by the generated Verilog, clear errors when the toolchain or the build fails."""
import shutil
import sys

import pytest

from cosim.model import build, verilog


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
    monkeypatch.setattr(build, "_BUILT", {})                 # not the model this process may have built already
    with pytest.raises(build.ToolchainError, match=r"waveforms need lz4.*run `make venv`"):
        build.build_model("small", waves=True)


def test_lint_reads_the_accelerator_s_warnings_from_the_build_log(tmp_path):
    (tmp_path / "build.log").write_text(
        "verilator --cc ... -Wno-WIDTH ...\n"
        "%Warning-UNUSEDSIGNAL: /c/src/vta_top.v:12:7: Signal is not used: 'x'\n"
        "                                  : ... note: In instance 'vta_tb.dut'\n"
        "%Warning-UNOPTFLAT: /c/src/vta_tb.sv:40:3: Signal unoptimizable\n"
        "verilator: 2.0 s\n")
    model = build.Model(None, tmp_path, False, 0.0)
    assert model.lint() == ["%Warning-UNUSEDSIGNAL: /c/src/vta_top.v:12:7: Signal is not used: 'x'"]


def test_the_build_is_the_lint():
    """Models verilate with Verilator's default warnings on (not fatal) and the waivers, nothing broader."""
    flags = build.BUILD_ARGS
    assert "-Wno-fatal" in flags and not {"-Wno-lint", "-Wno-style", "-Wno-all"} & set(flags)
    assert [f for f in flags if f.startswith("-Wno-") and f != "-Wno-fatal"] == build.LINT_WAIVERS


def test_a_build_says_once_what_it_builds_and_where_its_log_is(tmp_path, monkeypatch, capsys):
    from cosim.model import build as build_mod
    monkeypatch.setattr(build_mod, "CACHE_DIR", tmp_path)
    # the Verilator run itself is not the point
    monkeypatch.setattr(build_mod, "verilate_testbench", lambda *args, **kwargs: None)
    model = build_mod.build_model("small")
    err = capsys.readouterr().err.splitlines()
    log = model.build_dir / "build.log"
    assert err == [f"building the Verilator model of config small (without waveform tracing) once; it is cached in "
                   f"{tmp_path} (takes minutes; log: {log})", "built the model of config small in 0 s"]
    build_mod.build_model("small")                                        # cached: silent
    assert capsys.readouterr().err == ""


def test_the_cocotb_version_of_the_key_comes_from_its_metadata():
    import cocotb
    assert build._cocotb_version() == cocotb.__version__
