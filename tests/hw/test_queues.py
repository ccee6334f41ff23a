"""TokenQueue: a saturating token counter checked cycle by cycle against a Python model."""

import gc
import random
import warnings

import pytest
from amaranth.hdl import UnusedElaboratable
from amaranth.sim import Simulator

from hw.queues import TokenQueue


def run_random(depth, cycles, seed, push_prob, pop_prob):
    dut = TokenQueue(depth)
    rng = random.Random(seed)
    seen = {"saturated": 0, "both": 0, "empty_pop": 0}

    async def bench(ctx):
        count = 0
        overflow = 0
        for _ in range(cycles):
            push = rng.random() < push_prob
            pop = rng.random() < pop_prob
            clear = rng.random() < 0.01
            ctx.set(dut.producer.push, push)
            ctx.set(dut.consumer.pop, pop)
            ctx.set(dut.clear, clear)
            assert ctx.get(dut.count) == count
            assert ctx.get(dut.consumer.valid) == (count != 0)
            assert ctx.get(dut.overflow) == overflow
            await ctx.tick()
            # model
            if clear:
                count, overflow = 0, 0
                continue
            popped = pop and count > 0
            if push and popped:
                seen["both"] += 1
            elif push:
                if count == depth:
                    overflow = 1
                    seen["saturated"] += 1
                else:
                    count += 1
            elif popped:
                count -= 1
            elif pop:
                seen["empty_pop"] += 1

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return seen


@pytest.mark.parametrize("depth,push_prob,pop_prob", [(1, 0.5, 0.5), (5, 0.6, 0.4), (5, 0.3, 0.6)])
def test_random_against_model(depth, push_prob, pop_prob):
    seen = run_random(depth, 2000, seed=depth * 7 + int(push_prob * 10), push_prob=push_prob,
                      pop_prob=pop_prob)
    assert seen["both"] > 0
    if push_prob > pop_prob:
        assert seen["saturated"] > 0
    else:
        assert seen["empty_pop"] > 0


def test_default_depth_saturates_at_255():
    dut = TokenQueue()

    async def bench(ctx):
        ctx.set(dut.producer.push, 1)
        await ctx.tick().repeat(300)
        assert ctx.get(dut.count) == 255
        assert ctx.get(dut.overflow) == 1
        # push + pop at saturation: unchanged
        ctx.set(dut.consumer.pop, 1)
        await ctx.tick().repeat(3)
        assert ctx.get(dut.count) == 255
        ctx.set(dut.producer.push, 0)
        await ctx.tick().repeat(255)
        assert ctx.get(dut.count) == 0 and ctx.get(dut.consumer.valid) == 0
        await ctx.tick().repeat(3)          # pops of an empty queue are ignored: no wrap
        assert ctx.get(dut.count) == 0

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()


def test_push_to_valid_latency():
    dut = TokenQueue(4)

    async def bench(ctx):
        ctx.set(dut.producer.push, 1)
        assert ctx.get(dut.consumer.valid) == 0
        await ctx.tick()
        ctx.set(dut.producer.push, 0)
        assert ctx.get(dut.consumer.valid) == 1 and ctx.get(dut.count) == 1
        ctx.set(dut.consumer.pop, 1)
        await ctx.tick()
        ctx.set(dut.consumer.pop, 0)
        assert ctx.get(dut.consumer.valid) == 0

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()


@pytest.mark.parametrize("depth", [0, 65536, 2.5, True])
def test_parameter_checks(depth):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(ValueError, match="depth") as info:
            TokenQueue(depth)
        del info
        gc.collect()
