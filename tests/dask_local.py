"""A real Dask cluster on localhost for the tests of the cluster paths (the fuzzer's, the design-space sweep's): a
``dask scheduler`` and single-threaded ``dask worker`` processes, each started in its own session so that killing
one takes its nanny, its worker and everything they run; the project importable and the co-simulation's model
cache shared, as on a cluster someone runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _start(args, log, env):
    return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)


def _stop(proc):
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


@dataclass
class Cluster:
    """The client of a running local cluster; ``pids``: worker address -> the worker's process id."""
    client: object
    workers: list
    pids: dict = field(default_factory=dict)

    def kill(self, addr: str) -> None:
        """SIGKILL the worker at ``addr`` with its whole process group (nanny, worker, the tasks' children)."""
        victim = next(p for p in self.workers if os.getpgid(self.pids[addr]) == p.pid)
        os.killpg(victim.pid, signal.SIGKILL)


@contextmanager
def local_cluster(tmp_path: Path, workers: int = 2):
    """A scheduler and ``workers`` workers on 127.0.0.1 (log: ``tmp_path/dask.log``), stopped on exit."""
    from distributed import Client

    from cosim.model.build import CACHE_DIR
    dask = str(Path(sys.executable).parent / "dask")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "")
                                                                      .split(os.pathsep) if p]),
               VTA_COSIM_CACHE=str(CACHE_DIR))
    file = tmp_path / "scheduler.json"
    log = open(tmp_path / "dask.log", "w")
    procs = [_start([dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                     "--scheduler-file", str(file)], log, env)]
    client = None
    try:
        deadline = time.time() + 60
        while not file.exists() and time.time() < deadline:
            time.sleep(0.2)
        started = [_start([dask, "worker", "--scheduler-file", str(file), "--nthreads", "1", "--nworkers", "1",
                           "--no-dashboard", "--host", "127.0.0.1", "--name", f"w{i}"], log, env)
                   for i in range(workers)]
        procs += started
        client = Client(scheduler_file=str(file), timeout=60)
        client.wait_for_workers(workers, timeout=120)
        yield Cluster(client, started, client.run(os.getpid))
    finally:
        if client is not None:
            client.close()
        for p in reversed(procs):
            _stop(p)
        log.close()
