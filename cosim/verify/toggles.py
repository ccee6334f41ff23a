"""Why a bit of the accelerator never toggled: the toggle half of ``make coverage``'s "every hole explained".

A toggle point is one direction of one bit of one signal. An untoggled bit is explained when its class of equal bits
(:func:`cosim.verify.verilog_bits.bit_classes`) is constant, or when some bit of its class has a reason of
:mod:`cosim.verify.toggle_rules` (a key annotated ``# untoggled: KEY`` on the Amaranth line its ``src`` attribute
names, or a rule by signal name), or when it is a bit of a sum, a multiplexer or a process whose inputs' bits are
explained. :func:`explain_toggles` does this for every untoggled point and returns what stays unexplained, so the
report can say "0 not explained" as it does for lines.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from .sources import ROOT, annotated_keys
from .toggle_rules import ANNOTATED, LIBRARY_LINES, TOGGLE_RULES
from .verilog_bits import bit_classes

__all__ = ["TIED", "explain_toggles"]


def _rule_bits(spec: str, bit: int, runs: tuple) -> bool:
    """Whether a rule's bits ``spec`` takes ``bit`` of a signal whose untoggled bits at its top start at
    ``runs[0]`` and at its bottom end below ``runs[1]``."""
    if spec == "all":
        return True
    if spec == "high":
        return bit >= runs[0]
    if spec == "low":
        return bit < runs[1]
    kind, k = spec.split()
    if kind == "bits":
        return bit in {int(b) for b in k.split(",")}
    return bit >= int(k) if kind == "from" else bit < int(k)


TIED = "tied to "


def _library_key(src: str) -> str:
    """``.venv/lib/python3.11/site-packages/amaranth/lib/fifo.py:118`` -> ``amaranth/lib/fifo.py:118``."""
    return src.rpartition("site-packages/")[2]


Point = tuple[str, str, int]       # (module, signal, bit)


def explain_toggles(untoggled: Iterable[Point], verilog: Path, rules: list | None = None,
                    annotated: dict | None = None, source_root: Path = ROOT) -> tuple[dict[str, list[Point]], list[Point]]:
    """Sort the untoggled points ``[(module, signal, bit)]`` by why: returns ``(explained, holes)`` where
    ``explained`` maps each reason to its points and ``holes`` lists the points with no reason.

    ``rules``: the rules by signal name (:data:`~cosim.verify.toggle_rules.TOGGLE_RULES` by default); ``annotated``:
    the reasons of ``# untoggled: KEY`` annotations (:data:`~cosim.verify.toggle_rules.ANNOTATED`), read from the
    source files under ``source_root`` (the project) that the ``src`` attributes name, or for a line of the Amaranth library
    from :data:`~cosim.verify.toggle_rules.LIBRARY_LINES`. The rules by name come first, then the signal's annotated
    keys in their order on the line. An annotation naming a key not in ``annotated`` raises
    :class:`cosim.verify.sources.UnknownAnnotation`."""
    rules = TOGGLE_RULES if rules is None else rules
    annotated = ANNOTATED if annotated is None else annotated
    find, members, derived, widths, srcs = bit_classes(verilog)
    compiled = [(re.compile(mp), re.compile(sp), spec, why) for mp, sp, spec, why in rules]
    by_key = {key: (re.compile(mp), spec, why) for key, (mp, spec, why) in annotated.items()}

    found: dict = {}

    def candidates(mod, sig):
        """The (module pattern, bits, why) that may explain a signal: the rules whose signal pattern matches its
        name, then its annotated keys."""
        if (mod, sig) not in found:
            src = srcs.get((mod, sig))
            keys = annotated_keys(src, "untoggled", annotated, source_root) or \
                LIBRARY_LINES.get(_library_key(src or ""), ())
            found[(mod, sig)] = [(mp, spec, why) for mp, sp, spec, why in compiled if sp.search(sig)] + \
                [by_key[k] for k in keys]
        return found[(mod, sig)]

    missing = defaultdict(set)
    for mod, sig, bit in untoggled:
        missing[(mod, sig)].add(bit)

    def runs(mod, sig):
        """Where the signal's run of untoggled bits that reaches its top starts (its width: none), and where the
        run from its bit 0 ends (0: none)."""
        width, gone = widths.get(mod, {}).get(sig, 0), missing[(mod, sig)]
        top, bottom = width, 0
        while top > 0 and top - 1 in gone:
            top -= 1
        while bottom < width and bottom in gone:
            bottom += 1
        return top, bottom

    def reason(root, depth=0):
        if root[0] == "c":
            return f"{TIED}{root[1]} in the Verilog (a constant, or a copy of one)"
        for mod, sig, bit in members.get(root, [root]):
            for mp, spec, why in candidates(mod, sig):
                if mp.search(mod) and _rule_bits(spec, bit, runs(mod, sig)):
                    return why
        if depth < 6:     # a bit of a sum, a difference, a multiplexer or a process: from the same bit of its inputs
            for mod, sig, bit in members.get(root, [root]):
                mode, operands = derived.get((mod, sig), (None, []))
                # (the carry out of a sum, one bit above its operands, follows their top bits; None: a bit that a
                # slice assignment does not write)
                ins = [op[min(bit, len(op) - 1)] for op in operands]
                whys = [reason(find(b), depth + 1) for b in ins if b is not None]
                tied = {w for w in whys if w and w.startswith(TIED)}
                free = [w for w in whys if not (w and w.startswith(TIED))]
                if mode == "any" and any(free):
                    # a sum's bit never toggled, and an operand's bit never can: the sum's follows it (a constant
                    # operand explains nothing: the other operand and the carries still move the bit)
                    return next(w for w in free if w)
                if mode == "all" and len(tied) <= 1 and all(free):
                    # every input of a multiplexer or every value a process assigns holds the bit at one value
                    return free[0] if free else tied.pop()
        return None

    cache, explained, holes = {}, defaultdict(list), []
    for point in untoggled:
        root = find(point)
        if root not in cache:
            cache[root] = reason(root)
        if cache[root]:
            explained[cache[root]].append(point)
        else:
            holes.append(point)
    return dict(explained), holes
