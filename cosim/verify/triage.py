"""Triage: random programs checked in batches, failures captured as replays.

``check_seeds(config, seeds)`` runs the random programs of ``seeds`` on the RTL (one simulator launch)
and on the golden model, and returns the count and, for every program that failed (RTL differs from
the golden model, watchdog, error bit, simulator crash), a replay: the program as instruction
stream, micro-ops and data image (:mod:`cosim.verify.replay`), for the minimizer (:mod:`cosim.verify.minimize`).
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Sequence
from typing import Any

from sw import runtime
from sw.config import Config, load_config
from sw.runtime.runners import Call

from . import injected, replay
from .evaluate import ERROR_KINDS

__all__ = ["fuzz_probe", "compare_probe", "check_seeds", "cpu_seconds"]


# ---------------------------------------------------------------------- random programs in batches
def fuzz_probe(seed: int, n_ops: int = 24, fault: str | None = None, bias: dict[str, float] | None = None) -> dict:
    """One random program on the current target (with an injected fault), its error as a result; on the RTL
    also the cycles each memory channel waited (``stalls``, for the backpressure coverage)."""
    from ..sim import axi_monitor
    from . import differential

    q = runtime.current()
    if fault:
        q.target = injected.with_fault(q.target, fault)
    before = axi_monitor.stall_counts()
    try:
        out = differential.fuzz_check(seed, n_ops, bias)
    except Exception as err:  # noqa: BLE001 - an error is what the comparison reports
        out = {"seed": seed, "error": type(err).__name__, "message": str(err)}
    after = axi_monitor.stall_counts()
    if before is not None and after is not None:
        out["stalls"] = {k: v - before[k] for k, v in after.items()}
    return out


def compare_probe(label: str, gold: dict, dut: dict) -> tuple[tuple[str, str], str] | None:
    """(signature, description) of a random program's two runs, or None when they agree."""
    from . import differential

    if "crash" in dut:
        return ("crash", "simulator"), f"{label}: the simulator crashed: {dut['crash'][-500:]}"
    if gold.get("error"):
        return ("golden-error", gold["error"]), f"{label}: the golden model raised {gold['error']}: {gold['message']}"

    if dut.get("error"):
        kind = ERROR_KINDS.get(dut["error"], "error")
        return (kind, dut["error"]), f"{label}: the RTL raised {dut['error']}: {dut['message'][:2000]}"
    found = differential.differences(label, gold, dut)
    if not found:
        return None
    data = gold["pages"] != dut["pages"] or not all((gold[k] == dut[k]).all() for k in ("out",) if k in gold)
    return ("mismatch", "data" if data else "counters"), "\n".join(found)


def check_seeds(config: Config | str | None, seeds: Sequence[int], n_ops: int = 24, fault: str | None = None,
                bias: dict[str, float] | None = None, **cosim_options: Any) -> dict:
    """Random programs ``seeds`` on the RTL (one launch) and the golden model; counts, failures, and the
    functional coverage the golden model and the RTL's stall counters sampled (``coverage``, counts of
    :func:`cosim.verify.funcov.snapshot`: this shard's hits only). ``bias`` steers the generator (cosim.verify.funcov)."""
    import cosim

    from . import differential, funcov

    cfg = load_config(config)
    seeds = [int(s) for s in seeds]
    t0, cpu0 = time.time(), cpu_seconds()
    axi = fault in injected.AXI_FAULTS
    calls: list[Call] = [(fuzz_probe, (s, n_ops, None if axi else fault, bias), {}) for s in seeds]
    if axi:
        # the programs run cleanly first (compared with the golden model as usual), then each again with an AXI error
        # injected (it must stop and name it), then a reference program that must still be right: after the errors,
        # the accelerator's SRAMs hold what no golden model has, so nothing is compared with it any more
        calls += [(injected.axi_error_run, (fault, s, n_ops, bias), {}) for s in seeds]
        calls.append((injected.works_after_errors, (), {}))
    try:
        dut = cosim.run_many(calls, config=cfg, **cosim_options)
    except cosim.CosimError as err:
        if len(seeds) == 1:
            dut = [{"crash": str(err)}]
        else:       # find the program that crashes the simulator: each half in its own launch
            half = len(seeds) // 2
            a = check_seeds(cfg, seeds[:half], n_ops, fault, bias, **cosim_options)
            b = check_seeds(cfg, seeds[half:], n_ops, fault, bias, **cosim_options)
            return {**a, "seeds": a["seeds"] + b["seeds"], "programs": a["programs"] + b["programs"],
                    "coverage": funcov.merge(a["coverage"], b["coverage"]),
                    "failures": a["failures"] + b["failures"], "launches": a["launches"] + b["launches"] + 1,
                    "seconds": time.time() - t0, "cpu_seconds": cpu_seconds() - cpu0}
    failures = []
    if axi and len(dut) > len(seeds):
        for seed, d in zip(seeds, dut[len(seeds):]):
            if not d["ok"]:
                failures.append({"config": cfg.name, "seed": seed, "n_ops": n_ops, "fault": fault, "bias": bias,
                                 "batch": seeds, "program": None, "failure": {
                                     "signature": ["axi-error", d["injected"]],
                                     "description": f"random program seed {seed} [{cfg.name}]: with {d['injected']} "
                                                    f"injected, the RTL {d['got']}"}})
        if dut[-1]:
            failures.append({"config": cfg.name, "seed": seeds[-1], "n_ops": n_ops, "fault": fault, "bias": bias,
                             "batch": seeds, "program": None, "failure": {
                                 "signature": ["axi-error", "after"], "description": dut[-1]}})
        dut = dut[:len(seeds)]
    golden_calls: list[Call] = [(fuzz_probe, (s, n_ops, None, bias), {}) for s in seeds]
    funcov.define(cfg)
    before = funcov.snapshot()
    gold = differential.run_golden(golden_calls, cfg, dram_bytes=replay.DRAM_BYTES)
    for d in dut:
        if d.get("stalls"):
            funcov.sample_backpressure(cfg, d["stalls"])
    coverage = funcov.delta(funcov.snapshot(), before)
    for i, (seed, g, d) in enumerate(zip(seeds, gold, dut)):
        found = compare_probe(f"random program seed {seed} [{cfg.name}]", g, d)
        if found is None:
            continue
        sig, text = found
        entry: dict[str, Any] = {"config": cfg.name, "seed": seed, "n_ops": n_ops, "fault": fault, "bias": bias,
                                 "batch": seeds, "failure": {"signature": list(sig), "description": text}}
        try:
            entry["program"] = replay.record(golden_calls, cfg, index=i)
        except Exception as err:  # noqa: BLE001 - the failure is still reported, without a replay
            entry["program"] = None
            entry["failure"]["description"] += f"\n(no replay: {type(err).__name__}: {err})"
        failures.append(entry)
    return {"config": cfg.name, "seeds": seeds, "programs": len(seeds), "failures": failures, "launches": 1,
            "coverage": coverage,
            "seconds": time.time() - t0, "cpu_seconds": cpu_seconds() - cpu0,
            "worker": f"{socket.gethostname()}:{os.getpid()}"}


def cpu_seconds() -> float:
    """CPU time of this process, its finished children and its live descendants (the simulator server and its
    jobs keep running between launches), for rates per core."""
    import resource

    import psutil
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    total = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
    for child in psutil.Process().children(recursive=True):
        try:
            t = child.cpu_times()      # with the children it reaped (the simulator server's finished jobs)
            total += t.user + t.system + t.children_user + t.children_system
        except psutil.Error:
            pass                        # ended meanwhile: counted with the finished children once reaped
    return total
