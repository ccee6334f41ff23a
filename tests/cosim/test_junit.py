"""JUnit XML as CI systems read it: suites counted from their cases."""

import xml.etree.ElementTree as ET

from cosim import junit


def test_suites_count_their_cases(tmp_path):
    cases = [junit.testcase("a", "s", 1.25), junit.testcase("b", "s", 0.5, failure="2 differences", details="x\ny"),
             junit.testcase("c", "s", skipped="not on this config")]
    root = ET.parse(junit.write_junit(tmp_path / "out" / "r.xml", [("s", cases), ("empty", [])], name="fuzz")).getroot()
    assert root.tag == "testsuites" and root.get("name") == "fuzz"
    s, empty = root.findall("testsuite")
    assert {k: s.get(k) for k in ("name", "tests", "failures", "errors", "skipped", "time")} == \
        {"name": "s", "tests": "3", "failures": "1", "errors": "0", "skipped": "1", "time": "1.750"}
    failure = s.find("testcase[@name='b']/failure")
    assert failure is not None and failure.get("message") == "2 differences" and failure.text == "x\ny"
    assert (empty.get("tests"), empty.get("failures")) == ("0", "0")
