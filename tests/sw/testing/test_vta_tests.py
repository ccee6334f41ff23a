"""VTA's instruction tests (docs/architecture.md §7.3) on the golden model, through Python and through tvm-ffi."""
import numpy as np
import pytest

from sw import runtime
from sw.isa import POST_PARAM_ROWS
from sw.pipeline import InsnError
from sw.testing import vta_tests as programs
from tests.conftest import make_queue


@pytest.mark.parametrize("config", ["default", "small", "batch2"])
@pytest.mark.parametrize("api", ["python", "ffi"])
@pytest.mark.parametrize("name", list(programs.PROGRAMS))
def test_program(name, api, config):
    fn, kwargs = programs.PROGRAMS[name]
    q = make_queue(config)
    previous = runtime.set_current(q)
    try:
        unbuilt = [(f"{op} is not built in config small \\({flag} = 0\\)", opcode) for prefix, flag, op, opcode in
                   (("alu[mul", "ALU_MUL", "MUL", 4), ("post[", "POST_UNIT", "POST", 4),
                    ("depthwise", "DEPTHWISE", "opcode DEPTHWISE", 5))
                   if name.startswith(prefix) and not getattr(q.cfg, flag)]
        if unbuilt:
            with pytest.raises(InsnError, match=unbuilt[0][0]):
                fn(api, **kwargs)
            assert q.runs == 0 and q.insns[-1].opcode != unbuilt[0][1]   # rejected before anything ran or was queued
            return
        out = fn(api, **kwargs)
    finally:
        runtime.set_current(previous)
    assert out["result"].dtype == out["expected"].dtype
    np.testing.assert_array_equal(out["result"], out["expected"])
    if name != "runtime_array":
        assert out["counters"]["out_store_nbytes"] == out["expected"].size * q.cfg.OUT_WIDTH // 8


def test_gemm_counters_exact():
    q = make_queue("default")
    previous = runtime.set_current(q)
    try:
        out = programs.gemm("python", virtual_threads=2, rows=8, cols=4, blocks=3)
    finally:
        runtime.set_current(previous)
    c = out["counters"]
    assert c["gemm_counter"] == 8 * 4 * 3
    assert c["alu_counter"] == 3 * 8 * 4
    assert c["inp_load_nbytes"] == 8 * 3 * 16
    assert c["wgt_load_nbytes"] == 2 * 4 * 3 * 256       # each thread loads all output blocks
    assert c["out_store_nbytes"] == 8 * 4 * 16


def test_programs_run_on_the_default_runtime(monkeypatch):
    """Without any set-up the API uses the golden model of VTA_CONFIG (or the default config)."""
    monkeypatch.setenv("VTA_CONFIG", "configs/small.json")
    previous = runtime.set_current(None)
    try:
        out = programs.relu("ffi")
        assert runtime.current().cfg.BLOCK_OUT == 8
    finally:
        runtime.set_current(previous)
    np.testing.assert_array_equal(out["result"], out["expected"])


def test_post_case_is_checked():
    with pytest.raises(ValueError, match="case = 'nope'; allowed: per_tensor, per_channel, residual, irregular, edges"):
        programs.post(case="nope")


@pytest.mark.parametrize("use_imm", [1, 0])
def test_post_fast_busy_runs_the_two_lengths(use_imm):
    q = make_queue("batch2")
    previous = runtime.set_current(q)
    try:
        first, second = programs.post_fast_busy("python", 100, use_imm)["counters"]
    finally:
        runtime.set_current(previous)
    assert (first["alu_counter"], second["alu_counter"]) == (100, 200)
    assert first["acc_load_nbytes"] == second["acc_load_nbytes"] == POST_PARAM_ROWS * q.cfg.ACC_ELEM_BYTES


def test_depthwise_counts_each_tap_of_each_output_and_ignores_the_window_before():
    """5 x 6 outputs x 9 taps on default (k = 3); the slots beyond the ninth hold the neighbourhood before, whose
    weights are zero."""
    q = make_queue("default")
    previous = runtime.set_current(q)
    try:
        out = programs.depthwise("python", seed=3, height=3, width=4)
    finally:
        runtime.set_current(previous)
    np.testing.assert_array_equal(out["result"], out["expected"])
    assert out["result"].shape == (4, 3, 4, 1, 16)
    c = out["counters"]
    assert c["gemm_counter"] == 3 * 4 * 9 and c["alu_counter"] == 3 * 3 * 4       # three SHR 8 between the planes
    assert c["inp_load_nbytes"] == 3 * 4 * 16 and c["wgt_load_nbytes"] == 256
