"""What a co-simulation model variant adds to the Verilator build: the AXI checker, the memory, coverage.

Every model carries the AXI4 protocol checker (``axi_checker.sv`` + ``axi_checker.cpp``; its run-time side is
:mod:`cosim.sim.axi_monitor`, its negative tests :mod:`cosim.verify.axi_check`). ``mem="cocotbext"`` builds the
testbench without its DPI DRAM slave and with the ``m_axi_*`` signals public, for cocotbext-axi's ``AxiRam``
(:mod:`cosim.sim.axiram`). ``coverage=True`` builds with Verilator line and toggle coverage
(:mod:`cosim.verify.coverage`). :func:`build_parts` returns the Verilator arguments (which go into the model's cache
key, with digests of the added sources), the added source files and the extra public signals.
"""

from __future__ import annotations

import re
from pathlib import Path

from .cache import digest

__all__ = ["MEMORIES", "MODEL_DIR", "CHECKER_SV", "CHECKER_CPP", "build_parts", "tag", "check_mem"]

MODEL_DIR = Path(__file__).resolve().parent        # the HDL and C++ files of the models
COVERAGE_CPP = MODEL_DIR / "coverage.cpp"
AXIRAM_PORT = MODEL_DIR / "axiram_port.svh"
CHECKER_SV = MODEL_DIR / "axi_checker.sv"
CHECKER_CPP = MODEL_DIR / "axi_checker.cpp"
CHECKER_DEFINE = "VTA_TB_AXI_CHECK"
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
    args = ["--assert", f"-D{CHECKER_DEFINE}", f"-DVTA_AXI_CHECKER_DIGEST={digest(CHECKER_SV, CHECKER_CPP)}"]
    sources, public = [CHECKER_SV, CHECKER_CPP], []
    if check_mem(mem) == "cocotbext":
        args = args + ["-DVTA_TB_AXIRAM", f"-I{MODEL_DIR}", f"-DVTA_AXIRAM_PORT_DIGEST={digest(AXIRAM_PORT)}"]
        public = ["clk_n", "rst"] + [n.replace("m_axi_", "axiram_") for n in re.findall(r"\b(m_axi_\w+);", ports_header)]
    if coverage:
        args = args + ["--coverage-line", "--coverage-toggle", f"-DVTA_COVERAGE_DIGEST={digest(COVERAGE_CPP)}"]
        sources = sources + [COVERAGE_CPP]
    return args, sources, public
