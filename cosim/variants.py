"""What a co-simulation model variant adds to the Verilator build: the AXI checker, the memory, coverage.

Every model carries the AXI4 protocol checker (:mod:`cosim.axi_check`). ``mem="cocotbext"`` builds the
testbench without its DPI DRAM slave and with the ``m_axi_*`` signals public, for cocotbext-axi's ``AxiRam``
(:mod:`cosim.axiram`). ``coverage=True`` builds with Verilator line and toggle coverage
(:mod:`cosim.coverage`). :func:`build_parts` returns the Verilator arguments (which go into the model's cache
key, with digests of the added sources), the added source files and the extra public signals.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from . import axi_check

__all__ = ["MEMORIES", "build_parts", "tag", "check_mem"]

HERE = Path(__file__).resolve().parent
COVERAGE_CPP = HERE / "coverage.cpp"
AXIRAM_PORT = HERE / "axiram_port.svh"
MEMORIES = ("dpi", "cocotbext")


def check_mem(mem: str) -> str:
    if mem not in MEMORIES:
        raise ValueError(f"mem must be one of {MEMORIES} (the accelerator's memory model), got {mem!r}")
    return mem


def tag(mem: str = "dpi", coverage: bool = False) -> str:
    """A prefix of the build directory's name that tells the variant apart ('' for the default one)."""
    return ("axiram-" if check_mem(mem) == "cocotbext" else "") + ("cov-" if coverage else "")


def build_parts(ports_header: str, mem: str = "dpi", coverage: bool = False) -> tuple:
    """(Verilator arguments, extra source files, extra public signals) of a model variant."""
    args, sources = axi_check.build_parts()
    public = []
    if check_mem(mem) == "cocotbext":
        digest = hashlib.sha256(AXIRAM_PORT.read_bytes()).hexdigest()[:16]
        args = args + ["-DVTA_TB_AXIRAM", f"-I{HERE}", f"-DVTA_AXIRAM_PORT_DIGEST={digest}"]
        public = ["clk_n", "rst"] + [n.replace("m_axi_", "axiram_") for n in re.findall(r"\b(m_axi_\w+);", ports_header)]
    if coverage:
        digest = hashlib.sha256(COVERAGE_CPP.read_bytes()).hexdigest()[:16]
        args = args + ["--coverage-line", "--coverage-toggle", f"-DVTA_COVERAGE_DIGEST={digest}"]
        sources = sources + [COVERAGE_CPP]
    return args, sources, public
