"""Co-simulation: the runtime drives the Verilated RTL, bit-exact with the golden model (DESIGN §4).

``cosim.run(fn, *args, config=None, waves=False)`` runs the module-level function ``fn(*args)``
inside a cocotb simulation of the accelerator with the RTL as the runtime's default target, and
returns its return value unchanged. The same ``fn`` runs on the golden model when called directly.
"""

from __future__ import annotations

import os
import pickle
import tempfile
from pathlib import Path

from sw.config import load_config

from .build import BuildError, ToolchainError, build_model, toolchain_env, TOPLEVEL

__all__ = ["run", "run_many", "build_model", "BuildError", "ToolchainError", "CosimError"]


class CosimError(RuntimeError):
    """The simulation itself failed (it crashed or did not report a result)."""


def run(fn, *args, config=None, waves=False, **options):
    """Run ``fn(*args)`` on the RTL of ``config`` and return what it returns (DESIGN §4)."""
    return run_many([(fn, args, {})], config=config, waves=waves, **options)[0]


def run_many(calls, config=None, waves=False, watchdog_cycles=100_000, dram_latency=20, dram_bytes_per_cycle=8,
             trace=False, return_trace=False, queue_args=None):
    """Run several ``(fn, args, kwargs)`` in one simulator launch; return their results in order.

    An exception raised by a call is re-raised here (the first one, after all calls ran).
    """
    cfg = load_config(config)
    waves = waves or bool(int(os.environ.get("WAVES", "0") or 0))
    model = build_model(cfg, waves=waves)
    entries = []
    for fn, args, kwargs in calls:
        module, name = fn.__module__, fn.__qualname__
        if module == "__main__" or "<" in name:
            raise ValueError(f"cosim.run needs a module-level function importable by name; got {module}.{name}")
        entries.append((module, name, tuple(args), dict(kwargs)))
    with tempfile.TemporaryDirectory(prefix="vta-cosim-") as tmp:
        tmp = Path(tmp)
        job = {"config": cfg, "calls": entries, "result": str(tmp / "result.pkl"),
               "device_args": {"watchdog_cycles": watchdog_cycles, "dram_latency": dram_latency,
                               "dram_bytes_per_cycle": dram_bytes_per_cycle, "trace": trace or return_trace},
               "queue_args": queue_args or {}}
        (tmp / "job.pkl").write_bytes(pickle.dumps(job))
        _launch(model, tmp, waves)
        result_file = tmp / "result.pkl"
        if not result_file.exists():
            log = (tmp / "sim.log").read_text()[-5000:] if (tmp / "sim.log").exists() else ""
            raise CosimError(f"the simulation ended without a result; its log ends with:\n{log}")
        out = pickle.loads(result_file.read_bytes())
        if waves:
            fst = tmp / "dump.fst"
            if fst.exists():
                dest = Path("build") / "waves" / f"{cfg.name}-{entries[0][1]}.fst"
                dest.parent.mkdir(parents=True, exist_ok=True)
                fst.replace(dest)
                print(f"waves written to {dest.resolve()}")
    values = []
    for r in out["results"]:
        if r[0] == "error":
            err = r[1]
            err.add_note(f"(raised inside the RTL co-simulation)\n{r[2]}")
            raise err
        values.append(r[1])
    if return_trace:
        return values, out["trace"]
    return values


def _launch(model, tmp: Path, waves: bool):
    from .build import _runner_class

    env = toolchain_env()
    extra = {"VTA_COSIM_JOB": str(tmp / "job.pkl"), "PYTHONPATH": os.pathsep.join(
        [str(Path(__file__).resolve().parent.parent)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
    runner = _runner_class()()
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        import contextlib
        with open(tmp / "sim.log", "w") as fh, contextlib.redirect_stdout(fh), contextlib.redirect_stderr(fh):
            runner.test(test_module="cosim.entry", hdl_toplevel=TOPLEVEL, hdl_toplevel_lang="verilog",
                        build_dir=model.build_dir / "obj",
                        test_dir=tmp, extra_env=extra, waves=waves, log_file=tmp / "sim.log",
                        results_xml=str(tmp / "results.xml"))
    except (SystemExit, RuntimeError) as err:
        log = (tmp / "sim.log").read_text()[-4000:] if (tmp / "sim.log").exists() else ""
        raise CosimError(f"the simulator failed ({err}); its log ends with:\n{log}") from None
    finally:
        os.environ.clear()
        os.environ.update(saved)
