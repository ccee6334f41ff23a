"""The RTL target's error paths: watchdog, bad instructions, timeouts; each reported clearly, nothing hangs."""
import numpy as np
import pytest

import cosim
from cosim.sim import rtl
from cosim.verify import faults
from sw import runtime
from sw.pipeline import DeadlockError, InsnError
from sw.testing import vta_tests as programs
from tests.conftest import make_queue


@pytest.fixture(scope="module")
def fault_results():
    axi = [("read", 0, "SLVERR"), ("read", 5, "DECERR"), ("write", 0, "SLVERR"), ("write", 3, "DECERR")]
    calls = [(faults.deadlock, (), {}), (faults.reserved_flag, (), {}), (faults.bad_opcode, (), {}),
             (faults.bad_memory_type, (), {}), (faults.timeout, (), {}),
             *((faults.axi_error, a, {}) for a in axi), (programs.vector_add, ("python",), {})]
    names = ["deadlock", "reserved_flag", "bad_opcode", "bad_memory_type", "timeout", *axi, "after"]
    return dict(zip(names, cosim.run_many(calls, config="small", watchdog_cycles=2000)))


def test_deadlock_ends_in_the_watchdog_with_every_queue(fault_results):
    r = fault_results["deadlock"]
    assert r["error"] == "WatchdogError"
    msg = r["message"]
    assert "no progress for 2000 cycles" in msg
    for part in ("fetch", "load", "compute", "store", "tokens  : l2g=0, g2l=0, g2s=0, s2g=0",
                 "load is waiting for a g2l token", "compute is waiting for an l2g or s2g token", "store is idle"):
        assert part in msg, msg
    assert r["changed"] == 0


@pytest.mark.parametrize("case, code", [("reserved_flag", "RESERVED_DEP_FLAG"), ("bad_opcode", "BAD_OPCODE"),
                                        ("bad_memory_type", "BAD_MEMORY_TYPE")])
def test_bad_instruction_sets_the_error_and_changes_nothing(fault_results, case, code):
    r = fault_results[case]
    assert r["error"] == "VTAError" and code in r["message"], r
    assert r["changed"] == 0            # the store after the bad instruction never ran


def test_timeout(fault_results):
    r = fault_results["timeout"]
    assert r["error"] == "RunTimeout" and "wait_cycles = 50" in r["message"]


@pytest.mark.parametrize("case", [("read", 0, "SLVERR"), ("read", 5, "DECERR")])
def test_an_axi_read_error_stops_the_run_and_names_the_transfer(fault_results, case):
    r = fault_results[case]
    msg = r["message"]
    assert r["error"] == "AxiResponseError", r
    assert f"{case[2]} on the read channel" in msg, msg
    if case[1] == 0:        # the first beat of the run is the instruction fetch's
        assert "for the fetch module (instructions)" in msg and "instruction words #0" in msg, msg
    else:                   # two instructions are 4 beats of the small config's 64-bit bus; then the LOAD's data
        assert f"for the load module (INP/WGT loads), burst at {r['base']:#x}, in instruction #0 (LOAD" in msg, msg


@pytest.mark.parametrize("case", [("write", 0, "SLVERR"), ("write", 3, "DECERR")])
def test_an_axi_write_error_stops_the_run_and_its_beat_is_not_written(fault_results, case):
    r = fault_results[case]
    msg = r["message"]
    assert r["error"] == "AxiResponseError", r
    assert (f"{case[2]} on the write channel for the store module (STORE), burst at {r['base']:#x}, "
            f"in instruction #0 (STORE") in msg, msg
    beat = case[1]
    assert (r["buffer"][beat * 8:beat * 8 + 8] == 0xAA).all()         # the failing beat was not written
    assert 0 < r["changed"] <= 64 - 8                                   # only the store's destination changed


def test_the_accelerator_works_again_after_faults(fault_results):
    r = fault_results["after"]
    np.testing.assert_array_equal(r["result"], r["expected"])


def test_golden_model_rejects_the_same_streams():
    q = make_queue("small")
    prev = runtime.set_current(q)
    try:
        assert faults.deadlock()["error"] == DeadlockError.__name__
        assert faults.reserved_flag()["error"] == InsnError.__name__
        assert faults.bad_opcode()["error"] == InsnError.__name__
        assert faults.bad_memory_type()["error"] == InsnError.__name__
    finally:
        runtime.set_current(prev)


def test_describe_state_names_waits():
    regs = {"status": 0, "insn_fetched": 3, "cycles": 10, "queue_load": 1, "queue_compute": 1, "queue_store": 0,
            "tokens_l2g": 0, "tokens_g2l": 0, "tokens_g2s": 0, "tokens_s2g": 0, "modules": 0b0110_0110}
    for mod in ("fetch", "load", "compute", "store"):
        regs[f"{mod}_busy"], regs[f"{mod}_stall"] = 5, 4
    text = rtl.describe_state(regs)
    assert "load is waiting for a g2l token" in text and "compute is waiting for an l2g or s2g token" in text
    assert "fetch is idle" in text and "store is idle" in text
    assert rtl.decode_error(3 << 8) == "RESERVED_DEP_FLAG (code 3)" and rtl.decode_error(0) == ""


def _device(size=64 << 20, mem="dpi"):
    from types import SimpleNamespace
    dev = rtl.RtlDevice.__new__(rtl.RtlDevice)
    dev.dram, dev.mem, dev.window = np.zeros(size, np.uint8), mem, 0
    dev.dut = SimpleNamespace(dram_window=SimpleNamespace(value=0))
    return dev


def test_window_sets_the_testbench_and_checks_its_base():
    dev = _device()
    dev.set_window(0xFC000000)
    assert dev.window == dev.dut.dram_window.value == 0xFC000000
    for bad in (0x02000000, 0xFE000000, -0x04000000, 1 << 32, True):
        with pytest.raises(ValueError, match=r"window base = .*; allowed: a multiple of 0x4000000 in \[0, 0xfc000000\]"):
            dev.set_window(bad)
    with pytest.raises(ValueError, match="needs the DPI DRAM"):
        _device(mem="cocotbext").set_window(0)
    _device(size=48 << 20).set_window(0xFC000000)       # 48 MiB: windows on 64 MiB boundaries
