"""The profile-guided variant of a model (cosim.model.pgo): opt-in, built from the plain model's objects with a
profile of its own training run, and bit-exact (the RTL is the same; only the C++ compiles differently)."""
import pytest

import cosim
from cosim.model import build, pgo
from cosim.sim import server
from sw import runtime
from sw.testing import workloads


@pytest.mark.parametrize("env, waves, mem, coverage, expected", [
    ("1", False, "dpi", False, True),
    ("0", False, "dpi", False, False),
    ("", False, "dpi", False, False),
    (None, False, "dpi", False, False),
    ("1", True, "dpi", False, False),
    ("1", False, "cocotbext", False, False),
    ("1", False, "dpi", True, False),
])
def test_only_the_plain_variant_and_only_when_asked(monkeypatch, env, waves, mem, coverage, expected):
    if env is None:
        monkeypatch.delenv(pgo.PGO_ENV, raising=False)
    else:
        monkeypatch.setenv(pgo.PGO_ENV, env)
    assert pgo.wanted(waves, mem, coverage) is expected


@pytest.mark.slow
def test_the_optimised_model_is_built_from_a_profile_and_runs_bit_exact(monkeypatch):
    plain = build.build_model("small")
    model = pgo.pgo_model(plain, server.train)
    assert model.build_dir != plain.build_dir and model.cfg == plain.cfg
    obj = model.build_dir / "obj"
    assert sorted(p.name for p in obj.glob("*.gcda"))           # the training's profile ...
    log = (model.build_dir / "build.log").read_text()
    assert f"OPT_FAST={pgo.GENERATE}" in log and f"OPT_FAST={pgo.USE}" in log and "training:" in log
    assert log.index(pgo.GENERATE) < log.index("training:") < log.index(pgo.USE)   # ... fed to the last compile
    assert model.executable.read_bytes() != plain.executable.read_bytes()
    assert pgo.pgo_model(plain, lambda m: pytest.fail("a cached variant trained again")).build_dir == model.build_dir

    monkeypatch.setenv(pgo.PGO_ENV, "1")           # cosim.run picks the variant
    out = cosim.run(workloads.run_conv2d_workload, None, 1, 10, 10, 32, 32, 3, 1, 1, 2, True, None, 3, True,
                    config="small")
    assert out["ok"] and out["macs"] == 10 * 10 * 32 * 32 * 9
    assert any(key == str(model.build_dir) for key in server._SERVERS)
    with runtime.use_target("small"):                # the same program on the golden model
        golden = workloads.run_conv2d_workload(None, 1, 10, 10, 32, 32, 3, 1, 1, 2, True, None, 3, True)
    assert {k: v for k, v in out["counters"].items() if k in golden["counters"]} == golden["counters"]


def test_a_training_run_that_writes_no_profile_fails_the_build(tmp_path, monkeypatch):
    plain = build.build_model("small")
    monkeypatch.setattr(build, "CACHE_DIR", tmp_path)
    monkeypatch.setattr(pgo, "_remake", lambda obj, opt_fast, ldflags, log: None)   # the compiles are not the point
    with pytest.raises(build.BuildError, match="wrote no profile"):
        pgo.pgo_model(plain, lambda model: None)
    assert not list(tmp_path.glob("*/BUILT"))


def test_training_runs_on_every_config_s_golden_model():
    for config in ("default", "small", "batch2", "ulx3s"):
        with runtime.use_target(config):
            assert pgo.training() > 0
