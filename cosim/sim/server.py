"""Persistent co-simulation servers: one Verilated simulator per model, serving every ``cosim.run`` call.

Starting a simulator (process start, cocotb, Python imports inside it, the reset) costs seconds, so
:func:`simulator_for` starts one per model the first time it is needed and keeps it for the life of
the calling process; each call is then a job sent over a pipe. The server (:mod:`cosim.sim.entry`) forks
a child per job from its pristine post-reset state, so every call starts exactly like a fresh
launch (accelerator, SRAMs, DRAM and its allocator), and a call that crashes the simulator loses
only its child. The simulator is executed directly (no make, no cocotb runner), is shut down at
interpreter exit, and exits by itself when its client dies (its job pipe closes). Each process
(each pytest-xdist worker) has its own servers.

Waveform runs use a one-shot simulator instead (tracing is set up for the whole process): it runs
the job in place and exits, which completes the FST file. The profile-guided build (:mod:`cosim.model.pgo`)
runs its training the same way (:func:`train`): gcc writes the profile when the process exits normally.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from ..model.build import TOPLEVEL, Model, toolchain_env
from .channel import FDS_ENV, Channel

__all__ = ["Simulator", "SimulatorError", "simulator_for", "shutdown_all", "train"]

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 300.0        # seconds for a simulator to come up (a loaded machine is slow, a hang is not)
_SERVERS: dict = {}
_LOCK = threading.Lock()


class SimulatorError(RuntimeError):
    """The simulator process failed: it crashed, or a job's child died without a result."""


def _cocotb_env() -> dict:
    """What cocotb's runner would put in the simulator's environment, computed once per process."""
    if "env" in _ENV_CACHE:
        return dict(_ENV_CACHE["env"])
    import cocotb_tools.config
    import find_libpython

    env = toolchain_env()
    libpython = env.get("LIBPYTHON_LOC") or find_libpython.find_libpython()
    if libpython is None:
        raise SimulatorError("cocotb needs libpython and find_libpython found none for this interpreter")
    env.setdefault("GPI_USERS", f"{libpython};{cocotb_tools.config.pygpi_entry_point()}")
    env["PATH"] = env.get("PATH", "") + os.pathsep + str(cocotb_tools.config.libs_dir)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in sys.path if p])
    env["PYGPI_PYTHON_BIN"] = sys.executable
    env["COCOTB_TOPLEVEL"] = TOPLEVEL
    env["COCOTB_TEST_MODULES"] = "cosim.sim.entry"
    env["TOPLEVEL_LANG"] = "verilog"
    env.setdefault("COCOTB_TRUST_INERTIAL_WRITES", "1")
    # cocotb's default runs pytest's assertion rewriting over every module the simulator imports (numpy,
    # tvm-ffi, the runtime): 0.6 s of its start. Jobs are plain functions, whose asserts need no rewriting.
    env.setdefault("COCOTB_REWRITE_ASSERTION_FILES", "")
    _ENV_CACHE["env"] = env
    return dict(env)


_ENV_CACHE: dict = {}


class Simulator:
    """One simulator process of ``model``; :meth:`submit` runs a job in it and returns its results."""

    def __init__(self, model: Model, waves: bool = False, fork: bool = True):
        self.model = model
        self.waves = waves
        self.owner = os.getpid()
        self.dir = Path(tempfile.mkdtemp(prefix=f"vta-cosim-{model.cfg.name}-"))
        self.log = self.dir / "sim.log"
        self.jobs = 0
        self.lock = threading.Lock()           # one job at a time (callers may be threads)
        t = time.time()
        job_r, job_w = os.pipe()
        res_r, res_w = os.pipe()
        env = _cocotb_env()
        env[FDS_ENV] = f"{job_r},{res_w}"
        env["VTA_COSIM_FORK"] = "0" if waves or not fork else "1"
        env["COCOTB_RESULTS_FILE"] = str(self.dir / "results.xml")
        cmd = [str(model.executable)] + (["--trace"] if waves else [])
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(cmd, cwd=self.dir, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, pass_fds=(job_r, res_w))
        os.close(job_r)
        os.close(res_w)
        self.chan = Channel(res_r, job_w)
        hello = self.chan.recv()
        if not hello or not hello.get("ready"):
            self._kill()
            raise SimulatorError(f"the simulator of config {model.cfg.name} did not start; its log ends with:\n"
                                 f"{self.log_tail()}")
        self.start_seconds = time.time() - t

    def log_tail(self, path: str | Path | None = None, n: int = 5000) -> str:
        path = Path(path or self.log)
        return path.read_text(errors="replace")[-n:] if path.exists() else ""

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None and self.owner == os.getpid()

    def submit(self, job: dict) -> dict:
        """Run one job (see :mod:`cosim.sim.entry`); return what it pickled: results, trace, start time."""
        with self.lock:
            return self._submit(job)

    def _submit(self, job: dict) -> dict:
        import pickle

        self.jobs += 1
        job = dict(job, result=str(self.dir / f"result-{self.jobs}.pkl"), log=str(self.dir / f"job-{self.jobs}.log"))
        result = Path(job["result"])
        try:
            self.chan.send(job)
            status = self.chan.recv()
        except OSError:
            status = None
        if status is None:                  # the server itself died
            self._kill()
            raise SimulatorError(f"the simulator of config {self.model.cfg.name} exited during a job; its log ends "
                                 f"with:\n{self.log_tail(job['log']) or self.log_tail()}")
        if not result.exists():
            how = (f"was killed by signal {-status['exit']}" if status["exit"] < 0
                   else f"exited with code {status['exit']}")
            detail = status.get("error") or self.log_tail(job["log"]) or self.log_tail()
            raise SimulatorError(f"the simulation of config {self.model.cfg.name} {how} without a result; "
                                 f"its log ends with:\n{detail}")
        out = pickle.loads(result.read_bytes())
        result.unlink()
        Path(job["log"]).unlink(missing_ok=True)
        return out

    def close(self, timeout: float = 10.0) -> None:
        """Shut the simulator down (it finishes when its job pipe closes) and remove its directory."""
        if self.proc.poll() is None:
            self.chan.close()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._kill()
        else:
            self.chan.close()
        if not self.waves:
            shutil.rmtree(self.dir, ignore_errors=True)

    def _kill(self):
        self.chan.close()
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def simulator_for(model: Model) -> tuple:
    """The running server of ``model`` (started when there is none); returns (simulator, started now)."""
    key = str(model.build_dir)
    with _LOCK:
        sim = _SERVERS.get(key)
        if sim is not None and sim.alive:
            return sim, False
        sim = Simulator(model)
        _SERVERS[key] = sim
        return sim, True


def train(model: Model) -> None:
    """Run :func:`cosim.model.pgo.training` in place in a one-shot simulator of ``model`` and let it exit."""
    sim = Simulator(model, fork=False)
    try:
        out = sim.submit({"config": model.cfg, "calls": [("cosim.model.pgo", "training", (), {})]})
    finally:
        sim.close(timeout=60.0)
    status, value, *trace = out["results"][0]
    if status != "ok":
        raise SimulatorError(f"the training run of the profile-guided build of config {model.cfg.name} failed:\n"
                             f"{trace[0] if trace else value}")


def shutdown_all() -> None:
    """Stop every server this process started."""
    with _LOCK:
        servers = [s for s in _SERVERS.values() if s.owner == os.getpid()]
        _SERVERS.clear()
    for sim in servers:
        sim.close()


atexit.register(shutdown_all)
