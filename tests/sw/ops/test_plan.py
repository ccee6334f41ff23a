"""Tiling plans (sw.ops.plan): a layer's plan depends on its epilogue's cost only, so layers that differ in their
multipliers and shifts share one memoised plan, and it is the plan their own epilogue would get."""
import random

import pytest

from sw.config import load_config
from sw.isa import POST_PARAM_ROWS, AluOp
from sw.ops import plan, tuned
from sw.ops.epilogue import Epilogue


def assert_plans_through_the_proxy(rng, epi, cfg):
    """A random conv2d problem plans the same with ``epi`` (through its memoised cost proxy) as unmemoised."""
    shape = (1, rng.choice([1, 4, 8]), rng.choice([2, 8, 16]), rng.choice([7, 14, 28]), 14, 3, 3, 1, 1,
             rng.choice([1, 2]))
    try:
        want = plan._plan_conv2d.__wrapped__(*shape, epi, cfg, None)
    except plan.TileError as err:
        want = str(err)
    try:
        got = plan.plan_conv2d(*shape, epilogue=epi, cfg=cfg)
    except plan.TileError as err:
        got = str(err)
    assert got == want


@pytest.fixture(autouse=True)
def cycle_model_alone(monkeypatch):
    """These tests are about the planner's own cycle model: no measured choices (sw.ops.tuned)."""
    monkeypatch.setenv(tuned.LOG_ENV, "none")


def random_epilogue(rng):
    steps = []
    for _ in range(rng.randrange(12)):
        op = rng.choice([AluOp.ADD, AluOp.MAX, AluOp.MIN, AluOp.SHR, AluOp.MUL])
        vector = op != AluOp.SHR and rng.random() < 0.4
        steps.append((op, f"v{rng.randrange(3)}" if vector else rng.randrange(1, 20)))
    return Epilogue(tuple(steps), rng.choice([1, 1, 2, 3, 4]))


def test_the_plan_of_the_cost_proxy_is_the_plan_of_the_epilogue():
    rng = random.Random(3)
    cfg = load_config("default")
    for _ in range(40):
        epi = random_epilogue(rng)
        proxy = epi.cost_proxy
        assert (proxy.planes, proxy.vectors, proxy.passes) == (epi.planes, epi.vectors, epi.passes)
        assert_plans_through_the_proxy(rng, epi, cfg)


def test_layers_that_differ_only_in_their_constants_share_one_plan():
    a = Epilogue(((AluOp.ADD, "v0"), (AluOp.MUL, 1234), (AluOp.SHR, 9), (AluOp.MAX, -128), (AluOp.MIN, 127)))
    b = Epilogue(((AluOp.ADD, "v0"), (AluOp.MUL, 77), (AluOp.SHR, 12), (AluOp.MAX, -128), (AluOp.MIN, 127)))
    assert a.cost_proxy is b.cost_proxy or a.cost_proxy == b.cost_proxy
    cfg = load_config("default")
    plan.plan_conv2d(1, 8, 8, 28, 28, 3, 3, 1, 1, 2, epilogue=a, cfg=cfg)
    hits = plan._plan_conv2d.cache_info().hits
    plan.plan_conv2d(1, 8, 8, 28, 28, 3, 3, 1, 1, 2, epilogue=b, cfg=cfg)
    assert plan._plan_conv2d.cache_info().hits == hits + 1


def test_a_gemm_bound_by_its_requantization_chain_gets_two_acc_regions_per_thread():
    """ResNet-18's RGB stem as a GEMM (12,544 x 160 x 64) with a 9-pass requantization: with one acc region
    per thread each tile waits for the requantization and store of the tile two before it (measured 25 %
    slower on the RTL); the plan takes two regions per thread. A short GEMM keeps one."""
    steps = ((AluOp.MUL, 3406), (AluOp.ADD, 64), (AluOp.SHR, 7), (AluOp.MUL, 127), (AluOp.SHR, 12),
             (AluOp.ADD, -32640), (AluOp.SHR, 8), (AluOp.MAX, -128), (AluOp.MIN, 127))
    cfg = load_config("default")
    stem = plan.plan_dense(12544, 10, 4, 2, Epilogue(steps), cfg)
    assert stem.slots == 2 and stem.tn * stem.tm < cfg.ACC_DEPTH // 4
    assert plan.plan_dense(16, 16, 16, 2, cfg=cfg).slots == 1
    assert plan.plan_dense(12544, 10, 4, 1, Epilogue(steps), cfg).slots == 1      # one thread: one region


def test_the_plan_of_a_post_epilogues_cost_proxy_is_its_plan():
    """The same with the epilogues lowered for the post-processing unit: a proxy keeps the passes, the POST
    instructions and their parameter rows."""
    rng = random.Random(5)
    cfg = load_config("default")
    lowered = 0
    for _ in range(40):
        epi = random_epilogue(rng).lowered(cfg, rng.choice([1, 49, 196]), rng.choice([1, 4, 16]))
        lowered += epi.post is not None
        proxy = epi.cost_proxy
        assert (proxy.planes, proxy.passes, proxy.post) == (epi.planes, epi.passes, epi.post)
        assert all(proxy.acc_rows(r, tm) == epi.acc_rows(r, tm) and proxy.alu_cycles(r, tm) == epi.alu_cycles(r, tm)
                   for r, tm in ((49, 1), (392, 8)))
        assert_plans_through_the_proxy(rng, epi, cfg)
    assert lowered > 5


def test_the_planner_sees_post_parameter_rows_and_instructions():
    """POST passes' parameter rows take acc rows (POST_PARAM_ROWS per channel block of a pass with vectors), and an ALU-bound
    layer (a 1x1 conv over one input block with a long requantization) costs less with them."""
    cfg = load_config("default")
    steps = ((AluOp.ADD, "v0"), (AluOp.MUL, 3406), (AluOp.ADD, 64), (AluOp.SHR, 7), (AluOp.MUL, 127),
             (AluOp.SHR, 12), (AluOp.ADD, -32640), (AluOp.SHR, 8), (AluOp.MAX, -128), (AluOp.MIN, 127))
    alu = Epilogue(steps)
    post = alu.lowered(cfg, 28 * 28, 8)
    assert post.post == (((0, 10),), (), False) and post.passes == 1 and alu.passes == 10
    shape = (1, 1, 8, 28, 28, 1, 1, 1, 0)
    best = plan.plan_conv2d(*shape, 2, post, cfg)
    caps = plan._conv_caps(cfg, 2)
    rows = best.tm * best.th * best.tw
    assert post.acc_rows(rows, best.tm) == rows + POST_PARAM_ROWS * best.tm <= caps["acc"] // best.slots
    assert plan.conv2d_candidates(*shape, 2, post, cfg, None)[0].cost < \
        plan.conv2d_candidates(*shape, 2, alu, cfg, None)[0].cost
    # the DMA of the parameters: 3 loads of 2 channel blocks' POST_PARAM_ROWS rows of 64 bytes, one LOAD each; none
    # for the ALU
    assert plan._param_loads(3, 2, post, cfg) == (3 * 2 * POST_PARAM_ROWS * 64, 3)
    assert plan._param_loads(3, 2, alu, cfg) == (0, 0)
    # 1008 accumulators over 8 channel blocks: with the bias vector 1016 acc rows fit; with the parameters, 1136
    assert plan.plan_tiles(plan.plan_conv2d(*shape, 2, alu, cfg, tiles=(8, 9, 14, 1))) == (8, 9, 14, 1, 1)
    with pytest.raises(plan.TileError, match=r"accumulator \(ACC\) SRAM: needs 1136 elements, 1024 available"):
        plan.plan_conv2d(*shape, 2, post, cfg, tiles=(8, 9, 14, 1))
