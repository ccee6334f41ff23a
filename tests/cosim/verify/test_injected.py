"""Injected faults (cosim.verify.injected): the fetch-path fault changes only the matching instructions and puts the
stream back; the AXI error responses are drawn from the seed."""
import numpy as np
import pytest

from cosim.verify import injected
from sw import runtime
from sw.fsim import FsimDevice
from sw.isa import AluOp


def _max_imm_program(rt=runtime):
    cmd = rt.command_handle()
    a = rt.buffer_alloc(8 * 32)
    np.from_dlpack(rt.buffer_cpu_ptr(cmd, a))[:] = np.arange(64, dtype=np.int32).view(np.uint8)
    out = rt.buffer_alloc(64)
    rt.load_2d(cmd, a, 0, 8, 1, 8, 0, 0, 0, 0, 0, 3)

    def kernel():
        rt.uop_loop_begin(8, 1, 1, 0)
        rt.uop_push(1, 0, 0, 0, 0, AluOp.MAX, 1, 20)
        rt.uop_loop_end()
    rt.push_alu_op(cmd, kernel, 0)
    rt.dep_push(cmd, 2, 3)
    rt.dep_pop(cmd, 2, 3)
    rt.store_2d(cmd, 0, 4, out, 0, 8, 1, 8)
    rt.synchronize(cmd)
    return np.from_dlpack(rt.buffer_cpu_ptr(cmd, out))[:64].copy().view(np.int8)


def test_alu_max_with_immediate_runs_as_min():
    dev = FsimDevice("small", dram_bytes=16 << 20)
    with runtime.use_target(dev):
        good = _max_imm_program()
    faulty = injected.with_fault(FsimDevice("small", dram_bytes=16 << 20), "alu-max-imm-as-min")
    with runtime.use_target(faulty) as q:
        bad = _max_imm_program()
        stream = q.dram[:4 << 20].copy()
    lanes = np.arange(64).reshape(8, 8)
    np.testing.assert_array_equal(good.reshape(8, 8), np.maximum(lanes, 20).astype(np.int8))
    np.testing.assert_array_equal(bad.reshape(8, 8), np.minimum(lanes, 20).astype(np.int8))
    assert faulty.name == "fsim" and np.array_equal(faulty.dram[:4 << 20], stream)   # the stream is put back


def test_unknown_fault_is_refused():
    with pytest.raises(ValueError, match="allowed: alu-max-imm-as-min"):
        injected.with_fault(FsimDevice("small", dram_bytes=1 << 20), "nope")
    dev = FsimDevice("small", dram_bytes=1 << 20)
    assert injected.with_fault(dev, None) is dev


def test_axi_faults_drawn_from_the_seed_cover_both_channels_and_responses():
    drawn = {injected.axi_fault_for("axi-errors", seed) for seed in range(40)}
    assert {c for c, _, _ in drawn} == {"read", "write"} and {r for _, _, r in drawn} == {"SLVERR", "DECERR"}
    assert all(0 <= b < 8 if c == "read" else b == 0 for c, b, _ in drawn)
    assert injected.axi_fault_for("axi-errors", 3) == injected.axi_fault_for("axi-errors", 3)       # repeatable
    assert {r for s in range(40) for _, _, r in [injected.axi_fault_for("axi-read", s, "cocotbext")]} == {"SLVERR"}
