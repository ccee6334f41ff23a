"""Co-simulation: the runtime drives the Verilated RTL, bit-exact with the golden model.

``cosim.run(fn, *args, config=None, waves=False)`` runs the module-level function ``fn(*args)``
inside a cocotb simulation of the accelerator with the RTL as the runtime's default target, and
returns its return value unchanged. ``fn`` may live in any importable module or in the script being
run (:mod:`cosim.sim.locate`); its arguments and return value travel pickled. The same ``fn`` runs on the golden
model when called directly.
The simulator of each config stays up between calls (:mod:`cosim.sim.server`); every call still starts
from a freshly reset accelerator with zeroed memories.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, overload

from sw.config import Config, load_config
from sw.runtime import runners
from sw.runtime.runners import Batch, Timings

from .model.build import BuildError, ToolchainError, build_model
from .sim.locate import INSIDE_ENV
from .sim.locate import locate as _locate_call
from .sim.server import SimulatorError

__all__ = ["run", "run_many", "submit", "build_model", "BuildError", "ToolchainError", "CosimError"]

CosimError = SimulatorError     # the simulation itself failed (it crashed or did not report a result)


def run(fn: Callable, *args, config: Config | str | None = None, waves: bool = False, **options) -> Any:
    """Run ``fn(*args)`` on the RTL of ``config`` and return what it returns."""
    return run_many([(fn, args, {})], config=config, waves=waves, **options)[0]


@overload
def run_many(calls: list[tuple[Callable, tuple, dict]], config: Config | str | None = None, waves: bool = False,
             return_trace: Literal[False] = False, **options: Any) -> list: ...
@overload
def run_many(calls: list[tuple[Callable, tuple, dict]], config: Config | str | None = None, waves: bool = False, *,
             return_trace: Literal[True], **options: Any) -> tuple[list, Any]: ...
def run_many(calls: list[tuple[Callable, tuple, dict]], config: Config | str | None = None, waves: bool = False,
             return_trace: bool = False, **options: Any) -> list | tuple[list, Any]:
    """Run several ``(fn, args, kwargs)`` in one simulation, in order; return their results (and the trace of the
    run with ``return_trace``). The options are :func:`submit`'s."""
    batch = submit(calls, config, waves=waves, trace=return_trace or options.pop("trace", False), **options)
    if return_trace:
        return batch.values, batch.extra["trace"]
    return batch.values


def submit(calls: list[tuple[Callable, tuple, dict]], config: Config | str | None = None, waves: bool = False,
           watchdog_cycles: int = 100_000, dram_latency: int = 20, dram_bytes_per_cycle: int = 8, trace: bool = False,
           queue_args: dict | None = None, mem: str = "dpi", mem_seed: int = 0, coverage: bool = False,
           dram_stall: int = 0) -> Batch:
    """Run several ``(fn, args, kwargs)`` in one simulation, in order; return a :class:`~sw.runtime.runners.Batch`:
    their results, the :class:`~sw.runtime.runners.Timings` of the run and, with ``trace``, the run's trace in
    ``extra["trace"]``. This is the ``"rtl"`` runner of :mod:`sw.runtime.runners`.

    The calls share the accelerator and device memory like consecutive programs on one board; each
    ``run_many`` starts from a freshly reset accelerator with zeroed SRAMs and DRAM. An exception
    raised by a call is re-raised here (the first one, after all calls ran).
    ``mem="cocotbext"`` serves the memory port with cocotbext-axi's AxiRam (random pauses seeded by
    ``mem_seed``, :mod:`cosim.sim.axiram`); ``dram_stall = seed << 8 | p`` makes the DPI DRAM pause each of its
    channels with chance ``p``/256 per cycle (a pattern repeatable from ``seed``; 0: no pauses);
    ``coverage=True`` runs the code-coverage model (:mod:`cosim.verify.coverage`).
    """
    from .model import pgo
    from .sim import server

    t_submit = time.time()
    cfg = load_config(config)
    waves = waves or bool(int(os.environ.get("WAVES", "0") or 0))
    if os.environ.get(INSIDE_ENV):
        raise RuntimeError("cosim.run was called inside the co-simulation: the simulator imports your script to find "
                           "the function, which runs its top-level code again; put the cosim.run call under "
                           "`if __name__ == \"__main__\":`")
    entries = [(*_locate_call(fn), tuple(args), dict(kwargs)) for fn, args, kwargs in calls]
    model = build_model(cfg, waves=waves, mem=mem, coverage=coverage)
    if pgo.wanted(waves, mem, coverage):
        model = pgo.pgo_model(model, server.train)
    job = {"config": cfg, "calls": entries, "t_submit": t_submit,
           "device_args": {"watchdog_cycles": watchdog_cycles, "dram_latency": dram_latency,
                           "dram_bytes_per_cycle": dram_bytes_per_cycle, "trace": trace,
                           **({"dram_stall": dram_stall} if dram_stall else {}),
                           **({"mem": mem, "mem_seed": mem_seed} if mem != "dpi" else {})},
           "queue_args": queue_args or {},
           "env": {k: v for k, v in os.environ.items() if k.startswith("VTA_")}}
    if waves:
        sim, started = server.Simulator(model, waves=True), True
        try:
            out = sim.submit(job)
        finally:
            sim.close()
        fst = sim.dir / "dump.fst"
        if fst.exists():
            dest = Path("build") / "waves" / f"{cfg.name}-{entries[0][1]}.fst"
            dest.parent.mkdir(parents=True, exist_ok=True)
            fst.replace(dest)
            print(f"waves written to {dest.resolve()}")
        import shutil
        shutil.rmtree(sim.dir, ignore_errors=True)
    else:
        sim, started = server.simulator_for(model)
        out = sim.submit(job)
    timings = Timings(launch=out["started"] - t_submit, calls=tuple(out["seconds"]), total=time.time() - t_submit,
                      server_start=sim.start_seconds if started else 0.0)
    values = []
    for r in out["results"]:
        if r[0] == "error":
            err = r[1]
            err.add_note(f"(raised inside the RTL co-simulation)\n{r[2]}")
            raise err
        values.append(r[1])
    return Batch(values, timings, {"trace": out["trace"]} if trace else {})


runners.register("rtl", submit)
