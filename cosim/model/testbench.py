"""The SystemVerilog testbench around the accelerator: ``vta_tb.sv``, its parameters and public signals.

The testbench itself is the file ``cosim/model/vta_tb.sv`` (clock, reset, DPI DRAM, AXI4-Lite master, the
virtual board's register bridge, run monitor, tracer, autorun). What depends on the generated Verilog comes from
:mod:`cosim.model.verilog`: the declarations of the signals connected to ``vta_top`` (``vta_ports.svh``, from the
top's signature) and the values of the testbench's parameters (bus width, trace lanes, register offsets).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

__all__ = ["TESTBENCH_SV", "PUBLIC_SIGNALS", "WRITTEN_SIGNALS", "READ_SIGNALS", "testbench_parameters", "control_file"]

TESTBENCH_SV = Path(__file__).resolve().parent / "vta_tb.sv"

# The signals of vta_tb that Python writes, and those it only reads (waits on). Only these are public: a
# signal Python may write is an input to Verilator (logic that depends on it is evaluated on every eval), so
# the read-only ones are made readable only, and everything else (rst, the DUT) stays private and optimized.
WRITTEN_SIGNALS = ("reset_req", "dram_latency", "dram_bytes_per_cycle", "dram_stall", "dram_fault", "dram_fault_at",
                   "dram_window", "watchdog_limit", "cycle_limit",
                   "trace_enable", "ctl_req", "ctl_we", "ctl_addr", "ctl_wdata", "arm", "vboard_on")
READ_SIGNALS = ("clk", "ctl_ack", "ctl_rdata", "done", "why", "vboard_quit")
PUBLIC_SIGNALS = WRITTEN_SIGNALS + READ_SIGNALS


def testbench_parameters(interface: dict) -> dict:
    """The ``-G`` parameters of ``vta_tb`` for a generated Verilog's interface facts (cosim.model.verilog)."""
    regs = interface["registers"]
    return {"BUS": interface["bus_width"], "NMOD": len(interface["trace_lanes"]),
            "CTL_ADDR_BITS": interface["ctl_addr_bits"], "REG_CONTROL": regs["control"],
            "REG_INSN_COUNT": regs["insn_count"], "REG_INSN_ADDR": regs["insn_addr"]}


def control_file(extra_public: Iterable[str] = (), read_all: bool = False) -> str:
    """A Verilator control file that makes only the testbench signals Python uses visible (plus ``extra_public``,
    read-write: the signals of a model variant, cosim/model/variants.py); ``read_all`` makes every other signal of
    the testbench and the accelerator readable too (the debug model of user cocotb tests: read-only visibility
    keeps Verilator's change-driven evaluation, which making every signal writable would defeat)."""
    lines = ["`verilator_config", "lint_off -rule WIDTH", "lint_off -rule UNUSED", "lint_off -rule UNOPTFLAT"]
    if read_all:
        lines.append('public_flat_rd -module "*" -var "*"')
    lines += [f'public_flat_rw -module "vta_tb" -var "{s}"' for s in (*WRITTEN_SIGNALS, *extra_public)]
    lines += [f'public_flat_rd -module "vta_tb" -var "{s}"' for s in READ_SIGNALS]
    return "\n".join(lines) + "\n"
