"""``python -m cosim.cocotb TESTS.py ... [--config C ...] [--filter REGEX] [--waves] [--fast] [--mem M]``

Runs the cocotb tests of each module on the cached Verilator model of each config (every module on every
config), prints a table of the tests, writes the merged JUnit XML (``--results``, default
build/cocotb/results.xml) and exits 1 when a test failed.
"""

from __future__ import annotations

import argparse
import sys

from .runner import OUT_DIR, run_tests
from .testbench import DEFAULT_MAX_CYCLES


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cosim.cocotb", description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="+", help="test modules: .py files or importable module names")
    parser.add_argument("--config", action="append", default=None,
                        help="a config JSON (repeat for several; default: $VTA_CONFIG or configs/default.json)")
    parser.add_argument("--filter", default=None, help="run only the tests whose name matches this regular expression")
    parser.add_argument("--waves", action="store_true", help="write an FST waveform per module (<out>/<config>-<module>/"
                                                             "dump.fst)")
    parser.add_argument("--fast", action="store_true",
                        help="the optimised model (faster; the accelerator's internal signals are not visible)")
    parser.add_argument("--mem", default="dpi", choices=("dpi", "cocotbext"),
                        help="the memory behind the AXI port: the DPI DRAM or cocotbext-axi's AxiRam")
    parser.add_argument("--max-cycles", type=int, default=DEFAULT_MAX_CYCLES,
                        help="each Testbench's cycle budget (a test past it fails with the accelerator's state)")
    parser.add_argument("--seed", type=int, default=None, help="cocotb's random seed")
    parser.add_argument("--out", default=str(OUT_DIR), help="directory for results, logs and waveforms")
    parser.add_argument("--results", default=None, help="the merged JUnit XML (default <out>/results.xml)")
    args = parser.parse_args(argv)
    if args.max_cycles < 1:
        parser.error(f"--max-cycles {args.max_cycles}: allowed: an integer >= 1")
    try:
        total = run_tests(args.modules, configs=args.config, test_filter=args.filter, waves=args.waves,
                          fast=args.fast, mem=args.mem, max_cycles=args.max_cycles, seed=args.seed, out_dir=args.out,
                          results=args.results)
    except ValueError as err:
        parser.error(str(err))
    print(total.table())
    return 0 if total.ok else 1


if __name__ == "__main__":
    sys.exit(main())
