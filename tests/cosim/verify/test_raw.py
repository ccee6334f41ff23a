"""Raw device programs (cosim.verify.raw): a stream written past the runtime's checks, its error as a result."""
from cosim.verify import raw
from sw import runtime
from sw.fsim import FsimDevice
from sw.isa import MemId, Opcode


def test_a_raw_stream_runs_and_reports_its_error_and_changes():
    with runtime.use_target(FsimDevice("small", dram_bytes=16 << 20)) as q:
        done = raw.run_raw([dict(opcode=Opcode.FINISH)])
        at = 1 << 20
        stored = raw.run_raw([raw.store_insn(at // q.cfg.OUT_ELEM_BYTES), *raw.finish_after_store()])
        refused = raw.run_raw([6, dict(opcode=Opcode.FINISH)])
    assert (done["error"], done["message"], done["changed"]) == (None, "", 0)
    assert done["counters"] == {"inp_load_nbytes": 0, "wgt_load_nbytes": 0, "acc_load_nbytes": 0, "uop_load_nbytes": 0,
                                "out_store_nbytes": 0, "gemm_counter": 0, "alu_counter": 0}
    assert (stored["error"], stored["changed"]) == (None, 0)      # OUT row 0 is zero: the bytes written are zeros
    assert stored["counters"]["out_store_nbytes"] == 4 * q.cfg.OUT_ELEM_BYTES
    assert refused["error"] == "InsnError" and refused["changed"] == 0
    assert raw.store_insn(5) == dict(opcode=Opcode.STORE, memory_type=MemId.OUT, sram_base=0, dram_base=5, y_size=1,
                                     x_size=4, x_stride=4, push_prev=1)
    assert raw.X_SIZE_MAX == (1 << 16) - 1
