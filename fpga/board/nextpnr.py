"""nextpnr-ecp5: the options of a board build, and its report (utilisation, Fmax per clock) as data and markdown."""

from __future__ import annotations

import re

__all__ = ["nextpnr_options", "parse_nextpnr_report", "report_markdown"]

_UTIL_RE = re.compile(r"^\s*Info:\s+([A-Z0-9_]+):\s+(\d+)/\s*(\d+)\s+(\d+)%", re.M)
_FMAX_RE = re.compile(r"Max frequency for clock\s+'([^']+)':\s+([\d.]+)\s+MHz\s+\((PASS|FAIL) at ([\d.]+) MHz\)")


def parse_nextpnr_report(log: str) -> dict:
    """Utilisation (last 'Device utilisation' block) and the final Fmax per clock from a nextpnr log."""
    start = log.rfind("Device utilisation")
    util = {}
    for name, used, avail, _pct in _UTIL_RE.findall(log[start:] if start >= 0 else log):
        util.setdefault(name, (int(used), int(avail)))
    fmax = {}
    for clock, mhz, verdict, target in _FMAX_RE.findall(log):
        fmax[clock] = {"fmax_mhz": float(mhz), "target_mhz": float(target), "pass": verdict == "PASS"}
    return {"utilisation": util, "fmax": fmax}


def report_markdown(rep: dict) -> str:
    """The report as markdown: the resources, and each clock's Fmax against nextpnr's target and, when
    the PLL runs below that target (``rep["pll_mhz"]``), against the PLL's frequency."""
    util = rep["utilisation"]
    rows = [("LUT4", "TRELLIS_COMB"), ("FF", "TRELLIS_FF"), ("MULT18", "MULT18X18D"), ("EBR (DP16KD)", "DP16KD"),
            ("LUTRAM (DPRAM)", "TRELLIS_RAMW"), ("PLL", "EHXPLLL")]
    out = ["| resource | used | available | % |", "|---|---:|---:|---:|"]
    for label, key in rows:
        if key in util:
            used, avail = util[key]
            out.append(f"| {label} | {used} | {avail} | {100 * used / avail:.0f} |")
    pll = rep.get("pll_mhz")
    for clock, f in rep["fmax"].items():
        verdict = f"target {f['target_mhz']:g} MHz, {'PASS' if f['pass'] else 'FAIL'}"
        if pll is not None and pll < f["target_mhz"]:
            verdict += f"; the PLL's {pll:g} MHz: {'PASS' if f['fmax_mhz'] >= pll else 'FAIL'}"
        out.append(f"\nFmax `{clock}`: **{f['fmax_mhz']:.1f} MHz** ({verdict})")
    return "\n".join(out) + "\n"


def nextpnr_options(seed: int = 1, router: str = "router2", ripup: bool = True, extra: str = "") -> str:
    """The nextpnr-ecp5 options of a board build besides the device and files: the seed, the router
    and its timing-driven rip-up (``ripup``), a report with every endpoint's arrival (``python -m
    fpga.timing --routed top_report.json``), then ``extra``."""
    opts = [f"--seed {seed}", f"--router {router}", "--tmg-ripup" if ripup else "", "--timing-allow-fail",
            "--report top_report.json --detailed-timing-report", extra]
    return " ".join(o for o in opts if o)
