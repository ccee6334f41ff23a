"""The resource report code of fpga.resources on recorded yosys output (a yosys run of even the smallest
config takes minutes: `make fpga-report` does that)."""
import pytest

from cosim.model.verilog import verilog_text
from fpga.resources import DEVICES, FAMILIES, design_hash, device, fits, parse_cells, parse_stat, report_table
from sw.cli import UsageError

# recorded `stat` output of yosys 0.70 (newer layout), trimmed
XC7_STAT = """
        +----------Count including submodules.
        |
    18539 cells
     1163   CARRY4
       67   DSP48E1
     5885   FDRE
       24   LUT1
     3407   LUT2
     1487   LUT6
       25   RAM32M
       10   RAM64X1D
       15   RAMB18E1
       14   RAMB36E1
"""
ECP5_STAT = """
        +----------Count including submodules.
        |
    60000 cells
     2000   CCU2C
      134   MULT18X18D
       84   DP16KD
    29000   LUT4
      100   TRELLIS_DPR16X4
    15500   TRELLIS_FF
"""


def test_report_table_and_fits():
    xc7 = parse_stat(XC7_STAT, FAMILIES["xc7"][1])
    xc7["cells"] = parse_cells(XC7_STAT)
    assert xc7["cells"]["RAM32M"] == 25 and xc7["DSP"] == 67
    ecp5 = parse_stat(ECP5_STAT, FAMILIES["ecp5"][1])
    ok, use = fits(xc7, DEVICES[0])
    assert ok and use["BRAM"] == pytest.approx((14 + 7.5) / 140)
    assert use["LUT"] == pytest.approx((24 + 3407 + 1487 + 25 * 4 + 10 * 2) / 53200)
    big = dict(ecp5, DSP=300)
    ok, use = fits(big, DEVICES[2])
    assert not ok and use["DSP"] > 1
    table = report_table({("small", "xc7"): xc7, ("small", "ecp5"): big}, ["small"])
    lines = table.splitlines()
    assert len(lines) == 2 + 4
    assert "| small | xc7z020 (Pynq-Z1/Z2) |" in lines[2] and "| yes |" in lines[2]
    assert "not measured" in lines[3] and "not measured" in lines[5]       # no xcup result given
    assert "no (DSP)" in lines[4]


def test_devices_boards_and_ultraram():
    assert [d.boards for d in DEVICES] == [("pynq-z1", "pynq-z2"), ("ultra96",), ("ulx3s",), ("zcu104",)]
    assert device("Pynq-Z2") is DEVICES[0] and device("zcu104").URAM == 96
    with pytest.raises(UsageError, match="unknown board 'de10'; the boards: pynq-z1, pynq-z2, ultra96, ulx3s, zcu104"):
        device("de10")
    xcup = {"LUT": 1000, "FF": 1000, "DSP": 10, "BRAM36": 300, "BRAM18": 0, "URAM": 20, "cells": {}}
    assert fits(xcup, device("zcu104")) == (True, pytest.approx({"LUT": 1000 / 230400, "FF": 1000 / 460800,
                                                                  "DSP": 10 / 1728, "BRAM": 300 / 312, "URAM": 20 / 96}))
    ok, use = fits(xcup, device("ultra96"))                # no UltraRAM on the ZU3EG, and 300 BRAM36 > 216
    assert not ok and use["URAM"] == float("inf") and use["BRAM"] > 1
    assert "URAM" not in fits(dict(xcup, URAM=0), device("ultra96"))[1]


def test_design_hash_tracks_verilog_and_script():
    v = "module vta_top(input clk);\nendmodule\n"
    assert design_hash(v, "synth_ecp5") == design_hash(v, "synth_ecp5")
    assert design_hash(v, "synth_ecp5") != design_hash(v, "synth_xilinx")
    assert design_hash(v, "synth_ecp5") != design_hash(v.replace("clk", "clock"), "synth_ecp5")
    # the two parts are hashed apart: moving text from one to the other changes the key
    assert design_hash(v + "x", "synth_ecp5") != design_hash(v, "xsynth_ecp5")


def test_synthesis_cache_hit_skips_yosys(tmp_path, monkeypatch):
    """synthesize_cached keys the result by the generated Verilog: a second call reads the cache and
    does not run yosys."""
    import fpga.resources as res
    calls = []
    def fake(config, family, workdir, verilog=None):
        calls.append((family, len(verilog)))
        return {"LUT": 7, "seconds": 0.0}
    monkeypatch.setattr(res, "synthesize", fake)
    v = verilog_text("small")                 # the run's cached Verilog (elaborating it again costs ~15 s)
    first = res.synthesize_cached("configs/small.json", "ecp5", tmp_path, v)
    second = res.synthesize_cached("configs/small.json", "ecp5", tmp_path, v)
    assert first == {"LUT": 7, "seconds": 0.0, "cached": False}
    assert second == {"LUT": 7, "seconds": 0.0, "cached": True}
    assert len(calls) == 1 and calls[0][1] > 10000
    assert len(list((tmp_path / "cache").glob("small-ecp5-*.json"))) == 1


# a flattened synth_ecp5 run followed by `stat`: synth prints its own statistics first; only the
# last "Printing statistics" pass counts (counting both doubled every number before)
SYNTH_THEN_STAT = """
2.51. Printing statistics.

=== vta_top ===
        +----------Count including submodules.
        |
      134 cells
       40   DP16KD
       67   MULT18X18D
    15145   LUT4
     8977   TRELLIS_FF

3. Printing statistics.

=== vta_top ===

        +----------Local Count, excluding submodules.
        |
    30961 cells
       40   DP16KD
       67   MULT18X18D
    15145   LUT4
     8977   TRELLIS_FF
"""


def test_parse_stat_counts_last_stat_only():
    out = parse_stat(SYNTH_THEN_STAT, FAMILIES["ecp5"][1])
    assert (out["LUT"], out["FF"], out["DSP"], out["BRAM"]) == (15145, 8977, 67, 40)
    assert parse_cells(SYNTH_THEN_STAT)["MULT18X18D"] == 67


def test_estimate_gives_each_family_s_counts_and_verdicts(tmp_path, monkeypatch, capsys):
    """What ``--json`` prints (apps.dse reads it): per family the counts, the LUTs and block RAMs the limits count
    and each device's verdict; the second call comes from the cache."""
    import json

    import fpga.resources as res

    def fake(config, family, workdir, verilog=None):
        return {"xc7": {"LUT": 60000, "FF": 10, "DSP": 8, "BRAM36": 3, "BRAM18": 2, "LUTRAM": 0, "cells": {}},
                "xcup": {"LUT": 60000, "FF": 10, "DSP": 8, "BRAM36": 3, "BRAM18": 2, "LUTRAM": 0, "URAM": 1,
                         "cells": {}}}[family] | {"seconds": 1.0}
    monkeypatch.setattr(res, "synthesize", fake)
    monkeypatch.setattr(res, "unit_verilog", lambda cfg, unit: f"module vta_top; // {unit}\nendmodule\n")
    out = res.estimate("small", ["xc7", "xcup"], unit="footprint", workdir=tmp_path)
    assert out["config"] == "small" and out["unit"] == "footprint"
    xc7, xcup = out["families"]["xc7"], out["families"]["xcup"]
    assert (xc7["LUT"], xc7["BRAM"], xc7["cached"], xc7["counts"]["DSP"]) == (60000, 4.0, False, 8)
    assert xc7["devices"] == {"xc7z020 (Pynq-Z1/Z2)": {"boards": ["pynq-z1", "pynq-z2"], "fits": False, "use": {
        "LUT": 60000 / 53200, "FF": 10 / 106400, "DSP": 8 / 220, "BRAM": 4 / 140}}}
    assert list(xcup["devices"]) == ["xczu3eg (Ultra96)", "xczu7ev (ZCU104)"]
    assert xcup["devices"]["xczu7ev (ZCU104)"]["fits"] and not xcup["devices"]["xczu3eg (Ultra96)"]["fits"]
    assert res.estimate("small", ["xc7"], unit="footprint", workdir=tmp_path)["families"]["xc7"]["cached"] is True
    assert len(list((tmp_path / "footprint" / "cache").glob("small-xc7-*.json"))) == 1
    with pytest.raises(UsageError, match="unknown family 'ice40'"):
        res.estimate("small", ["ice40"], unit="footprint", workdir=tmp_path)
    assert res.main(["--devices"]) == 0
    assert [d["boards"] for d in json.loads(capsys.readouterr().out)][3] == ["zcu104"]


def test_estimate_of_a_given_verilog_does_not_elaborate(tmp_path, monkeypatch):
    import fpga.resources as res

    seen = []
    monkeypatch.setattr(res, "synthesize", lambda config, family, workdir, verilog=None: seen.append(verilog) or
                        {"LUT": 1, "FF": 1, "DSP": 0, "BRAM": 0, "LUTRAM": 0, "CARRY": 0, "seconds": 0.1})
    monkeypatch.setattr(res, "top_verilog", lambda cfg: pytest.fail("elaborated although the Verilog was given"))
    out = res.estimate("small", ["ecp5"], workdir=tmp_path, verilog="module vta_top; endmodule\n")
    assert seen == ["module vta_top; endmodule\n"] and out["families"]["ecp5"]["LUT"] == 1
    with pytest.raises(UsageError, match="either a unit or the config's Verilog"):
        res.estimate("small", ["ecp5"], unit="alu", workdir=tmp_path, verilog="module vta_top; endmodule\n")
