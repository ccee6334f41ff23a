"""Verilator code coverage of the co-simulation (``make coverage``).

A coverage model (``cosim.run_many(..., coverage=True)``, built with ``--coverage-line --coverage-toggle``)
writes the counters of every job to ``$VTA_COVERAGE_DIR`` (:func:`cosim.sim.coverage_dump.write_job_coverage`,
called by the job's child in :mod:`cosim.sim.entry`). ``python -m cosim.verify.coverage`` runs the RTL regression
(the reference programs), the directed programs (:mod:`cosim.verify.directed_suite`) and random programs on that
model, checks them, merges the counters (:mod:`cosim.verify.coverage_dat`), and writes the report
(:mod:`cosim.verify.coverage_report`) and an lcov ``.info``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from sw.cli import command, run_as_main

from ..sim.coverage_dump import COVERAGE_DIR_ENV
from .coverage_dat import merge_dat, parse_dat, write_info
from .coverage_report import report
from .directed_suite import check_directed, directed_calls

__all__ = ["main"]


@command
def main(argv: list[str] | None = None) -> int:
    from sw.config import load_config

    from ..model.build import build_model
    from . import regress

    parser = argparse.ArgumentParser(description="code coverage of the RTL regression plus random programs")
    parser.add_argument("--config", default=None)
    parser.add_argument("--fuzz", type=int, default=200, help="random programs after the reference ones")
    parser.add_argument("--out", default="build/coverage", help="directory of the report, merged .dat and .info")
    parser.add_argument("--report", default=None, metavar="DAT",
                        help="only write the report of a merged .dat of this config's coverage model (no runs)")
    args = parser.parse_args(argv)
    cfg = load_config(args.config)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.report:
        text = report(parse_dat(args.report), build_model(cfg, coverage=True).build_dir / "src" / "vta_top.v")
        (out / f"{cfg.name}.md").write_text(text + "\n")
        print(text)
        return 0
    # the jobs' .dat files (about 350 MB on the default config) live until they are merged
    with tempfile.TemporaryDirectory(prefix="vta-coverage-") as tmp:
        jobs = Path(tmp)
        os.environ[COVERAGE_DIR_ENV] = str(jobs)
        import cosim
        failures = regress.compare(regress.program_names(cfg), cfg, coverage=True)
        failures += check_directed(cosim.run_many(directed_calls(cfg), config=cfg, coverage=True, watchdog_cycles=2000))
        for first in range(0, args.fuzz, 100):
            failures += regress.fuzz(list(range(first, min(first + 100, args.fuzz))), cfg, coverage=True)
        for f in failures:
            print(f)
        dats = sorted(str(p) for p in jobs.glob("*.dat"))
        if not dats:
            raise RuntimeError(f"no coverage was written to {jobs}: is the model built with coverage?")
        merged, info = out / f"{cfg.name}.dat", out / f"{cfg.name}.info"
        merge_dat(dats, merged)
        os.environ.pop(COVERAGE_DIR_ENV, None)
    verilog = build_model(cfg, coverage=True).build_dir / "src" / "vta_top.v"
    points = parse_dat(merged)
    write_info(points, info, verilog)
    text = report(points, verilog)
    (out / f"{cfg.name}.md").write_text(text + "\n")
    print(text)
    print(f"\n{len(dats)} jobs merged into {merged}; lcov: {info}; report: {out / f'{cfg.name}.md'}")
    print(f"{'FAIL' if failures else 'PASS'}: config {cfg.name}, {len(failures)} mismatches")
    return 1 if failures else 0


if __name__ == "__main__":
    run_as_main(__spec__)
