"""The registry of where a function runs (sw.runtime.runners): the golden model's runner, names, errors."""
import numpy as np
import pytest

from sw import runtime
from sw.pipeline import VTAError
from sw.runtime import runners


def describe(x):
    """Module-level: which target and config the call ran on, a fresh queue each call, the argument back."""
    q = runtime.current()
    handle = runtime.buffer_alloc(64)
    runtime.buffer_cpu_ptr(q.handle, handle)[:] = x
    return {"target": type(q.target).__name__, "config": q.cfg.name, "queue": q.handle,
            "value": runtime.buffer_cpu_ptr(q.handle, handle).copy()}


def fails():
    raise KeyError("inside")


def test_fsim_runs_each_call_on_a_fresh_queue_of_one_golden_model():
    batch = runners.run_batch("fsim", [(describe, (3,), {}), (describe, (), {"x": 5})], "small")
    a, b = batch.values
    assert (a["target"], a["config"], b["config"]) == ("FsimDevice", "small", "small")
    assert a["queue"] != b["queue"]
    assert np.array_equal(a["value"], np.full(64, 3, np.uint8)) and np.array_equal(b["value"], np.full(64, 5, np.uint8))
    t = batch.timings
    assert len(t.calls) == 2 and all(0 < s <= t.total for s in t.calls) and 0 <= t.launch <= t.total
    assert t.server_start == 0.0 and batch.extra == {}


def test_run_returns_the_value_and_reraises():
    assert runners.run("fsim", describe, 7, config="small")["value"][0] == 7
    with pytest.raises(KeyError, match="inside"):
        runners.run("fsim", fails)


def test_names_include_the_installed_rtl_runner():
    assert {"fsim", "board", "rtl"} <= set(runners.names())


def test_an_unknown_name_or_option_is_refused_with_the_allowed_ones():
    with pytest.raises(VTAError, match=r"target = 'gpu' is not a runner; the runners are .*fsim"):
        runners.get("gpu")
    with pytest.raises(VTAError, match="target 'fsim' takes no options, not watchdog_cycles"):
        runners.run_batch("fsim", [(describe, (1,), {})], watchdog_cycles=5)


def test_register_replaces_and_chooses(monkeypatch):
    monkeypatch.setattr(runners, "_RUNNERS", dict(runners._RUNNERS))
    seen = []
    runners.register("fake", lambda calls, config, **options: seen.append((len(calls), config.name, options))
                     or runners.Batch([0] * len(calls), runners.Timings(0.0, (0.0,) * len(calls), 0.0)))
    assert runners.run("fake", describe, 1, config="small", knob=2) == 0
    assert seen == [(1, "small", {"knob": 2})]
