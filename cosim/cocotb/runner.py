"""Run user cocotb test modules against the accelerator's cached Verilator model (the host side).

:func:`run_tests` builds the model of a config once (the debug model: every signal visible, FST tracing compiled
in; ``fast=True``: the optimised model of ``cosim.run``, whose accelerator internals are not visible) and runs each
test module in its own simulator launch with cocotb's runner (``cocotb_tools.runner``), so a module that crashes
the simulator loses only itself. Each launch writes cocotb's results.xml; the run's are merged into one JUnit
file, one ``<testsuite>`` per module and config. ``python -m cosim.cocotb`` is the command line.

What the simulator process gets: the config (``$VTA_CONFIG``, a JSON file written beside the results), the memory
model (``$VTA_TB_MEM``) and each test's cycle budget (``$VTA_TB_MAX_CYCLES``) for
:class:`cosim.cocotb.Testbench`; ``+vta_max_cycles`` stops the whole simulation after ``sim_cycles`` cycles (a test
that waits forever without a testbench is then failed by cocotb, never hung).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sw.config import Config, load_config

from ..junit import testcase, write_junit
from ..model.build import TOPLEVEL, Model, build_model
from ..model.variants import check_mem
from ..sim.rtl import CLOCK_PERIOD_STEPS
from .testbench import CONFIG_ENV, DEFAULT_MAX_CYCLES, MAX_CYCLES_ENV, MEM_ENV

__all__ = ["TestResult", "Results", "run_tests", "module_of", "merge_results", "read_results", "OUT_DIR"]

ROOT = Path(__file__).resolve().parents[2]
OUT_DIR = Path("build") / "cocotb"


@dataclass(frozen=True)
class TestResult:
    """One cocotb test of one run: ``status`` is "passed", "failed" or "skipped"; ``message`` the failure's
    one-line reason, ``details`` its full text (traceback, and the accelerator's state from the testbench)."""
    __test__ = False
    module: str
    name: str
    config: str
    status: str
    message: str = ""
    details: str = ""
    sim_time_ns: float = 0.0
    seconds: float = 0.0

    @property
    def cycles(self) -> int:
        """Clock cycles the test simulated (10 ns each)."""
        return round(self.sim_time_ns * 1000 / CLOCK_PERIOD_STEPS)


@dataclass
class Results:
    """The tests of a :func:`run_tests` call, the merged JUnit file, and each module's launch time."""
    tests: list[TestResult] = field(default_factory=list)
    results_xml: Path | None = None
    seconds: dict[str, float] = field(default_factory=dict)    # "config/module" -> wall seconds of its launch

    @property
    def failed(self) -> list[TestResult]:
        return [t for t in self.tests if t.status == "failed"]

    @property
    def ok(self) -> bool:
        return bool(self.tests) and not self.failed

    def table(self) -> str:
        """A text table: one line per test (config, module, test, status, simulated time, wall time)."""
        rows = [("config", "module", "test", "status", "cycles", "wall")]
        rows += [(t.config, t.module, t.name, t.status.upper(), f"{t.cycles:,}", f"{t.seconds:.2f} s")
                 for t in self.tests]
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
        lines.insert(1, "  ".join("-" * w for w in widths))
        if self.seconds:
            lines.append("simulator launches (start, tests, exit): " + ", ".join(f"{k} {v:.2f} s"
                                                                              for k, v in self.seconds.items()))
        n_failed = len(self.failed)
        lines.append(f"{len(self.tests)} tests, {n_failed} failed" + (f"; results: {self.results_xml}"
                                                                       if self.results_xml else ""))
        return "\n".join(lines)


def module_of(spec: str | Path) -> tuple[str, Path | None]:
    """(module name, its directory) of a test module given as a ``.py`` path, or (name, None) for a dotted name of
    an importable module. A missing file or a name that is not a Python identifier is a ``ValueError``."""
    text = str(spec)
    if text.endswith(".py") or os.sep in text or "/" in text:
        path = Path(text).resolve()
        if not path.is_file() or path.suffix != ".py":
            raise ValueError(f"test module {text!r}: no such .py file")
        if not path.stem.isidentifier():
            raise ValueError(f"test module {text!r}: {path.stem!r} is not a Python module name")
        return path.stem, path.parent
    if not all(part.isidentifier() for part in text.split(".")):
        raise ValueError(f"test module {text!r}: not a .py path nor a dotted module name")
    return text, None


@contextlib.contextmanager
def _environment(values: dict[str, str], path: Path | None) -> Iterator[None]:
    """``values`` in ``os.environ`` and ``path`` first on ``sys.path`` for the duration (cocotb's runner copies
    both into the simulator's environment, ``os.environ`` over its own ``extra_env``)."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    if path is not None:
        sys.path.insert(0, str(path))
    try:
        yield
    finally:
        if path is not None:
            sys.path.remove(str(path))
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _model(cfg: Config, waves: bool, fast: bool, mem: str) -> Model:
    if fast and waves:
        raise ValueError("waves need the debug model: drop fast=True (--fast) to write waveforms")
    return build_model(cfg, waves=not fast, mem=check_mem(mem))


def run_tests(modules: Sequence[str | Path], config: Config | str | None = None, *,
              configs: Sequence[Config | str] | None = None, test_filter: str | None = None, waves: bool = False,
              fast: bool = False, mem: str = "dpi", results: str | Path | None = None,
              max_cycles: int = DEFAULT_MAX_CYCLES, sim_cycles: int | None = None, seed: int | None = None,
              out_dir: str | Path = OUT_DIR, log: bool = False) -> Results:
    """Run the cocotb tests of ``modules`` (``.py`` paths or module names) on the model of ``config`` (or of each of
    ``configs``); return their :class:`Results`, whose merged JUnit XML is at ``results`` (default
    ``<out_dir>/results.xml``).

    ``test_filter`` is a regular expression on test names (cocotb's ``COCOTB_TEST_FILTER``); ``waves`` writes
    ``<out_dir>/<config>-<module>/dump.fst``; ``mem="cocotbext"`` serves the memory port with cocotbext-axi's
    ``AxiRam``; ``max_cycles`` is each :class:`~cosim.cocotb.Testbench`'s budget, ``sim_cycles`` (default 10x
    that) the whole simulation's; ``log=True`` writes each launch's output to ``<dir>/sim.log`` instead of the
    terminal. A module that crashes the simulator, or has no tests, is a failed test named ``<module>``."""
    for name, value in (("max_cycles", max_cycles), ("sim_cycles", sim_cycles)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ValueError(f"{name} = {value!r}; allowed: an integer >= 1")
    specs = [module_of(m) for m in modules]
    if not specs:
        raise ValueError("no test modules given")
    cfgs = [load_config(c) for c in (configs if configs else [config])]
    models = [_model(cfg, waves, fast, mem) for cfg in cfgs]         # every build (and its errors) before any test
    out = Path(out_dir).resolve()
    merged = Results(results_xml=Path(results).resolve() if results else out / "results.xml")
    suites = []
    for cfg, model in zip(cfgs, models):
        for name, folder in specs:
            xml, tests = _run_module(model, name, folder, out / f"{cfg.name}-{name}", test_filter=test_filter,
                                     waves=waves, mem=mem, max_cycles=max_cycles,
                                     sim_cycles=sim_cycles or 10 * max_cycles, seed=seed, log=log, into=merged)
            merged.tests.extend(tests)
            suites.append((f"{cfg.name}.{name}", xml, tests))
    assert merged.results_xml is not None
    merge_results(suites, merged.results_xml)
    return merged


def _run_module(model: Model, name: str, folder: Path | None, test_dir: Path, *, test_filter: str | None, waves: bool,
                mem: str, max_cycles: int, sim_cycles: int, seed: int | None, log: bool,
                into: Results) -> tuple[Path | None, list[TestResult]]:
    """One simulator launch of module ``name``: (its results.xml or None, its tests)."""
    from cocotb_tools.runner import get_runner

    cfg = model.cfg
    test_dir.mkdir(parents=True, exist_ok=True)
    config_json = test_dir / "config.json"
    config_json.write_text(json.dumps(cfg.to_dict(), indent=1))
    xml = test_dir / "results.xml"
    xml.unlink(missing_ok=True)
    env = {CONFIG_ENV: str(config_json), MEM_ENV: mem, MAX_CYCLES_ENV: str(max_cycles),
           # pytest's assertion rewriting for the test module only (not numpy and the runtime: a slower start)
           "COCOTB_REWRITE_ASSERTION_FILES": f"{name.rsplit('.', 1)[-1]}.py"}
    t = time.perf_counter()
    exit_code = 0
    with _environment(env, folder):
        try:
            get_runner("verilator").test(
                test_module=name, hdl_toplevel=TOPLEVEL, hdl_toplevel_lang="verilog",
                build_dir=model.executable.parent, test_dir=test_dir, results_xml=str(xml), waves=waves,
                test_filter=test_filter, seed=seed, plusargs=[f"+vta_max_cycles={sim_cycles}"],
                log_file=test_dir / "sim.log" if log else None)
        except SystemExit as stop:          # cocotb's runner exits on a failing simulator or (under pytest) test
            exit_code = stop.code if isinstance(stop.code, int) else 1
        except RuntimeError:                # the simulator's command failed (a crash): its results say more
            exit_code = 1
    into.seconds[f"{cfg.name}/{name}"] = time.perf_counter() - t
    tests = read_results(xml, name, cfg.name) if xml.exists() else []
    if not tests and (exit_code or not test_filter):
        why = (f"the simulator exited with code {exit_code} and wrote no results" if exit_code
               else "the module has no cocotb tests")
        detail = _tail(test_dir / "sim.log") if log else why
        return None, [TestResult(name, "<module>", cfg.name, "failed", why, detail)]
    return (xml if xml.exists() else None), tests


def _tail(path: Path, n: int = 4000) -> str:
    return path.read_text(errors="replace")[-n:] if path.exists() else ""


def read_results(path: str | Path, module: str, config: str) -> list[TestResult]:
    """The tests of one cocotb results.xml (JUnit): name, status, failure message and text, times."""
    out = []
    for case in ET.parse(path).getroot().iter("testcase"):
        failure = case.find("failure")
        if failure is None:
            failure = case.find("error")
        status = "failed" if failure is not None else "skipped" if case.find("skipped") is not None else "passed"
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        out.append(TestResult(module, case.get("name", "?"), config, status,
                              failure.get("message", "") if failure is not None else "",
                              (failure.text or "") if failure is not None else "",
                              float(props.get("sim_time_duration") or 0), float(case.get("time", 0) or 0)))
    return out


def merge_results(suites: Sequence[tuple[str, Path | None, Sequence[TestResult]]], path: str | Path) -> Path:
    """One JUnit XML file with a ``<testsuite>`` per (name, cocotb results.xml, tests): cocotb's own test cases (their
    properties: seed, file, line, simulated time) under the suite's name, or, for a launch that wrote no results,
    its tests as :func:`run_tests` made them (a failure with the reason)."""
    suites_out = []
    for suite_name, xml, tests in suites:
        if xml is not None and xml.exists():
            cases = list(ET.parse(xml).getroot().iter("testcase"))
            for case in cases:
                case.set("classname", suite_name)
        else:
            cases = [testcase(t.name, suite_name, t.seconds, t.message if t.status == "failed" else None, t.details)
                     for t in tests]
        suites_out.append((suite_name, cases))
    return write_junit(path, suites_out, name="cocotb")
