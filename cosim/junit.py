"""JUnit XML, the test-report format CI systems read (Jenkins, GitLab, GitHub's JUnit reporters).

The RTL regressions write it: ``make fuzz`` (:mod:`cosim.verify.regress`, one test case per shard of random
programs, or per config of the reference programs) and the runner of user cocotb tests
(:mod:`cosim.cocotb.runner`, cocotb's own test cases gathered into one file). ``make test`` has pytest's own.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

__all__ = ["testcase", "write_junit"]


def testcase(name: str, classname: str, seconds: float = 0.0, failure: str | None = None, details: str = "",
             skipped: str | None = None) -> ET.Element:
    """A ``<testcase>``: passed, or failed with the one-line ``failure`` and its ``details``, or ``skipped``."""
    case = ET.Element("testcase", name=name, classname=classname, time=f"{seconds:.3f}")
    if failure is not None:
        ET.SubElement(case, "failure", message=failure).text = details or failure
    elif skipped is not None:
        ET.SubElement(case, "skipped", message=skipped)
    return case


def write_junit(path: str | Path, suites: Sequence[tuple[str, Sequence[ET.Element]]], name: str = "tests") -> Path:
    """Write ``<testsuites>`` with one ``<testsuite>`` per (suite name, its ``<testcase>`` elements); each suite's
    counts (tests, failures, errors, skipped, time) come from its cases."""
    root = ET.Element("testsuites", name=name)
    for suite_name, cases in suites:
        failures, errors, skipped = (sum(c.find(tag) is not None for c in cases) for tag in ("failure", "error", "skipped"))
        suite = ET.SubElement(root, "testsuite", name=suite_name, tests=str(len(cases)), failures=str(failures),
                              errors=str(errors), skipped=str(skipped),
                              time=f"{sum(float(c.get('time', 0) or 0) for c in cases):.3f}")
        suite.extend(cases)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
    return path
