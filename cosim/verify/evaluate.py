"""Failure signatures of replayed programs and the devices under test that run them (the minimizer's oracle).

:class:`Evaluator` gives each program variant its :func:`signature` on a device under test: None (passes), "unfit"
(not a fair test on the golden model: :mod:`cosim.verify.fair`, the micro-op hazard rule, undefined SRAM reads) or a
failure tuple. :func:`rtl_dut`, :func:`golden_dut` and :func:`here_dut` are the devices: the RTL in one launch, fresh
golden models, the current target.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

from sw import runtime
from sw.config import Config, load_config

from . import replay
from .fair import ordering_problem

__all__ = ["ERROR_KINDS", "signature", "Evaluator", "rtl_dut", "golden_dut", "here_dut"]

ERROR_KINDS = {"WatchdogError": "watchdog", "RunTimeout": "timeout"}
Dut = Callable[[Sequence[dict]], list[dict]]    # programs -> their replay results on the device under test (one launch)


def signature(gold: dict, dut: dict) -> tuple[str, str] | None:
    """How a replayed program failed on the device under test: a tuple, or None when it passed."""
    if "crash" in dut:
        return ("crash", "simulator")
    if dut.get("error"):
        return (ERROR_KINDS.get(dut["error"], "error"), dut["error"])
    if gold["pages"] != dut["pages"]:
        return ("mismatch", "data")
    if gold["counters"] != dut["counters"]:
        return ("mismatch", "counters")
    return None


class Evaluator:
    """Signatures of program variants: None (passes), "unfit" (not a fair test) or a failure tuple.

    ``dut(programs)`` runs programs on the device under test (one launch) and returns their
    :func:`replay.replay_program` results (or ``{"crash": text}``).
    """

    def __init__(self, config: Config | str | None, dut: Dut | None) -> None:
        self.cfg = load_config(config)
        self.dut = dut
        self.launches = 0
        self.variants = 0

    def golden(self, program: dict) -> dict | None:
        problem = ordering_problem(self.cfg, program["insns"])
        if problem:
            return None
        device = replay.Tracker(self.cfg)
        with runtime.use_target(device):
            out = replay.replay_program(program)
        if out.get("error") or device.hazard or any(u.any() for u in device.undefined.values()):
            return None
        return out

    def __call__(self, programs: Sequence[dict]) -> list:
        gold = [self.golden(p) for p in programs]
        fair = [i for i, g in enumerate(gold) if g is not None]
        sigs: list[tuple[str, str] | str | None] = ["unfit"] * len(programs)
        if fair:
            results = self.dut([programs[i] for i in fair])  # type: ignore[misc]  # (None: for golden() only)
            self.launches += 1
            self.variants += len(fair)
            for i, r in zip(fair, results):
                sigs[i] = signature(cast(dict, gold[i]), r)       # (fair: it has a golden run)
        return sigs


def rtl_dut(config: Config | str | None, fault: str | None = None, **cosim_options: Any) -> Dut:
    """Programs on the RTL in one launch (each alone when the simulator crashes)."""
    import cosim

    def run(programs):
        calls = [(replay.replay_program, (p, fault), {}) for p in programs]
        try:
            return cosim.run_many(calls, config=config, **cosim_options)
        except cosim.CosimError as err:
            if len(programs) == 1:
                return [{"crash": str(err)}]
            return [r for p in programs for r in run([p])]
    return run


def golden_dut(config: Config | str | None, fault: str | None = None) -> Dut:
    """Programs on a fresh golden model each, with the fault injected (to test triage without RTL)."""
    cfg = load_config(config)

    def run(programs):
        out = []
        for p in programs:
            with runtime.use_target(replay.Tracker(cfg)):
                out.append(replay.replay_program(p, fault))
        return out
    return run



def here_dut(fault: str | None = None) -> Dut:
    """Programs on the current target, one after the other (inside a simulation: no launch at all)."""
    q = runtime.current()

    def run(programs):
        out = []
        for p in programs:
            previous = runtime.set_current(q)
            try:
                out.append(replay.replay_program(p, fault))
            finally:
                runtime.set_current(previous)
        return out
    return run
