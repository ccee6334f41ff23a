"""Formal proofs of the bus, register and queue rules (SymbiYosys), ``make formal``.

Each check wraps one block of the accelerator in a harness (:mod:`hw.formal.checks`): every input of the block is
free (the solver chooses it each cycle) except for the environment's own protocol obligations, stated as
assumptions; the block's obligations are Amaranth ``Assert`` statements. :mod:`hw.formal.run` writes the harness as
RTLIL with an ``.sby`` job, runs SymbiYosys (``yowasp-sby`` with the ``yices`` solver; both from PyPI) and reads
the verdict. Every property also has a mutant (a fault injected at the block's boundary, or a mis-configured
block) that must make the same property fail, so no proof passes vacuously.
"""
