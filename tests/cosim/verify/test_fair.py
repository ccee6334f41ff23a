"""Fair variants (cosim.verify.fair): a recorded program is fair, a removed token makes a race or an unbalanced queue."""
from cosim.verify import fair, replay

from .failing import failing_entry


def test_recorded_programs_are_fair_and_a_removed_token_makes_a_race():
    program = failing_entry()["program"]
    cfg = replay.config_of(program)
    insns = program["insns"]
    assert fair.ordering_problem(cfg, insns) is None
    # drop every token between load and compute: a GEMM now races with the loads of its inputs
    stage = {1: {"push_next": 0}, 2: {"pop_prev": 0}, 3: {}}
    cut = [dict(f, **stage[fair.stage(f)]) for f in insns]
    assert fair.ordering_problem(cfg, cut).split(" race on ")[1] in ("inp", "wgt")
    one = next(i for i, f in enumerate(insns) if fair.stage(f) == 1 and f["push_next"])
    unbalanced = insns[:one] + [dict(insns[one], push_next=0)] + insns[one + 1:]
    assert "token queue l2g" in fair.ordering_problem(cfg, unbalanced)
    assert "end with its only FINISH" in fair.ordering_problem(cfg, insns[-1:] + insns[:-1])


def test_a_depthwise_reads_inp_and_wgt():
    """A DEPTHWISE (compute) after LOADs of inp and wgt (load) with no token between: a race on inp; with the token,
    fair."""
    from sw.config import load_config
    from sw.isa import MemId, Opcode, isa_for
    cfg = load_config("default")
    isa = isa_for(cfg)

    def insn(**f):
        d = isa.decode(isa.encode(**f))
        return dict(kind=d.kind, **d.f)
    loads = [insn(opcode=Opcode.LOAD, memory_type=m, x_size=1, y_size=1, x_stride=1, dram_base=64 * i)
             for i, m in enumerate((MemId.INP, MemId.WGT))]
    dw = insn(opcode=Opcode.DEPTHWISE, uop_end=1, iter_out=1, iter_in=1)
    finish = insn(opcode=Opcode.FINISH)
    assert fair.accesses(cfg, dw) == [("inp", False, 0, 1), ("wgt", False, 0, 1), ("acc", True, 0, 1),
                                      ("uop", False, 0, 1)]
    racing = loads + [dw, finish]
    assert fair.ordering_problem(cfg, racing).endswith("race on inp")
    ordered = loads[:1] + [dict(loads[1], push_next=1), dict(dw, pop_prev=1), finish]
    assert fair.ordering_problem(cfg, ordered) is None
