"""The RTL regression (issue 4): golden model and RTL agree byte for byte, on every config."""
import numpy as np
import pytest

import cosim
from cosim.verify import faults, regress
from sw.config import load_config
from sw.testing import vta_tests as programs

CONFIGS = ["default", "small", "batch2"]
FUZZ = {"default": 200, "small": 100, "batch2": 100}   # random programs compared in CI (make fuzz N=... for more)


@pytest.mark.parametrize("config", CONFIGS)
def test_reference_programs_bit_exact(config):
    names = regress.program_names(load_config(config))
    assert len(names) >= 20
    assert regress.compare(names, config) == []


@pytest.mark.parametrize("config", CONFIGS)
def test_random_programs_bit_exact(config):
    first = {"default": 10_000, "small": 20_000, "batch2": 30_000}[config]
    problems = regress.fuzz(range(first, first + FUZZ[config]), config)
    assert problems == [], "\n".join(problems[:4])


def test_run_returns_the_value_unchanged_and_uses_the_rtl():
    out = cosim.run(faults.target_info, [1, 2, 3], config="small")
    assert out == {"target": "rtl", "config": "small", "value": [1, 2, 3], "double": [2, 4, 6]}
    # the same function called directly runs on the golden model
    assert faults.target_info([1])["target"] == "fsim"


def test_submit_times_the_launch_and_each_call_and_is_the_rtl_runner():
    from cosim.sim import server
    from sw.runtime import runners

    assert runners.get("rtl") is cosim.submit
    server.shutdown_all()
    cold = cosim.submit([(faults.target_info, ([1],), {}), (faults.target_info, ([2],), {})], "small")
    warm = runners.run_batch("rtl", [(faults.target_info, ([3],), {})], "small")
    assert [v["value"] for v in cold.values + warm.values] == [[1], [2], [3]]
    assert len(cold.timings.calls) == 2 and len(warm.timings.calls) == 1
    assert cold.timings.server_start > 0 and warm.timings.server_start == 0.0     # the warm run reused the server
    for t in (cold.timings, warm.timings):
        assert 0 < t.launch < t.total and all(0 < s < t.total for s in t.calls)


def test_run_reraises_the_function_s_exception():
    with pytest.raises(ValueError, match="boom") as err:
        cosim.run(faults.raises, "boom", config="small")
    assert any("inside the RTL co-simulation" in n for n in err.value.__notes__)


def test_program_through_tvm_ffi_on_rtl():
    out = cosim.run(programs.gemm, "ffi", 2, 4, 4, 2, config="default")
    np.testing.assert_array_equal(out["result"], out["expected"])
    assert out["counters"]["gemm_counter"] == 4 * 4 * 2 and out["counters"]["cycles"] > 0


def test_run_rejects_functions_the_simulator_cannot_import():
    with pytest.raises(ValueError, match="module-level function"):
        cosim.run(lambda: 1, config="small")


def test_waves_write_an_fst_file(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    out = cosim.run(programs.relu, "python", config="small", waves=True)
    np.testing.assert_array_equal(out["result"], out["expected"])
    fst = tmp_path / "build" / "waves" / "small-relu.fst"
    assert fst.exists() and fst.stat().st_size > 1000
    assert str(fst) in capsys.readouterr().out
