"""AxiMaster against the AxiMemory model: arbitration, burst splitting, strobes, back-pressure."""

import random

import numpy as np
import pytest
from amaranth.hdl import Fragment
from amaranth.sim import Simulator

from hw.axi import AxiMaster
from tests.hw.bus_models import AxiMemory, assert_value_error

MEM_SIZE = 1 << 15


def word_at(mem, addr, nbytes):
    return int.from_bytes(mem[addr:addr + nbytes].tobytes(), "little")


async def issue(ctx, port, cmds, rng, gap_prob=0.3):
    """Send DMA commands on ``port.cmd`` with random idle cycles between them."""
    for addr, beats in cmds:
        while rng.random() < gap_prob:
            await ctx.tick()
        ctx.set(port.cmd.payload.addr, addr)
        ctx.set(port.cmd.payload.beats, beats)
        ctx.set(port.cmd.valid, 1)
        await ctx.tick().until(port.cmd.ready)
        ctx.set(port.cmd.valid, 0)


async def receive(ctx, port, n_words, rng, ready_prob, out):
    """Take ``n_words`` data words with random back-pressure; append ``(data, last)`` to ``out``."""
    while len(out) < n_words:
        ready = rng.random() < ready_prob
        ctx.set(port.data.ready, ready)
        _, _, valid, data, last = await ctx.tick().sample(
            port.data.valid, port.data.payload.data, port.data.payload.last)
        if valid and ready:
            out.append((data, last))
    ctx.set(port.data.ready, 0)


def expected_reads(mem, cmds, nbytes):
    out = []
    for addr, beats in cmds:
        for b in range(beats):
            out.append((word_at(mem, addr + b * nbytes, nbytes), int(b == beats - 1)))
    return out


def run_reads(bus_width, n_readers, cmds_per_client, *, seed, max_burst=256, ready_prob=0.8,
              mem_kwargs=None):
    random.Random(seed)
    dut = AxiMaster(bus_width, n_readers, max_burst=max_burst)
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    mem = AxiMemory(dut.axi, MEM_SIZE, bus_width, seed=seed, max_burst=max_burst, **(mem_kwargs or {}))
    mem.mem[:] = np.random.default_rng(seed).integers(0, 256, MEM_SIZE, dtype=np.uint8)
    mem.add_to(sim)
    nbytes = bus_width // 8
    results = [[] for _ in range(n_readers)]

    for i in range(n_readers):
        cmds = cmds_per_client[i]
        total = sum(b for _, b in cmds)
        crng = random.Random(seed * 100 + i)

        async def client(ctx, i=i, cmds=cmds, crng=crng):
            await issue(ctx, dut.read[i], cmds, crng)

        async def sink(ctx, i=i, total=total, crng=crng):
            await receive(ctx, dut.read[i], total, random.Random(crng.random()), ready_prob, results[i])
            await ctx.tick().repeat(2)      # (read_beats counts a word a cycle after it moves)

        sim.add_testbench(client)
        sim.add_testbench(sink)

    async def watchdog(ctx):
        for _ in range(20000):
            await ctx.tick()
        raise AssertionError(f"reads did not complete: got {[len(r) for r in results]} words")

    sim.add_testbench(watchdog, background=True)
    beats = [0] * n_readers

    async def beat_probe(ctx):
        while True:
            await ctx.tick()
            for i in range(n_readers):
                beats[i] = ctx.get(dut.read_beats[i])

    sim.add_testbench(beat_probe, background=True)
    sim.run()
    for i in range(n_readers):
        assert results[i] == expected_reads(mem.mem, cmds_per_client[i], nbytes), f"client {i}"
        assert beats[i] == len(results[i])
    return mem


def random_cmds(rng, n, nbytes, max_beats):
    cmds = []
    for _ in range(n):
        beats = rng.randint(1, max_beats)
        addr = rng.randrange(0, MEM_SIZE - beats * nbytes, nbytes)
        cmds.append((addr, beats))
    return cmds


@pytest.mark.parametrize("bus_width", [64, 128, 512])
def test_multi_client_reads(bus_width):
    rng = random.Random(bus_width)
    nbytes = bus_width // 8
    cmds = [random_cmds(rng, 4, nbytes, 12) for _ in range(3)]
    mem = run_reads(bus_width, 3, cmds, seed=bus_width)
    assert all(kind == "AR" for kind, _, _ in mem.bursts)


def test_read_priority():
    """Commands presented in the same cycle are granted to the lowest-numbered client first."""
    dut = AxiMaster(64, 3)
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    mem = AxiMemory(dut.axi, MEM_SIZE, 64, seed=3, ready_prob=1.0, valid_prob=1.0, max_latency=0)
    mem.add_to(sim)
    grants = []

    async def bench(ctx):
        for i in range(3):
            ctx.set(dut.read[i].data.ready, 1)
            ctx.set(dut.read[i].cmd.payload.addr, 0x100 * (i + 1))
            ctx.set(dut.read[i].cmd.payload.beats, 2)
            ctx.set(dut.read[i].cmd.valid, 1)
        pending = {0, 1, 2}
        for _ in range(100):
            _, _, *readies = await ctx.tick().sample(*(dut.read[i].cmd.ready for i in range(3)))
            for i, r in enumerate(readies):
                if r and i in pending:
                    assert sum(readies) == 1
                    grants.append(i)
                    pending.discard(i)
                    ctx.set(dut.read[i].cmd.valid, 0)
            if not pending:
                break
        for _ in range(30):
            await ctx.tick()

    sim.add_testbench(bench)
    sim.run()
    assert grants == [0, 1, 2]
    assert [a for _, a, _ in mem.bursts] == [0x100, 0x200, 0x300]


@pytest.mark.parametrize("bus_width,max_burst", [(64, 256), (64, 16), (256, 256)])
def test_long_read_split(bus_width, max_burst):
    nbytes = bus_width // 8
    beats = 600 if bus_width == 64 else 200
    start = 4096 - 3 * nbytes        # three beats before a 4 KiB boundary
    mem = run_reads(bus_width, 1, [[(start, beats)]], seed=7, max_burst=max_burst, ready_prob=0.9,
                    mem_kwargs={"ready_prob": 0.9, "valid_prob": 0.9, "max_latency": 2})
    lens = [b for _, _, b in mem.bursts]
    assert sum(lens) == beats
    assert lens[0] == 3
    assert max(lens) == min(max_burst, 4096 // nbytes)
    addr = start
    for _, a, b in mem.bursts:
        assert a == addr
        addr += b * nbytes


def run_writes(bus_width, cmds, *, seed, max_burst=256, error_ranges=(), mem_kwargs=None):
    rng = random.Random(seed)
    nbytes = bus_width // 8
    dut = AxiMaster(bus_width, 1, max_burst=max_burst)
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    mem = AxiMemory(dut.axi, MEM_SIZE, bus_width, seed=seed, max_burst=max_burst, **(mem_kwargs or {}))
    mem.error_ranges = list(error_ranges)
    init = np.random.default_rng(seed).integers(0, 256, MEM_SIZE, dtype=np.uint8)
    mem.mem[:] = init
    expect = init.copy()
    words = []
    for addr, beats in cmds:
        for b in range(beats):
            data = rng.getrandbits(bus_width)
            strb = rng.getrandbits(nbytes)
            words.append((data, strb, b == beats - 1))
            raw = data.to_bytes(nbytes, "little")
            base = addr + b * nbytes
            if not any(lo < addr + beats * nbytes and addr < hi for lo, hi in error_ranges):
                for i in range(nbytes):
                    if strb >> i & 1:
                        expect[base + i] = raw[i]
    mem.add_to(sim)
    dones = []

    async def commands(ctx):
        await issue(ctx, dut.write, cmds, random.Random(seed + 1))

    async def data(ctx):
        drng = random.Random(seed + 2)
        for d, s, last in words:
            while drng.random() < 0.3:
                ctx.set(dut.write.data.valid, 0)
                await ctx.tick()
            ctx.set(dut.write.data.payload.data, d)
            ctx.set(dut.write.data.payload.strb, s)
            ctx.set(dut.write.data.payload.last, last)
            ctx.set(dut.write.data.valid, 1)
            await ctx.tick().until(dut.write.data.ready)
        ctx.set(dut.write.data.valid, 0)

    async def done_counter(ctx):
        cycle = 0
        while len(dones) < len(cmds):
            _, _, done = await ctx.tick().sample(dut.write.done)
            cycle += 1
            if done:
                dones.append(cycle)
            assert cycle < 20000, f"only {len(dones)} of {len(cmds)} write commands completed"
        for _ in range(10):
            _, _, done = await ctx.tick().sample(dut.write.done)
            assert not done, "more done pulses than commands"

    sim.add_testbench(commands)
    sim.add_testbench(data)
    sim.add_testbench(done_counter)
    error = []
    write_beats = [0]

    async def error_probe(ctx):
        while True:
            await ctx.tick()
            error.append((ctx.get(dut.error), ctx.get(dut.error_info), ctx.get(dut.error_addr)))
            write_beats[0] = ctx.get(dut.write_beats)

    sim.add_testbench(error_probe, background=True)
    sim.run()
    assert write_beats[0] == len(words)
    return mem, expect, error


@pytest.mark.parametrize("bus_width", [64, 256])
def test_writes_with_strobes(bus_width):
    rng = random.Random(11)
    nbytes = bus_width // 8
    cmds = random_cmds(rng, 5, nbytes, 10)
    # Commands must not overlap, or the expected image depends on the order of writes.
    cmds = [(i * 2048 + (a % 1024) // nbytes * nbytes, b) for i, (a, b) in enumerate(cmds)]
    mem, expect, error = run_writes(bus_width, cmds, seed=bus_width)
    assert np.array_equal(mem.mem, expect)
    assert not any(e for e, _, _ in error)
    assert sum(b for _, _, b in mem.bursts) == sum(b for _, b in cmds)


def test_long_write_split():
    nbytes = 8
    start = 8192 - 5 * nbytes
    mem, expect, _ = run_writes(64, [(start, 300), (0x100, 1)], seed=5, max_burst=16,
                                mem_kwargs={"ready_prob": 0.9, "valid_prob": 0.9, "max_latency": 2})
    assert np.array_equal(mem.mem, expect)
    lens = [b for k, _, b in mem.bursts if k == "AW"]
    assert lens[0] == 5 and max(lens) == 16 and sum(lens) == 301


def test_reads_and_writes_together():
    """The read and write paths run at the same time on one port."""
    dut = AxiMaster(128, 2, max_burst=8)
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    mem = AxiMemory(dut.axi, MEM_SIZE, 128, seed=12, max_burst=8)
    mem.mem[:] = np.random.default_rng(12).integers(0, 256, MEM_SIZE, dtype=np.uint8)
    before = mem.mem.copy()
    mem.add_to(sim)
    rng = random.Random(12)
    reads = [[(0x0, 20), (0x1000 - 32, 5)], [(0x400, 9)]]
    writes = [(0x4000, 20), (0x5000 - 48, 7)]
    words = [(rng.getrandbits(128), b) for _, beats in writes for b in range(beats)]
    results = [[], []]
    dones = []

    for i in range(2):
        async def client(ctx, i=i):
            await issue(ctx, dut.read[i], reads[i], random.Random(i))

        async def sink(ctx, i=i):
            await receive(ctx, dut.read[i], sum(b for _, b in reads[i]), random.Random(10 + i), 0.7,
                          results[i])

        sim.add_testbench(client)
        sim.add_testbench(sink)

    async def write_cmds(ctx):
        await issue(ctx, dut.write, writes, random.Random(5))

    async def write_data(ctx):
        for d, _ in words:
            ctx.set(dut.write.data.payload.data, d)
            ctx.set(dut.write.data.payload.strb, 0xFFFF)
            ctx.set(dut.write.data.valid, 1)
            await ctx.tick().until(dut.write.data.ready)
        ctx.set(dut.write.data.valid, 0)

    async def done_probe(ctx):
        while True:
            _, _, done = await ctx.tick().sample(dut.write.done)
            if done:
                dones.append(1)

    sim.add_testbench(write_cmds)
    sim.add_testbench(done_probe, background=True)

    async def waiter(ctx):
        for _ in range(3000):
            await ctx.tick()
            if len(dones) == len(writes):
                return
        raise AssertionError("writes did not complete")

    sim.add_testbench(write_data)
    sim.add_testbench(waiter)
    sim.run()
    for i in range(2):
        assert results[i] == expected_reads(before, reads[i], 16)
    k = 0
    for addr, beats in writes:
        for b in range(beats):
            assert word_at(mem.mem, addr + 16 * b, 16) == words[k][0]
            k += 1
    kinds = [kind for kind, _, _ in mem.bursts]
    # writes: 8+8+4, then 3+4 around 0x5000; reads: 8+8+4, 2+3 around 0x1000, 8+1
    assert kinds.count("AW") == 5 and kinds.count("AR") == 7


def test_write_error_latched_with_its_burst():
    # the first failing burst is reported (SLVERR = 2, bit 2: a write) and kept over the second one
    mem, expect, error = run_writes(64, [(0x0, 4), (0x1000, 2), (0x2000, 3), (0x3000, 1)], seed=9,
                                    error_ranges=[(0x1000, 0x1010), (0x3000, 0x3008)])
    assert np.array_equal(mem.mem, expect)
    assert error[-1] == (1, 0b110, 0x1000)
    assert error[0] == (0, 0, 0)


def test_read_error_latched_with_its_client_and_burst_and_cleared():
    dut = AxiMaster(64, 3)
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    mem = AxiMemory(dut.axi, MEM_SIZE, 64, seed=4)
    mem.error_ranges = [(0x48, 0x50), (0x80, 0x88)]
    mem.add_to(sim)

    async def bench(ctx):
        rng = random.Random(4)
        got = []
        await issue(ctx, dut.read[0], [(0x0, 4)], rng)
        await receive(ctx, dut.read[0], 4, rng, 1.0, got)
        assert ctx.get(dut.error) == 0
        await issue(ctx, dut.read[2], [(0x40, 2)], rng)
        await receive(ctx, dut.read[2], 6, rng, 1.0, got)
        await ctx.tick()
        # SLVERR (2) on the second beat of client 2's burst at 0x40: the burst's address is reported
        assert (ctx.get(dut.error), ctx.get(dut.error_info), ctx.get(dut.error_addr)) == (1, 2 | 2 << 4, 0x40)
        await issue(ctx, dut.read[1], [(0x80, 1)], rng)
        await receive(ctx, dut.read[1], 7, rng, 1.0, got)
        await ctx.tick()
        assert (ctx.get(dut.error_info), ctx.get(dut.error_addr)) == (2 | 2 << 4, 0x40)    # the first one kept
        ctx.set(dut.error_clear, 1)
        await ctx.tick()
        ctx.set(dut.error_clear, 0)
        assert (ctx.get(dut.error), ctx.get(dut.error_info), ctx.get(dut.error_addr)) == (0, 0, 0)

    sim.add_testbench(bench)
    sim.run()


@pytest.mark.parametrize("kwargs,name", [
    ({"cfg_or_bus_width": 32}, "bus_width"),
    ({"cfg_or_bus_width": 64, "n_readers": 0}, "n_readers"),
    ({"cfg_or_bus_width": 64, "max_burst": 257}, "max_burst"),
    ({"cfg_or_bus_width": 64, "max_reads": 0}, "max_reads"),
])
def test_parameter_checks(kwargs, name):
    assert_value_error(name, AxiMaster, **kwargs)


def test_config_bus_width():
    from sw.config import load_config
    cfg = load_config("small")
    dut = AxiMaster(cfg, 2)
    assert dut.bus_width == cfg.BUS_WIDTH
    Fragment.get(dut, None)
