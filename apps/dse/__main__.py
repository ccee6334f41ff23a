"""python -m apps.dse: a design-space sweep on a Dask cluster; the best config per network and board (see apps.dse).

    python -m apps.dse --sweep configs/sweeps/resnet18.toml [--scheduler tcp://host:8786]
    python -m apps.dse --base small --param POST_UNIT=0,1 --param LOG_BUS_WIDTH=6,7 --network resnet18 \\
        --board ulx3s --board pynq-z2 [--workers 2] [--fmax] [--markdown docs/dse.md --png-dir docs/dse]
    python -m apps.dse --boards                      (the boards, their parts, limits and clocks)

Flags add to (``--param``) or replace (the others) the keys of the sweep file. The cache, the networks' files and
the tasks' logs live in ``--out`` (default build/dse); the report (points.csv, points.json, summary.md and the
Pareto PNGs) in ``--report-dir`` (default build/dse/<sweep>). Exit code 0 when every task succeeded, 1 when any
failed (each failure is listed), 2 for a usage error (an invalid config names its parameter and range).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sw.cli import UsageError, command, run_as_main
from sw.config import ConfigError

from .report import write
from .spec import TASK_KINDS, load_sweep
from .sweep import DEFAULT_OUT, devices, run_sweep

__all__ = ["main", "parse_params", "parse_timeouts"]


def parse_params(items: list[str]) -> dict:
    """``["LOG_BLOCK=3,4", "POST_UNIT=1"]`` -> ``{"LOG_BLOCK": [3, 4], "POST_UNIT": [1]}``."""
    out = {}
    for item in items:
        key, sep, values = item.partition("=")
        try:
            if not sep or not key:
                raise ValueError
            out[key.strip()] = [int(v) for v in values.split(",")]
        except ValueError:
            raise ConfigError(f"--param {item!r}: give KEY=V1,V2,... with integer values") from None
    return out


def parse_timeouts(items: list[str]) -> float | dict | None:
    """``["600"]`` -> 600.0 (every kind); ``["rtl=600", "synth=3600"]`` -> a table by kind."""
    if not items:
        return None
    if len(items) == 1 and "=" not in items[0]:
        try:
            return float(items[0])
        except ValueError:
            raise UsageError(f"--timeout {items[0]!r}: give seconds, or KIND=SECONDS") from None
    out = {}
    for item in items:
        kind, _, value = item.partition("=")
        if kind not in TASK_KINDS:
            raise UsageError(f"--timeout {item!r}: the kinds are {', '.join(TASK_KINDS)}")
        try:
            out[kind] = float(value)
        except ValueError:
            raise UsageError(f"--timeout {item!r}: give KIND=SECONDS") from None
    return out


@command
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m apps.dse", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sweep", default=None, help="a sweep file (TOML), or the name of one in configs/sweeps/")
    parser.add_argument("--name", default=None, help="the sweep's name (its report directory and markers)")
    parser.add_argument("--base", default=None, help="the config the grid of --param varies (default: default)")
    parser.add_argument("--param", action="append", default=[], metavar="KEY=V1,V2",
                        help="a config key and its values (repeat: every combination)")
    parser.add_argument("--configs", nargs="+", default=None, help="whole configs as points")
    parser.add_argument("--network", action="append", default=None, metavar="NET",
                        help="a zoo name (resnet18, mobilenetv2, ...; NAME:reduced) or MODEL.onnx[:INPUT.npz]; repeat")
    parser.add_argument("--board", action="append", default=None, help="a board (see --boards); repeat")
    parser.add_argument("--unit", default=None, help="resources of this block alone (fpga.resources --unit)")
    parser.add_argument("--fmax", action="store_true", default=None,
                        help="nextpnr's Fmax of the ULX3S build of every point that fits the ULX3S (slow)")
    parser.add_argument("--timeout", action="append", default=[], metavar="[KIND=]SECONDS",
                        help=f"per task: seconds, or KIND=SECONDS for a kind ({', '.join(TASK_KINDS)}); repeat")
    parser.add_argument("--scheduler", default="local",
                        help="local (a LocalCluster), tcp://host:port (a running cluster), or none (this process)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes of the local cluster (default 2)")
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="the cache, networks and task logs (default build/dse)")
    parser.add_argument("--report-dir", default=None, help="points.csv/json, summary.md (default OUT/<sweep>)")
    parser.add_argument("--png-dir", default=None, help="the Pareto PNGs (default: the report directory)")
    parser.add_argument("--markdown", default=None, help="also write the summary into this markdown file")
    parser.add_argument("--boards", action="store_true", help="list the boards and exit")
    args = parser.parse_args(argv)
    if args.boards:
        for d in devices():
            uram = f" URAM {d['URAM']}" if d["URAM"] else ""
            print(f"{', '.join(d['boards']):18s} {d['label']:22s} {d['family']:5s} LUT {d['LUT']:>7,} FF {d['FF']:>7,} "
                  f"DSP {d['DSP']:>5,} BRAM {d['BRAM']:>4}{uram}  {d['clock_mhz']:g} MHz ({d['clock_note']})")
        return 0
    if args.sweep is None and not (args.param or args.configs or args.base):
        parser.error("give a sweep: --sweep FILE, or --base/--param/--configs with --network and --board")
    sweep = load_sweep(args.sweep, name=args.name, base=args.base, params=parse_params(args.param) or None,
                       configs=args.configs, networks=args.network, boards=args.board, unit=args.unit, fmax=args.fmax,
                       timeout=parse_timeouts(args.timeout))
    scheduler = None if args.scheduler == "none" else args.scheduler
    print(f"sweep {sweep.name}: {len(sweep.points)} points ({', '.join(p.name for p in sweep.points)}), networks "
          f"{', '.join(n.name for n in sweep.networks)}, boards {', '.join(sweep.boards)}; varying "
          f"{', '.join(sweep.params) or 'nothing'}", flush=True)
    results = run_sweep(sweep, scheduler, args.workers, args.out)
    report_dir = Path(args.report_dir or Path(args.out) / sweep.name)
    written = write(results, report_dir, args.png_dir, args.markdown)
    st = results["stats"]
    print()
    print((report_dir / "summary.md").read_text())
    print(f"wrote {written['csv']}, {written['json']}, {written['summary']}"
          + (f", {written['markdown']}" if "markdown" in written else "")
          + f" and {len(written['png'])} Pareto plot(s) in {Path(args.png_dir or report_dir)}")
    print(f"wall {st['wall_seconds']:.1f} s (cluster start {st['cluster_start_seconds']:.1f} s): {st['tasks']} tasks, "
          f"{st['tasks_cached']} wholly from the cache; {st['computed']} results computed, {st['cached']} cached, "
          f"{st['failed']} failed", file=sys.stdout)
    return 1 if st["failed"] else 0


if __name__ == "__main__":
    run_as_main(__spec__)
