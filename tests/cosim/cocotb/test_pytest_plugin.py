"""pytest runs a user's cocotb module through the runner: one item per config, failures with cocotb's text."""

from pathlib import Path

import pytest

from cosim.cocotb.pytest_plugin import configs_of, is_cocotb_module

pytest_plugins = ["pytester"]
SMALL = str(Path("configs/small.json").resolve())

MODULE = f'''
import cocotb
from cosim.cocotb import Testbench

VTA_CONFIGS = [{SMALL!r}]


@cocotb.test()
async def test_idle(dut):
    async with Testbench(dut) as tb:
        assert await tb.read_reg("status") == 0


@cocotb.test()
async def test_wrong(dut):
    async with Testbench(dut) as tb:
        assert await tb.read_reg("insn_count") == 3
'''


def test_a_cocotb_module_is_one_item_that_fails_with_its_failed_tests(pytester):
    pytester.makepyfile(test_user_cocotb=MODULE)
    result = pytester.runpytest("-p", "cosim.cocotb.pytest_plugin", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert "test_user_cocotb[small]" in text
    assert "cocotb test test_user_cocotb.test_wrong on config small failed: assert 0 == 3" in text
    assert "the accelerator at cycle" in text and "test_idle" not in text.split("FAILURES")[-1]


def test_which_modules_and_configs(tmp_path):
    plain = tmp_path / "test_plain.py"
    plain.write_text("def test_x():\n    assert True\n")
    cocotb_module = tmp_path / "test_tb.py"
    cocotb_module.write_text(MODULE)
    assert not is_cocotb_module(plain) and is_cocotb_module(cocotb_module)
    assert configs_of(cocotb_module) == [SMALL] and configs_of(plain) == [None]
    bad = tmp_path / "test_bad.py"
    bad.write_text("VTA_CONFIGS = []\n")
    with pytest.raises(ValueError, match="VTA_CONFIGS must be a non-empty list"):
        configs_of(bad)
