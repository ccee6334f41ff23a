"""Random regressions at scale: shards of seeds run on a Dask distributed cluster (or in this process).

``fuzz(start, count, configs, scheduler=...)`` cuts the seeds of every config into shards of
``shard`` programs, each one simulator launch (:func:`cosim.verify.triage.check_seeds`), and runs them:

* ``scheduler=None``: one after the other in this process (the serial reference);
* ``scheduler="local"``: on a local Dask cluster, one single-threaded worker process per core;
* ``scheduler="tcp://host:8786"``: on a running cluster whose workers have the project importable
  (``PYTHONPATH`` or an install) and the Verilator toolchain; each machine builds or reuses its model
  once (the model cache is keyed by the sources, ``VTA_COSIM_CACHE`` names it).

Every shard has a fixed key, so a shard whose worker is lost mid-run is run again by the scheduler,
and the client counts each shard's result exactly once: its programs, its failures and its functional
coverage (the shard's own hits, merged per config into ``coverage``). Failures come back with their
replays, which the client writes to ``out_dir``; the first ``minimize`` of them are then minimized on the
cluster (:func:`cosim.verify.minimize.minimize_on_rtl`, one launch each) and written beside them as ``*.min.replay``.

With ``steer=True`` the shards go out in rounds of ``round_shards`` (default: the cluster's worker threads,
1 in this process): after each round the client merges the returned coverage and gives the next round's
shards the generator bias toward the holes (:func:`cosim.verify.funcov.steer`), and DPI-DRAM pauses on every
shard while a backpressure bin is a hole. Odd-numbered shards always run with pauses (``STALL_CHANCE``).
A run is repeatable from its seeds, shard size and round size.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from sw.cli import command, run_as_main
from sw.config import Config, load_config

from . import funcov, replay, triage
from .minimize import minimize_on_rtl

if TYPE_CHECKING:
    from distributed import Client

__all__ = ["plan", "run_shard", "steer_round", "fuzz", "connect", "launch_cost", "bench", "STALL_CHANCE"]

ROOT = Path(__file__).resolve().parents[2]
STALL_CHANCE = 64          # of 256: the DPI DRAM's chance to pause a channel in a cycle, on shards with pauses


def plan(start: int, count: int, configs: Sequence[Config | str | None], shard: int = 200) -> list:
    """The shards of a run: every seed of ``[start, start + count)`` of every config, once."""
    if count < 0 or shard < 1:
        raise ValueError(f"count = {count}, shard = {shard}; allowed: count >= 0, shard >= 1")
    out = []
    for config in configs:
        name = load_config(config).name
        for i, first in enumerate(range(start, start + count, shard)):
            last = min(first + shard, start + count)
            out.append({"id": f"{name}:{first}-{last - 1}", "config": config, "name": name,
                        "seeds": list(range(first, last)), "bias": None, "stall": i % 2 == 1})
    return out


def run_shard(shard: dict, n_ops: int = 24, fault: str | None = None, cosim_options: dict | None = None) -> dict:
    """One shard: its programs in one simulator launch, compared with the golden model."""
    options = dict(cosim_options or {})
    first = shard["seeds"][0]
    if options.get("mem") == "cocotbext":
        options.setdefault("mem_seed", first)            # AxiRam's pauses, repeatable per shard
    elif shard.get("stall"):
        options.setdefault("dram_stall", ((first & 0xFFFFFF) << 8) | STALL_CHANCE)
    out = triage.check_seeds(shard["config"], shard["seeds"], n_ops, fault, shard.get("bias"), **options)
    out.update(id=shard["id"], bias=shard.get("bias"), stall=bool(options.get("dram_stall")))
    return out


def steer_round(shards: list, coverage: dict) -> None:
    """Point the shards of the next round at the holes of ``coverage`` ({config name: counts}, merged so far)."""
    for s in shards:
        counts = coverage.get(s["name"])
        if counts:
            s["bias"] = funcov.steer(counts=counts) or None
            s["stall"] = s["stall"] or funcov.wants_stalls(counts)


def _worker_env():
    """The environment a local worker needs to import this tree and share the model cache."""
    paths = [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(ROOT)]
    os.environ["PYTHONPATH"] = os.pathsep.join(paths)
    from ..model.build import CACHE_DIR
    os.environ.setdefault("VTA_COSIM_CACHE", str(CACHE_DIR))


def connect(scheduler: str, workers: int | None = None) -> Client:
    """A Dask client: of a local cluster (``"local"``: one single-threaded worker per core) or of ``scheduler``."""
    from distributed import Client, LocalCluster

    if scheduler == "local":
        _worker_env()
        cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1, processes=True,
                               host="127.0.0.1", dashboard_address=None, silence_logs=logging.ERROR)
        return Client(cluster)
    return Client(scheduler)


def fuzz(start: int, count: int, configs: Sequence[Config | str | None], n_ops: int = 24, shard: int = 200,
         scheduler: str | None = None, workers: int | None = None, fault: str | None = None, minimize: int = 0,
         out_dir: str | Path = "build/replays", cosim_options: dict | None = None,
         progress: Callable[[str], object] | None = print, client: Client | None = None,
         on_result: Callable[[dict], object] | None = None, steer: bool = False, round_shards: int | None = None) -> dict:
    """Run the random programs and return counts, failures (with replay files), merged functional coverage
    ({config name: counts}) and timings."""
    shards = plan(start, count, configs, shard)
    own_client = connect(scheduler, workers) if scheduler is not None and client is None else None
    client = client or own_client
    try:
        t0 = time.time()                        # the run, not the start of a local cluster
        size = round_shards or (sum(client.nthreads().values()) if client is not None else 1)
        rounds = [shards[i:i + size] for i in range(0, len(shards), size)] if steer else [shards]
        results: dict = {}
        coverage: dict = {}
        for k, batch in enumerate(rounds):
            if k:
                steer_round(batch, coverage)
            results.update(_run_shards(batch, client, n_ops, fault, cosim_options, progress, on_result, coverage))
        wall = time.time() - t0
        failures = [f for s in shards for f in results[s["id"]]["failures"]]
        for f in failures:
            if f["program"] is not None:
                f["replay_file"] = str(replay.save(Path(out_dir) / f"{f['config']}-seed{f['seed']}.replay", f))
        minimized = _minimize(failures[:minimize], client, cosim_options, out_dir, progress) if minimize else []
    finally:
        if own_client is not None:
            _close(own_client)
    return {"programs": sum(r["programs"] for r in results.values()), "shards": len(results),
            "launches": sum(r["launches"] for r in results.values()), "failures": failures, "minimized": minimized,
            "seconds": wall, "shard_seconds": sum(r["seconds"] for r in results.values()),
            "cpu_seconds": sum(r["cpu_seconds"] for r in results.values()),
            "workers": sorted({r["worker"] for r in results.values()}), "results": results, "coverage": coverage,
            "rounds": len(rounds), "round_shards": size}


def _run_shards(shards, client, n_ops, fault, cosim_options, progress, on_result, coverage) -> dict:
    """Shard id -> result, each shard once (its coverage merged into ``coverage`` once): here one after the
    other, or on the cluster of ``client``."""
    results = {}
    if client is None:
        for s in shards:
            results[s["id"]] = r = run_shard(s, n_ops, fault, cosim_options)
            funcov.merge(coverage.setdefault(r["config"], {}), r["coverage"])
            _report(r, progress, on_result)
        return results
    from distributed import as_completed

    run_id = f"{int(time.time() * 1000):x}-{os.getpid()}"
    futures = [client.submit(run_shard, s, n_ops, fault, cosim_options, key=f"fuzz-{run_id}-{s['id']}", retries=1)
               for s in shards]
    for fut in as_completed(futures):
        r = fut.result()
        if r["id"] in results:          # a shard counts once, however often it ran
            continue
        results[r["id"]] = r
        funcov.merge(coverage.setdefault(r["config"], {}), r["coverage"])
        _report(r, progress, on_result)
    return results


def _report(r, progress, on_result):
    if on_result is not None:
        on_result(r)
    if progress:
        found = r["failures"]
        how = "".join([f", steered: {r['bias']}" if r.get("bias") else "", ", DRAM pauses" if r.get("stall") else ""])
        progress(f"{r['id']}: {'OK' if not found else f'{len(found)} failing'} ({r['programs']} programs, "
                 f"{r['seconds']:.1f} s{how})")


def _close(client):
    cluster = client.cluster
    client.close()
    if cluster is not None:
        cluster.close()


def _quiet(text):
    pass


def _minimize(failures, client, cosim_options, out_dir, progress) -> list:
    todo = [f for f in failures if f["program"] is not None]
    if client is None:
        done = [minimize_on_rtl(f, log=_quiet, **(cosim_options or {})) for f in todo]
    else:
        done = client.gather([client.submit(minimize_on_rtl, f, _quiet, **(cosim_options or {}), retries=1)
                              for f in todo])
    out = []
    for f in done:
        m = f["minimized"]
        path = Path(out_dir) / f"{f['config']}-seed{f['seed']}.min.replay"
        if m.get("reproduced"):
            replay.save(path, f)
            progress(f"seed {f['seed']} [{f['config']}]: minimized from {m['before']['insns']} to "
                     f"{m['after']['insns']} instructions: {path}")
            out.append({"seed": f["seed"], "config": f["config"], "file": str(path), **m})
        else:
            progress(f"seed {f['seed']} [{f['config']}]: the replay alone does not fail ({m.get('result')})")
            out.append({"seed": f["seed"], "config": f["config"], **m})
    return out


# ---------------------------------------------------------------------- measurements
def cold_launch(config: Config | str | None) -> float:
    """Wall seconds from a fresh Python process's first ``cosim.run`` to its result (the model already
    built): starting the simulator server, loading the model, one job that runs nothing."""
    import subprocess
    code = ("import time, cosim; from cosim.verify.faults import target_info; t = time.time(); "
            f"cosim.run(target_info, [0], config={load_config(config).name!r}); print(time.time() - t)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return float(out.stdout.split()[-1])


def launch_cost(config: Config | str | None, repeats: int = 3) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one simulator launch that runs nothing (the model already built, the
    simulator server running: the launch is a forked job), the best of ``repeats``."""
    import cosim

    from .faults import target_info

    cosim.run(target_info, [0], config=config)       # builds the model if needed
    best = (float("inf"), float("inf"))
    for _ in range(repeats):
        t, c = time.time(), triage.cpu_seconds()
        cosim.run(target_info, [0], config=config)
        best = min(best, (time.time() - t, triage.cpu_seconds() - c))
    return best


def bench(config: Config | str | None = "small", programs: int = 200, shard: int = 50, workers: int = 2, n_ops: int = 24,
          machines: int = 100, cores_per_machine: int = 32, print_fn: Callable[[str], object] = print) -> dict:
    """Random programs per second, serial against a local cluster, and the launch cost.

    Rates per core divide by the CPU time the shards used (the worker processes and their simulators),
    so they hold on a machine that other jobs share; wall-clock rates are given beside them.
    """
    launch, launch_cpu = launch_cost(config)
    cold = cold_launch(config)
    serial = fuzz(0, programs, [config], n_ops, shard, scheduler=None, progress=None)
    local = fuzz(0, programs, [config], n_ops, shard, scheduler="local", workers=workers, progress=None)
    rows = []
    for name, run in (("serial, 1 process", serial), (f"local cluster, {workers} workers", local)):
        rows.append((name, run["programs"] / run["seconds"], run["programs"] / run["cpu_seconds"],
                     run["cpu_seconds"] / run["seconds"]))
    print_fn(f"random programs ({n_ops} operations, config {load_config(config).name}, {programs} programs, "
             f"{shard} per launch); load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print_fn("| run | programs/s (wall) | programs per CPU-second (per core) | cores used |\n|---|---|---|---|")
    for name, wall, per_core, cores in rows:
        print_fn(f"| {name} | {wall:.2f} | {per_core:.2f} | {cores:.2f} |")
    print_fn(f"launch cost: {launch:.3f} s wall, {launch_cpu:.3f} CPU-s per launch = {launch_cpu / shard * 1000:.1f} "
             f"CPU-ms per program at {shard} programs per launch (a program: {1000 / rows[0][2]:.0f} CPU-ms "
             f"with its share of the launch); the first launch of a process (simulator server start): {cold:.2f} s")
    per_core = rows[1][2]
    fleet = machines * cores_per_machine * per_core
    print_fn(f"{machines} machines x {cores_per_machine} cores at {per_core:.2f} programs per core-second: "
             f"{fleet:.0f} programs/s, {fleet * 3600:.3g} programs/hour")
    return {"launch_s": launch, "launch_cpu_s": launch_cpu, "cold_launch_s": cold, "serial": rows[0], "cluster": rows[1],
            "fleet_per_s": fleet,
            "serial_failures": len(serial["failures"]), "cluster_failures": len(local["failures"])}


@command
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="cluster regressions: measurements")
    parser.add_argument("--bench", action="store_true", help="programs per second, serial vs a local cluster")
    parser.add_argument("--config", default="small")
    parser.add_argument("--programs", type=int, default=200)
    parser.add_argument("--shard", type=int, default=50)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--ops", type=int, default=24)
    args = parser.parse_args(argv)
    if not args.bench:
        parser.error("nothing to do: give --bench (random testing itself is python -m cosim.verify.regress --fuzz N)")
    bench(args.config, args.programs, args.shard, args.workers, args.ops)
    return 0


if __name__ == "__main__":
    run_as_main(__spec__)
