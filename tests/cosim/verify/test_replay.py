"""Replay programs: captured from the golden model, re-run bit for bit, saved and loaded unchanged."""
import numpy as np

from cosim.verify import replay, triage
from sw import runtime
from sw.config import load_config
from sw.isa import POST_PARAM_ROWS, AluOp, MemId, Opcode

N_OPS = 24


def _calls(seeds, fault=None):
    return [(triage.fuzz_probe, (s, N_OPS, fault), {}) for s in seeds]


def _golden(program):
    with runtime.use_target(replay.Tracker(replay.config_of(program))):
        return replay.replay_program(program)


def test_first_program_of_a_batch_replays_bit_for_bit():
    from cosim.verify import regress
    calls = _calls([7])
    original = regress.run_golden(calls, "small", dram_bytes=replay.DRAM_BYTES)[0]
    program = replay.record(calls, "small", index=0)
    out = _golden(program)
    assert out["pages"] == original["pages"]
    assert out["counters"] == {k: original["counters"][k] for k in out["counters"]}


def test_later_program_restores_what_earlier_programs_left_in_the_srams():
    from cosim.verify import regress
    calls = _calls([3, 4, 5])
    original = regress.run_golden(calls, "small", dram_bytes=replay.DRAM_BYTES)[2]
    program = replay.record(calls, "small", index=2)
    assert program["restore"], "a random program reads rows that earlier programs wrote"
    out = _golden(program)
    below_stream = program["insn_addr"] // replay.PAGE     # data, micro-ops and the output buffer
    assert out["pages"][:below_stream] == original["pages"][:below_stream]
    # without the restore, the same stream computes something else
    bare = _golden(dict(program, restore={}))
    assert bare["pages"][:below_stream] != original["pages"][:below_stream]


def test_save_and_load_round_trip(tmp_path):
    program = replay.record(_calls([1]), "small")
    entry = {"config": "small", "seed": 1, "fault": None, "program": program,
             "failure": {"signature": ["mismatch", "data"], "description": "x"}}
    path = replay.save(tmp_path / "a.replay", entry)
    back = replay.load(path)
    assert back["program"] == program and back["seed"] == 1
    assert back["listing"][0].startswith("   0 ")
    assert replay.config_of(back["program"]) == load_config("small")


def test_tracker_notes_undefined_reads_and_hazards():
    cfg = load_config("small")
    dev = replay.Tracker(cfg)
    f = dict(opcode=Opcode.ALU, uop_bgn=0, uop_end=1, iter_out=1, iter_in=3, dst_factor_out=0, dst_factor_in=0,
             src_factor_out=0, src_factor_in=0, alu_opcode=1, use_imm=1, imm=0, reset=0)
    dev.defined[MemId.UOP][0] = True
    dev._indices(f, "alu")
    assert dev.hazard is not None                          # the same acc row three times in a row
    assert np.flatnonzero(dev.undefined[MemId.ACC]).tolist() == [0]
    assert not dev.undefined[MemId.UOP].any()


def test_tracker_notes_the_parameter_rows_a_post_reads():
    dev = replay.Tracker(load_config("default"))
    f = dict(opcode=Opcode.ALU, uop_bgn=0, uop_end=1, iter_out=1, iter_in=1, dst_factor_out=0, dst_factor_in=0,
             src_factor_out=0, src_factor_in=0, alu_opcode=int(AluOp.POST), use_imm=1, imm=100, reset=0)
    dev.defined[MemId.UOP][0] = True
    dev.defined[MemId.ACC][[0, 105]] = True                # the destination (micro-op 0 is acc[0]) and one parameter
    dev._indices(f, "alu")
    assert np.flatnonzero(dev.undefined[MemId.ACC]).tolist() == [r for r in range(100, 100 + POST_PARAM_ROWS) if r != 105]


def test_program_size_counts_work_and_nops():
    program = replay.record(_calls([2]), "small")
    size = replay.program_size(program)
    assert size["insns"] == len(program["insns"]) and size["uop_executions"] > 0 and size["bytes_moved"] > 0


def test_tracker_a_depthwise_reads_inp_and_wgt_not_its_destinations_and_has_no_hazard():
    dev = replay.Tracker(load_config("default"))
    f = dict(opcode=Opcode.DEPTHWISE, uop_bgn=0, uop_end=1, iter_out=1, iter_in=3, dst_factor_out=0, dst_factor_in=0,
             src_factor_out=0, src_factor_in=1, wgt_factor_out=0, wgt_factor_in=2, reset=0)
    dev.defined[MemId.UOP][0] = True
    dev._indices(f, "gemm")
    assert dev.hazard is None                              # one row three times in a row: it is overwritten, not read
    assert not dev.undefined[MemId.ACC].any() and dev.defined[MemId.ACC][0]
    assert np.flatnonzero(dev.undefined[MemId.INP]).tolist() == [0, 1, 2]
    assert np.flatnonzero(dev.undefined[MemId.WGT]).tolist() == [0, 2, 4]
    dev._indices(dict(f, opcode=Opcode.GEMM), "gemm")
    assert dev.hazard is not None                          # a GEMM reads the row it accumulates into


def test_program_size_counts_depthwise_work():
    program = {"config": load_config("default").to_dict(), "config_name": "default",
               "insns": [dict(kind="gemm", opcode=int(Opcode.DEPTHWISE), uop_bgn=2, uop_end=5, iter_out=2, iter_in=3),
                         dict(kind="gemm", opcode=int(Opcode.FINISH), uop_bgn=0, uop_end=9, iter_out=9, iter_in=9)]}
    assert replay.program_size(program) == {"insns": 2, "nops": 0, "uop_executions": 18, "bytes_moved": 0}
