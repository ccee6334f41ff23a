"""The board build flow (fpga.board.build) without the tools: the floorplan step between yosys and nextpnr
(stand-in tools), and the build plan's timing constraint."""
import json

import pytest

from fpga.board.build import board_plan, run_plan
from fpga.board.floorplan import floorplan
from sw.cli import UsageError
from tests.fpga.board.hard_blocks import ulx3s_hard_blocks


def test_run_plan_pins_between_yosys_and_nextpnr(tmp_path, monkeypatch):
    """run_plan runs the build script's yosys step, writes the floorplan into its netlist, then the
    nextpnr step sees the BEL attributes (the tools are stand-ins here)."""
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
    assert run_plan(tmp_path) == 104
    seen = json.loads((tmp_path / "seen_by_nextpnr.json").read_text())["modules"]["top"]["cells"]
    assert seen["soc.vta.compute.gemm.prod_0_0_0_dsp"]["attributes"]["BEL"] == floorplan(ulx3s_hard_blocks())[
        "soc.vta.compute.gemm.prod_0_0_0_dsp"]
    assert "BEL" not in seen["soc.ram.mem.0.0"]["attributes"]
    (tmp_path / "netlist.json").write_text(json.dumps({"modules": {"top": {"cells": cells}}}))
    assert run_plan(tmp_path, pin=False) == 0
    seen = json.loads((tmp_path / "seen_by_nextpnr.json").read_text())["modules"]["top"]["cells"]
    assert not any("BEL" in c["attributes"] for c in seen.values())


def test_timing_target_scales_the_oscillator_constraint(tmp_path):
    """nextpnr derives the PLL output's clock from the oscillator's constraint and the dividers: a
    timing target of 100 MHz for a 95 MHz PLL (25 / 5 x 19) constrains the oscillator to 25 x 100 / 95 MHz,
    and leaves the PLL's dividers as they are."""
    _, top = board_plan("ulx3s", "configs/ulx3s.json", 95, tmp_path, timing_mhz=100)
    assert (top.pll["freq_mhz"], top.timing_mhz) == (95.0, 100.0)
    lpf = (tmp_path / "top.lpf").read_text()
    assert 'FREQUENCY PORT "clk25_0__io" 26315789.5 HZ;' in lpf and "25000000.0 HZ" not in lpf
    assert "CLKFB_DIV 19" in (tmp_path / "top.il").read_text()


def test_timing_target_below_the_pll_is_refused_before_anything_is_built(tmp_path):
    out = tmp_path / "out"
    with pytest.raises(UsageError, match=r"^timing target 90 MHz is below the PLL's 95 MHz"):
        board_plan("ulx3s", "configs/ulx3s.json", 95, out, timing_mhz=90)
    assert not out.exists()
