"""The board target (sw.targets.zynq.BoardDevice) on the virtual board (cosim.sim.vboard): the Verilated accelerator
running free behind a register page and a shared memory file, mapped exactly as /dev/uio0 and /dev/udmabuf0.

The same calls run on the RTL target (RtlDevice, through cosim.run_many) and on the board, each on a fresh runtime
of a device whose memory carries over, as on one board: results, counters, error messages and the whole device
memory must be the same, and the results must be the golden model's."""
import hashlib

import numpy as np
import pytest

import cosim
from cosim.sim.vboard import DEFAULT_PHYS, VirtualBoard
from sw import ops, runtime
from sw.isa import MemId, Opcode
from sw.pipeline import VTAError
from sw.targets.launch import RunTimeout
from sw.testing import vta_tests as programs

CONFIG = "small"


def operators(seed=0):
    """vector add (VTA's tutorial), a conv2d and an exact GEMM via sw.ops on the current target, with counters."""
    rng = np.random.default_rng(seed)
    vadd = programs.vector_add()
    x = rng.integers(-128, 128, (1, 16, 6, 6), dtype=np.int8)
    w = rng.integers(-128, 128, (16, 16, 3, 3), dtype=np.int8)
    bias = rng.integers(-1000, 1000, 16, dtype=np.int32)
    conv, conv_counters = ops.conv2d(x, w, bias, padding=1, shift=10, return_counters=True)
    a = rng.integers(-128, 128, (5, 24), dtype=np.int8)
    b = rng.integers(-128, 128, (12, 24), dtype=np.int8)
    gemm, gemm_counters = ops.gemm(a, b, return_counters=True)
    return {"vadd": vadd["result"], "vadd_expected": vadd["expected"], "conv": conv, "gemm": gemm,
            "counters": {"vadd": vadd["counters"], "conv": conv_counters, "gemm": gemm_counters}}


def bad_instruction():
    """A raw stream whose first instruction has opcode 6 (no such instruction), run directly on the target."""
    q = runtime.current()
    raw = q.isa.words_to_array([6, q.isa.encode(opcode=Opcode.FINISH)])
    h = q.alloc(4096)
    addr = q.memory.get(h).phys
    q.dram[addr:addr + raw.size] = raw
    try:
        q.target.run(addr, 2, 1 << 31)
        out = {"error": None, "message": ""}
    except VTAError as err:
        out = {"error": type(err).__name__, "message": str(err)}
    q.free(h)
    return out


def memory_digest():
    """sha256 of the whole device memory."""
    return hashlib.sha256(runtime.current().dram).hexdigest()


CALLS = [(operators, (), {}), (bad_instruction, (), {}), (operators, (1,), {}), (memory_digest, (), {})]


@pytest.fixture(scope="module")
def rtl():
    return cosim.run_many(CALLS, config=CONFIG)


@pytest.fixture(scope="module")
def board():
    """The same calls on a BoardDevice of a virtual board, then a deadlock that must time out and a last run."""
    out = {}
    with VirtualBoard(CONFIG) as vb:
        with vb.device() as dev:
            out["device"] = repr(dev)
            out["window"] = dev.window
            out["results"] = []
            for fn, args, kwargs in CALLS:
                with runtime.use_target(dev):
                    out["results"].append(fn(*args, **kwargs))
            dev.timeout = 0.5
            with runtime.use_target(dev):
                out["deadlock"] = _deadlock(dev)
            dev.timeout = 10.0
        target = runtime.make_target(vb.spec, config=CONFIG, reset=vb.reset)     # the runtime's target spec
        with runtime.use_target(target):
            out["after"] = programs.vector_add()
        target.close()
    out["stats"] = vb.stats
    return out


def _deadlock(dev):
    """Load waits for compute (g2l) and compute for load (l2g): the run never finishes."""
    q = runtime.current()
    isa = q.isa
    raw = isa.words_to_array([isa.encode(opcode=Opcode.LOAD, memory_type=MemId.INP, pop_next=1, push_next=1),
                              isa.encode(opcode=Opcode.LOAD, memory_type=MemId.UOP, pop_prev=1, push_prev=1),
                              isa.encode(opcode=Opcode.FINISH)])
    h = q.alloc(4096)
    addr = q.memory.get(h).phys
    q.dram[addr:addr + raw.size] = raw
    with pytest.raises(RunTimeout) as info:
        dev.run(addr, 3, 1 << 31)
    q.free(h)
    return str(info.value)


def golden(calls):
    out = []
    for fn, args, kwargs in calls:
        with runtime.use_target(CONFIG):
            out.append(fn(*args, **kwargs))
    return out


def test_the_board_maps_device_memory_at_its_bus_address(board):
    assert board["window"] == DEFAULT_PHYS
    assert "phys=0x10000000, size=0x4000000; device memory 0x10000000+0x4000000" in board["device"]


@pytest.mark.parametrize("index", [0, 2])
def test_operators_match_the_golden_model_and_the_rtl_target(board, rtl, index):
    got, ref = board["results"][index], rtl[index]
    want = golden([CALLS[index]])[0]
    for key in ("vadd", "conv", "gemm"):
        assert got[key].dtype == want[key].dtype and got[key].tobytes() == want[key].tobytes(), key
    np.testing.assert_array_equal(got["vadd"], got["vadd_expected"])
    assert got["counters"] == ref["counters"]          # every counter, cycles included
    assert got["counters"]["vadd"]["alu_counter"] == 64 and got["counters"]["conv"]["gemm_counter"] > 0


def test_a_bad_instruction_is_named_as_on_the_rtl_target_and_the_next_runs_work(board, rtl):
    got = board["results"][1]
    assert got["error"] == "VTAError" and "BAD_OPCODE (code 1)" in got["message"], got
    assert got == rtl[1]                                # the same message, state report included


def test_device_memory_ends_the_same_as_on_the_rtl_target(board, rtl):
    assert board["results"][3] == rtl[3]


def test_a_run_that_never_finishes_times_out_with_every_queue(board):
    msg = board["deadlock"]
    assert msg.startswith("the run did not finish within timeout = 0.5 s of wall-clock time:\n"), msg
    for part in ("tokens  : l2g=0, g2l=0, g2s=0, s2g=0", "load is waiting for a g2l token",
                 "compute is waiting for an l2g or s2g token", "store is idle", "3 instructions fetched"):
        assert part in msg, msg
    assert board["stats"]["resets"] == 2                # after the bad instruction, and after this timeout


def test_the_runtime_opens_the_board_from_its_target_spec(board):
    r = board["after"]
    np.testing.assert_array_equal(r["result"], r["expected"])
    assert board["stats"]["writes"] > 0 and board["stats"]["sweeps"] > 0
