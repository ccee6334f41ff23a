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
