"""The regression command line (make fuzz): random programs, failures saved as replays and minimized."""
import json
import xml.etree.ElementTree as ET

import pytest

from cosim.verify import regress, replay


@pytest.mark.rtl
@pytest.mark.slow
def test_fuzz_command_saves_and_minimizes_failures(tmp_path, capsys):
    code = regress.main(["--fuzz", "2", "--config", "small", "--ops", "60", "--fault", "alu-max-imm-as-min",
                         "--minimize", "1", "--out", str(tmp_path), "--serial", "--junit", str(tmp_path / "fuzz.xml")])
    text = capsys.readouterr().out
    assert code == 1 and "FAIL: config small" in text
    assert "2 programs in 1 shards (1 rounds of 1) on 1 worker(s)" in text and "1 failing" in text
    assert "config small: functional coverage (bins hit / bins):" in text and "bins never hit:" in text
    full, small = tmp_path / "small-seed1.replay", tmp_path / "small-seed1.min.replay"
    assert f"replay: python -m cosim.verify.regress --replay {full} --waves" in text
    assert json.loads(full.read_text())["format"] == replay.FORMAT
    before, after = replay.load(full), replay.load(small)
    assert after["minimized"]["before"] == replay.program_size(before["program"])
    assert replay.program_size(after["program"])["insns"] <= 8 < len(before["program"]["insns"])
    assert "minimized from" in text
    suite = ET.parse(tmp_path / "fuzz.xml").getroot().find("testsuite")             # the JUnit report for CI
    assert suite is not None and (suite.get("name"), suite.get("tests"), suite.get("failures")) == ("fuzz.small", "1", "1")
    failure = suite.find("testcase/failure")
    assert failure is not None and failure.get("message") == "1 failing programs" and "seed 1" in (failure.text or "")

