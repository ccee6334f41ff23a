"""The report of ``make coverage``: line and toggle coverage per module, the uncovered lines and untoggled points
of the accelerator, each explained (:mod:`cosim.verify.uncovered`, :mod:`cosim.verify.toggles`) or listed as a hole.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from .coverage_dat import SHAPES, is_testbench, module_table, toggle_shape, untoggled_points, untoggled_signals
from .toggles import explain_toggles
from .uncovered import explain, uncovered_sources

__all__ = ["report", "TOP_UNTOGGLED"]

TOP_UNTOGGLED = 40      # signals listed in the report


def _ranges(bits) -> str:
    out, start = [], None
    for i, b in enumerate(bits):
        if start is None:
            start = b
        if i + 1 == len(bits) or bits[i + 1] != b + 1:
            out.append(f"{start}" if start == b else f"{start}-{b}")
            start = None
    return ",".join(out)



def _pct(c, t):
    return f"{100.0 * c / t:6.2f} %" if t else "     - "


def report(points: list[dict], verilog: Path) -> str:
    table = module_table(points)
    lines = ["| module | line | lines covered | toggle | toggles covered |", "|---|---:|---:|---:|---:|"]
    acc = {"line": [0, 0], "toggle": [0, 0]}
    for module in sorted(table):
        row = table[module]
        lines.append(f"| {module} | {_pct(*row['line'])} | {row['line'][0]}/{row['line'][1]} | "
                     f"{_pct(*row['toggle'])} | {row['toggle'][0]}/{row['toggle'][1]} |")
        if not is_testbench(module):
            for k in acc:
                acc[k][0] += row[k][0]
                acc[k][1] += row[k][1]
    lines.append(f"| **accelerator (all but the testbench)** | {_pct(*acc['line'])} | {acc['line'][0]}/{acc['line'][1]} "
                 f"| {_pct(*acc['toggle'])} | {acc['toggle'][0]}/{acc['toggle'][1]} |")
    holes: list[str] = []
    explained: list[str] = []
    for src, (vlines, modules) in sorted(uncovered_sources(points, verilog).items()):
        why = explain(src, modules)
        entry = f"  {src}: vta_top.v lines {sorted(vlines)} in {sorted(modules)}"
        (explained if why else holes).append(entry + (f"\n      why: {why}" if why else ""))
    lines += ["", f"Uncovered lines of the accelerator, by Amaranth source (Verilog lines, modules): "
              f"{len(holes)} not explained" + (":" if holes else "")] + holes
    lines += ["", f"Uncovered lines explained (unreachable, or covered by a module test): {len(explained)}"
              + (":" if explained else "")] + explained
    signals = untoggled_signals(points)
    if signals:
        shapes: defaultdict[str, list[int]] = defaultdict(lambda: [0, 0])
        for row in signals:
            shapes[toggle_shape(row)][0] += 1
            shapes[toggle_shape(row)][1] += row[2]
        lines += ["", "Untoggled points by shape (signals, points):"]
        lines += [f"  {shape}: {shapes[shape][0]} signals, {shapes[shape][1]} points; {why}"
                  for shape, why in SHAPES.items() if shape in shapes]
        lines += ["", f"Signals with bits never toggled: {len(signals)}, {sum(r[2] for r in signals)} toggle points; "
                  f"the {min(TOP_UNTOGGLED, len(signals))} with most (module, signal: untoggled/all points, bits):"]
        lines += [f"  {m}, {sig}: {n}/{t}, bits {_ranges(bits)}" for m, sig, n, t, bits in signals[:TOP_UNTOGGLED]]
        why_toggles, toggle_holes = explain_toggles(untoggled_points(points), verilog)
        lines += ["", f"Untoggled points of the accelerator, by Amaranth-level reason (cosim/verify/toggles.py): "
                  f"{len(toggle_holes)} not explained" + (":" if toggle_holes else "")]
        by_signal: defaultdict[tuple[str, str], set[int]] = defaultdict(set)
        for mod, sig, bit in toggle_holes:
            by_signal[(mod, sig)].add(bit)
        lines += [f"  {mod}, {sig}: bits {_ranges(sorted(bits))}" for (mod, sig), bits in sorted(by_signal.items())]
        lines += ["", f"Untoggled points explained: {sum(len(v) for v in why_toggles.values())}:"]
        lines += [f"  {len(pts)} points: {why}" for why, pts in sorted(why_toggles.items(), key=lambda kv: -len(kv[1]))]
    return "\n".join(lines)
