"""Co-simulation speed (``make bench``): launch time and simulated cycles per wall second, per config.

For each config it measures

- the launch time: seconds from ``cosim.run`` to the first simulated cycle of the call, on a warm
  model cache, for the first call of a process (``cold``: it starts the simulator server) and for
  later calls (``warm``: the server forks a fresh simulation), the minimum of ``--launches`` calls;
- the co-simulation's cycles per second on a long GEMM (cocotb + Verilator, Python asleep);
- the ceiling: the same Verilog and testbench in a minimal Verilator C++ main loop
  (:mod:`cosim.perf.harness`: no cocotb, no VPI, no ``--timing``), and the ratio of the two.

``--ceiling-args`` adds a ceiling built with extra Verilator flags (e.g. ``--threads 2``) for comparison.
"""

from __future__ import annotations

import argparse
import csv
import time
from collections.abc import Sequence
from pathlib import Path

from sw import tables
from sw.cli import command, run_as_main
from sw.config import Config, load_config
from sw.tables import Column

from ..verify import faults
from .harness import harness_speed
from .long_gemm import long_gemm

__all__ = ["cosim_speed", "launch_times", "measure", "main"]


def cosim_speed(config: Config | str | None = None, repeats: int = 8) -> dict:
    """Cycles, wall time of the run and cycles per second of the long GEMM in the co-simulation."""
    import cosim
    out = cosim.run(long_gemm, None, 16, 16, repeats, config=config)
    c = out["counters"]
    return {"cycles": c["cycles"], "wall": out["wall"], "cpu": out["cpu"], "cycles_per_s": c["cycles"] / out["wall"],
            "cycles_per_cpu_s": c["cycles"] / out["cpu"], "gemm_uops": c["gemm_counter"],
            "utilization": c["gemm_counter"] / c["cycles"]}


def launch_times(config: Config | str | None = None, launches: int = 3) -> dict:
    """Seconds from ``cosim.run`` to the call's first cycle: cold (server start) and warm (min over calls)."""
    import cosim

    from ..sim import server

    cfg = load_config(config)
    cosim.build_model(cfg)                       # the cache is warm: building is not part of a launch
    server.shutdown_all()
    cold = cosim.submit([(faults.target_info, ([0],), {})], cfg).timings.launch
    warm, total = [], []
    for i in range(launches):
        timings = cosim.submit([(faults.target_info, ([i],), {})], cfg).timings
        warm.append(timings.launch)
        total.append(timings.total)
    return {"cold_launch_s": cold, "warm_launch_s": min(warm), "warm_call_s": min(total)}


def measure(config: Config | str | None, repeats: int = 8, runs: int = 3, ceiling_args: Sequence[str] = ()) -> dict:
    """One row of the table: launch times, cosim and ceiling cycles/s (best of ``runs``), their ratio.

    Cycles per second are given per wall second and per CPU second of the simulating process; on a
    shared machine the CPU figure is the steadier one, and the ratio uses it.
    """
    cfg = load_config(config)
    row = {"config": cfg.name, **launch_times(cfg)}
    co = [cosim_speed(cfg, repeats) for _ in range(runs)]
    ce = [harness_speed(cfg, repeats) for _ in range(runs)]
    row.update(cycles=co[0]["cycles"],
               cosim_cycles_per_s=max(r["cycles_per_s"] for r in co),
               cosim_cycles_per_cpu_s=max(r["cycles_per_cpu_s"] for r in co),
               ceiling_cycles_per_s=max(r["cycles_per_s"] for r in ce),
               ceiling_cycles_per_cpu_s=max(r["cycles_per_cpu_s"] for r in ce),
               utilization=co[0]["utilization"])
    row["ratio"] = row["cosim_cycles_per_cpu_s"] / row["ceiling_cycles_per_cpu_s"]
    if ceiling_args:
        extra = [harness_speed(cfg, repeats, ceiling_args) for _ in range(runs)]
        row["ceiling_extra_cycles_per_s"] = max(r["cycles_per_s"] for r in extra)
        row["ceiling_extra_cycles_per_cpu_s"] = max(r["cycles_per_cpu_s"] for r in extra)
    return row


def format_table(rows, ceiling_args=(), markdown: bool = False) -> str:
    columns: list[Column | str | tuple] = [("config", "config"), Column("cold_launch_s", "launch cold s", ".3f"),
               Column("warm_launch_s", "launch warm s", ".3f"), Column("warm_call_s", "call warm s", ".3f"),
               Column("cycles", "cycles", ",d"), Column("cosim_cycles_per_s", "cosim cycles/s", ",.0f"),
               Column("cosim_cycles_per_cpu_s", "per CPU s", ",.0f"),
               Column("ceiling_cycles_per_s", "ceiling cycles/s", ",.0f"),
               Column("ceiling_cycles_per_cpu_s", "per CPU s", ",.0f"), Column("ratio", "ratio", ".2f")]
    if ceiling_args:
        columns += [Column("ceiling_extra_cycles_per_s", f"ceiling {' '.join(ceiling_args)} cycles/s", ",.0f"),
                    Column("ceiling_extra_cycles_per_cpu_s", "per CPU s", ",.0f")]
    return tables.format_table(rows, columns, markdown)


@command
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", nargs="+", default=["configs/default.json", "configs/batch2.json"])
    parser.add_argument("--repeats", type=int, default=8, help="GEMM instructions in the measured run")
    parser.add_argument("--runs", type=int, default=3, help="measurements per number (the best is kept)")
    parser.add_argument("--ceiling-args", default="", help='extra Verilator flags for a second ceiling, one string: '
                        '--ceiling-args="--threads 2"')
    parser.add_argument("--csv", default="build/bench_cosim.csv")
    parser.add_argument("--markdown", default=None, help="also write the table into this Markdown file (docs/)")
    args = parser.parse_args(argv)
    t = time.time()
    rows = [measure(c, args.repeats, args.runs, tuple(args.ceiling_args.split())) for c in args.config]
    print(f"co-simulation speed: long GEMM, {args.repeats} instructions, best of {args.runs}. launch = seconds from "
          f"cosim.run to the call's first simulated cycle (cold: first call of a process, starts the simulator); "
          f"call = a whole no-op cosim.run; ceiling = the same model in a minimal Verilator C++ main loop; "
          f"ratio = cosim / ceiling per CPU second")
    print(format_table(rows, tuple(args.ceiling_args.split())))
    if args.markdown:
        tables.write_markdown(args.markdown, format_table(rows, tuple(args.ceiling_args.split()), markdown=True),
                              "bench-cosim")
    print(f"({time.time() - t:.0f} s)")
    Path(args.csv).parent.mkdir(parents=True, exist_ok=True)
    with open(args.csv, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return 0


if __name__ == "__main__":
    run_as_main(__spec__)
