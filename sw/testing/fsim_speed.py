"""Benchmarks (``make bench``): a table on stdout and a CSV in build/.

Golden model: simulated MACs per second on streams of long GEMM instructions (the time of ``FsimDevice.run``
alone, the best of several repeats), ALU micro-ops per second, and the runtime's cost per
instruction queued. ``rate`` is per wall second; ``cpu_rate`` per second of this process's CPU time
(all its threads), the steadier figure when the machine is shared.

    python -m sw.testing.fsim_speed [--config configs/default.json] [--csv build/bench_fsim.csv]
"""

from __future__ import annotations

import argparse
import csv
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from sw import runtime as rt
from sw.cli import command, run_as_main
from sw.config import Config, load_config
from sw.fsim import FsimDevice
from sw.isa import AluOp, MemId
from sw.tables import Column, format_table, write_markdown


def _timed(dev):
    """Wrap ``dev.run`` to record (wall seconds, CPU seconds) of every call."""
    times = []
    run = dev.run

    def timed_run(*args):
        t, c = time.perf_counter(), time.process_time()
        out = run(*args)
        times.append((time.perf_counter() - t, time.process_time() - c))
        return out
    dev.run = timed_run
    return times


def _best(times):
    """The best wall and the best CPU time of the recorded runs."""
    return min(w for w, _ in times), min(c for _, c in times)


def gemm_shapes(cfg: Config) -> list[tuple[str, int, int, int]]:
    """(name, rows, k_blocks, o_blocks) of long GEMM instructions that fit the SRAMs of cfg."""
    shapes = []
    for name, k, o in (("K=16 O=16 blocks", 16, 16), ("K=64 O=16 blocks", 64, 16), ("K=4 O=64 blocks", 4, 64)):
        rows = min(cfg.INP_DEPTH // k, cfg.ACC_DEPTH // o, 16383)
        if rows >= 1 and k * o <= cfg.WGT_DEPTH:
            shapes.append((name, rows, k, o))
    return shapes


def long_gemm_kernel(rows: int, k: int, o: int) -> Callable[[], None]:
    """A GEMM micro-kernel of rows x k x o blocks: rows outside, the reduction over k inside, the o
    output blocks as micro-ops (consecutive micro-ops write different acc rows)."""
    def kernel():
        rt.uop_loop_begin(rows, o, k, 0)
        rt.uop_loop_begin(k, 0, 1, 1)
        for j in range(o):
            rt.uop_push(0, 0, j, 0, j * k, 0, 0, 0)
        rt.uop_loop_end()
        rt.uop_loop_end()
    return kernel


def bench_gemm(cfg: Config, name: str, rows: int, k: int, o: int, repeats: int = 10, per_stream: int = 16) -> dict:
    """One stream of ``per_stream`` GEMM instructions of the shape, run ``repeats`` times: the best
    run's MACs per second, the stream's fixed costs (decode, checks, scheduling) included."""
    dev = FsimDevice(cfg, dram_bytes=64 << 20)
    rng = np.random.default_rng(0)
    dev.inp[...] = rng.integers(-128, 128, size=dev.inp.shape, dtype=np.int8)
    dev.wgt[...] = rng.integers(-128, 128, size=dev.wgt.shape, dtype=np.int8)
    times = _timed(dev)
    kernel = long_gemm_kernel(rows, k, o)
    with rt.use_target(dev) as q:
        for _ in range(repeats):
            for _ in range(per_stream):
                rt.push_gemm_op(q.handle, kernel, 0)
            counters = rt.synchronize(q.handle)
    uops = counters["gemm_counter"]
    wall, cpu = _best(times)
    macs = uops * cfg.MACS_PER_CYCLE
    return {"benchmark": f"fsim GEMM {name}", "work": f"{per_stream} GEMMs, {uops} uops",
            "seconds": wall, "rate": macs / wall, "cpu_seconds": cpu, "cpu_rate": macs / max(cpu, 1e-9),
            "unit": "MAC/s"}


def bench_alu(cfg: Config, repeats: int = 5) -> dict:
    dev = FsimDevice(cfg, dram_bytes=64 << 20)
    times = _timed(dev)
    n = cfg.ACC_DEPTH // 2

    def kernel():
        rt.uop_loop_begin(n, 1, 1, 0)
        rt.uop_push(1, 0, 0, n, 0, int(AluOp.ADD), 0, 0)
        rt.uop_loop_end()
    with rt.use_target(dev) as q:
        for _ in range(repeats):
            rt.push_alu_op(q.handle, kernel, 0)
            counters = rt.synchronize(q.handle)
    wall, cpu = _best(times)
    n = counters["alu_counter"]
    return {"benchmark": "fsim ALU ADD tensor", "work": f"{n} uops", "seconds": wall, "rate": n / wall,
            "cpu_seconds": cpu, "cpu_rate": n / max(cpu, 1e-9), "unit": "uop/s"}


def bench_runtime(cfg: Config, n: int = 20000) -> dict:
    dev = FsimDevice(cfg, dram_bytes=64 << 20)
    with rt.use_target(dev, max_insns=1 << 17) as q:
        h = rt.buffer_alloc(1 << 20)
        t, c = time.perf_counter(), time.process_time()
        for i in range(n):
            rt.load_2d(q.handle, h, i % 64, 1, 1, 1, 0, 0, 0, 0, i % 64, int(MemId.INP))
        dt, dc = time.perf_counter() - t, time.process_time() - c
        rt.synchronize(q.handle)
    return {"benchmark": "runtime load_2d calls", "work": f"{n} instructions", "seconds": dt,
            "rate": n / dt, "cpu_seconds": dc, "cpu_rate": n / max(dc, 1e-9), "unit": "insn/s"}


COLUMNS: list[Column | str | tuple] = [("benchmark", "benchmark"), ("work", "work"), Column("seconds", "seconds", ".4f"),
           Column("rate", "rate", ".3e"), Column("cpu_seconds", "CPU s", ".4f"), Column("cpu_rate", "rate per CPU s", ".3e"),
           ("unit", "unit")]


@command
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=None)
    parser.add_argument("--csv", default="build/bench_fsim.csv")
    parser.add_argument("--markdown", default=None, help="also write the table into this Markdown file (docs/)")
    args = parser.parse_args(argv)
    cfg = load_config(args.config)
    rows = [bench_gemm(cfg, *s) for s in gemm_shapes(cfg)] + [bench_alu(cfg), bench_runtime(cfg)]
    print(f"config {cfg}")
    print(format_table(rows, COLUMNS))
    if args.markdown:
        write_markdown(args.markdown, f"Golden model, config {cfg.name}:\n\n" + format_table(rows, COLUMNS, markdown=True),
                       "bench-fsim")
    Path(args.csv).parent.mkdir(parents=True, exist_ok=True)
    with open(args.csv, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {args.csv}")
    return 0


if __name__ == "__main__":
    run_as_main(__spec__)
