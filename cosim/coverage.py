"""Verilator code coverage of the co-simulation (``make coverage``).

A coverage model (``cosim.run_many(..., coverage=True)``, built with ``--coverage-line --coverage-toggle``)
writes the counters of every job to ``$VTA_COVERAGE_DIR`` (:func:`write_job_coverage`, called by the job's
child in :mod:`cosim.entry`).
"""

from __future__ import annotations

import ctypes
import os

__all__ = ["write_job_coverage", "COVERAGE_DIR_ENV"]

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
    path = os.path.join(directory, f"job-{os.getpid()}.dat")
    lib.vta_coverage_write(path.encode())
