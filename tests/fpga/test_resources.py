"""The resource report code of fpga.resources on recorded yosys output (a yosys run of even the smallest
config takes minutes: `make fpga-report` does that)."""
import pytest

from cosim.model.verilog import verilog_text
from fpga.resources import DEVICES, FAMILIES, design_hash, fits, parse_cells, parse_stat, report_table

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
    assert len(lines) == 2 + 3
    assert "| small | xc7z020 (Pynq-Z1) |" in lines[2] and "| yes |" in lines[2]
    assert "not measured" in lines[3]                     # no xcup result given
    assert "no (DSP)" in lines[4]


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
