"""Uncovered lines of the accelerator mapped back to the Amaranth source, and why a known one is unreachable.

:func:`uncovered_sources` keys each never-executed Verilog line by where it comes from (the Amaranth ``file:line``
of its ``src`` attribute, the condition an ``if`` tests, the case label and its subject); :func:`explain` finds the
waiver of :mod:`cosim.verify.line_waivers` for a key: the ``# unreachable: KEY`` annotation on the Amaranth line of
an ``if``'s condition, or a pattern over what the Verilog names.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from .coverage_dat import is_testbench, kind_module
from .line_waivers import ANNOTATED, KNOWN_UNREACHABLE
from .sources import ROOT, annotated_keys, source_code

__all__ = ["src_index", "with_source_text", "uncovered_sources", "explain"]

_SRC = re.compile(r'\(\*\s*src\s*=\s*"([^"]+)"')
_COND = re.compile(r"^\s*(?:end else )?if \((\\\S+ |[A-Za-z_][\w$]*)\)")
_LABEL = re.compile(r"^\s*(\d+'h[0-9a-f]+|default)\s*:")
_CASE = re.compile(r"^\s*casez? \((.+)\)\s*$")


def src_index(verilog: Path) -> list:
    """For each line of the Verilog, where it comes from: the Amaranth file:line of the condition an ``if``
    tests (the src of the ``assign`` that defines it in the same module), or of the nearest ``src``
    attribute at or above the line; a case label also names the value tested (``case compute_fsm_state =
    3'h3``: an FSM's state number, in the order the states are first named in the Amaranth source)."""
    text = verilog.read_text(errors="replace").splitlines()
    module_of: list[str] = []
    assigns: defaultdict[str, dict[str, str]] = defaultdict(dict)
    module = ""
    for line in text:
        if line.startswith("module "):
            module = line.split("(")[0].split()[1]
        module_of.append(module)
        m = re.match(r"\s*assign (\\\S+ |[A-Za-z_][\w$]*) ?= (.*)", line)
        src = _SRC.search(m[2]) if m else None
        if m and src:
            assigns[module][m[1].strip()] = src[1].split("|")[0]
    current = ""
    cases: list[tuple[int, str]] = []
    out: list[str | None] = []
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




def with_source_text(src: str) -> str:
    """``hw/alu.py:137 (if x)`` -> ``hw/alu.py:137 `with m.If(~ok):` (if x)``: the project's source line of a
    condition quoted, without its comment (other keys name only the nearest declaration, not worth quoting)."""
    m = re.match(r"(hw/[\w/]+\.py):(\d+)( \(if .*)", src)
    if m is None:
        return src
    line = source_code(m[1], int(m[2]))
    return f"{m[1]}:{m[2]} `{line}`{m[3]}" if line is not None else src


def uncovered_sources(points: Iterable, verilog: Path) -> dict[str, tuple[set[int], set[str]]]:
    """{Amaranth source line: (Verilog lines, modules)} of the line points never executed in the accelerator.

    Where the Verilog carries no ``src`` attribute (``hw.top.top_verilog`` leaves them out), the key is the
    Verilog line and its statement."""
    index = src_index(verilog)
    text = verilog.read_text(errors="replace").splitlines()
    out: defaultdict[str, tuple[set[int], set[str]]] = defaultdict(lambda: (set(), set()))
    for p in points:
        kind, module = kind_module(p)
        if kind != "line" or p["count"] or is_testbench(module) or not p.get("f", "").endswith("vta_top.v"):
            continue
        n = int(p.get("l", 0))
        src = index[n - 1] if 0 < n <= len(index) and index[n - 1] else \
            f"vta_top.v:{n} `{text[n - 1].strip() if 0 < n <= len(text) else ''}`"
        src = with_source_text(src)
        out[src][0].add(n)
        out[src][1].add(module)
    return dict(out)



_IF_SOURCE = re.compile(r"(\S+:\d+) (?:`.*` )?\(if [^)]*\)$")


def explain(src: str, modules: Iterable[str], waivers: list | None = None, annotated: dict | None = None,
            source_root: Path = ROOT) -> str | None:
    """The reason an uncovered line (its source key of :func:`uncovered_sources`, its modules) is unreachable,
    or None when it is not known to be.

    An ``if`` whose condition comes from a line annotated ``# unreachable: KEY`` (a key ``file:line ... (if c)``;
    the file read under ``source_root``, the project) takes the reason of ``KEY`` in ``annotated``
    (:data:`~cosim.verify.line_waivers.ANNOTATED` by default; an unknown key raises
    :class:`cosim.verify.sources.UnknownAnnotation`); any key may match a pattern of ``waivers``
    (:data:`~cosim.verify.line_waivers.KNOWN_UNREACHABLE` by default). A waiver's module pattern must match every
    module."""
    annotated = ANNOTATED if annotated is None else annotated
    m = _IF_SOURCE.match(src)
    keyed = [annotated[k] for k in annotated_keys(m[1], "unreachable", annotated, source_root)] if m else []
    for module_pattern, reason in keyed:
        if all(re.search(module_pattern, mod) for mod in modules):
            return reason
    for module_pattern, pattern, reason in KNOWN_UNREACHABLE if waivers is None else waivers:
        if all(re.search(module_pattern, mod) for mod in modules) and re.search(pattern, src):
            return reason
    return None
