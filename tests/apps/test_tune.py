"""Tile tuning (apps.tune): the problems a benchmark or network plans, the model's candidates timed on the RTL, the
fastest written to a log the planner then follows."""
import json

import pytest

from apps import tune
from sw import runtime
from sw.config import load_config
from sw.ops import plan, tuned

SMALL = load_config("small")


def test_the_problems_of_benchmarks_and_of_a_network():
    cfg = load_config("default")
    found = tune.problems_of_workloads(["resnet18.C7", "resnet18.C7", "gemm_256"], cfg)
    assert [(op, shape, vt) for op, shape, vt, _ in found] == [("conv2d", (1, 8, 16, 28, 28, 1, 1, 2, 0), 2),
                                                              ("dense", (256, 16, 16), 2)]
    with pytest.raises(ValueError, match="unknown workloads"):
        tune.problems_of_workloads(["resnet18.C99"], cfg)


@pytest.mark.rtl
@pytest.mark.slow
def test_an_onnx_model_s_problems(tmp_path, capsys):
    import onnx

    from apps import resnet18

    path = tmp_path / "r18.onnx"
    _, q = resnet18.quantized_model(8, 32)
    onnx.save(q, path)
    found = tune.problems_of_model(str(path), load_config("default"))
    kinds = {(op, shape[5] if op == "conv2d" else None) for op, shape, _, _ in found}
    assert ("dense", None) in kinds and ("conv2d", 3) in kinds and ("conv2d", 1) in kinds
    assert any(epi.residual is not None for op, _, _, epi in found if op == "conv2d")     # the fused adds
    log = tmp_path / "tuning.json"
    assert tune.main(["--config", "configs/default.json", "--onnx", str(path), "--top", "1", "--log", str(log)]) == 0
    assert f"{len(found)} problems, 1 candidates each" in capsys.readouterr().out
    entries = json.loads(log.read_text())["entries"]                         # one candidate: the model's own
    assert len(entries) == len(found) and all(e["tiles"] == e["model_tiles"] for e in entries)


def test_a_grouped_conv_is_its_own_problem_and_is_timed_grouped(monkeypatch):
    """A depthwise conv plans as batched images of one block-group, but each group reads its own weights: the
    problem names its block-groups, and timing it runs the grouped operator (here on the golden model: the same
    instructions as the operator the network runs)."""
    import numpy as np

    from sw import ops

    monkeypatch.setenv(tuned.LOG_ENV, "none")
    cfg = load_config("default").with_changes(DEPTHWISE=0)     # (with the mode, the planner takes DEPTHWISE)
    x = np.zeros((1, 64, 14, 14), np.int8)
    w = np.zeros((64, 1, 3, 3), np.int8)
    with runtime.use_target(cfg) as q, tuned.recording() as found:
        before = q.insns_run
        ops.conv2d(x, w, np.zeros(64, np.int32), padding=1, groups=64, virtual_threads=2)
        insns = q.insns_run - before
    (op, _, shape, vt, epi), = found
    assert op == "conv2d-g4" and shape[:3] == (4, 1, 1)             # 4 block-groups of 16 channels, 1 block each
    problem = (op, shape, vt, epi)
    assert "x4 groups" in tune._describe(problem)
    with runtime.use_target(cfg):
        cycles, n = tune.measure(problem, tune.candidates(problem, cfg, 1)[0])
    assert cycles is None and n == insns


def test_candidates_start_with_the_model_s_choice(monkeypatch):
    monkeypatch.setenv(tuned.LOG_ENV, "none")
    cfg = load_config("default")
    problem = tune.problems_of_workloads(["resnet18.C4"], cfg)[0]
    tiles = tune.candidates(problem, cfg, 5)
    assert len(tiles) == 5 == len(set(tiles))
    assert tiles[0] == plan.plan_tiles(plan.plan_conv2d(*problem[1], 2, problem[3], cfg))


@pytest.mark.rtl
def test_tuning_times_the_candidates_on_the_rtl_and_the_planner_follows_the_log(tmp_path, monkeypatch):
    import cosim

    monkeypatch.setenv(tuned.LOG_ENV, "none")
    problem = tune.problems_of_workloads(["resnet18.C10"], SMALL)[0]
    lines = []

    class Out:
        def write(self, text):
            lines.append(text)

        def flush(self):
            pass

    (res,) = tune.tune([problem], SMALL, top=4, min_gain=0.0, tolerance=0.0, out=Out())
    tiles = tune.candidates(problem, SMALL, 4)
    runs = cosim.run_many([(tune.measure, (problem, t), {}) for t in tiles], config=SMALL, **tune.DRAM)
    cycles = [c for c, _ in runs]
    assert res["model"] == tiles[0] and (res["model_cycles"], res["model_insns"]) == runs[0]   # repeatable
    assert res["best_cycles"] == min(cycles) and res["best"] == tiles[cycles.index(min(cycles))]
    assert "best" in "".join(lines)
    with runtime.use_target(SMALL):                          # the golden model: the same program, no cycles
        assert [tune.measure(problem, t) for t in tiles] == [(None, n) for _, n in runs]

    log = tmp_path / "log.json"
    forced = dict(res, best=tiles[2], best_cycles=runs[2][0], best_insns=runs[2][1])
    assert tune.write_log([forced], SMALL, log) == 1
    entry = json.loads(log.read_text())["entries"][0]
    assert entry["tiles"] == list(tiles[2]) and (entry["cycles"], entry["insns"]) == runs[2]
    assert (entry["model_cycles"], entry["model_insns"]) == runs[0] and entry["dram_latency"] == 20
    monkeypatch.setenv(tuned.LOG_ENV, str(log))
    op, shape, vt, epi = problem
    assert plan.plan_tiles(plan.plan_conv2d(*shape, vt, epi, SMALL)) == tiles[2]
    assert tune.write_log([dict(res, best=tiles[0])], SMALL, log) == 1           # the model's choice: kept too
    assert json.loads(log.read_text())["entries"][0]["tiles"] == list(tiles[0])


def test_the_fewest_instructions_within_the_tolerance():
    timed = [(1000, 50, "model"), (960, 90, "fast"), (965, 60, "lean"), (970, 40, "leaner"), (990, 10, "slow")]
    assert tune.choose(timed, 0.0)[2] == "fast"
    assert tune.choose(timed, 0.6)[2] == "lean"          # 965 <= 960 * 1.006
    assert tune.choose(timed, 1.1)[2] == "leaner"
    assert tune.choose(timed, 5.0)[2] == "slow"


def test_command_line_errors(capsys):
    with pytest.raises(SystemExit):
        tune.main(["--config", "configs/small.json"])
    assert "nothing to tune" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        tune.main(["--workloads", "gemm_256", "--top", "0"])
    assert "--top = 0" in capsys.readouterr().err


@pytest.mark.rtl
def test_main_dry_run_writes_nothing(tmp_path, capsys):
    log = tmp_path / "log.json"
    assert tune.main(["--config", "configs/small.json", "--workloads", "dense_128", "--top", "2", "--dry-run",
                      "--log", str(log)]) == 0
    out = capsys.readouterr().out
    assert "1 problems, 2 candidates each" in out and "dense 128x16x16 blocks" in out and not log.exists()


def test_prune_drops_only_this_config_s_entries_nobody_plans_and_new_skips_logged_ones(tmp_path, capsys):
    cfg = load_config("default")
    problem = tune.problems_of_workloads(["resnet18.C7"], cfg)[0]
    key = tune._key(problem, cfg)
    entry = {"tiles": [1, 1, 1, 1, 1]}
    log = tmp_path / "log.json"
    log.write_text(json.dumps({"entries": [{"problem": key, **entry},
                                           {"problem": key.replace("x1x1x2x0", "x3x3x2x0"), **entry},
                                           {"problem": "conv2d other_bus64 1x1 vt2 planes:1", **entry}]}))
    assert tune.main(["--workloads", "resnet18.C7", "--prune", "--log", str(log)]) == 0
    assert "1 entries dropped, 2 kept" in capsys.readouterr().out
    assert tune.main(["--workloads", "resnet18.C7", "--new", "--log", str(log)]) == 0      # nothing left to time
    assert "every problem is in" in capsys.readouterr().out
    assert [e["problem"] for e in json.loads(log.read_text())["entries"]] == [key, "conv2d other_bus64 1x1 vt2 planes:1"]
