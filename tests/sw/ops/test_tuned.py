"""The tuning log (sw.ops.tuned): problems keyed by what the planner sees, a measured choice preferred when it fits,
recorded problems, a clear error for a malformed log."""
import json

import pytest

from sw import runtime
from sw.config import load_config
from sw.isa import AluOp
from sw.ops import Epilogue, plan, tuned
from sw.testing.workloads import run_conv2d_workload

CFG = load_config("default")
C7 = (1, 8, 16, 28, 28, 1, 1, 2, 0)           # ResNet-18's C7 in blocks: (nb, cb, ob, h, w, kh, kw, stride, pad)
BIAS = Epilogue.vta(bias=True)


def write(tmp_path, monkeypatch, entries) -> None:
    log = tmp_path / "tuned.json"
    log.write_text(json.dumps({"entries": entries}))
    monkeypatch.setenv(tuned.LOG_ENV, str(log))


def entry(shape, tiles, epi=BIAS, op="conv2d", vt=2):
    return {"problem": tuned.problem_key(op, CFG, shape, vt, epi), "tiles": list(tiles)}


def test_problems_differ_by_cost_not_by_immediates():
    shr8 = tuned.problem_key("conv2d", CFG, C7, 2, Epilogue.vta(8, True))
    shr5 = tuned.problem_key("conv2d", CFG, C7, 2, Epilogue.vta(5, True))
    no_bias = tuned.problem_key("conv2d", CFG, C7, 2, Epilogue.vta(8, False))
    assert shr8 == shr5 != no_bias
    assert shr8 == tuned.problem_key("conv2d", CFG, C7, 2, Epilogue.vta(8, True).cost_proxy)   # a proxy's proxy
    assert shr8 != tuned.problem_key("conv2d", CFG, C7, 1, Epilogue.vta(8, True))
    assert shr8 != tuned.problem_key("conv2d", load_config("small"), C7, 2, Epilogue.vta(8, True))
    residual = Epilogue(((AluOp.SHR, 8), (AluOp.ADD, "r"), (AluOp.MIN, 127)), residual=((AluOp.SHR, 1),))
    assert "residual:" in tuned.epilogue_key(residual) and "residual" not in tuned.epilogue_key(BIAS)
    # POST passes are part of the cost: the same steps on the ALU are another problem
    ran, ran5 = (Epilogue.vta(s, True).lowered(CFG, rows=28 * 28, blocks=16) for s in (8, 5))
    assert tuned.epilogue_key(ran).endswith(" post:0-4|") and tuned.epilogue_key(ran) != tuned.epilogue_key(BIAS)
    assert tuned.problem_key("conv2d", CFG, C7, 2, ran) == tuned.problem_key("conv2d", CFG, C7, 2, ran5)


def test_the_planner_prefers_a_measured_choice_that_fits(tmp_path, monkeypatch):
    model = plan.conv2d_candidates(*C7, 2, BIAS, CFG, None)
    other = plan.plan_tiles(model[29])
    write(tmp_path, monkeypatch, [entry(C7, other)])
    chosen = plan.plan_conv2d(*C7, 2, BIAS, CFG)
    assert plan.plan_tiles(chosen) == other
    monkeypatch.setenv(tuned.LOG_ENV, "none")                       # the cycle model alone
    assert plan.plan_conv2d(*C7, 2, BIAS, CFG) == model[0]
    write(tmp_path, monkeypatch, [entry(C7, (16, 28, 28, 8, 2))])   # stale: does not fit the SRAMs any more
    assert plan.plan_conv2d(*C7, 2, BIAS, CFG) == model[0]
    assert plan.plan_tiles(plan.plan_conv2d(*C7, 2, BIAS, CFG, tiles=(8, 7, 7, 4))) == (8, 7, 7, 4, 1)   # explicit


def test_a_measured_dense_choice(tmp_path, monkeypatch):
    shape = (256, 16, 16)
    model = plan.dense_candidates(*shape, 2, plan._VTA, CFG)
    write(tmp_path, monkeypatch, [entry(shape, plan.plan_tiles(model[5]), plan._VTA, "dense")])
    assert plan.plan_tiles(plan.plan_dense(*shape, 2, None, CFG)) == plan.plan_tiles(model[5])


def test_the_operator_runs_the_measured_tiles_bit_exact(tmp_path, monkeypatch):
    ran = BIAS.lowered(CFG, rows=14 * 14, blocks=8)         # as the operator runs it on CFG: one POST pass
    assert ran.post == (((0, 4),), (), False)
    model = plan.conv2d_candidates(1, 4, 8, 14, 14, 3, 3, 1, 1, 2, ran.cost_proxy, CFG, None)
    write(tmp_path, monkeypatch, [entry((1, 4, 8, 14, 14, 3, 3, 1, 1), plan.plan_tiles(model[3]), ran)])
    with runtime.use_target(CFG):
        with tuned.recording() as found:
            out = run_conv2d_workload(None, 1, 14, 14, 64, 128, 3, 1, 1, 2)
        assert out["ok"]
        explicit = run_conv2d_workload(None, 1, 14, 14, 64, 128, 3, 1, 1, 2, True, plan.plan_tiles(model[3]))
        first = run_conv2d_workload(None, 1, 14, 14, 64, 128, 3, 1, 1, 2, True, plan.plan_tiles(model[0]))
    assert out["counters"] == explicit["counters"] != first["counters"]
    assert [(op, shape, vt) for op, _, shape, vt, _ in found] == [("conv2d", (1, 4, 8, 14, 14, 3, 3, 1, 1), 2)]


def test_recording_is_scoped_and_nests():
    with runtime.use_target(CFG):
        with tuned.recording() as outer:
            run_conv2d_workload(None, 1, 8, 8, 16, 48, 1, 0, 1, 1)
            with tuned.recording() as inner:
                run_conv2d_workload(None, 1, 8, 8, 16, 48, 3, 1, 1, 1)
        run_conv2d_workload(None, 1, 8, 8, 16, 48, 3, 1, 2, 1)
    assert [p[2][5] for p in outer] == [1] and [p[2][5] for p in inner] == [3]


def test_a_malformed_log_is_a_clear_error(tmp_path, monkeypatch):
    log = tmp_path / "bad.json"
    log.write_text(json.dumps([{"problem": "x"}]))
    monkeypatch.setenv(tuned.LOG_ENV, str(log))
    with pytest.raises(ValueError, match="a tuning log is"):
        plan.plan_conv2d(*C7, 2, Epilogue.vta(7, True), CFG)


def test_the_repository_log_holds_only_choices_the_planner_accepts(monkeypatch):
    monkeypatch.delenv(tuned.LOG_ENV, raising=False)
    entries = tuned.entries(tuned.LOG)
    assert entries, "sw/ops/tuned.json is empty"
    for key, e in entries.items():
        assert e["cycles"] < e["model_cycles"] or e["tiles"] == e["model_tiles"], key
        assert e["insns"] > 0 and e["model_insns"] > 0, key
        assert e["dram_latency"] == 20 and e["dram_bytes_per_cycle"] == 8
