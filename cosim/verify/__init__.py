"""Verification on the RTL: the differential regression against the golden model and what serves it.

``differential`` (one program on either target, results and page digests), ``regress`` (the command
line: reference programs, random programs, replays), ``cluster`` (shards on Dask), ``triage``
(batches, replays, the minimizer), ``replay`` (self-contained failing programs), ``funcov``
(functional coverage), ``coverage`` (Verilator line and toggle coverage, ``make coverage``),
``axi_check`` (the AXI checker's negative tests), ``faults`` and ``programs`` (raw device programs and
injected faults), ``probes`` (state a fresh accelerator must not have), ``pages`` (memory digests).
"""
