"""The persistent simulator (cosim.sim.server): every call starts fresh, crashes stay in their call, no leaks."""
import numpy as np
import pytest

import cosim
from cosim.sim import server
from cosim.verify import faults, probes
from sw import runtime
from sw.config import load_config
from sw.fsim import FsimDevice
from sw.testing import vta_tests as programs

CONFIG = "small"


def _golden(fn, *args):
    with runtime.use_target(FsimDevice(load_config(CONFIG), dram_bytes=64 << 20)):
        return fn(*args)


def test_no_state_leaks_between_calls():
    fresh = _golden(probes.leftovers)
    assert not fresh["out"].any()
    # the probe sees what an earlier program left when both run in one simulation ...
    _, after_gemm = cosim.run_many([(programs.gemm, ("python", 1, 4, 4, 1), {}), (probes.leftovers, (), {})],
                                   config=CONFIG)
    assert after_gemm["out"].any() and after_gemm["pages"] != fresh["pages"]
    # ... and nothing of it in a later call: SRAMs, DRAM and allocator are those of a fresh launch
    out = cosim.run(programs.gemm, "python", 1, 4, 4, 1, config=CONFIG)
    np.testing.assert_array_equal(out["result"], out["expected"])
    later = cosim.run(probes.leftovers, config=CONFIG)
    np.testing.assert_array_equal(later["out"], fresh["out"])
    assert later["pages"] == fresh["pages"]


@pytest.mark.parametrize("how, message", [("kill", "killed by signal 9"), ("exit", "exited with code 3")])
def test_a_crashed_call_does_not_poison_the_next(how, message):
    pid = cosim.run(probes.server_pid, config=CONFIG)
    with pytest.raises(cosim.CosimError, match=message):
        cosim.run(probes.die, how, config=CONFIG)
    out = cosim.run(programs.vector_add, "python", config=CONFIG)
    np.testing.assert_array_equal(out["result"], out["expected"])
    assert cosim.run(probes.server_pid, config=CONFIG) == pid          # the same server served them all


def test_a_watchdog_in_one_call_leaves_the_next_clean():
    hung = cosim.run(faults.deadlock, config=CONFIG, watchdog_cycles=500)
    assert hung["error"] == "WatchdogError" and "load is waiting for a g2l token" in hung["message"]
    assert cosim.run(probes.leftovers, config=CONFIG)["pages"] == _golden(probes.leftovers)["pages"]


def test_a_dead_server_is_replaced():
    pid = cosim.run(probes.server_pid, config=CONFIG)
    with pytest.raises(cosim.CosimError, match="exited during a job"):
        cosim.run(probes.kill_server, config=CONFIG)
    assert cosim.run(probes.server_pid, config=CONFIG) != pid


def test_shutdown_ends_the_simulator_processes():
    cosim.run(probes.server_pid, config=CONFIG)
    procs = [s.proc for s in server._SERVERS.values()]
    assert procs
    server.shutdown_all()
    assert all(p.poll() is not None for p in procs) and not server._SERVERS


def test_the_simulator_skips_pytest_assertion_rewriting_of_its_imports():
    """cocotb rewrites the asserts of every module the simulator imports unless told not to: 0.6 s of a
    server's start (numpy, tvm-ffi and the runtime rewritten on each start)."""
    from cosim.sim import server
    env = server._cocotb_env()
    assert env["COCOTB_REWRITE_ASSERTION_FILES"] == "" and env["COCOTB_TEST_MODULES"] == "cosim.sim.entry"
