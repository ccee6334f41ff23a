"""The tasks of a sweep: what a worker runs for one point, each in a child process with a timeout.

A task is a dict (built by :mod:`apps.dse.sweep`): ``kind`` (``rtl``, ``synth`` or ``fmax``), ``point`` (the config's
name), ``config`` (its JSON keys), ``cache`` (the :class:`~apps.dse.cache.Store` directory), ``timeout`` (seconds),
and per kind:

* ``rtl``: ``networks``, a list of ``{"name", "onnx", "input", "key"}``: the Verilator model of the config is built
  (or taken from the model cache), then each network runs on the RTL (:func:`apps.dse.measure.run_network`);
* ``synth``: ``family``, ``unit`` (a block of ``fpga.resources --unit``, or None) and ``key``: ``python -m
  fpga.resources --json`` (yosys, with its own cache in ``build/synth``) on the config's Verilog as the
  co-simulation generates and caches it (:func:`cosim.model.verilog.generate`: one elaboration per config for its
  model and every family);
* ``fmax``: ``board`` and ``key``: ``python -m fpga.board`` (yosys, nextpnr) and its report's Fmax.

:func:`run_task` (on a worker) returns ``{"kind", "point", "worker", "seconds", "results": {name: result}}``, one
result per network, family or board: the cached one when there is one, else computed by ``python -m
apps.dse.tasks TASK OUT`` in a new session (its process group, with the simulator or yosys under it, is killed at
the timeout) and stored as soon as it is known (an rtl task stores each network's result when it is done). A
result that failed is ``{"error": message}`` and is not stored. The child kills its process group when the worker
that started it dies, so a killed worker leaves nothing running.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

from sw.cli import run_as_main
from sw.config import Config

from .cache import Store
from .measure import run_network

__all__ = ["run_task", "fmax_of", "main", "ROOT"]

ROOT = Path(__file__).resolve().parents[2]
_LOG_TAIL = 25                     # lines of a failed child's log in its error


def _names(task: dict) -> list[str]:
    if task["kind"] == "rtl":
        return [n["name"] for n in task["networks"]]
    return [task["family"] if task["kind"] == "synth" else task["board"]]


def _keys(task: dict) -> dict:
    if task["kind"] == "rtl":
        return {n["name"]: n["key"] for n in task["networks"]}
    return {_names(task)[0]: task["key"]}


def run_task(task: dict, files: dict | None = None) -> dict:
    """Run one task on this machine (see the module doc). ``files``: {path: bytes} of network files to write here
    first where they are missing (a worker on another machine)."""
    t0 = time.time()
    store = Store(ROOT / task["cache"])
    keys = _keys(task)
    results: dict = {}
    for name, key in keys.items():
        hit = store.get(key)
        if hit is not None:
            results[name] = {**hit, "cached": True}
    todo = [name for name in keys if name not in results]
    if todo:
        for path, data in (files or {}).items():
            target = ROOT / path
            if not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
        sub = dict(task)
        if task["kind"] == "rtl":
            sub["networks"] = [n for n in task["networks"] if n["name"] in todo]
        out = _run_child(sub)
        for name in todo:
            stored = store.get(keys[name])
            if stored is not None:
                results[name] = {**stored, "cached": False}
            else:
                results[name] = {"error": out.get("errors", {}).get(name) or out.get("error") or "no result"}
        if task["kind"] == "rtl" and "build" in out:
            for name in todo:
                results[name]["build"] = out["build"]
    return {"kind": task["kind"], "point": task["point"], "worker": f"{socket.gethostname()}:{os.getpid()}",
            "seconds": time.time() - t0, "results": {name: results[name] for name in keys}}


def _work_dir(task: dict) -> Path:
    tag = hashlib.sha256(json.dumps(task, sort_keys=True, default=str).encode()).hexdigest()[:16]
    return ROOT / "build" / "dse" / "work" / f"{task['point']}-{task['kind']}-{tag}"


def _run_child(task: dict) -> dict:
    """``python -m apps.dse.tasks`` on ``task`` in a new session with the task's timeout: the child's output, or
    ``{"error": ...}`` when it timed out, crashed or wrote nothing."""
    work = _work_dir(task)
    work.mkdir(parents=True, exist_ok=True)
    (work / "task.json").write_text(json.dumps(task, indent=1))
    out_path = work / "out.json"
    out_path.unlink(missing_ok=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(ROOT)]))
    timeout = float(task["timeout"])
    with open(work / "log.txt", "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "apps.dse.tasks", str(work / "task.json"), str(out_path)],
                                cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc.pid)
            proc.wait()
            out = _read(out_path)
            return {**out, "error": f"timed out after {timeout:g} s (log: {work / 'log.txt'})"}
        finally:
            if proc.poll() is None:         # this thread was interrupted: leave nothing running
                _kill_group(proc.pid)
    out = _read(out_path)
    if rc != 0 or not out:
        tail = "\n".join((work / "log.txt").read_text(errors="replace").splitlines()[-_LOG_TAIL:])
        out.setdefault("error", f"exit code {rc}; the end of {work / 'log.txt'}:\n{tail}")
    return out


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {}


# ------------------------------------------------------------------------------------------- in the child
def _watch_parent() -> None:
    """Kill this process group when the process that started this one is gone (a worker killed mid-task)."""
    parent = os.getppid()

    def loop():
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os.killpg(os.getpgrp(), signal.SIGKILL)
    threading.Thread(target=loop, daemon=True, name="dse-watch-parent").start()


def _config_file(task: dict, work: Path) -> Path:
    path = work / f"{task['point']}.json"
    path.write_text(json.dumps(task["config"], indent=1))
    return path


def _child_rtl(task: dict, out: dict, write) -> None:
    from cosim import build_model

    cfg = Config.from_dict(task["config"], name=task["point"])
    store = Store(ROOT / task["cache"])
    try:
        t = time.time()
        model = build_model(cfg)
        out["build"] = {"seconds": round(time.time() - t, 1), "built": model.seconds > 0}
    except Exception as err:  # noqa: BLE001 - the point's failure, reported with its message
        out["error"] = f"build: {type(err).__name__}: {err}"
        return
    write()
    for net in task["networks"]:
        try:
            result = run_network(cfg, str(ROOT / net["onnx"]), str(ROOT / net["input"]))
        except Exception as err:  # noqa: BLE001 - this network's failure; the point's other networks go on
            traceback.print_exc()
            out.setdefault("errors", {})[net["name"]] = f"{type(err).__name__}: {err}"
        else:
            if result["exact"]:
                store.put(net["key"], result)
            else:
                out.setdefault("errors", {})[net["name"]] = (
                    f"the RTL's tensors differ from the numpy reference ({result['cycles']} cycles)")
        write()


def _tool(cmd: list, work: Path) -> str:
    """Run a tool of this repository (``python -m ...``) in this process group; its stdout, or an error with the
    end of its output."""
    res = subprocess.run([sys.executable, "-m", *cmd], cwd=ROOT, capture_output=True, text=True)
    sys.stderr.write(res.stderr)
    if res.returncode:
        tail = "\n".join((res.stdout + res.stderr).splitlines()[-_LOG_TAIL:])
        raise RuntimeError(f"python -m {' '.join(map(str, cmd))} failed (exit code {res.returncode}):\n{tail}")
    return res.stdout


def _child_synth(task: dict, work: Path) -> dict:
    cmd = ["fpga.resources", "--config", str(_config_file(task, work)), "--family", task["family"], "--json"]
    if task.get("unit"):
        cmd += ["--unit", task["unit"]]
    else:           # the Verilog the co-simulation generated (or generates, once, for both)
        from cosim.model.verilog import generate

        cmd += ["--verilog", str(generate(Config.from_dict(task["config"], name=task["point"])).verilog)]
    data = json.loads(_tool(cmd, work).strip().splitlines()[-1])
    return data["families"][task["family"]]


def _child_fmax(task: dict, work: Path) -> dict:
    build = work / "board"
    _tool(["fpga.board", "--board", task["board"], "--config", str(_config_file(task, work)), "-o", str(build)], work)
    rep = json.loads((build / "report.json").read_text())
    return fmax_of(rep)


def fmax_of(report: dict) -> dict:
    """The Fmax of a board build's report (``fpga.board``'s report.json): the slowest clock's, in MHz, with
    nextpnr's target."""
    clocks = report.get("fmax") or {}
    if not clocks:
        raise RuntimeError("the board build's report names no clock's Fmax")
    clock, f = min(clocks.items(), key=lambda kv: kv[1]["fmax_mhz"])
    return {"fmax_mhz": f["fmax_mhz"], "target_mhz": f["target_mhz"], "clock": clock,
            "pll_mhz": report.get("pll_mhz"), "seconds": report.get("seconds")}


def main(argv: list[str] | None = None) -> int:
    """``python -m apps.dse.tasks TASK.json OUT.json``: one task's work (the child of :func:`run_task`)."""
    task_path, out_path = argv if argv is not None else sys.argv[1:]
    _watch_parent()
    task = json.loads(Path(task_path).read_text())
    work = Path(out_path).parent
    out: dict = {}

    def write():
        tmp = Path(out_path).with_suffix(".tmp")
        tmp.write_text(json.dumps(out, indent=1))
        os.replace(tmp, out_path)

    try:
        if task["kind"] == "rtl":
            _child_rtl(task, out, write)
        else:
            result = _child_synth(task, work) if task["kind"] == "synth" else _child_fmax(task, work)
            Store(ROOT / task["cache"]).put(task["key"], result)
    except Exception as err:  # noqa: BLE001 - reported to the parent
        traceback.print_exc()
        out["error"] = f"{type(err).__name__}: {err}"
    write()
    return 0 if "error" not in out and not out.get("errors") else 1


if __name__ == "__main__":
    run_as_main(__spec__)
