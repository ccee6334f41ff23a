"""The runner of user cocotb modules: what cocotb reports for passing, failing and hanging tests."""

import xml.etree.ElementTree as ET

import pytest

from cosim.cocotb import runner
from cosim.cocotb.runner import Results, TestResult, merge_results, module_of, read_results, run_tests

USER_TESTS = "tests/cosim/cocotb/user_tests.py"


def test_user_tests_report_failures_with_the_accelerator_state(tmp_path):
    res = run_tests([USER_TESTS], "configs/small.json", sim_cycles=30_000, out_dir=tmp_path, log=True)
    status = {t.name: t.status for t in res.tests}
    assert status == {"test_clock_period": "passed", "test_an_injected_error_lives_for_one_run": "passed",
                      "test_bad_launch_arguments_are_refused": "passed", "test_check_names_the_difference": "failed",
                      "test_failing_assertion": "failed",
                      "test_waits_forever": "failed", "test_after_the_hang": "passed",
                      "test_waits_forever_without_a_testbench": "failed"}
    failed = {t.name: t for t in res.failed}
    check = failed["test_check_names_the_difference"].message
    assert "the RTL (ACTUAL) and the golden model (DESIRED) differ" in check and "'RtlDevice'" in check
    assertion = failed["test_failing_assertion"]
    assert assertion.message == "assert 7 == 8"                       # pytest's rewriting of the user's assert
    assert "the accelerator at cycle" in assertion.details and "tokens  : l2g=0" in assertion.details
    hang = failed["test_waits_forever"]
    assert hang.message.startswith("the test ran for 5000 cycles (max_cycles)") and "fetch is idle" in hang.message
    assert 5000 <= hang.cycles < 5200
    ended = failed["test_waits_forever_without_a_testbench"]
    assert "simulation ended prematurely" in ended.message and ended.cycles < 30_000
    assert "vta_tb: the simulation reached +vta_max_cycles=30000 cycles" in (tmp_path / "small-user_tests" /
                                                                             "sim.log").read_text()
    assert not res.ok and "8 tests, 4 failed" in res.table()
    # the merged JUnit file: cocotb's test cases under one suite per config and module
    root = ET.parse(res.results_xml).getroot()
    suite = root.find("testsuite")
    assert suite is not None and (suite.get("name"), suite.get("tests"), suite.get("failures")) == \
        ("small.user_tests", "8", "4")
    failures = {c.get("name"): c.find("failure") for c in suite.iter("testcase")}
    assert failures["test_clock_period"] is None
    assert "the accelerator at cycle" in failures["test_failing_assertion"].text
    assert {p.get("name") for p in suite.iter("property")} >= {"random_seed", "file", "line", "sim_time_duration"}


def test_a_crashed_or_empty_module_is_a_failed_test(tmp_path):
    empty = tmp_path / "no_tests.py"
    empty.write_text("import cocotb\n")
    res = run_tests([empty], "configs/small.json", out_dir=tmp_path / "out", log=True)
    assert [(t.name, t.status, t.message) for t in res.tests] == \
        [("<module>", "failed", "the module has no cocotb tests")]
    suite = ET.parse(res.results_xml).getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "1"


def test_the_fast_model_with_cocotbext_axis_memory(tmp_path):
    """--fast --mem cocotbext: the optimised AxiRam model; an injected error through cocotbext-axi's AxiRam."""
    res = run_tests([USER_TESTS], "configs/small.json", fast=True, mem="cocotbext", test_filter="injected_error",
                    out_dir=tmp_path, log=True)
    assert [(t.name, t.status) for t in res.tests] == [("test_an_injected_error_lives_for_one_run", "passed")]


def test_waves_are_written_on_demand(tmp_path):
    res = run_tests([USER_TESTS], "configs/small.json", waves=True, test_filter="test_after_the_hang", out_dir=tmp_path,
                    log=True)
    assert [(t.name, t.status) for t in res.tests] == [("test_after_the_hang", "passed")]
    fst = tmp_path / "small-user_tests" / "dump.fst"
    assert fst.exists() and fst.stat().st_size > 1000


def test_module_specs():
    assert module_of("tests/cosim/cocotb/user_tests.py")[0] == "user_tests"
    assert module_of("my_pkg.tests") == ("my_pkg.tests", None)
    with pytest.raises(ValueError, match="no such .py file"):
        module_of("nowhere/test_x.py")
    with pytest.raises(ValueError, match="not a .py path nor a dotted module name"):
        module_of("a-b")


@pytest.mark.parametrize("kwargs, match", [
    ({"max_cycles": 0}, r"max_cycles = 0; allowed: an integer >= 1"),
    ({"sim_cycles": -1}, r"sim_cycles = -1; allowed: an integer >= 1"),
    ({"fast": True, "waves": True}, "waves need the debug model"),
    ({"mem": "sram"}, "mem must be one of"),
])
def test_bad_options_are_refused_before_any_build(kwargs, match, monkeypatch):
    monkeypatch.setattr(runner, "build_model", lambda *a, **k: pytest.fail("built"))
    with pytest.raises(ValueError, match=match):
        run_tests([USER_TESTS], "configs/small.json", **kwargs)


def test_merge_and_read_round_trip(tmp_path):
    tests = [TestResult("m", "a", "small", "passed", seconds=0.5), TestResult("m", "b", "small", "failed", "boom", "tb")]
    path = merge_results([("small.m", None, tests)], tmp_path / "r.xml")
    back = read_results(path, "m", "small")
    assert [(t.name, t.status, t.message, t.details) for t in back] == \
        [("a", "passed", "", ""), ("b", "failed", "boom", "tb")]
    assert Results(tests).failed == tests[1:] and not Results([]).ok
