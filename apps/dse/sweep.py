"""Run a sweep: its tasks on a Dask cluster (or one after the other here), each result once, the failures reported.

``run_sweep(sweep, scheduler=...)``:

* ``scheduler=None``: every task in this process, one after the other (still each in its child process);
* ``"local"``: a Dask ``LocalCluster`` of ``workers`` single-threaded worker processes (default 2);
* ``"tcp://host:8786"``: a running cluster whose workers have this repository importable (``PYTHONPATH``) with the
  Verilator and yosys tools; the networks' files are shipped to them, and each worker keeps its own caches.

The tasks (:mod:`apps.dse.tasks`) are, per point, one ``rtl`` (build, then every network) and one ``synth`` per part
family of the boards, and with ``fmax`` one ``fmax`` per ECP5 board the point fits (submitted when the point's
ECP5 synthesis says it fits). Results already in the cache (:mod:`apps.dse.cache`) are read before anything is
submitted; the rest go out with fixed keys (a task whose worker is lost runs again elsewhere) and a priority
(builds and RTL runs first), and each result is counted once, as it arrives. A task that fails (a build error, a
timeout, a network that differs from the reference) is reported with its error and the others go on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from sw.cli import UsageError, progress_bar

from .cache import ROOT, Store, task_key
from .networks import Prepared, prepare
from .spec import Sweep
from .tasks import run_task

if TYPE_CHECKING:
    from distributed import Client

__all__ = ["devices", "boards_of", "plan", "run_sweep", "connect", "DEFAULT_OUT", "VIRTUAL_THREADS"]

DEFAULT_OUT = ROOT / "build" / "dse"
VIRTUAL_THREADS = 2            # python -m apps.onnx's default (--vt)
_PRIORITY = {"rtl": 10, "synth": 0, "fmax": -10}


@cache
def devices() -> tuple:
    """The parts, their boards, limits and clocks: ``python -m fpga.resources --devices`` (fpga.resources.DEVICES)."""
    res = subprocess.run([sys.executable, "-m", "fpga.resources", "--devices"], cwd=ROOT, capture_output=True,
                         text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    if res.returncode:
        raise RuntimeError(f"python -m fpga.resources --devices failed:\n{res.stdout}{res.stderr}")
    return tuple(json.loads(res.stdout))


def boards_of(names: list[str]) -> list[dict]:
    """Each board name's device (a dict of :func:`devices` with its ``board``); an unknown name is a UsageError."""
    known = {b: d for d in devices() for b in d["boards"]}
    out = []
    for name in names:
        if name not in known:
            raise UsageError(f"unknown board {name!r}; the boards: {', '.join(known)}")
        out.append({**known[name], "board": name})
    return out


def _rel(path: Path) -> str:
    """``path`` relative to the repository root when it is inside it (the same place on every machine), else as is."""
    path = Path(path).resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def plan(sweep: Sweep, networks: list[Prepared], boards: list[dict], cache_dir: Path) -> list[dict]:
    """The rtl and synth tasks of every point (see :mod:`apps.dse.tasks` for their fields)."""
    families = list(dict.fromkeys(b["family"] for b in boards))
    tasks = []
    for p in sweep.points:
        common = {"point": p.name, "config": p.config.to_dict(), "cache": _rel(cache_dir)}
        tasks.append({**common, "kind": "rtl", "timeout": sweep.timeout["rtl"], "networks": [
            {"name": n.name, "onnx": _rel(n.onnx), "input": _rel(n.input),
             "key": task_key("rtl", p.config, network=n.digest, virtual_threads=VIRTUAL_THREADS)} for n in networks]})
        for fam in families:
            tasks.append({**common, "kind": "synth", "timeout": sweep.timeout["synth"], "family": fam,
                          "unit": sweep.unit, "key": task_key("synth", p.config, family=fam, unit=sweep.unit)})
    return tasks


def fmax_task(sweep: Sweep, point, board: str, cache_dir: Path) -> dict:
    return {"point": point.name, "config": point.config.to_dict(), "cache": _rel(cache_dir), "kind": "fmax",
            "timeout": sweep.timeout["fmax"], "board": board, "key": task_key("fmax", point.config, board=board)}


def _task_id(task: dict) -> str:
    keys = [n["key"] for n in task["networks"]] if task["kind"] == "rtl" else [task["key"]]
    return f"dse-{task['kind']}-{task['point']}-" + "-".join(k.split("-", 1)[1][:12] for k in keys)


def connect(scheduler: str, workers: int | None = None) -> Client:
    """A Dask client of a local cluster (``"local"``: ``workers`` single-threaded worker processes, default 2)
    or of the running scheduler at ``scheduler``."""
    from cosim.verify.cluster import connect as cluster_connect

    return cluster_connect(scheduler, workers or 2)


def _close(client) -> None:
    cluster = client.cluster
    client.close()
    if cluster is not None:
        cluster.close()


def _cached(task: dict, store: Store) -> dict | None:
    """The task's output from the cache alone, when every one of its results is there."""
    keys = {n["name"]: n["key"] for n in task["networks"]} if task["kind"] == "rtl" else \
        {task["family"] if task["kind"] == "synth" else task["board"]: task["key"]}
    hits = {name: store.get(key) for name, key in keys.items()}
    if any(h is None for h in hits.values()):
        return None
    return {"kind": task["kind"], "point": task["point"], "worker": "cache", "seconds": 0.0,
            "results": {name: {**h, "cached": True} for name, h in hits.items()}}


def run_sweep(sweep: Sweep, scheduler: str | None = "local", workers: int | None = None,
              out_dir: str | Path = DEFAULT_OUT, client: Client | None = None,
              progress: Callable[[str], object] | None = print,
              on_result: Callable[[dict], object] | None = None) -> dict:
    """Run every task of ``sweep`` not already cached (see the module doc); returns the sweep's results: the points
    with their rtl, synth and fmax results by network, family and board, the boards, and the run's counts and
    seconds (``wall_seconds``: from the call to the return, starting the cluster included)."""
    t0 = time.time()
    out_dir = Path(out_dir)
    boards = boards_of(sweep.boards)
    ecp5 = [b for b in boards if b["family"] == "ecp5"]
    if sweep.fmax and not ecp5:
        raise UsageError("fmax: nextpnr's Fmax is measured for ECP5 boards only; add the board ulx3s")
    cache_dir = out_dir / "cache"
    store = Store(cache_dir)
    networks = [prepare(n, out_dir / "networks") for n in sweep.networks]
    tasks = plan(sweep, networks, boards, cache_dir)
    by_name = {p.name: p for p in sweep.points}
    points = {p.name: {"rtl": {}, "synth": {}, "fmax": {}} for p in sweep.points}
    stats = {"tasks": 0, "tasks_cached": 0, "computed": 0, "cached": 0, "failed": 0, "workers": set()}
    fmax_asked: set = set()
    bar = progress_bar(len(tasks), f"dse {sweep.name}")

    def more_tasks(out) -> list[dict]:
        """The fmax tasks an ECP5 synthesis result calls for."""
        if not sweep.fmax or out["kind"] != "synth":
            return []
        new = []
        for b in ecp5:
            res = out["results"].get(b["family"], {})
            ok = res.get("devices", {}).get(b["label"], {}).get("fits")
            if ok and (out["point"], b["board"]) not in fmax_asked:
                fmax_asked.add((out["point"], b["board"]))
                new.append(fmax_task(sweep, by_name[out["point"]], b["board"], cache_dir))
        bar.total += len(new)
        return new

    def record(out: dict) -> None:
        stats["tasks"] += 1
        if out["worker"] == "cache":
            stats["tasks_cached"] += 1
        else:
            stats["workers"].add(out["worker"])
        for name, res in out["results"].items():
            points[out["point"]][out["kind"]][name] = res
            stats["failed" if "error" in res else "cached" if res.get("cached") else "computed"] += 1
        bar.update()
        if progress:
            progress(_line(out))
        if on_result is not None:
            on_result(out)

    todo = []
    pending = list(tasks)
    while pending:                              # the cache first (its fmax tasks too), nothing submitted
        task = pending.pop(0)
        out = _cached(task, store)
        if out is None:
            todo.append(task)
            continue
        record(out)
        pending += more_tasks(out)
    cluster_seconds = 0.0
    ran = "none" if todo and scheduler is None and client is None else (scheduler or "client") if todo else None
    if todo:
        if scheduler is None and client is None:
            while todo:
                out = run_task(todo.pop(0))
                record(out)
                todo += more_tasks(out)
        else:
            t = time.time()
            own = connect(scheduler, workers) if client is None else None
            client = client or own
            cluster_seconds = time.time() - t
            try:
                _on_cluster(client, todo, scheduler, networks, record, more_tasks)
            finally:
                if own is not None:
                    _close(own)
    bar.close()
    stats["workers"] = sorted(stats["workers"])
    return {"sweep": sweep.name, "params": sweep.params, "unit": sweep.unit, "fmax": sweep.fmax,
            "networks": [{"name": n.name, "onnx": str(n.onnx), "input": str(n.input), "digest": n.digest}
                         for n in networks],
            "boards": boards,
            "points": [{"name": p.name, "values": p.values, "config": p.config.to_dict(), **points[p.name]}
                       for p in sweep.points],
            "stats": {**stats, "wall_seconds": round(time.time() - t0, 1), "cluster_start_seconds":
                      round(cluster_seconds, 1), "scheduler": ran}}


def _on_cluster(client, tasks, scheduler, networks, record, more_tasks) -> None:
    from distributed import as_completed

    files = None
    if isinstance(scheduler, str) and scheduler.startswith("tcp://"):
        # workers on other machines: the networks' files travel with the tasks, written where missing
        data = {_rel(p): Path(p).read_bytes() for n in networks for p in (n.onnx, n.input)}
        [files] = client.scatter([data], broadcast=False, hash=True)

    def submit(task):
        fut = client.submit(run_task, task, files, key=_task_id(task), retries=1, priority=_PRIORITY[task["kind"]])
        return fut, task

    futures = dict(submit(t) for t in tasks)
    ac = as_completed(list(futures))
    done: set = set()
    for fut in ac:
        task = futures[fut]
        try:
            out = fut.result()
        except Exception as err:  # noqa: BLE001 - a task that could not run at all: its results are failures
            out = _failed(task, f"{type(err).__name__}: {err}")
        if _task_id(task) in done:          # each task counts once, however often it ran
            continue
        done.add(_task_id(task))
        record(out)
        for new in more_tasks(out):
            nf, nt = submit(new)
            futures[nf] = nt
            ac.add(nf)


def _failed(task: dict, error: str) -> dict:
    names = [n["name"] for n in task["networks"]] if task["kind"] == "rtl" else \
        [task["family"] if task["kind"] == "synth" else task["board"]]
    return {"kind": task["kind"], "point": task["point"], "worker": "none", "seconds": 0.0,
            "results": {n: {"error": error} for n in names}}


def _line(out: dict) -> str:
    parts = []
    for name, r in out["results"].items():
        if "error" in r:
            parts.append(f"{name}: FAILED: {r['error'].splitlines()[0]}")
        elif out["kind"] == "rtl":
            parts.append(f"{name}: {r['cycles']:,} cycles{' (cached)' if r.get('cached') else ''}")
        elif out["kind"] == "synth":
            c = r["counts"]
            parts.append(f"{name}: LUT {r['LUT']:,} FF {c.get('FF', 0):,} DSP {c.get('DSP', 0)} BRAM {r['BRAM']:g}"
                         f"{' (cached)' if r.get('cached') else ''}")
        else:
            parts.append(f"{name}: Fmax {r['fmax_mhz']:.1f} MHz{' (cached)' if r.get('cached') else ''}")
    where = "cache" if out["worker"] == "cache" else f"{out['worker']}, {out['seconds']:.0f} s"
    return f"{out['point']} {out['kind']} [{where}]: " + "; ".join(parts)
