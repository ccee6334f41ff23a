"""Programs that must fail (cosim.verify.faults): on the golden model each stops with the golden model's error and
changes nothing; the plumbing calls report their target and raise."""
import pytest

from cosim.verify import faults
from sw import runtime
from sw.fsim import FsimDevice


def test_each_program_stops_with_its_error_on_the_golden_model():
    with runtime.use_target(FsimDevice("small", dram_bytes=16 << 20)):
        got = [(f.__name__, f()) for f in (faults.deadlock, faults.reserved_flag, faults.bad_opcode,
                                            faults.bad_memory_type)]
        info = faults.target_info([1, 2])
    assert [(name, r["error"], r["changed"]) for name, r in got] == [
        ("deadlock", "DeadlockError", 0), ("reserved_flag", "InsnError", 0), ("bad_opcode", "InsnError", 0),
        ("bad_memory_type", "InsnError", 0)]
    assert info == {"target": "fsim", "config": "small", "value": [1, 2], "double": [2, 4]}
    with pytest.raises(ValueError, match="^boom$"):
        faults.raises("boom")
