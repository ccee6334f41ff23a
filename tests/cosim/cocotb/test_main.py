"""``python -m cosim.cocotb``: the examples a newcomer copies, run as a user runs them."""

import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from cosim.cocotb.__main__ import main

EXAMPLES = ["examples/cocotb/test_registers.py", "examples/cocotb/test_gemm.py", "examples/cocotb/test_axi_error.py"]


def test_the_examples_pass_through_the_command_line(tmp_path):
    results = tmp_path / "results.xml"
    run = subprocess.run([sys.executable, "-m", "cosim.cocotb", *EXAMPLES, "--config", "configs/small.json",
                          "--out", str(tmp_path), "--results", str(results)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "7 tests, 0 failed" in run.stdout
    suites = {s.get("name"): [c.get("name") for c in s.iter("testcase")] for s in ET.parse(results).getroot()}
    assert suites == {
        "small.test_registers": ["test_registers_after_reset", "test_launch_by_hand", "test_launch_and_wait"],
        "small.test_gemm": ["test_gemm_matches_numpy", "test_gemm_matches_the_golden_model"],
        "small.test_axi_error": ["test_read_error_then_recovery", "test_write_error_names_the_store"]}
    assert not list(ET.parse(results).getroot().iter("failure"))


def test_bad_arguments_name_the_option(capsys):
    for argv, message in ((["nowhere.py", "--config", "configs/small.json"], "test module 'nowhere.py': no such .py file"),
                          ([EXAMPLES[0], "--max-cycles", "0"], "--max-cycles 0: allowed: an integer >= 1")):
        with pytest.raises(SystemExit) as stop:
            main(argv)
        assert stop.value.code == 2 and message in capsys.readouterr().err
