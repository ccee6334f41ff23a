"""The whole accelerator elaborates for every config, its Verilog lints clean, and its ports are named for vendor tools."""
import re
from pathlib import Path

import pytest
from amaranth.hdl import signed

from cosim.model import verilog as cosim_verilog
from cosim.model.build import build_model
from hw.__main__ import registers_markdown
from sw.config import load_config


def verilog(name):
    """The config's Verilog, from the cache the co-simulation builds share (generated once per source change)."""
    return cosim_verilog.verilog_text(name)


@pytest.mark.rtl
@pytest.mark.parametrize("name", ["default", "small", "batch2"])
def test_verilog_lints_clean(name):
    """Verilator's warnings on the Verilog (cosim.model.build.LINT_WAIVERS apart), from the co-simulation model's
    build (verilating it is the lint: linting it again would cost as much)."""
    model = build_model(name)
    assert model.lint() == []
    assert "-Wno-lint" not in (model.build_dir / "build.log").read_text().splitlines()[0]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["default", "small", "batch2"])
def test_ports_follow_axi_naming(name):
    cfg = load_config(name)
    header = re.search(r"module vta_top\((.*?)\);", verilog(name), re.S).group(1)
    ports = {p.strip() for p in header.split(",")}
    for ch in ("awvalid", "awready", "awaddr", "awlen", "awsize", "awburst", "wdata", "wstrb", "wlast", "bresp",
               "arvalid", "araddr", "arlen", "rdata", "rlast", "rready"):
        assert f"m_axi_{ch}" in ports
    for ch in ("awvalid", "awaddr", "wdata", "wstrb", "bresp", "arvalid", "araddr", "rdata", "rresp"):
        assert f"s_axi_{ch}" in ports
    assert {"clk", "rst", "irq", "activity", "busy"} <= ports
    assert re.search(rf"output \[{cfg.BUS_WIDTH - 1}:0\] m_axi_wdata;", verilog(name))


def test_register_docs_are_current():
    from pathlib import Path
    docs = Path(__file__).resolve().parent.parent.parent / "docs" / "registers.md"
    assert docs.read_text() == registers_markdown(load_config("default")), "run: python -m hw --docs"


@pytest.mark.slow
def test_cli_writes_verilog(tmp_path, monkeypatch):
    """``python -m hw`` writes top_verilog's text (the run's cached copy here: elaborating again costs ~10 s)."""
    import hw.__main__ as cli
    monkeypatch.setattr(cli, "top_verilog", lambda cfg: verilog(cfg.name))
    out = tmp_path / "v.v"
    assert cli.main(["--config", "configs/small.json", "-o", str(out)]) == 0
    assert out.read_text().endswith(verilog("small")) and "module vta_top" in out.read_text()
    main = cli.main
    assert main(["--config", str(tmp_path / "missing.json"), "-o", str(out)]) == 2


@pytest.mark.parametrize("shape, init", [(8, [0, 1, 255, 0x5A]), (signed(5), [-1, 3, -16]), (12, [])])
def test_constant_meminit_writes_the_same_rtlil(shape, init):
    """top_verilog's fast writer of SRAM contents (hw.top.constant_meminit) gives Amaranth's own RTLIL."""
    from amaranth.back import rtlil
    from amaranth.hdl import Module
    from amaranth.lib.memory import Memory

    from hw.top import constant_meminit

    def design():
        m = Module()
        m.submodules.mem = mem = Memory(shape=shape, depth=4, init=init)
        rd = mem.read_port()
        return m, [rd.addr, rd.data]
    m, ports = design()
    expected = rtlil.convert(m, ports=ports)
    with constant_meminit():
        m, ports = design()
        got = rtlil.convert(m, ports=ports)
    assert got == expected and "$meminit_v2" in got


def test_docs_of_another_config_go_to_build():
    from hw.__main__ import docs_path
    root = Path(__file__).resolve().parents[2]
    assert docs_path(load_config("configs/default.json")) == root / "docs" / "registers.md"
    assert docs_path(load_config("small")) == root / "build" / "docs" / "registers-small.md"
