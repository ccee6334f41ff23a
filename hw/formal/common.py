"""What every harness shares: the description of a check, the harness shell, free inputs, ``past``, named
assertions, and access to a block's internal signals (for induction invariants and mutants).

A harness is a module ``top`` whose inputs are all free (SymbiYosys's solver picks them each cycle), with the reset
assumed low so the start state is every register's initial value. The block under proof is elaborated inside it by
:meth:`Harness.block`, which returns the block's own :class:`~amaranth.hdl.Module`: its submodules (FIFOs) and
named internal signals (:func:`internal`) can then be read by the harness, and a mutant can patch the block by
appending statements to that module (the last assignment to a signal wins), without touching the production
source.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from amaranth.hdl import Assert, Assume, Elaboratable, Module, ResetSignal, ShapeLike, Signal, Value, ValueLike
from amaranth.lib import wiring

__all__ = ["Mutant", "Check", "Harness", "past", "internal", "drive_inputs", "held_until"]


@dataclass(frozen=True)
class Mutant:
    """A broken design (or a broken assumption) that must make its property fail: ``name``, what it breaks
    (``does``), and the BMC depth that reaches its counterexample (``depth``: cycles from reset)."""
    name: str
    does: str
    depth: int


@dataclass(frozen=True)
class Check:
    """One property of one block.

    ``method``: "prove" (k-induction to ``depth``: the base case is BMC to ``depth``, the step assumes the property
    for ``depth`` cycles) or "bmc" (no counterexample within ``depth`` cycles of reset; ``why_depth`` says why that
    depth covers the behaviour). ``fast_depth``: the BMC depth of the test suite's run. ``mutants``: each must make
    the property fail."""
    name: str
    block: str
    states: str
    method: str
    depth: int
    fast_depth: int
    mutants: tuple
    why_depth: str = ""
    build: Any = field(default=None, compare=False, repr=False)    # build(h, m, check_name, mutant_name)

    def mutant(self, name: str) -> Mutant:
        for mu in self.mutants:
            if mu.name == name:
                return mu
        raise KeyError(f"{self.name} has no mutant {name!r}")


class Harness(Elaboratable):
    """The top module of one run: ``build(h, m)`` instantiates the block and states the property.

    ``prop`` is the property checked in this run: only its assertions (:meth:`check`) are emitted, plus the helper
    invariants of the same property (tag ``"<prop>:helper"``) unless ``helpers`` is false. ``assertions`` maps
    the source location of every emitted assertion to its tag, which is how the runner names a failed one."""

    def __init__(self, build: Callable[[Harness, Module], None], prop: str, helpers: bool = True):
        self._build = build
        self.prop = prop
        self.helpers = helpers
        self.ports: list = []
        self.assertions: dict = {}
        self.started: Signal = None      # set by elaborate, before build runs

    def free(self, shape: ShapeLike, name: str) -> Signal:
        """A free input of the harness (the solver picks its value every cycle)."""
        s = Signal(shape, name=name)
        self.ports.append(s)
        return s

    def check(self, m: Module, tag: str, cond: ValueLike, src_loc_at: int = 0) -> None:
        """``Assert(cond)`` (in the current ``m.If`` context) when ``tag`` is this run's property or one of its
        helpers. One source line (the caller's, or ``src_loc_at`` frames further out) carries one tag: the runner
        maps a failure back to its line."""
        if tag != self.prop and not (self.helpers and tag == self.prop + ":helper"):
            return
        a = Assert(cond, src_loc_at=1 + src_loc_at)
        where = (a.src_loc[0], a.src_loc[1])
        if self.assertions.setdefault(where, tag) != tag:
            raise ValueError(f"{where[0]}:{where[1]} asserts both {self.assertions[where]} and {tag}")
        m.d.comb += a

    def block(self, m: Module, dut: wiring.Component, name: str,
              patch: Callable[[wiring.Component, Module], None] | None = None) -> Module:
        """Elaborate ``dut`` as submodule ``name`` of ``m``; ``patch(dut, dm)`` (a mutant) may append statements
        to the block's module ``dm`` first. Returns ``dm``."""
        dm = dut.elaborate(None)
        dut._MustUse__silence = True
        if patch is not None:
            patch(dut, dm)
        m.submodules[name] = dm
        return dm

    def elaborate(self, platform: object) -> Module:
        m = Module()
        m.d.comb += Assume(~ResetSignal())
        self.started = Signal(name="started")      # low in the first cycle only
        m.d.sync += self.started.eq(1)
        self._build(self, m)
        return m


def past(m: Module, value: ValueLike, name: str | None = None) -> Signal:
    """``value`` one cycle earlier (its initial value in the first cycle). The register lives in a module of its own,
    so a call inside ``with m.If(...)`` still samples every cycle."""
    value = Value.cast(value)
    s = Signal(value.shape(), name=name or f"past_{getattr(value, 'name', 'x')}")
    holder = Module()
    holder.d.sync += s.eq(value)
    m.submodules += holder
    return s


def internal(dm: Module, name: str) -> Signal:
    """The signal called ``name`` among those the block's module ``dm`` assigns or reads (a register of the block,
    e.g. ``rd_active``), for induction invariants and mutants. Exactly one must match."""
    dm._flush()
    found = {}

    def walk(stmts):
        for st in stmts:
            for s in list(st._lhs_signals()) + list(st._rhs_signals()):
                if s.name == name:
                    found[id(s)] = s
    for stmts in dm._statements.values():
        walk(stmts)
    if len(found) != 1:
        raise LookupError(f"{len(found)} signals named {name!r} in the block")
    return next(iter(found.values()))


def drive_inputs(h: Harness, m: Module, dut: wiring.Component, prefix: str,
                 override: dict[tuple, Callable[[Signal], ValueLike]] | None = None) -> dict[tuple, Signal]:
    """Drive every input port of ``dut`` from a free input of the harness (or from ``override[path]``, a value the
    harness computes); returns {path: the free signal}."""
    out = {}
    override = override or {}
    for path, member, value in dut.signature.flatten(dut):
        if member.flow == wiring.In:
            raw = Value.cast(value)
            name = prefix + "_" + "_".join(str(p) for p in path)
            s = h.free(len(raw), name)
            m.d.comb += raw.eq(override[path](s) if path in override else s)
            out[path] = s
    return out


def held_until(h: Harness, m: Module, valid: Value, ready: Value, payload: Sequence[Value],
               assume: Literal[True] | str) -> None:
    """The handshake rule: once ``valid`` is high without ``ready``, it stays high with ``payload`` unchanged in
    the next cycle. ``assume``: the environment's obligation (an ``Assume``); else ``assume`` is the tag of the
    property that asserts it."""
    pv, pr = past(m, valid), past(m, ready)
    pp = [past(m, p) for p in payload]
    with m.If(h.started & pv & ~pr):
        cond = valid
        for p, q in zip(payload, pp):
            cond = cond & (p == q)
        if assume is True:
            m.d.comb += Assume(cond)
        else:
            h.check(m, assume, cond, src_loc_at=1)
