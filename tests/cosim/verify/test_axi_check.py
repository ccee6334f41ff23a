"""AXI4 protocol assertions (cosim.verify.axi_check): each rule fires on a broken master or slave, at the right cycle
and naming its channel; a real run is clean, and a write outside the run's buffers fails the run."""
import pytest

import cosim
from cosim.verify import axi_check
from sw.testing import vta_tests as programs


@pytest.mark.parametrize("case", sorted(axi_check.CASES))
def test_each_rule_fires_exactly_where_it_is_broken(case):
    r = axi_check.run_case(case)
    assert r["done"] and r["exit"] == 0, r["output"]
    assert {(rule, ch) for rule, ch, _, _ in r["violations"]} == axi_check.CASES[case], r["output"]
    # every violation is reported at the clock edge the script marked as the broken one
    assert sorted({cycle for _, _, cycle, _ in r["violations"]}) == r["marks"], r["output"]


def test_every_rule_has_a_negative_case():
    fired = {rule for expected in axi_check.CASES.values() for rule, _ in expected}
    assert fired == set(axi_check.RULES)


def test_unknown_case_is_refused():
    with pytest.raises(ValueError, match="unknown checker case 'nope'"):
        axi_check.run_case("nope")


@pytest.fixture(scope="module")
def checked_runs():
    return cosim.run_many([(programs.vector_add, ("python",), {}), (axi_check.store_outside_buffers, (), {}),
                           (programs.gemm, ("python", 1, 4, 4, 1), {})], config="small")


def test_a_real_run_is_clean(checked_runs):
    for out in (checked_runs[0], checked_runs[2]):      # check_run raises on any violation: none here
        assert (out["result"] == out["expected"]).all()


def test_a_write_outside_the_buffers_fails_the_run(checked_runs):
    r = checked_runs[1]
    assert r["error"] == "AxiProtocolError", r
    assert "write_outside on channel W at cycle " in r["message"] and "outside every allocated buffer" in r["message"]
