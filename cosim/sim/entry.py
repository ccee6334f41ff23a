"""The cocotb test module the simulator runs: a server of co-simulation jobs (see :mod:`cosim.sim.server`).

After the reset it imports what every job needs, tells the client it is ready, and then reads jobs
from a pipe. In the normal mode it never simulates a job itself: for each job it forks, the child
runs the job from the pristine post-reset state (accelerator, SRAMs, DRAM, allocator, testbench)
and exits, and the parent reports how the child ended. So no state can leak from one job to the
next, and a job that crashes or hangs the accelerator cannot poison the next one. With
``VTA_COSIM_FORK=0`` (waveforms) it runs each job in place.

A job is ``{"config", "calls": [(module, function, args, kwargs)], "device_args", "queue_args",
"result": path, "log": path, "env": {...}, "t_submit"}``; each function runs in a bridge thread with
a fresh runtime on the RTL, and the results (value or exception per call) are pickled to ``result``.
"""

from __future__ import annotations

import importlib
import os
import pickle
import sys
import time
import traceback

import cocotb
from cocotb.task import bridge
from cocotb.triggers import ClockCycles

from .channel import Channel
from .coverage_dump import write_job_coverage
from .locate import INSIDE_ENV, SCRIPT_PREFIX, load

RESET_CYCLES = 6          # the testbench holds reset for 4 cycles


def _call(job, device):
    from sw import runtime

    results, seconds = [], []
    for module, name, args, kwargs in job["calls"]:
        queue = runtime.CommandQueue(device, **job.get("queue_args", {}))
        previous = runtime.set_current(queue)
        t = time.perf_counter()
        try:
            fn = load(module, name)
            results.append(("ok", fn(*args, **kwargs)))
        except BaseException as err:  # noqa: BLE001 - every failure goes back to the caller
            try:
                pickle.dumps(err)
                results.append(("error", err, traceback.format_exc()))
            except Exception:  # noqa: BLE001 - an exception that does not pickle goes back as text
                results.append(("error", RuntimeError(f"{type(err).__name__}: {err}"), traceback.format_exc()))
        finally:
            runtime.set_current(previous)
            seconds.append(time.perf_counter() - t)
    return results, seconds


async def _run_job(dut, job):
    from sw.config import load_config

    from .rtl import RtlDevice

    started = time.time()
    os.environ.update(job.get("env", {}))
    cfg = load_config(job["config"])
    device = RtlDevice(dut, cfg, **job.get("device_args", {}))
    results, seconds = await bridge(_call)(job, device)
    trace = device.trace() if job.get("device_args", {}).get("trace") else None
    write_job_coverage()               # coverage models: this job's counters (cosim/sim/coverage_dump.py)
    tmp = job["result"] + ".tmp"
    with open(tmp, "wb") as fh:
        pickle.dump({"results": results, "seconds": seconds, "trace": trace, "started": started,
                     "finished": time.time()}, fh)
    os.replace(tmp, job["result"])


def _preload(job):
    """Import the job's modules in the server, so the children of later jobs start with them loaded."""
    for module, *_ in job["calls"]:
        if module.startswith(SCRIPT_PREFIX):     # a user's script is imported by each job's child, not here
            continue
        try:
            importlib.import_module(module)
        except Exception:  # noqa: BLE001 - the job's child reports the error
            pass


def _child(job):
    """The forked child: output to the job's log, run the job, exit without the parent's cleanup."""
    fd = os.open(job["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    sys.stdout.flush(), sys.stderr.flush()
    os.dup2(fd, 1), os.dup2(fd, 2)
    os.close(fd)


@cocotb.test()
async def serve(dut):
    await ClockCycles(dut.clk, RESET_CYCLES)
    os.environ[INSIDE_ENV] = "1"          # cosim.run inside a job (a script's unguarded top level) is an error
    import numpy  # noqa: F401 - everything a job needs, loaded once before the first fork

    from sw import registers, runtime  # noqa: F401 - the register map (no Amaranth) and the runtime

    from . import rtl
    rtl.dram_view()
    chan = Channel.from_env()
    chan.send({"ready": True, "pid": os.getpid()})
    fork = os.environ.get("VTA_COSIM_FORK", "1") != "0"
    while True:
        job = chan.recv()
        if job is None:                   # the client closed the pipe: shut down
            return
        if not fork:
            try:
                await _run_job(dut, job)
                chan.send({"exit": 0})
            except BaseException:  # noqa: BLE001 - reported to the client
                chan.send({"exit": 1, "error": traceback.format_exc()})
            continue
        _preload(job)
        pid = os.fork()
        if pid == 0:
            code = 1
            chan.close()                  # only the server talks to the client
            try:
                _child(job)
                await _run_job(dut, job)
                code = 0
            except BaseException:  # noqa: BLE001 - the log holds it, the parent reports the exit code
                traceback.print_exc()
            finally:
                sys.stdout.flush(), sys.stderr.flush()
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        chan.send({"exit": os.waitstatus_to_exitcode(status)})
