"""Operator benchmarks on the RTL (``make bench``): MAC utilization and the DRAM roofline per workload.

``python -m cosim.perf.operators [--config ...] [--only NAME...] [--csv build/bench_workloads.csv]`` runs
every workload of :func:`sw.testing.workloads.workloads` with 1 and 2 virtual threads in the Verilated RTL (many
calls per simulator launch, a progress bar on stderr when it is a terminal), prints a table and writes a CSV with:

- MAC utilization = MACs / (cycles x BATCH x BLOCK_IN x BLOCK_OUT), over the whole operator (loads,
  GEMMs, requantization, stores, every ``synchronize``);
- the roofline bound: the fewest cycles the operator could take given the compute peak and the DRAM
  model's bandwidth, max(MACs / (BATCH x BLOCK_IN x BLOCK_OUT), bytes moved / dram_bytes_per_cycle),
  with bytes moved = inp + wgt + acc + uop load bytes + out store bytes (instruction fetch is not
  counted), and the fraction of that bound achieved (bound / cycles);
- whether the result equalled the numpy reference;
- the fraction of cycles load, compute and store were active (executing, not waiting for a token or
  memory: the ``*_busy`` minus ``*_stall`` counters, the bars of :mod:`cosim.perf.timeline`).

It then prints the mean utilization over ResNet-18 C2-C11 and the 256x256x256 GEMM utilization
against the issue's targets and VTA's published figure.
"""

from __future__ import annotations

import argparse
import csv
import os
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal, overload

import numpy as np

from sw import tables
from sw.cli import UsageError, choose, command, progress_bar, run_as_main
from sw.config import Config, load_config
from sw.runtime.runners import Call
from sw.tables import Column
from sw.testing import workloads as sw_workloads

__all__ = ["measured_call", "bytes_moved", "roofline", "make_row", "measure", "summary",
           "format_table", "format_summary", "write_csv", "main",
           "TARGET_GEMM", "TARGET_RESNET_VT2", "TARGET_LAYER_VT2", "VTA_PUBLISHED", "CONV_LAYERS", "COLUMNS"]

TARGET_GEMM = 0.97          # >= 97 % MAC utilization on the 256x256x256 GEMM (two virtual threads)
TARGET_RESNET_VT2 = 0.95    # >= 95 % mean over ResNet-18 C2-C11 with two virtual threads
TARGET_LAYER_VT2 = 0.90     # and no layer of them below 90 %
VTA_PUBLISHED = (0.70, 0.88)  # VTA paper: latency hiding raised peak utilization from 70 % to 88 %
CONV_LAYERS = tuple(f"resnet18.{name}" for name in sw_workloads.RESNET18)
LOAD_BYTES = ("inp_load_nbytes", "wgt_load_nbytes", "acc_load_nbytes", "uop_load_nbytes")
STORE_BYTES = ("out_store_nbytes",)
COLUMNS = ("workload", "vt", "macs", "cycles", "utilization", "bound_cycles", "bound_fraction", "bound_by",
           "bytes", "ok", "gemm_counter", "alu_counter", "load_active", "compute_active", "store_active", "wall_s")
BUSY = ("load", "compute", "store")


# ---------------------------------------------------------------------- inside the simulation
def _trace_size():
    """Events logged so far by the testbench tracer, or None outside the RTL simulation."""
    try:
        from ..sim.rtl import _lib
        return int(_lib().vta_trace_size())
    except (AttributeError, OSError):
        return None


def measured_call(fn: Callable, args: Sequence, progress: str | None = None, index: int = 0) -> dict:
    """Run ``fn(*args)`` (a workload) and return ``{"result", "wall", "trace_range"}`` or ``{"error", ...}``.

    Runs inside the simulation (module-level, so ``cosim.run_many`` can call it). ``trace_range`` is
    the slice of the launch's trace rows this call produced (None outside the RTL). A line with
    ``index`` is appended to the file ``progress`` when the call ends, so the caller can draw progress
    while the launch runs on. An exception is returned, not raised, so one failing workload does not
    lose the others of its launch.
    """
    first = _trace_size()
    start = time.perf_counter()
    try:
        out = {"result": fn(*args)}
    except Exception as err:  # noqa: BLE001 - reported in the table
        out = {"error": f"{type(err).__name__}: {err}", "traceback": traceback.format_exc()}
    out["wall"] = time.perf_counter() - start
    last = _trace_size()
    out["trace_range"] = None if first is None else (first, last)
    if progress:
        with open(progress, "a") as fh:
            fh.write(f"{index}\n")
    return out


# ---------------------------------------------------------------------- arithmetic
def bytes_moved(counters: dict) -> int:
    """DRAM bytes of an operator: inp/wgt/acc/uop loads plus out stores (instruction fetch not counted)."""
    return sum(int(counters.get(k, 0)) for k in LOAD_BYTES + STORE_BYTES)


def roofline(macs: int, counters: dict, cfg: Config, dram_bytes_per_cycle: float = 8) -> dict:
    """The best possible cycles from the compute peak, the DRAM bandwidth and the tensor ALU (one micro-op per
    cycle at best, beside the GEMMs), and what fraction was achieved."""
    peak = cfg.BATCH * cfg.BLOCK_IN * cfg.BLOCK_OUT
    moved = bytes_moved(counters)
    compute = macs / peak
    memory = moved / dram_bytes_per_cycle
    alu = float(counters.get("alu_counter", 0))
    bound = max(compute, memory, alu)
    cycles = int(counters.get("cycles", 0))
    return {"bytes": moved, "compute_cycles": compute, "memory_cycles": memory, "alu_cycles": alu,
            "bound_cycles": bound,
            "bound_by": "compute" if compute >= max(memory, alu) else ("memory" if memory >= alu else "alu"),
            "bound_fraction": bound / cycles if cycles else float("nan"),
            "utilization": macs / (cycles * peak) if cycles else float("nan")}


def make_row(name: str, vt: int, out: dict, cfg: Config, dram_bytes_per_cycle: float = 8) -> dict:
    """One table row from what :func:`measured_call` returned."""
    if "error" in out:
        return {"workload": name, "vt": vt, "macs": 0, "cycles": 0, "utilization": float("nan"),
                "bound_cycles": float("nan"), "bound_fraction": float("nan"), "bound_by": "", "bytes": 0,
                "ok": False, "gemm_counter": 0, "alu_counter": 0, **{f"{m}_active": float("nan") for m in BUSY},
                "wall_s": out.get("wall", 0.0), "error": out["error"]}
    res = out["result"]
    c = res["counters"]
    r = roofline(res["macs"], c, cfg, dram_bytes_per_cycle)
    cycles = int(c.get("cycles", 0))
    busy = {f"{m}_active": ((c[f"{m}_busy"] - c.get(f"{m}_stall", 0)) / cycles if cycles and f"{m}_busy" in c
                            else float("nan")) for m in BUSY}
    return {"workload": name, "vt": vt, "macs": int(res["macs"]), "cycles": int(c.get("cycles", 0)),
            "utilization": r["utilization"], "bound_cycles": r["bound_cycles"],
            "bound_fraction": r["bound_fraction"], "bound_by": r["bound_by"], "bytes": r["bytes"],
            "ok": bool(res["ok"]), "gemm_counter": int(c.get("gemm_counter", 0)),
            "alu_counter": int(c.get("alu_counter", 0)),
            **busy, "wall_s": out.get("wall", 0.0)}


# ---------------------------------------------------------------------- running
def _advance(bar, done: int, labels) -> None:
    """Move the progress bar to ``done`` finished jobs, naming the next one."""
    bar.set_postfix_str(f"next: {labels[done]}" if done < len(labels) else "", refresh=False)
    bar.update(done - bar.n)
    bar.refresh()


def _run_launch(calls, config, launch_kwargs, progress_path, bar, labels, offset):
    """One ``cosim.run_many`` in a thread while this thread redraws the bar from the progress file."""
    import cosim

    box = {}

    def target():
        try:
            box["value"] = cosim.run_many(calls, config=config, **launch_kwargs)
        except BaseException as err:  # noqa: BLE001 - re-raised below in the calling thread
            box["error"] = err

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    seen = 0
    while True:
        worker.join(0.25)
        try:
            lines = Path(progress_path).read_text().split()
        except FileNotFoundError:
            lines = []
        if len(lines) > seen and bar is not None:
            seen = len(lines)
            _advance(bar, offset + seen, labels)
        if not worker.is_alive():
            break
    if "error" in box:
        raise box["error"]
    return box["value"]


@overload
def measure(names: Sequence[str] | None = ..., vts: Sequence[int] = ..., config: Config | str | None = ...,
            per_launch: int = ..., dram_latency: int = ..., dram_bytes_per_cycle: int = ..., progress: bool = ...,
            return_traces: Literal[False] = ..., workloads: dict[str, dict[int, tuple]] | None = ...) -> list[dict]: ...
@overload
def measure(names: Sequence[str] | None = ..., vts: Sequence[int] = ..., config: Config | str | None = ...,
            per_launch: int = ..., dram_latency: int = ..., dram_bytes_per_cycle: int = ..., progress: bool = ..., *,
            return_traces: Literal[True],
            workloads: dict[str, dict[int, tuple]] | None = ...) -> tuple[list[dict], list[np.ndarray | None]]: ...
@overload
def measure(names: Sequence[str] | None = ..., vts: Sequence[int] = ..., config: Config | str | None = ...,
            per_launch: int = ..., dram_latency: int = ..., dram_bytes_per_cycle: int = ..., progress: bool = ...,
            return_traces: bool = ..., workloads: dict[str, dict[int, tuple]] | None = ...
            ) -> list[dict] | tuple[list[dict], list[np.ndarray | None]]: ...


def measure(names: Sequence[str] | None = None, vts: Sequence[int] = (1, 2), config: Config | str | None = None,
            per_launch: int = 0, dram_latency: int = 20, dram_bytes_per_cycle: int = 8, progress: bool = True,
            return_traces: bool = False, workloads: dict[str, dict[int, tuple]] | None = None
            ) -> list[dict] | tuple[list[dict], list[np.ndarray | None]]:
    """Run workloads on the RTL; return the table rows (and, with ``return_traces``, per-row trace slices).

    ``workloads`` maps a name to ``vt -> (fn, args)`` (default: :func:`sw.testing.workloads.workloads`); ``names``
    selects some of them (default all). ``per_launch`` calls share one simulator launch (0: all).
    """
    cfg = load_config(config)
    if workloads is None:
        table = {vt: sw_workloads.workloads(vt) for vt in vts}
        workloads = {name: {vt: table[vt][name] for vt in vts} for name in table[vts[0]]}
    names = list(workloads) if not names else list(names)
    unknown = [n for n in names if n not in workloads]
    if unknown:
        raise UsageError(f"unknown workload {', '.join(map(repr, unknown))}; choose from: {', '.join(workloads)}")
    jobs = [(name, vt) for vt in vts for name in names]
    labels = [f"{name} vt={vt}" for name, vt in jobs]
    per_launch = per_launch or len(jobs)
    bar = progress_bar(len(jobs), "workloads") if progress else None
    if bar:
        _advance(bar, 0, labels)
    rows, traces = [], []
    launch_kwargs = {"dram_latency": dram_latency, "dram_bytes_per_cycle": dram_bytes_per_cycle,
                     "return_trace": return_traces, "watchdog_cycles": 1_000_000}
    with tempfile.TemporaryDirectory(prefix="vta-workloads-") as tmp:
        for lo in range(0, len(jobs), per_launch):
            chunk = jobs[lo:lo + per_launch]
            progress_path = os.path.join(tmp, f"progress-{lo}")
            calls: list[Call] = [(measured_call, (*workloads[name][vt], progress_path, lo + i), {})
                     for i, (name, vt) in enumerate(chunk)]
            out = _run_launch(calls, cfg, launch_kwargs, progress_path, bar, labels, lo)
            values, trace = out if return_traces else (out, None)
            for (name, vt), value in zip(chunk, values):
                rows.append(make_row(name, vt, value, cfg, dram_bytes_per_cycle))
                if return_traces:
                    r = value.get("trace_range")
                    traces.append(trace[r[0]:r[1]] if r is not None and trace is not None else None)
            if bar and bar.n != lo + len(chunk):
                _advance(bar, lo + len(chunk), labels)
    if bar:
        bar.close()
    return (rows, traces) if return_traces else rows


# ---------------------------------------------------------------------- reporting
def _mean(values):
    values = [v for v in values if v == v]
    return sum(values) / len(values) if values else float("nan")


def summary(rows: Sequence[dict]) -> dict:
    """Means and the targets: resnet mean per vt, gemm_256 per vt (None where not measured)."""
    out = {}
    for vt in (1, 2):
        conv = [r["utilization"] for r in rows if r["workload"] in CONV_LAYERS and r["vt"] == vt]
        out[f"resnet_mean_vt{vt}"] = _mean(conv) if conv else None
        out[f"resnet_layers_vt{vt}"] = len(conv)
        out[f"resnet_min_vt{vt}"] = min(((r["utilization"], r["workload"]) for r in rows
                                         if r["workload"] in CONV_LAYERS and r["vt"] == vt), default=None)
        gemm = [r["utilization"] for r in rows if r["workload"] == "gemm_256" and r["vt"] == vt]
        out[f"gemm_256_vt{vt}"] = gemm[0] if gemm else None
    return out


def _pct(x):
    return "   n/a" if x is None or x != x else f"{100 * x:5.1f}%"


TABLE_COLUMNS: list[Column | str | tuple] = [("workload", "workload"), Column("vt", "vt", "d"), Column("macs", "MACs", ",d"),
                 Column("cycles", "cycles", ",d"), Column("utilization", "utilization", ".1%"),
                 Column("bound_cycles", "bound cycles", ",.0f"), Column("bound_fraction", "of bound", ".1%"),
                 ("bound_by", "bound by"), Column("bytes", "bytes", ",d"), ("active", "active ld/cmp/st %"),
                 ("numpy", "numpy"), Column("wall_s", "wall s", ".2f")]


def format_table(rows: Sequence[dict], markdown: bool = False) -> str:
    shown = []
    for r in rows:
        busy = "/".join("n/a" if r[f"{m}_active"] != r[f"{m}_active"] else f"{100 * r[f'{m}_active']:.0f}"
                        for m in BUSY)
        shown.append(dict(r, active=busy, numpy="ok" if r["ok"] else ("ERROR" if "error" in r else "DIFF")))
    text = tables.format_table(shown, TABLE_COLUMNS, markdown)
    errors = [f"{r['workload']} vt={r['vt']}: {r['error']}" for r in rows if "error" in r]
    return text + "".join(f"\n    {e}" for e in errors)


def format_summary(rows: Sequence[dict]) -> str:
    s = summary(rows)
    lines = []

    def verdict(value, target):
        if value is None or value != value:
            return "not measured"
        if value >= target:
            return f"target >= {target:.0%} met (+{100 * (value - target):.1f} points)"
        return f"target >= {target:.0%} MISSED by {100 * (target - value):.1f} points"

    for vt in (1, 2):
        if s[f"resnet_layers_vt{vt}"]:
            part = "" if s[f"resnet_layers_vt{vt}"] == len(CONV_LAYERS) else \
                f" (only {s[f'resnet_layers_vt{vt}']} of {len(CONV_LAYERS)} layers)"
            line = f"mean MAC utilization over ResNet-18 C2-C11, vt={vt}: {_pct(s[f'resnet_mean_vt{vt}'])}{part}"
            if vt == 2:
                line += f"  [{verdict(s['resnet_mean_vt2'], TARGET_RESNET_VT2)}]"
            lines.append(line)
            if vt == 2 and s["resnet_min_vt2"] is not None:
                u, name = s["resnet_min_vt2"]
                lines.append(f"weakest of them, vt=2: {name.split('.')[-1]} {_pct(u)}  [{verdict(u, TARGET_LAYER_VT2)}]")
    for vt in (1, 2):
        if s[f"gemm_256_vt{vt}"] is not None:
            line = f"256x256x256 GEMM MAC utilization, vt={vt}: {_pct(s[f'gemm_256_vt{vt}'])}"
            if vt == 2:     # the targets are for two virtual threads
                line += f"  [{verdict(s['gemm_256_vt2'], TARGET_GEMM)}]"
            lines.append(line)
    lines.append(f"VTA's published figure: latency hiding raised peak utilization from {VTA_PUBLISHED[0]:.0%} "
                 f"to {VTA_PUBLISHED[1]:.0%}")
    lines.append("(utilization counts every cycle of the operator: loads, GEMMs, requantization and stores)")
    bad = [f"{r['workload']} vt={r['vt']}" for r in rows if not r["ok"]]
    lines.append("all results equal numpy" if not bad else f"results NOT equal to numpy: {', '.join(bad)}")
    return "\n".join(lines)


def write_csv(rows: Sequence[dict], path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(COLUMNS) + ["error"], extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({**r, "error": r.get("error", "")})
    return path


@command
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=None, help="a config JSON path or name (default: configs/default.json)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these workloads")
    parser.add_argument("--vt", nargs="+", type=int, default=[1, 2], choices=[1, 2], help="virtual threads")
    parser.add_argument("--csv", default="build/bench_workloads.csv")
    parser.add_argument("--markdown", default=None, help="also write the table into this Markdown file (docs/)")
    parser.add_argument("--per-launch", type=int, default=0, help="calls per simulator launch (0: all in one)")
    parser.add_argument("--dram-latency", type=int, default=20)
    parser.add_argument("--dram-bytes-per-cycle", type=int, default=8)
    args = parser.parse_args(argv)
    cfg = load_config(args.config)
    for name in args.only or ():
        choose("workload", name, sw_workloads.workloads(1))
    print(f"config {cfg}: {cfg.BATCH * cfg.BLOCK_IN * cfg.BLOCK_OUT} MACs per cycle; DRAM latency "
          f"{args.dram_latency} cycles, {args.dram_bytes_per_cycle} bytes per cycle", flush=True)
    rows = measure(args.only, tuple(args.vt), cfg, args.per_launch, args.dram_latency, args.dram_bytes_per_cycle)
    print(format_table(rows))
    print()
    print(format_summary(rows))
    if args.markdown:
        tables.write_markdown(args.markdown, f"Config {cfg.name}, DRAM latency {args.dram_latency} cycles, "
                              f"{args.dram_bytes_per_cycle} bytes per cycle:\n\n{format_table(rows, markdown=True)}\n\n"
                              + format_summary(rows).replace("\n", "  \n"), "bench-workloads")
    path = write_csv(rows, args.csv)
    print(f"written to {path}")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    run_as_main(__spec__)
