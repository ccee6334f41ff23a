"""A timeline picture of one operator on the RTL: when fetch, load, compute and store were busy, and
when compute's GEMM and ALU units ran (side by side when two virtual threads let them).

``python -m cosim.perf.timeline --workload resnet18.C8 --vt 2 -o build/timeline_C8_vt2.png`` runs the
workload (a name of :func:`sw.testing.workloads.workloads`) in the RTL simulation with the testbench's busy/idle
tracer on and draws one row per module with a bar for every busy interval, over the cycles of that
run only. Without ``--vt`` it draws the run with 1 and with 2 virtual threads one above the other,
on the same cycle scale, so the overlap that virtual threads buy is visible.

The trace of ``cosim.run_many(..., return_trace=True)`` is an int64 array of rows
(cycle, module, busy): module 0 fetch, 1 load, 2 compute, 3 store, 4 GEMM unit, 5 ALU unit (of the
compute module; they run while compute is busy); busy 1 when the module became
busy at that (absolute testbench) cycle, 0 when it became idle.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np
import numpy.typing as npt

from sw.cli import choose, command, run_as_main

if TYPE_CHECKING:
    from sw.config import Config

__all__ = ["MODULES", "intervals", "busy_cycles", "trace_span", "run_traced", "draw", "panel_label", "main"]

MODULES = ("fetch", "load", "compute", "store", "gemm", "alu")   # hw.top.TRACE_LANES: compute's two units last
COLORS = ("#8c8c8c", "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd")


def trace_span(trace: npt.ArrayLike) -> tuple[int, int]:
    """(first, last) cycle of a trace: the transitions that bound the run."""
    trace = np.asarray(trace, dtype=np.int64).reshape(-1, 3)
    if not len(trace):
        return (0, 0)
    return int(trace[:, 0].min()), int(trace[:, 0].max())


def intervals(trace: npt.ArrayLike, start: int | None = None, end: int | None = None,
              modules: int | None = None) -> list[np.ndarray]:
    """Busy intervals per module: a list (one per module) of int64 arrays of [begin, end) cycle pairs.

    Rows are taken in cycle order. A module still busy at ``end`` (default: the last transition) is
    cut there; one that goes idle without a recorded start (it was busy before ``start``, default the
    first transition) is taken as busy from ``start``. Repeated busy or idle events are ignored.
    """
    trace = np.asarray(trace, dtype=np.int64).reshape(-1, 3)
    lo, hi = trace_span(trace)
    start = lo if start is None else int(start)
    end = hi if end is None else int(end)
    trace = trace[np.argsort(trace[:, 0], kind="stable")]
    out = []
    for m in range(len(MODULES) if modules is None else modules):
        rows = trace[trace[:, 1] == m]
        spans: list[tuple[int, int]] = []
        opened = None
        for cycle, _, busy in rows:
            if busy and opened is None:
                opened = int(cycle)
            elif not busy:
                begin = start if opened is None and not spans else opened
                if begin is not None:
                    spans.append((begin, int(cycle)))
                opened = None
        if opened is not None:
            spans.append((opened, end))
        a = np.array(spans, dtype=np.int64).reshape(-1, 2)
        a[:, 0] = np.clip(a[:, 0], start, end)
        a[:, 1] = np.clip(a[:, 1], start, end)
        out.append(a[a[:, 1] > a[:, 0]])
    return out


def busy_cycles(spans: Sequence[np.ndarray]) -> list[int]:
    """Total busy cycles per module from :func:`intervals`."""
    return [int((s[:, 1] - s[:, 0]).sum()) for s in spans]


def run_traced(workload: str, vts: Sequence[int] = (1, 2), config: Config | str | None = None, dram_latency: int = 20,
               dram_bytes_per_cycle: int = 8) -> list[tuple[dict, np.ndarray]]:
    """Run one workload with each vt in one simulator launch; return a list of (row, trace) per vt."""
    from .operators import measure
    rows, traces = measure([workload], tuple(vts), config, progress=False, return_traces=True,
                           dram_latency=dram_latency, dram_bytes_per_cycle=dram_bytes_per_cycle)
    for row in rows:
        if "error" in row:
            raise RuntimeError(f"{workload} vt={row['vt']} failed on the RTL: {row['error']}")
    # cast: a call that ran on the RTL without an error has its trace slice
    return cast("list[tuple[dict, np.ndarray]]", list(zip(rows, traces)))


def draw(panels: Sequence[tuple[str, npt.ArrayLike]], path: str | Path, title: str | None = None, same_scale: bool = True,
         window: tuple[int, int] | None = None) -> Path:
    """Draw ``panels`` (a list of ``(label, trace)``) one above the other into the PNG ``path``.

    Each panel has one row per module; the x axis is cycles from the first transition of its trace.
    Bars shorter than 1/2000 of the axis are drawn that wide so that short events stay visible; the
    percentages on the rows are exact (active cycles over the span of the trace). ``window``
    (first, last) zooms every panel into those cycles from its start.
    """
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = max(1, len(panels))
    fig, axes = plt.subplots(n, 1, figsize=(13, 1.0 + 2.0 * n), squeeze=False)
    longest = max((trace_span(t)[1] - trace_span(t)[0] for _, t in panels), default=1) or 1
    for ax, (label, trace) in zip(axes[:, 0], panels):
        lo, hi = trace_span(trace)
        spans = intervals(trace, lo, hi)
        busy = busy_cycles(spans)
        xlim = tuple(window) if window else (0, longest if same_scale else max(hi - lo, 1))
        thin = (xlim[1] - xlim[0]) / 2000             # keep one-cycle events visible
        for row, (s, color) in enumerate(zip(spans, COLORS)):
            if len(s):
                ax.broken_barh(list(zip(s[:, 0] - lo, np.maximum(s[:, 1] - s[:, 0], thin))), (row - 0.38, 0.76),
                               facecolors=color, edgecolors="none")
        span = max(hi - lo, 1)
        ax.set_yticks(range(len(MODULES)))
        ax.set_yticklabels([f"{'  ' if m in ('gemm', 'alu') else ''}{m} {100 * b / span:3.0f}%"
                            for m, b in zip(MODULES, busy)])
        ax.set_ylim(len(MODULES) - 0.5, -0.5)
        ax.set_xlim(*xlim)
        ax.set_title(label, fontsize=10, loc="left")
        ax.grid(axis="x", alpha=0.3)
        ax.set_xlabel("cycles from the start of the run (bars: the module executes an instruction, "
                      "not waiting for a token or memory)", fontsize=9)
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def panel_label(row: dict) -> str:
    return (f"{row['workload']}, {row['vt']} virtual thread{'s' if row['vt'] > 1 else ''}: "
            f"{row['cycles']} cycles, MAC utilization {100 * row['utilization']:.1f}% "
            f"({100 * row['bound_fraction']:.1f}% of the {row['bound_by']} bound), "
            f"{'equals numpy' if row['ok'] else 'DIFFERS from numpy'}")


@command
def main(argv: list[str] | None = None) -> int:
    from sw.config import load_config

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="resnet18.C8", help="a workload of sw.testing.workloads (default resnet18.C8)")
    parser.add_argument("--vt", type=int, nargs="+", choices=[1, 2], default=[1, 2],
                        help="virtual threads; several draw one panel each (default: 1 and 2)")
    parser.add_argument("--config", default=None)
    parser.add_argument("-o", "--output", default=None, help="PNG path (default build/timeline_<layer>_vt<n>.png)")
    parser.add_argument("--window", type=int, nargs=2, metavar=("FIRST", "LAST"),
                        help="zoom into these cycles (counted from the start of each run)")
    parser.add_argument("--dram-latency", type=int, default=20)
    parser.add_argument("--dram-bytes-per-cycle", type=int, default=8)
    args = parser.parse_args(argv)
    cfg = load_config(args.config)
    from sw.testing.workloads import workloads
    choose("workload", args.workload, workloads(1))
    short = args.workload.split(".")[-1]
    out = args.output or f"build/timeline_{short}_vt{''.join(map(str, args.vt))}.png"
    results = run_traced(args.workload, args.vt, cfg, args.dram_latency, args.dram_bytes_per_cycle)
    panels = [(panel_label(row), trace) for row, trace in results]
    title = (f"{args.workload} on the RTL, config {cfg.name} ({cfg.bitstream}); DRAM latency {args.dram_latency}, "
             f"{args.dram_bytes_per_cycle} B/cycle")
    path = draw(panels, out, title, window=args.window)
    for row, _ in results:
        print(panel_label(row))
    print(f"timeline written to {path}")
    return 0


if __name__ == "__main__":
    run_as_main(__spec__)
