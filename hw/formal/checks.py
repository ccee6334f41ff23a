"""Every property, one module of harnesses per block: :mod:`hw.formal.queues` (the token queues),
:mod:`hw.formal.axi_lite` (the control registers' AXI4-Lite slave), :mod:`hw.formal.axi_master` (the AXI4 master)
and :mod:`hw.formal.fetch` (instruction fetch). Each check states one rule of its block and lists the mutants that
must break it (:class:`hw.formal.common.Check`)."""

from __future__ import annotations

from . import axi_lite, axi_master, fetch, queues
from .common import Check, Harness, Mutant

__all__ = ["Check", "Mutant", "CHECKS", "harness"]

CHECKS = [*queues.CHECKS, *axi_lite.CHECKS, *axi_master.CHECKS, *fetch.CHECKS]


def harness(check: Check, mutant: str | None = None, helpers: bool = True) -> Harness:
    """The top module of one run of ``check``: the real block, or the block (or environment) of ``mutant``.
    ``helpers``: include the property's induction helper invariants."""
    if mutant is not None:
        check.mutant(mutant)
    return Harness(lambda h, m: check.build(h, m, check.name, mutant), check.name, helpers)
