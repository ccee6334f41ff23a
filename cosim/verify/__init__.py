"""Verification on the RTL: the differential regression against the golden model and what serves it.

``differential`` (one program on either target, results and page digests), ``regress`` (the command
line: reference programs, random programs, replays), ``cluster`` (shards on Dask), ``triage``
(random programs in batches), ``fair``, ``evaluate`` and ``minimize`` (the minimizer: fair variants, failure
signatures, delta debugging), ``replay`` (self-contained failing programs), ``funcov`` (functional coverage),
``coverage`` (Verilator line and toggle coverage, ``make coverage``; its files ``coverage_dat``, the report
``coverage_report``, uncovered lines ``uncovered`` and their waivers ``line_waivers``, untoggled bits ``toggles``
with ``verilog_bits`` and ``toggle_rules``, source lines ``sources``), ``axi_check`` (the AXI checker's negative
tests), ``raw`` (raw device programs), ``directed`` and ``directed_suite`` (the directed programs of
``make coverage``), ``faults`` (programs that must fail), ``injected`` (injected faults), ``probes`` (state a fresh
accelerator must not have), ``pages`` (memory digests).
"""
