"""Inside a coverage model: each job writes its Verilator coverage counters to a file of its own.

A coverage model (built with ``--coverage-line --coverage-toggle`` and ``coverage.cpp``) counts in C++; the
child that ran a job calls :func:`write_job_coverage` before it exits (:mod:`cosim.sim.entry`), and
:mod:`cosim.verify.coverage` merges the files and writes the report.
"""

from __future__ import annotations

import ctypes
import os

__all__ = ["COVERAGE_DIR_ENV", "write_job_coverage"]

COVERAGE_DIR_ENV = "VTA_COVERAGE_DIR"


def write_job_coverage() -> None:
    """In a coverage model with ``$VTA_COVERAGE_DIR`` set: write this job's counters there (else nothing)."""
    directory = os.environ.get(COVERAGE_DIR_ENV)
    if not directory:
        return
    lib = ctypes.CDLL(None)
    if not hasattr(lib, "vta_coverage_write"):
        return                      # not a coverage model
    os.makedirs(directory, exist_ok=True)
    lib.vta_coverage_write(os.path.join(directory, f"job-{os.getpid()}.dat").encode())
