"""Verilator warnings the generated Verilog is known to raise, waived wherever it is linted: the co-simulation model
(cosim.model.build) and the FuseSoC core's lint target (fpga.fusesoc). No Amaranth here, so importing it is free.

Waived: width warnings, and CASEINCOMPLETE, which Amaranth's Yosys backend emits for every Switch/FSM without a
catch-all case although the logic is complete (every signal is assigned its default before the case statement).
"""

__all__ = ["LINT_WAIVERS"]

LINT_WAIVERS = ["-Wno-WIDTH", "-Wno-WIDTHEXPAND", "-Wno-WIDTHTRUNC", "-Wno-CASEINCOMPLETE"]
