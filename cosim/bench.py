"""Co-simulation speed (``make bench``): launch time and simulated cycles per wall second, per config.

For each config it measures

- the launch time: seconds from ``cosim.run`` to the first simulated cycle of the call, on a warm
  model cache, for the first call of a process (``cold``: it starts the simulator server) and for
  later calls (``warm``: the server forks a fresh simulation), the minimum of ``--launches`` calls;
- the co-simulation's cycles per second on a long GEMM (cocotb + Verilator, Python asleep);
- the ceiling: the same Verilog and testbench in a minimal Verilator C++ main loop
  (:mod:`cosim.harness`: no cocotb, no VPI, no ``--timing``), and the ratio of the two.

``--ceiling-args`` adds a ceiling built with extra Verilator flags (e.g. ``--threads 2``) for comparison.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

from sw.config import load_config

from . import faults
from .harness import harness_speed
from .long_gemm import long_gemm

__all__ = ["cosim_speed", "launch_times", "measure", "main"]

COLUMNS = ("config", "cold_launch_s", "warm_launch_s", "warm_call_s", "cycles", "cosim_cycles_per_s",
           "ceiling_cycles_per_s", "ratio", "utilization")


def cosim_speed(config=None, repeats=8):
    """Cycles, wall time of the run and cycles per second of the long GEMM in the co-simulation."""
    import cosim
    out = cosim.run(long_gemm, None, 16, 16, repeats, config=config)
    c = out["counters"]
    return {"cycles": c["cycles"], "wall": out["wall"], "cpu": out["cpu"], "cycles_per_s": c["cycles"] / out["wall"],
            "cycles_per_cpu_s": c["cycles"] / out["cpu"], "gemm_uops": c["gemm_counter"], "utilization": c["gemm_counter"] / c["cycles"]}


def launch_times(config=None, launches=3) -> dict:
    """Seconds from ``cosim.run`` to the call's first cycle: cold (server start) and warm (min over calls)."""
    import cosim
    from . import server

    cfg = load_config(config)
    cosim.build_model(cfg)                       # the cache is warm: building is not part of a launch
    server.shutdown_all()
    cosim.run(faults.target_info, [0], config=cfg)
    cold = server.LAST["launch"]
    warm, total = [], []
    for i in range(launches):
        cosim.run(faults.target_info, [i], config=cfg)
        warm.append(server.LAST["launch"])
        total.append(server.LAST["total"])
    return {"cold_launch_s": cold, "warm_launch_s": min(warm), "warm_call_s": min(total)}


def measure(config, repeats=8, runs=3, ceiling_args=()):
    """One row of the table: launch times, cosim and ceiling cycles/s (best of ``runs``), their ratio."""
    cfg = load_config(config)
    row = {"config": cfg.name, **launch_times(cfg)}
    co = max((cosim_speed(cfg, repeats) for _ in range(runs)), key=lambda r: r["cycles_per_s"])
    ce = max((harness_speed(cfg, repeats) for _ in range(runs)), key=lambda r: r["cycles_per_s"])
    row.update(cycles=co["cycles"], cosim_cycles_per_s=co["cycles_per_s"], ceiling_cycles_per_s=ce["cycles_per_s"],
               ratio=co["cycles_per_s"] / ce["cycles_per_s"], utilization=co["utilization"])
    if ceiling_args:
        extra = max((harness_speed(cfg, repeats, ceiling_args) for _ in range(runs)), key=lambda r: r["cycles_per_s"])
        row["ceiling_extra_cycles_per_s"] = extra["cycles_per_s"]
    return row


def format_table(rows, ceiling_args=()) -> str:
    head = (f"{'config':10s} {'launch cold s':>13s} {'launch warm s':>13s} {'call warm s':>11s} {'cycles':>8s} "
            f"{'cosim cyc/s':>11s} {'ceiling cyc/s':>13s} {'ratio':>6s}")
    if ceiling_args:
        head += f" {'ceiling ' + ' '.join(ceiling_args):>22s}"
    lines = [head]
    for r in rows:
        line = (f"{r['config']:10s} {r['cold_launch_s']:13.3f} {r['warm_launch_s']:13.3f} {r['warm_call_s']:11.3f} "
                f"{r['cycles']:8d} {r['cosim_cycles_per_s']:11.0f} {r['ceiling_cycles_per_s']:13.0f} {r['ratio']:6.2f}")
        if ceiling_args:
            line += f" {r['ceiling_extra_cycles_per_s']:22.0f}"
        lines.append(line)
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", nargs="+", default=["configs/default.json", "configs/batch2.json"])
    parser.add_argument("--repeats", type=int, default=8, help="GEMM instructions in the measured run")
    parser.add_argument("--runs", type=int, default=3, help="measurements per number (the best is kept)")
    parser.add_argument("--ceiling-args", nargs="*", default=[], help="extra Verilator flags for a second ceiling")
    parser.add_argument("--csv", default="build/bench_cosim.csv")
    args = parser.parse_args(argv)
    t = time.time()
    rows = [measure(c, args.repeats, args.runs, tuple(args.ceiling_args)) for c in args.config]
    print(f"co-simulation speed: long GEMM, {args.repeats} instructions, best of {args.runs} "
          f"(launch = cosim.run to the first simulated cycle; ceiling = Verilator C++ main loop)")
    print(format_table(rows, args.ceiling_args))
    print(f"({time.time() - t:.0f} s)")
    Path(args.csv).parent.mkdir(parents=True, exist_ok=True)
    with open(args.csv, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return 0


if __name__ == "__main__":
    from cosim.bench import main as _main
    sys.exit(_main())
