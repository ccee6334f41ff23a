"""Classes of equal bits read from the generated Verilog (the toggle half of ``make coverage``'s explanations).

Many untoggled bits are the same net under several names (an Amaranth expression ``$34 = {7'h00, load_insn_elems,
8'h00}``, a port and the signal connected to it) or are tied to a constant by the Verilog itself. :func:`bit_classes`
puts every bit into a class of bits that always hold the same value (continuous assignments of names, slices,
constants and concatenations; instance port connections), with the class's constant when it has one, and records
the sums, multiplexers and processes whose bits follow their inputs' bits.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

__all__ = ["bit_classes"]

_ID = r"(?:\\\S+ |[A-Za-z_][\w$]*)"
_DECL = re.compile(rf"^\s*(?:wire|reg|input|output|inout)\s+(?:signed\s+)?(?:\[(\d+):(\d+)\]\s*)?({_ID})")
_MODULE = re.compile(rf"^module ({_ID})")
_ASSIGN = re.compile(rf"^\s*assign ({_ID})\s*(?:\[(\d+)(?::(\d+))?\])?\s*= (.*);\s*$")
_INSTANCE = re.compile(rf"^\s*({_ID})\s+({_ID})\s*\($")
_PORT = re.compile(rf"^\s*\.({_ID})\s*\((.*)\),?\s*$")
_TERM = re.compile(rf"\s*(?:(\d+)'([hbd])([0-9a-fA-FxzXZ_]+)|({_ID})\s*(?:\[(\d+)(?::(\d+))?\])?)\s*$")
_REPL = re.compile(r"^\s*\{\s*(\d+)\s*\{(.*)\}\s*\}\s*$")
_ATTR = re.compile(r"\(\*[^*]*\*\)\s*")
_SRC = re.compile(r'\(\*\s*src\s*=\s*"([^"|]+)')
_SUM = re.compile(r"^(.+?)\s+([-+])\s+(.+)$")
_MUX = re.compile(r"^(.+?)\s+\?\s+(.+?)\s+:\s+(.+)$")
_SCALE = re.compile(r"^(.+?)\s+\*\s+(\d+)'h([0-9a-f]+)$")        # a product with a constant
_PROC = re.compile(rf"^\s+({_ID})\s*(?:\[(\d+)(?::(\d+))?\])?\s*(<?=) (.*);\s*$")     # in an always block


def _name(ident: str) -> str:
    return (ident[1:] if ident.startswith("\\") else ident).strip()


def _split_top(text: str) -> list:
    """The comma-separated items of a concatenation's inside, nested braces kept whole."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    return items


def _bits(expr: str, widths: dict):
    """The bits of a Verilog expression, least significant first: ``("c", 0|1)`` for a constant bit, ``(name,
    bit)`` for a bit of a signal; None when the expression is anything else (an operator, a function)."""
    expr = expr.strip()
    rep = _REPL.match(expr)
    if rep:
        inner = _bits(rep[2], widths)
        return None if inner is None else inner * int(rep[1])
    if expr.startswith("{") and expr.endswith("}"):
        out = []
        for item in reversed(_split_top(expr[1:-1])):       # the last item is the least significant
            bits = _bits(item, widths)
            if bits is None:
                return None
            out += bits
        return out
    m = _TERM.match(expr + " ")       # an escaped name ends with a space
    if not m:
        return None
    if m[1]:
        width, base, digits = int(m[1]), m[2], m[3].replace("_", "")
        if any(c in "xzXZ" for c in digits):
            return None
        value = int(digits, {"h": 16, "b": 2, "d": 10}[base])
        return [("c", value >> i & 1) for i in range(width)]
    name = _name(m[4])
    if name not in widths:
        return None
    lo, hi = 0, widths[name] - 1
    if m[5] is not None:
        hi = int(m[5])
        lo = int(m[6]) if m[6] is not None else hi
    return [(name, i) for i in range(lo, hi + 1)]


class _Classes:
    """Union-find over bits ``(module, signal, bit)`` and constants."""

    def __init__(self):
        self.parent = {}

    def find(self, x):
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a, b):
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            if ra[0] == "c":             # a constant stays the root of its class
                ra, rb = rb, ra
            self.parent[ra] = rb


def bit_classes(verilog: Path) -> tuple:
    """``(find, members, derived, widths, srcs)``: ``find((module, signal, bit))`` is the root of the bit's class
    (``("c", v)`` for a bit tied to constant ``v``), ``members[root]`` the bits of each class,
    ``derived[(module, signal)]`` is ``("any", operands)`` for a sum or difference, ``("all", inputs)`` for a
    multiplexer or a process's value (each a list of bits, least significant first), ``widths[module][signal]`` the
    signals' widths, ``srcs[(module, signal)]`` the Amaranth source (``file:line``) of a signal's declaration or
    assignment. A register is in the class of its next-state value (their toggles are the same, a cycle apart).
    Modules and signals are named as in the coverage file (Verilog names without their escapes)."""
    lines = Path(verilog).read_text().splitlines()
    widths: defaultdict[str, dict[str, int]] = defaultdict(dict)
    modules, module = {}, None
    srcs, attr = {}, None
    for line in lines:                                   # first pass: every module's signal widths and sources
        m = _MODULE.match(line)
        if m:
            module = _name(m[1])
            modules[module] = True
            continue
        m = _DECL.match(line)
        if m and module:
            widths[module][_name(m[3])] = int(m[1]) - int(m[2]) + 1 if m[1] else 1
            if attr:
                srcs[(module, _name(m[3]))] = attr
        a = _ASSIGN.match(line)
        src = _SRC.search(a[4]) if a and module else None
        if a and src:
            srcs[(module, _name(a[1]))] = src[1]
        src = _SRC.search(line) if line.lstrip().startswith("(*") else None
        attr = src[1] if src else None
    classes, derived, registers = _Classes(), {}, defaultdict(list)
    processes: dict = {}
    module, instance = None, None
    for line in lines:
        m = _MODULE.match(line)
        if m:
            module, instance = _name(m[1]), None
            continue
        if module is None:
            continue
        m = _ASSIGN.match(line)
        if m:
            lhs = _name(m[1])
            if lhs not in widths[module]:
                continue
            lo = int(m[3]) if m[3] is not None else int(m[2]) if m[2] is not None else 0
            rhs = _bits(m[4], widths[module])
            if rhs is None:
                text = _ATTR.sub("", m[4])
                scale = _SCALE.match(text)
                factor = int(scale[3], 16) if scale else 0
                operand = _bits(scale[1], widths[module]) if scale else None
                if operand is not None and factor and factor & (factor - 1) == 0:
                    # times 2^k: the operand shifted up k bits, zeros below and above
                    k = factor.bit_length() - 1
                    shifted = [("c", 0)] * k + operand
                    shifted += [("c", 0)] * (widths[module][lhs] - len(shifted))
                    for i, src in enumerate(shifted[:widths[module][lhs] - lo]):
                        classes.union((module, lhs, lo + i), src if src[0] == "c" else (module, *src))
                    continue
                mux, arith = _MUX.match(text), _SUM.match(text)
                # a multiplexer: a bit is explained when the bit of every input is; a sum or difference: when the
                # bit of an operand is (its carries follow that operand's bits)
                mode, texts = ("all", mux.group(2, 3)) if mux else ("any", arith.group(1, 3)) if arith else (None, ())
                operands = [_bits(op, widths[module]) for op in texts]
                if mode and all(operands):
                    derived[(module, lhs)] = (mode, [[b if b[0] == "c" else (module, *b) for b in op]
                                                     for op in operands])
                continue
            for i, src in enumerate(rhs):
                dst = (module, lhs, lo + i)
                classes.union(dst, src if src[0] == "c" else (module, *src))
            continue
        m = _PROC.match(line) if not line.lstrip().startswith("assign") else None
        if m and _name(m[1]) in widths[module]:
            # a value an always block assigns (a process's next-state value or a register): a bit is explained
            # when the bit of every value assigned to it is
            lhs, lo = _name(m[1]), int(m[3]) if m[3] is not None else int(m[2]) if m[2] is not None else 0
            bits = _bits(m[5], widths[module])
            if m[4] == "<=":        # a register and its next-state value: equal, one cycle apart (if it is alone)
                registers[(module, lhs)].append(None if bits is None or m[2] is not None else bits)
                continue
            sources = processes.setdefault((module, lhs), [])
            if bits is None or sources is None:
                processes[(module, lhs)] = None           # something else is assigned: never explained this way
            else:
                full = [("c", 0)] * widths[module][lhs]    # placeholder bits outside the slice: free
                full[lo:lo + len(bits)] = [b if b[0] == "c" else (module, *b) for b in bits]
                sources.append([None if i < lo or i >= lo + len(bits) else b for i, b in enumerate(full)])
            continue
        m = _INSTANCE.match(line)
        if m and _name(m[1]) in modules:
            instance = _name(m[1])
            continue
        if instance is not None:
            if line.strip().startswith(");"):
                instance = None
                continue
            m = _PORT.match(line)
            if m:
                port, bits = _name(m[1]), _bits(m[2], widths[module])
                if bits is None or port not in widths[instance]:
                    continue
                for i, src in enumerate(bits[:widths[instance][port]]):
                    classes.union((instance, port, i), src if src[0] == "c" else (module, *src))
    for (module, lhs), assigned in registers.items():
        if len(assigned) == 1 and assigned[0] is not None and len(assigned[0]) == widths[module][lhs]:
            for i, src in enumerate(assigned[0]):
                classes.union((module, lhs, i), src if src[0] == "c" else (module, *src))
    for key, sources in processes.items():
        if sources and key not in derived:
            derived[key] = ("all", sources)
    members = defaultdict(list)
    for x in list(classes.parent):
        if x[0] != "c":
            members[classes.find(x)].append(x)
    return classes.find, members, derived, widths, srcs
