"""The formal checks (hw.formal), the fast tier: every property by BMC to its small depth passes on the real design, and
every property's mutant fails that same property, so none holds vacuously. `make formal` runs the full proofs."""
import pytest

from hw.formal import __main__ as formal_main
from hw.formal.checks import CHECKS
from hw.formal.run import run_check

pytestmark = pytest.mark.slow


CHECK = {c.name: c for c in CHECKS}


@pytest.mark.parametrize("name", list(CHECK))
def test_property_holds_on_the_design(name, tmp_path):
    r = run_check(CHECK[name], fast=True, out_dir=tmp_path)
    assert (r.verdict, r.method) == ("PASS", "bmc"), r.detail


@pytest.mark.parametrize("name", list(CHECK))
def test_mutant_breaks_the_property(name, tmp_path):
    r = run_check(CHECK[name], mutant=True, out_dir=tmp_path)
    assert r.verdict == "FAIL", f"the mutant {r.check.mutant} of {name} passed: the property is vacuous"
    assert "hw/formal/checks.py" in r.detail          # an assertion of the harness failed, not the tools


def test_queue_count_is_proved_by_k_induction(tmp_path):
    r = run_check(CHECK["queue-count"], out_dir=tmp_path)
    assert (r.verdict, r.method, r.detail) == ("PASS", "prove", "k-induction")


def test_unknown_property_is_one_line(capsys):
    assert formal_main.main(["--only", "nope"]) == 2
    assert capsys.readouterr().err.startswith("error: unknown --only 'nope'; choose one of: queue-count, queue-limit")
