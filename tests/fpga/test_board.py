"""The open FPGA flow without running it: the ULX3S board design in simulation (AXI RAM, launcher,
built-in program, checker), the PLL settings, and the report code of hw/fpga.py and hw/resources.py on
recorded tool output. No synthesis or place and route here: a yosys run of even the smallest config
takes minutes on this machine (`make fpga-report` and `make bitstream` do that)."""
import pytest
from amaranth.sim import Simulator

from cosim.model.verilog import verilog_text
from fpga import board as fpga
from fpga.board import BoardSoC, UlX3STop, parse_nextpnr_report, pll_params, report_markdown
from fpga.board import test_program as program_image
from fpga.resources import DEVICES, FAMILIES, fits, parse_cells, parse_stat, report_table
from sw.cli import UsageError
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


def test_design_hash_tracks_verilog_and_script():
    from fpga.resources import design_hash
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


def ulx3s_hard_blocks():
    """The MULT18X18D and DP16KD cells yosys makes of configs/ulx3s.json (names as in its netlist)."""
    cells = {f"soc.vta.compute.gemm.prod_0_{o}_{i}_dsp": "MULT18X18D" for o in range(8) for i in range(8)}
    cells.update({f"soc.vta.compute.footprint.span_{n}_dsp": "MULT18X18D" for n in ("d0", "d1", "s0", "s1")})
    cells.update({f"soc.vta.wgt_mem.0.{j}": "DP16KD" for j in range(15)})
    for b in range(2):
        cells.update({f"soc.vta.compute.acc_bank{b}.0.{j}": "DP16KD" for j in range(8)})
        cells.update({f"soc.vta.compute.out_bank{b}.0.{j}": "DP16KD" for j in range(2)})
    cells.update({f"soc.vta.inp_mem.0.{j}": "DP16KD" for j in range(2)})
    cells.update({f"soc.vta.compute.uop_mem.{k}.0": "DP16KD" for k in range(3)})
    cells.update({f"soc.vta.fetch.load_queue.storage.0.{j}": "DP16KD" for j in range(4)})
    cells.update({f"soc.ram.mem.{k}.0": "DP16KD" for k in range(2)})
    cells["soc.vta.compute.gemm.sum_TRELLIS_FF_Q"] = "TRELLIS_FF"
    return cells


def bel_xy(bel):
    x, y, _ = bel.split("/")
    return int(x[1:]), int(y[1:])


def test_floorplan_slices_the_datapath_by_lane():
    blocks = ulx3s_hard_blocks()
    plan = fpga.floorplan(blocks)
    dsp = {b for y in fpga.ECP5_85_DSP_ROWS for b in fpga.ecp5_85_row("dsp", y)}
    ebr = {b for y in fpga.ECP5_85_EBR_ROWS for b in fpga.ecp5_85_row("ebr", y)}
    assert len(dsp) == 156 and len(ebr) == 208         # the LFE5U-85F's MULT18 and EBR counts
    assert len(set(plan.values())) == len(plan) == 64 + 15 + 16 + 4 + 2 + 3
    assert not any(n.startswith(("soc.vta.compute.footprint", "soc.vta.fetch", "soc.ram")) for n in plan)
    xs = {}
    for o in range(8):
        sites = [plan[f"soc.vta.compute.gemm.prod_0_{o}_{i}_dsp"] for i in range(8)]
        assert set(sites) <= dsp and {bel_xy(s)[1] for s in sites} == {(34, 58)[o % 2]}
        xs[o] = sorted(bel_xy(s)[0] for s in sites)
    for s in range(4):                                  # a lane pair shares its columns, left to right
        assert xs[2 * s] == xs[2 * s + 1]
        assert s == 0 or xs[2 * s][0] > xs[2 * s - 1][-1]
    for name, bel in plan.items():
        if blocks[name] == "DP16KD":
            assert bel in ebr and bel_xy(bel)[1] == 46
    for mem, n in (("soc.vta.wgt_mem.0", 15), ("soc.vta.compute.acc_bank0.0", 8), ("soc.vta.compute.acc_bank1.0", 8)):
        x = [bel_xy(plan[f"{mem}.{j}"])[0] for j in range(n)]
        assert x == sorted(x), mem                      # slices follow the lanes
        assert xs[0][0] - 20 <= x[0] and x[-1] <= xs[6][-1] + 20, mem
    shared = [bel_xy(plan[n])[0] for n in plan if "inp_mem" in n or "uop_mem" in n]
    assert xs[2][0] <= min(shared) and max(shared) <= xs[5][-1]     # in the middle


def test_floorplan_gives_up_when_the_array_does_not_fit():
    big = {f"soc.vta.compute.gemm.prod_0_{o}_{i}_dsp": "MULT18X18D" for o in range(16) for i in range(16)}
    assert fpga.floorplan(big) == {}
    assert fpga.floorplan({"soc.vta.inp_mem.0.0": "DP16KD"}) == {}


def test_run_plan_pins_between_yosys_and_nextpnr(tmp_path, monkeypatch):
    """run_plan runs the build script's yosys step, writes the floorplan into its netlist, then the
    nextpnr step sees the BEL attributes (the tools are stand-ins here)."""
    import json
    cells = {n: {"type": t, "attributes": {}} for n, t in ulx3s_hard_blocks().items()}
    (tmp_path / "netlist.json").write_text(json.dumps({"modules": {"top": {"cells": cells}}}))
    (tmp_path / "yosys.sh").write_text("#!/bin/sh\ncp netlist.json top.json\n")
    (tmp_path / "nextpnr.sh").write_text("#!/bin/sh\ncp top.json seen_by_nextpnr.json\n")
    for f in ("yosys.sh", "nextpnr.sh"):
        (tmp_path / f).chmod(0o755)
    (tmp_path / "build_top.sh").write_text(
        "#!/bin/sh\nset -e\n: ${YOSYS:=yosys}\n: ${NEXTPNR_ECP5:=nextpnr-ecp5}\n"
        '"$YOSYS" -q -l top.rpt top.ys\n"$NEXTPNR_ECP5" --json top.json\n')
    monkeypatch.setenv("YOSYS", str(tmp_path / "yosys.sh"))
    monkeypatch.setenv("NEXTPNR_ECP5", str(tmp_path / "nextpnr.sh"))
    assert fpga.run_plan(tmp_path) == 104
    seen = json.loads((tmp_path / "seen_by_nextpnr.json").read_text())["modules"]["top"]["cells"]
    assert seen["soc.vta.compute.gemm.prod_0_0_0_dsp"]["attributes"]["BEL"] == fpga.floorplan(ulx3s_hard_blocks())[
        "soc.vta.compute.gemm.prod_0_0_0_dsp"]
    assert "BEL" not in seen["soc.ram.mem.0.0"]["attributes"]
    (tmp_path / "netlist.json").write_text(json.dumps({"modules": {"top": {"cells": cells}}}))
    assert fpga.run_plan(tmp_path, pin=False) == 0
    seen = json.loads((tmp_path / "seen_by_nextpnr.json").read_text())["modules"]["top"]["cells"]
    assert not any("BEL" in c["attributes"] for c in seen.values())


def test_nextpnr_options():
    """The board build routes with the timing-driven rip-up unless told not to, and always asks for
    the report with every endpoint's arrival (fpga.timing --routed)."""
    assert fpga.nextpnr_options() == ("--seed 1 --router router2 --tmg-ripup --timing-allow-fail "
                                      "--report top_report.json --detailed-timing-report")
    opts = fpga.nextpnr_options(seed=3, router="router1", ripup=False, extra="--placer-heap-timingweight 30")
    assert opts.split() == ["--seed", "3", "--router", "router1", "--timing-allow-fail", "--report", "top_report.json",
                            "--detailed-timing-report", "--placer-heap-timingweight", "30"]


def test_timing_target_above_the_pll():
    """``--timing``: nextpnr closes timing for a clock above the PLL's (a margin); the report judges the
    Fmax against both, and a target below the PLL's frequency is refused before anything is built."""
    top = UlX3STop("configs/ulx3s.json", 95, timing_mhz=100)
    assert (top.pll["freq_mhz"], top.timing_mhz) == (95.0, 100.0)
    assert UlX3STop("configs/ulx3s.json", 95).timing_mhz == 95.0
    with pytest.raises(UsageError, match=r"timing target 90 MHz is below the PLL's 95 MHz; allowed: >= the PLL"):
        UlX3STop("configs/ulx3s.json", 95, timing_mhz=90)
    rep = parse_nextpnr_report(NEXTPNR_LOG.replace("104.25 MHz (PASS", "99.50 MHz (FAIL"))
    assert "**99.5 MHz** (target 100 MHz, FAIL; the PLL's 95 MHz: PASS)" in report_markdown({**rep, "pll_mhz": 95.0})
    assert "**99.5 MHz** (target 100 MHz, FAIL)\n" in report_markdown({**rep, "pll_mhz": 100.0})
    rep["fmax"]["$glbnet$clk"]["fmax_mhz"] = 94.7
    assert "the PLL's 95 MHz: FAIL" in report_markdown({**rep, "pll_mhz": 95.0})


def test_timing_target_scales_the_oscillator_constraint(tmp_path):
    """nextpnr derives the PLL output's clock from the oscillator's constraint and the dividers: a
    timing target of 100 MHz for a 95 MHz PLL (25 / 5 x 19) constrains the oscillator to 25 x 100 / 95 MHz,
    and leaves the PLL's dividers as they are."""
    fpga.board_plan("ulx3s", "configs/ulx3s.json", 95, tmp_path, timing_mhz=100)
    lpf = (tmp_path / "top.lpf").read_text()
    assert 'FREQUENCY PORT "clk25_0__io" 26315789.5 HZ;' in lpf and "25000000.0 HZ" not in lpf
    assert "CLKFB_DIV 19" in (tmp_path / "top.il").read_text()
