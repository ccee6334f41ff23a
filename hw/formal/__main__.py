"""python -m hw.formal [--fast] [--mutants] [--only NAME ...] [--jobs N] [--markdown FILE]: the SymbiYosys proofs."""

from __future__ import annotations

import argparse
import sys

from sw.cli import choose, command, run_as_main

from .checks import CHECKS
from .run import format_table, property_table, run_all


@command
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="SymbiYosys proofs of the AXI4 master, the AXI4-Lite slave, the token "
                                                 "queues and fetch (hw.formal)")
    parser.add_argument("--fast", action="store_true", help="BMC of every property to its small depth (make test)")
    parser.add_argument("--mutants", action="store_true", help="run every property's mutants instead: each must fail that "
                                                                  "property")
    parser.add_argument("--only", nargs="+", default=None, help="these properties only")
    parser.add_argument("--jobs", type=int, default=2, help="SymbiYosys runs at once")
    parser.add_argument("--markdown", default=None, help="also write the table into this file's formal markers")
    args = parser.parse_args(argv)
    checks = CHECKS
    if args.only:
        for name in args.only:
            choose("--only", name, [c.name for c in CHECKS])
        checks = [c for c in CHECKS if c.name in args.only]
    results = run_all(checks, mutants=args.mutants, fast=args.fast, jobs=args.jobs)
    print(format_table(results))
    if args.markdown:
        from sw.tables import write_markdown
        write_markdown(args.markdown, "`make formal` (`python -m hw.formal`), this 2-core machine:\n\n"
                       + format_table(results, markdown=True), marker="formal")
        write_markdown(args.markdown, property_table(), marker="formal-properties")
    bad = [r for r in results if not r.expected]
    for r in bad:
        print(f"{r.check.name}{' mutant ' + r.mutant if r.mutant else ''}: {r.verdict} {r.detail}", file=sys.stderr)
    print(f"{'FAIL' if bad else 'PASS'}: {len(results)} {'mutants' if args.mutants else 'properties'}")
    return 1 if bad else 0


if __name__ == "__main__":
    run_as_main(__spec__)
