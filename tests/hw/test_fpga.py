"""The open FPGA flow without running it: the ULX3S board design in simulation (AXI RAM, launcher,
built-in program, checker), the PLL settings, and the report code of hw/fpga.py and hw/resources.py on
recorded tool output. No synthesis or place and route here: a yosys run of even the smallest config
takes minutes on this machine (`make fpga-report` and `make bitstream` do that)."""
import pytest
from amaranth.sim import Simulator

from hw import fpga
from hw.fpga import BoardSoC, parse_nextpnr_report, pll_params, report_markdown, test_program as program_image
from hw.resources import DEVICES, FAMILIES, fits, parse_cells, parse_stat, report_table, write_markdown
from sw.config import load_config

ULX3S = load_config("configs/ulx3s.json")


def run_board(cfg, cycles=3000):
    soc = BoardSoC(cfg, heartbeat_bit=4)
    sim = Simulator(soc)
    sim.add_clock(1e-8)
    out = {}

    async def bench(ctx):
        for i in range(cycles):
            await ctx.tick()
            if ctx.get(soc.leds) & 1:
                await ctx.tick().repeat(8)
                out["leds"], out["cycles"] = ctx.get(soc.leds), i
                return
        out["leds"] = ctx.get(soc.leds)
    sim.add_testbench(bench)
    sim.run()
    return out


def test_board_runs_builtin_program():
    out = run_board(ULX3S)
    assert "cycles" in out, f"no finish: leds {out['leds']:#010b}"
    leds = out["leds"]
    assert leds & 0b1111 == 0b1011, f"finish, correct, no error, launched expected: {leds:#010b}"


def test_board_checker_detects_wrong_result(monkeypatch):
    image, count, out_at, expected = program_image(ULX3S)
    wrong = bytes([expected[0] ^ 1]) + expected[1:]
    monkeypatch.setattr(fpga, "test_program", lambda cfg, ram_bytes=4096: (image, count, out_at, wrong))
    leds = run_board(ULX3S)["leds"]
    assert leds & 0b1 and not leds & 0b10, f"{leds:#010b}"


def test_program_layout():
    image, count, out_at, expected = program_image(ULX3S)
    assert len(image) == 4096 and count == 7 and len(expected) == ULX3S.BATCH * ULX3S.BLOCK_OUT
    assert not any(image[out_at:out_at + len(expected)])        # the OUT row is written by the run


@pytest.mark.parametrize("mhz", [100, 75, 125, 50])
def test_pll_params(mhz):
    p = pll_params(mhz)
    assert abs(p["freq_mhz"] - mhz) < 1e-6 and 400 <= p["vco_mhz"] <= 800
    assert 25 / p["CLKI_DIV"] * p["CLKFB_DIV"] == pytest.approx(mhz)


NEXTPNR_LOG = """
Info: Device utilisation:
Info:             TRELLIS_IO:    11/  365     3%
Info:                   DCCA:     2/   56     3%
Info:                 DP16KD:    40/  208    19%
Info:             MULT18X18D:    64/  156    41%
Info:                EHXPLLL:     1/    4    25%
Info:             TRELLIS_FF:  9000/83640    10%
Info:           TRELLIS_COMB: 15000/83640    17%
Info:           TRELLIS_RAMW:    10/10455     0%
Info: Max frequency for clock '$glbnet$clk': 91.40 MHz (FAIL at 100.00 MHz)
Info: Device utilisation:
Info:             TRELLIS_IO:    11/  365     3%
Info:                 DP16KD:    40/  208    19%
Info:             MULT18X18D:    64/  156    41%
Info:                EHXPLLL:     1/    4    25%
Info:             TRELLIS_FF:  9100/83640    10%
Info:           TRELLIS_COMB: 15500/83640    18%
Info: Max frequency for clock '$glbnet$clk': 104.25 MHz (PASS at 100.00 MHz)
"""


def test_parse_nextpnr_report():
    rep = parse_nextpnr_report(NEXTPNR_LOG)
    assert rep["utilisation"]["TRELLIS_COMB"] == (15500, 83640)
    assert rep["utilisation"]["MULT18X18D"] == (64, 156)
    assert rep["fmax"]["$glbnet$clk"] == {"fmax_mhz": 104.25, "target_mhz": 100.0, "pass": True}
    text = report_markdown(rep)
    assert "| MULT18 | 64 | 156 | 41 |" in text and "104.2 MHz" in text


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


def test_write_markdown_between_markers(tmp_path):
    doc = tmp_path / "fpga.md"
    doc.write_text("# title\n\n<!-- fpga-report -->\nold\n<!-- /fpga-report -->\n\ntail\n")
    write_markdown(doc, "| new |\n")
    assert doc.read_text() == "# title\n\n<!-- fpga-report -->\n| new |\n<!-- /fpga-report -->\n\ntail\n"
    write_markdown(doc, "| newer |\n")
    assert "| newer |" in doc.read_text() and "| new |\n" not in doc.read_text()


def test_sources_hash_tracks_design_only():
    from hw.resources import design_sources, sources_hash
    names = {p.name for p in design_sources()}
    assert "gemm.py" in names and "top.py" in names and "config.py" in names
    assert not names & {"fpga.py", "shell.py", "resources.py"}
    assert sources_hash("cfg", "synth_ecp5") == sources_hash("cfg", "synth_ecp5")
    assert sources_hash("cfg", "synth_ecp5") != sources_hash("cfg", "synth_xilinx")


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
