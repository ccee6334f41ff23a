"""Triage: fair variants, failure signatures, and the minimizer (on the golden model and on the RTL)."""
import pytest

from cosim.verify import regress, replay, triage
from sw.isa import Opcode

FAULT = "alu-max-imm-as-min"
LONG = 60          # operations of the long random program the fault is found in


def _failing_entry(config="small"):
    """The first long random program (seed 1 of a batch from 0) that the fault changes on the golden model."""
    seeds = [0, 1]
    calls = [(triage.fuzz_probe, (s, LONG, None), {}) for s in seeds]
    gold = regress.run_golden(calls, config, dram_bytes=replay.DRAM_BYTES)
    dut = regress.run_golden([(triage.fuzz_probe, (s, LONG, FAULT), {}) for s in seeds], config,
                             dram_bytes=replay.DRAM_BYTES)
    assert triage._compare_probe("seed 0", gold[0], dut[0]) is None
    sig, _ = triage._compare_probe("seed 1", gold[1], dut[1])
    assert sig == ("mismatch", "data")
    return {"config": config, "seed": 1, "n_ops": LONG, "fault": FAULT,
            "program": replay.record(calls, config, index=1)}


def test_recorded_programs_are_fair_and_a_removed_token_makes_a_race():
    program = _failing_entry()["program"]
    cfg = replay.config_of(program)
    insns = program["insns"]
    assert triage.ordering_problem(cfg, insns) is None
    # drop every token between load and compute: a GEMM now races with the loads of its inputs
    stage = {1: {"push_next": 0}, 2: {"pop_prev": 0}, 3: {}}
    cut = [dict(f, **stage[triage._stage(f)]) for f in insns]
    assert triage.ordering_problem(cfg, cut).split(" race on ")[1] in ("inp", "wgt")
    one = next(i for i, f in enumerate(insns) if triage._stage(f) == 1 and f["push_next"])
    unbalanced = insns[:one] + [dict(insns[one], push_next=0)] + insns[one + 1:]
    assert "token queue l2g" in triage.ordering_problem(cfg, unbalanced)
    assert "end with its only FINISH" in triage.ordering_problem(cfg, insns[-1:] + insns[:-1])


def test_signature_names_how_a_run_failed():
    gold = {"pages": ["a", "b"], "counters": {"x": 1}}
    assert triage.signature(gold, {"pages": ["a", "b"], "counters": {"x": 1}}) is None
    assert triage.signature(gold, {"pages": ["a", "c"], "counters": {"x": 1}}) == ("mismatch", "data")
    assert triage.signature(gold, {"pages": ["a", "b"], "counters": {"x": 2}}) == ("mismatch", "counters")
    assert triage.signature(gold, {"error": "WatchdogError", "message": ""}) == ("watchdog", "WatchdogError")
    assert triage.signature(gold, {"error": "VTAError", "message": ""}) == ("error", "VTAError")
    assert triage.signature(gold, {"crash": "log"}) == ("crash", "simulator")


@pytest.mark.slow
def test_minimizer_shrinks_a_long_failing_program_on_the_golden_model():
    entry = _failing_entry()
    out = triage.minimize_replay(entry, dut=triage.golden_dut("small", FAULT), log=lambda text: None)
    m = out["minimized"]
    assert m["reproduced"] and m["before"]["insns"] > 100
    assert m["after"]["insns"] <= 8, replay.listing(out["program"])
    alus = [f for f in out["program"]["insns"] if f["kind"] == "alu"]
    assert alus and all(f["alu_opcode"] == 1 and f["use_imm"] for f in alus)   # the faulty MAX with immediate
    assert triage.Evaluator("small", triage.golden_dut("small", FAULT))([out["program"]]) == [("mismatch", "data")]
    assert triage.Evaluator("small", triage.golden_dut("small", None))([out["program"]]) == [None]


def test_minimizer_refuses_a_program_that_passes():
    entry = _failing_entry()
    out = triage.minimize_replay(dict(entry, fault=None), dut=triage.golden_dut("small", None))
    assert out["minimized"] == {"reproduced": False, "result": None}
    with pytest.raises(ValueError, match="does not fail"):
        triage.minimize(entry["program"], triage.Evaluator("small", triage.golden_dut("small", None)))


def test_nops_keep_tokens_and_folds_remove_them():
    f = {"kind": "alu", "opcode": int(Opcode.ALU), "pop_prev": 1, "pop_next": 0, "push_prev": 0, "push_next": 1,
         "reset": 0, "uop_bgn": 0, "uop_end": 1, "iter_out": 1, "iter_in": 1, "dst_factor_out": 0,
         "dst_factor_in": 0, "src_factor_out": 0, "src_factor_in": 0, "alu_opcode": 1, "use_imm": 0, "imm": 0}
    nop = triage._nop(f)
    assert triage._is_nop(nop) and triage._stage(nop) == 2 and nop["pop_prev"] == 1 and nop["push_next"] == 1


@pytest.mark.rtl
@pytest.mark.slow
def test_fault_found_on_the_rtl_minimized_and_replayed_with_waves(tmp_path, monkeypatch, capsys):
    result = triage.check_seeds("small", [0, 1], n_ops=LONG, fault=FAULT)
    assert result["programs"] == 2 and [f["seed"] for f in result["failures"]] == [1]
    entry = result["failures"][0]
    assert entry["failure"]["signature"] == ["mismatch", "data"]
    out = triage.minimize_on_rtl(entry)
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


def test_a_shard_returns_its_coverage_with_the_backpressure_of_dram_pauses():
    out = triage.check_seeds("small", [6], 12, bias={"pad": 1.0}, dram_stall=(7 << 8) | 128)
    assert out["failures"] == [] and out["programs"] == 1
    pressure = out["coverage"]["vta.axi.backpressure"]
    assert all(pressure[b] == 1 for b in (("read", "AR"), ("read", "R_paused"), ("write", "AW"), ("write", "W")))
    assert out["coverage"]["vta.insn.opcode_mem"][("STORE", "OUT")] == 7
    assert out["coverage"]["vta.insn.opcode_mem"][("FINISH", "-")] >= 1        # this shard's golden streams


def test_random_programs_stop_on_injected_axi_errors_and_the_accelerator_works_after():
    # the programs run cleanly (compared with the golden model), then each with SLVERR/DECERR on a read or write beat
    # drawn from its seed (each must stop and name them), then a vector addition must still be right
    result = triage.check_seeds("small", [0, 1, 2, 3, 4, 5], n_ops=12, fault="axi-errors")
    assert result["failures"] == [], result["failures"][0]["failure"]["description"]
