"""The minimizer (cosim.verify.minimize) on the golden model and on the RTL."""
import pytest

from cosim.verify import evaluate, fair, minimize, regress, replay, triage
from sw.isa import Opcode

from .failing import FAULT, LONG, failing_entry


@pytest.mark.slow
def test_minimizer_shrinks_a_long_failing_program_on_the_golden_model():
    entry = failing_entry()
    out = minimize.minimize_replay(entry, dut=evaluate.golden_dut("small", FAULT), log=lambda text: None)
    m = out["minimized"]
    assert m["reproduced"] and m["before"]["insns"] > 100
    assert m["after"]["insns"] <= 8, replay.listing(out["program"])
    alus = [f for f in out["program"]["insns"] if f["kind"] == "alu"]
    assert alus and all(f["alu_opcode"] == 1 and f["use_imm"] for f in alus)   # the faulty MAX with immediate
    assert evaluate.Evaluator("small", evaluate.golden_dut("small", FAULT))([out["program"]]) == [("mismatch", "data")]
    assert evaluate.Evaluator("small", evaluate.golden_dut("small", None))([out["program"]]) == [None]


def test_minimizer_refuses_a_program_that_passes():
    entry = failing_entry()
    out = minimize.minimize_replay(dict(entry, fault=None), dut=evaluate.golden_dut("small", None))
    assert out["minimized"] == {"reproduced": False, "result": None}
    with pytest.raises(ValueError, match="does not fail"):
        minimize.minimize(entry["program"], evaluate.Evaluator("small", evaluate.golden_dut("small", None)))


def test_nops_keep_tokens_and_folds_remove_them():
    f = {"kind": "alu", "opcode": int(Opcode.ALU), "pop_prev": 1, "pop_next": 0, "push_prev": 0, "push_next": 1,
         "reset": 0, "uop_bgn": 0, "uop_end": 1, "iter_out": 1, "iter_in": 1, "dst_factor_out": 0,
         "dst_factor_in": 0, "src_factor_out": 0, "src_factor_in": 0, "alu_opcode": 1, "use_imm": 0, "imm": 0}
    nop = minimize.as_nop(f)
    assert fair.is_nop(nop) and fair.stage(nop) == 2 and nop["pop_prev"] == 1 and nop["push_next"] == 1


@pytest.mark.rtl
@pytest.mark.slow
def test_fault_found_on_the_rtl_minimized_and_replayed_with_waves(tmp_path, monkeypatch, capsys):
    result = triage.check_seeds("small", [0, 1], n_ops=LONG, fault=FAULT)
    assert result["programs"] == 2 and [f["seed"] for f in result["failures"]] == [1]
    entry = result["failures"][0]
    assert entry["failure"]["signature"] == ["mismatch", "data"]
    out = minimize.minimize_on_rtl(entry)
    m = out["minimized"]
    assert m["reproduced"] and m["before"]["insns"] > 100 and m["after"]["insns"] <= 8
    with capsys.disabled():
        print(f"\nminimized on the RTL: {m['before']} -> {m['after']} in {m['seconds']} s, {m['variants']} variants "
              f"in {m['launches']} rounds\n{replay.listing(out['program'])}")
    path = replay.save(tmp_path / "small-seed1.min.replay", out)
    monkeypatch.chdir(tmp_path)
    assert regress.main(["--replay", str(path), "--waves"]) == 1           # still fails
    text = capsys.readouterr().out
    assert "fails: ['mismatch', 'data']" in text
    fst = tmp_path / "build" / "waves" / "small-replay_program.fst"
    assert fst.exists() and fst.stat().st_size > 1000 and str(fst) in text
    healed = replay.save(tmp_path / "healed.replay", dict(out, fault=None))
    assert regress.main(["--replay", str(healed)]) == 0                  # the correct RTL agrees
