"""Why a bit of the accelerator never toggled: the toggle half of ``make coverage``'s "every hole explained".

A toggle point is one direction of one bit of one signal. An untoggled bit is explained when its class of equal bits
(:func:`cosim.verify.verilog_bits.bit_classes`) is constant, or when some bit of its class matches a rule of
:data:`cosim.verify.toggle_rules.TOGGLE_RULES` (module, signal, which bits, why), or when it is a bit of a sum, a
multiplexer or a process whose inputs' bits are explained. :func:`explain_toggles` does this for every untoggled
point and returns what stays unexplained, so the report can say "0 not explained" as it does for lines.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

from .sources import source_line
from .toggle_rules import TOGGLE_RULES
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


def explain_toggles(untoggled, verilog: Path, rules=None):
    """Sort the untoggled points ``[(module, signal, bit)]`` by why: returns ``(explained, holes)`` where
    ``explained`` maps each reason to its points and ``holes`` lists the points with no reason."""
    rules = TOGGLE_RULES if rules is None else rules
    find, members, derived, widths, srcs = bit_classes(verilog)
    compiled = [(re.compile(mp), re.compile(sp), spec, why) for mp, sp, spec, why in rules]

    def source_text(mod, sig):
        """``src:<file:line> <the Amaranth line>`` of a signal (what ``src:`` patterns of a rule match)."""
        src = srcs.get((mod, sig))
        if not src:
            return ""
        path, _, line = src.rpartition(":")
        return f"src:{src} {source_line(path, int(line)) or ''}" if line.isdigit() else f"src:{src}"

    def matches(sp, mod, sig):
        return sp.search(source_text(mod, sig)) if sp.pattern.lstrip("^").startswith("src:") else sp.search(sig)
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
            for mp, sp, spec, why in compiled:
                if mp.search(mod) and matches(sp, mod, sig) and _rule_bits(spec, bit, runs(mod, sig)):
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
