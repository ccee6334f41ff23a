"""The cocotb test module that ``cosim.run`` launches: runs queued jobs with the RTL as the runtime target.

A job file (pickle, path in ``VTA_COSIM_JOB``) holds the config, the device settings and a list of
``(module, function, args, kwargs)``; each function runs in a bridge thread with a fresh runtime on
the RTL, and its return value (or exception) is pickled into the result file.
"""

from __future__ import annotations

import importlib
import os
import pickle
import traceback

import cocotb
from cocotb.task import bridge
from cocotb.triggers import ClockCycles, RisingEdge


def _call(job, device):
    from sw import runtime

    results = []
    for module, name, args, kwargs in job["calls"]:
        fn = getattr(importlib.import_module(module), name)
        queue = runtime.CommandQueue(device, **job.get("queue_args", {}))
        previous = runtime.set_current(queue)
        try:
            results.append(("ok", fn(*args, **kwargs)))
        except BaseException as err:  # noqa: BLE001 - every failure goes back to the caller
            try:
                pickle.dumps(err)
                results.append(("error", err, traceback.format_exc()))
            except Exception:
                results.append(("error", RuntimeError(f"{type(err).__name__}: {err}"), traceback.format_exc()))
        finally:
            runtime.set_current(previous)
    return results


@cocotb.test()
async def run_jobs(dut):
    from sw.config import load_config

    from .rtl import RtlDevice

    job_path = os.environ["VTA_COSIM_JOB"]
    with open(job_path, "rb") as fh:
        job = pickle.load(fh)
    await ClockCycles(dut.clk, 6)       # the testbench holds reset for 4 cycles
    cfg = load_config(job["config"])
    device = RtlDevice(dut, cfg, **job.get("device_args", {}))
    results = await bridge(_call)(job, device)
    trace = device.trace() if job.get("device_args", {}).get("trace") else None
    with open(job["result"], "wb") as fh:
        pickle.dump({"results": results, "trace": trace}, fh)
