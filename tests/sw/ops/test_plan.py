"""Tiling plans (sw.ops.plan): a layer's plan depends on its epilogue's cost only, so layers that differ in their
multipliers and shifts share one memoised plan, and it is the plan their own epilogue would get."""
import random

from sw.config import load_config
from sw.isa import AluOp
from sw.ops import plan
from sw.ops.epilogue import Epilogue


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
        proxy = plan._cost_proxy(epi)
        assert (proxy.planes, proxy.vectors, proxy.passes) == (epi.planes, epi.vectors, epi.passes)
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


def test_layers_that_differ_only_in_their_constants_share_one_plan():
    a = Epilogue(((AluOp.ADD, "v0"), (AluOp.MUL, 1234), (AluOp.SHR, 9), (AluOp.MAX, -128), (AluOp.MIN, 127)))
    b = Epilogue(((AluOp.ADD, "v0"), (AluOp.MUL, 77), (AluOp.SHR, 12), (AluOp.MAX, -128), (AluOp.MIN, 127)))
    assert plan._cost_proxy(a) is plan._cost_proxy(b) or plan._cost_proxy(a) == plan._cost_proxy(b)
    cfg = load_config("default")
    plan.plan_conv2d(1, 8, 8, 28, 28, 3, 3, 1, 1, 2, epilogue=a, cfg=cfg)
    hits = plan._plan_conv2d.cache_info().hits
    plan.plan_conv2d(1, 8, 8, 28, 28, 3, 3, 1, 1, 2, epilogue=b, cfg=cfg)
    assert plan._plan_conv2d.cache_info().hits == hits + 1
