"""The formal checks (hw.formal), the fast tier: every property by BMC to its small depth passes on the real design, and
every mutant of a property makes that very property fail (not a helper invariant, not the tools), so none holds
vacuously. `make formal` runs the full proofs."""
import pytest

from hw.formal import __main__ as formal_main
from hw.formal.checks import CHECKS
from hw.formal.run import run_check

pytestmark = pytest.mark.slow


CHECK = {c.name: c for c in CHECKS}
MUTANTS = [(c.name, mu.name) for c in CHECKS for mu in c.mutants]


@pytest.mark.parametrize("name", list(CHECK))
def test_property_holds_on_the_design(name, tmp_path):
    r = run_check(CHECK[name], fast=True, out_dir=tmp_path)
    assert (r.verdict, r.method) == ("PASS", "bmc"), r.detail


@pytest.mark.parametrize("name,mutant", MUTANTS, ids=[f"{c}-{m}" for c, m in MUTANTS])
def test_mutant_breaks_the_property(name, mutant, tmp_path):
    r = run_check(CHECK[name], mutant=mutant, out_dir=tmp_path)
    assert (r.verdict, r.failed) == ("FAIL", name), f"the mutant {mutant} of {name}: {r.verdict} {r.detail}"
    assert 0 <= r.step < CHECK[name].mutant(mutant).depth


def test_queue_model_is_proved_by_k_induction(tmp_path):
    r = run_check(CHECK["queue-model"], out_dir=tmp_path)
    assert (r.verdict, r.method, r.detail) == ("PASS", "prove", "k-induction")


def test_every_block_has_properties_and_every_property_a_mutant():
    assert {c.block for c in CHECKS} == {"queues", "axi-lite", "axi-master", "fetch"}
    assert all(c.mutants for c in CHECKS)
    assert len({c.name for c in CHECKS}) == len(CHECKS)


def test_unknown_property_is_one_line(capsys):
    assert formal_main.main(["--only", "nope"]) == 2
    assert capsys.readouterr().err.startswith("error: unknown --only 'nope'; choose one of: queue-bounds, queue-model")
