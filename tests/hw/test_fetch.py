"""Fetch: instruction streams from the AXI memory model, routing, checks, back-pressure."""

import gc
import random
import warnings

import pytest
from amaranth.hdl import Elaboratable, Module, UnusedElaboratable
from amaranth.lib import wiring
from amaranth.sim import Simulator

from hw.axi import AxiMaster
from hw.control import ControlRegs
from hw.fetch import Fetch
from sw.config import load_config
from sw.isa import STAGE_COMPUTE, STAGE_LOAD, STAGE_STORE, AluOp, MemId, Opcode, isa_for
from sw.registers import REGISTERS, ErrorCode
from tests.hw.bus_models import AxiMemory, axil_read, axil_write

MEM_SIZE = 1 << 14
QUEUES = {STAGE_LOAD: "load", STAGE_COMPUTE: "compute", STAGE_STORE: "store"}


def config(bus_width, **changes):
    return load_config("small").with_changes(LOG_BUS_WIDTH=bus_width.bit_length() - 1, **changes)


class FetchBench(Elaboratable):
    def __init__(self, cfg, n_readers=1, **kwargs):
        self.fetch = Fetch(cfg, **kwargs)
        self.master = AxiMaster(cfg, n_readers, max_burst=16)

    def elaborate(self, platform):
        m = Module()
        m.submodules.fetch = self.fetch
        m.submodules.master = self.master
        wiring.connect(m, self.fetch.dma, self.master.read[0])
        return m


# ---------------------------------------------------------------------- instruction generator
def random_insn(isa, rng, alu_mul=True):
    flags = {name: rng.randint(0, 1) for name in ("pop_prev", "pop_next", "push_prev", "push_next")}
    kind = rng.choice(["load", "load", "store", "gemm", "alu", "finish"])
    if kind in ("load", "store"):
        if kind == "load":
            mt = rng.choice([MemId.UOP, MemId.WGT, MemId.INP, MemId.ACC, MemId.ACC_8BIT])
            if mt in (MemId.INP, MemId.WGT):
                flags["pop_prev"] = flags["push_prev"] = 0
        else:
            mt = MemId.OUT
            flags["pop_next"] = flags["push_next"] = 0
        return isa.encode(opcode=Opcode.LOAD if kind == "load" else Opcode.STORE, memory_type=mt,
                          sram_base=rng.getrandbits(16), dram_base=rng.getrandbits(32),
                          y_size=rng.getrandbits(16), x_size=rng.getrandbits(16),
                          x_stride=rng.getrandbits(16), y_pad_0=rng.getrandbits(4),
                          x_pad_1=rng.getrandbits(4), **flags)
    if kind == "finish":
        return isa.encode(opcode=Opcode.FINISH, **flags)
    fmt = isa.gemm if kind == "gemm" else isa.alu
    fields = {f.name: rng.randint(f.lo, f.hi) for f in fmt if f.name not in flags and f.name != "opcode"}
    if kind == "alu":
        fields["alu_opcode"] = rng.randint(0, AluOp.MUL if alu_mul else AluOp.SHR)
    return isa.encode(opcode=Opcode.GEMM if kind == "gemm" else Opcode.ALU, **fields, **flags)


def random_program(cfg, n, seed):
    rng = random.Random(seed)
    isa = isa_for(cfg)
    return [random_insn(isa, rng, bool(cfg.ALU_MUL)) for _ in range(n)]


def expected_routes(cfg, words):
    isa = isa_for(cfg)
    routes = {"load": [], "compute": [], "store": []}
    for w in words:
        routes[QUEUES[isa.decode(w).stage]].append(w)
    return routes


# ---------------------------------------------------------------------- simulation
def run_fetch(cfg, runs, *, seed=0, queue_depth=8, ready_prob=0.5, buffer_beats=8, check=None):
    """Run ``runs`` = [(insn_addr, words, expected_error, expected_routed)] one after another.

    Returns the routed instructions of each run as ``{"load": [...], ...}``.
    """
    bench = FetchBench(cfg, queue_depth=queue_depth, buffer_beats=buffer_beats)
    fetch = bench.fetch
    sim = Simulator(bench)
    sim.add_clock(1e-6)
    mem = AxiMemory(bench.master.axi, MEM_SIZE, cfg.BUS_WIDTH, seed=seed, max_burst=16)
    mem.add_to(sim)
    isa = isa_for(cfg)
    for addr, words, _, _ in runs:
        raw = isa.words_to_array(words)
        mem.mem[addr:addr + len(raw)] = raw
    got = {"load": [], "compute": [], "store": []}
    results = []

    for name in got:
        qrng = random.Random(f"{seed}-{name}")

        async def consumer(ctx, name=name, qrng=qrng):
            port = getattr(fetch, f"{name}_queue")
            while True:
                ready = qrng.random() < ready_prob
                ctx.set(port.ready, ready)
                _, _, valid, payload = await ctx.tick().sample(port.valid, port.payload)
                if valid and ready:
                    got[name].append(payload)

        sim.add_testbench(consumer, background=True)

    async def bench_proc(ctx):
        for addr, words, error, routed in runs:
            for v in got.values():
                v.clear()
            ctx.set(fetch.insn_addr, addr)
            ctx.set(fetch.insn_count, len(words))
            ctx.set(fetch.start, 1)
            await ctx.tick()
            ctx.set(fetch.start, 0)
            for _cycle in range(40 * len(words) + 400):
                await ctx.tick()
                queued = sum(ctx.get(getattr(fetch, f"{n}_level")) for n in got)
                if ctx.get(fetch.idle) and queued == 0 and sum(map(len, got.values())) == routed:
                    break
                if check is not None:
                    await check(ctx, fetch, got)
            else:
                raise AssertionError(f"fetch did not finish: error {ctx.get(fetch.error)}, "
                                     f"routed {ctx.get(fetch.insn_fetched)} of {len(words)}")
            for _ in range(20):     # nothing else comes out
                await ctx.tick()
            assert ctx.get(fetch.error) == error
            assert ctx.get(fetch.insn_fetched) == routed
            assert ctx.get(fetch.busy) == 0
            results.append({k: list(v) for k, v in got.items()})

    sim.add_testbench(bench_proc)
    sim.run()
    return results


@pytest.mark.parametrize("bus_width", [64, 128, 256, 512])
def test_routing_order(bus_width):
    cfg = config(bus_width)
    words = random_program(cfg, 40, seed=bus_width)
    # On buses wider than 128 bits, start in the middle of a bus word.
    addr = 0x200 + (16 if bus_width > 128 else 0)
    words2 = random_program(cfg, 7, seed=bus_width + 1)
    res = run_fetch(cfg, [(addr, words, 0, len(words)), (0x1000 - 16 * 3, words2, 0, len(words2))],
                    seed=bus_width)
    assert res[0] == expected_routes(cfg, words)
    assert res[1] == expected_routes(cfg, words2)
    assert all(res[0][q] for q in ("load", "compute", "store"))


def test_default_queue_depth_and_config():
    cfg = load_config("default")
    words = random_program(cfg, 24, seed=5)
    res = run_fetch(cfg, [(0x40, words, 0, len(words))], seed=5, queue_depth=512, buffer_beats=32,
                    ready_prob=0.9)
    assert res[0] == expected_routes(cfg, words)


def test_back_pressure_full_queue():
    """A queue that is never read fills up; fetch stalls in order, then resumes."""
    cfg = config(64)
    isa = isa_for(cfg)
    gemm = isa.encode(opcode=Opcode.GEMM, uop_end=1, iter_out=1, iter_in=1)
    store = isa.encode(opcode=Opcode.STORE, memory_type=MemId.OUT, x_size=1, y_size=1)
    words = [gemm ^ (i << 100) for i in range(6)] + [store] + [gemm ^ (i << 100) for i in range(6, 9)]
    bench = FetchBench(cfg, queue_depth=4, buffer_beats=4)
    fetch = bench.fetch
    sim = Simulator(bench)
    sim.add_clock(1e-6)
    mem = AxiMemory(bench.master.axi, MEM_SIZE, 64, seed=2, max_burst=16)
    raw = isa.words_to_array(words)
    mem.mem[0:len(raw)] = raw
    mem.add_to(sim)

    async def bench_proc(ctx):
        ctx.set(fetch.insn_count, len(words))
        ctx.set(fetch.start, 1)
        await ctx.tick()
        ctx.set(fetch.start, 0)
        await ctx.tick().repeat(200)
        # Four GEMMs fill the compute queue; the fifth waits in the decode register.
        assert ctx.get(fetch.compute_level) == 4
        assert ctx.get(fetch.store_level) == 0
        assert ctx.get(fetch.insn_fetched) == 4
        assert ctx.get(fetch.busy) == 1 and ctx.get(fetch.stall) == 1
        got = []
        ctx.set(fetch.compute_queue.ready, 1)
        ctx.set(fetch.store_queue.ready, 1)
        for _ in range(300):
            _, _, v1, p1, v2, p2 = await ctx.tick().sample(
                fetch.compute_queue.valid, fetch.compute_queue.payload,
                fetch.store_queue.valid, fetch.store_queue.payload)
            if v1:
                got.append(("c", p1))
            if v2:
                got.append(("s", p2))
        assert [p for k, p in got if k == "c"] == [w for w in words if w != store]
        assert [p for k, p in got if k == "s"] == [store]
        assert ctx.get(fetch.idle) == 1 and ctx.get(fetch.insn_fetched) == len(words)

    sim.add_testbench(bench_proc)
    sim.run()


def test_full_queue_does_not_block_other_clients():
    """Fetch stalled on a full queue never holds the shared R channel: another client still reads."""
    cfg = config(64)
    isa = isa_for(cfg)
    words = [isa.encode(opcode=Opcode.GEMM, uop_end=1, iter_in=i) for i in range(40)]
    bench = FetchBench(cfg, n_readers=2, queue_depth=2, buffer_beats=8)
    fetch, other = bench.fetch, bench.master.read[1]
    sim = Simulator(bench)
    sim.add_clock(1e-6)
    mem = AxiMemory(bench.master.axi, MEM_SIZE, 64, seed=8, max_burst=16)
    raw = isa.words_to_array(words)
    mem.mem[0:len(raw)] = raw
    mem.mem[0x2000:0x2100] = range(256)
    mem.add_to(sim)

    async def bench_proc(ctx):
        ctx.set(fetch.insn_count, len(words))
        ctx.set(fetch.start, 1)
        await ctx.tick()
        ctx.set(fetch.start, 0)
        await ctx.tick().repeat(150)
        assert ctx.get(fetch.stall) == 1 and ctx.get(fetch.compute_level) == 2
        ctx.set(other.cmd.payload.addr, 0x2000)
        ctx.set(other.cmd.payload.beats, 32)
        ctx.set(other.cmd.valid, 1)
        await ctx.tick().until(other.cmd.ready)
        ctx.set(other.cmd.valid, 0)
        ctx.set(other.data.ready, 1)
        got = []
        for _ in range(300):
            _, _, valid, payload = await ctx.tick().sample(other.data.valid, other.data.payload.data)
            if valid:
                got.append(payload)
        assert got == [int.from_bytes(mem.mem[0x2000 + 8 * i:0x2008 + 8 * i].tobytes(), "little")
                       for i in range(32)]
        assert ctx.get(fetch.insn_fetched) == 2     # still stalled, nothing lost
        ctx.set(fetch.compute_queue.ready, 1)
        routed = []
        for _ in range(400):
            _, _, valid, payload = await ctx.tick().sample(fetch.compute_queue.valid,
                                                           fetch.compute_queue.payload)
            if valid:
                routed.append(payload)
        assert routed == words

    sim.add_testbench(bench_proc)
    sim.run()


# ---------------------------------------------------------------------- bad instructions
def _bad_cases(cfg):
    isa = isa_for(cfg)
    good_gemm = isa.encode(opcode=Opcode.GEMM, uop_end=1, iter_out=1, iter_in=1)
    mem = dict(sram_base=1, dram_base=2, y_size=1, x_size=1, x_stride=1)
    return {
        "opcode5": (good_gemm & ~7 | 5, ErrorCode.BAD_OPCODE if not cfg.DEPTHWISE else 0),      # DEPTHWISE
        "opcode7": (good_gemm & ~7 | 7, ErrorCode.BAD_OPCODE),
        "load_mem6": (isa.encode(opcode=Opcode.LOAD, memory_type=6, **mem), ErrorCode.BAD_MEMORY_TYPE),
        "load_out": (isa.encode(opcode=Opcode.LOAD, memory_type=MemId.OUT, **mem),
                     ErrorCode.BAD_MEMORY_TYPE),
        "store_inp": (isa.encode(opcode=Opcode.STORE, memory_type=MemId.INP, **mem),
                      ErrorCode.BAD_MEMORY_TYPE),
        "store_nop_mem7": (isa.encode(opcode=Opcode.STORE, memory_type=7), ErrorCode.BAD_MEMORY_TYPE),
        "load_inp_pop_prev": (isa.encode(opcode=Opcode.LOAD, memory_type=MemId.INP, pop_prev=1, **mem),
                              ErrorCode.RESERVED_DEP_FLAG),
        "load_wgt_push_prev": (isa.encode(opcode=Opcode.LOAD, memory_type=MemId.WGT, push_prev=1),
                               ErrorCode.RESERVED_DEP_FLAG),
        "store_pop_next": (isa.encode(opcode=Opcode.STORE, memory_type=MemId.OUT, pop_next=1, **mem),
                           ErrorCode.RESERVED_DEP_FLAG),
        "store_push_next": (isa.encode(opcode=Opcode.STORE, memory_type=MemId.OUT, push_next=1),
                            ErrorCode.RESERVED_DEP_FLAG),
        "alu_op5": (isa.encode(opcode=Opcode.ALU, alu_opcode=5), ErrorCode.BAD_ALU_OPCODE),
        "alu_mul_without_mul": (isa.encode(opcode=Opcode.ALU, alu_opcode=AluOp.MUL),
                                ErrorCode.BAD_ALU_OPCODE if not cfg.ALU_MUL else 0),
    }


def test_allowed_edge_cases():
    """Instructions that look odd but are legal are routed."""
    cfg = config(64)
    isa = isa_for(cfg)
    words = [
        isa.encode(opcode=Opcode.STORE, memory_type=MemId.UOP, pop_prev=1, push_prev=1),  # store NOP
        isa.encode(opcode=Opcode.LOAD, memory_type=MemId.UOP, pop_prev=1, push_prev=1, x_size=1),
        isa.encode(opcode=Opcode.LOAD, memory_type=MemId.INP, pop_next=1, push_next=1),   # load NOP
        isa.encode(opcode=Opcode.FINISH, pop_prev=1, pop_next=1, push_prev=1, push_next=1),
    ]
    res = run_fetch(cfg, [(0, words, 0, len(words))], seed=3)
    assert res[0] == expected_routes(cfg, words)
    assert res[0]["store"] == words[:1] and res[0]["load"] == words[2:3]


# Every case on a 64-bit bus, a few on the wider ones (to keep the run short).
CASES = ([(case, 64) for case in _bad_cases(config(64))]
         + [(case, bw) for bw in (128, 256)
            for case in ("opcode5", "load_out", "store_push_next", "alu_mul_without_mul")])


@pytest.mark.parametrize("case,bus_width", CASES)
def test_bad_instruction_stops(case, bus_width):
    cfg = config(bus_width)          # the small config has ALU_MUL = 0
    bad, code = _bad_cases(cfg)[case]
    rng = random.Random(case)
    before = random_program(cfg, rng.randint(0, 9), seed=rng.getrandbits(16))
    after = random_program(cfg, 5, seed=rng.getrandbits(16))
    words = before + [bad] + after
    good = random_program(cfg, 6, seed=7)
    routed = len(before) if code else len(words)
    res = run_fetch(cfg, [(0x100, words, code, routed), (0x800, good, 0, len(good))],
                    seed=len(before), buffer_beats=4)
    assert res[0] == expected_routes(cfg, words[:routed])
    assert res[1] == expected_routes(cfg, good)      # a new start after an error works


def test_mul_allowed_with_alu_mul():
    cfg = config(64, ALU_MUL=1)
    bad, code = _bad_cases(cfg)["alu_mul_without_mul"]
    assert code == 0
    res = run_fetch(cfg, [(0, [bad], 0, 1)], seed=1)
    assert res[0]["compute"] == [bad]


def test_depthwise_routed_to_compute_where_built():
    """With DEPTHWISE = 1 opcode 5 goes to the compute queue like a GEMM (small stops at it: the opcode5 case above);
    6 and 7 are still refused."""
    cfg = config(64, DEPTHWISE=1)
    isa = isa_for(cfg)
    dw, code = _bad_cases(cfg)["opcode5"]
    assert code == 0 and isa.decode(dw).opcode == Opcode.DEPTHWISE
    words = [isa.encode(opcode=Opcode.LOAD, memory_type=MemId.INP, push_next=1), dw,
             isa.encode(opcode=Opcode.DEPTHWISE, reset=1, uop_end=4, iter_out=3, iter_in=2, pop_prev=1, push_next=1),
             isa.encode(opcode=Opcode.STORE, memory_type=MemId.OUT, pop_prev=1)]
    bad = [dw, _bad_cases(cfg)["opcode7"][0], dw]
    res = run_fetch(cfg, [(0, words, 0, len(words)), (0x400, bad, ErrorCode.BAD_OPCODE, 1)], seed=5)
    assert res[0] == expected_routes(cfg, words) and res[0]["compute"] == words[1:3]
    assert res[1] == {"load": [], "compute": [dw], "store": []}


def test_parameter_checks():
    cfg = config(64)
    for kwargs, name in (({"queue_depth": 1}, "queue_depth"), ({"buffer_beats": 1000}, "buffer_beats")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UnusedElaboratable)
            with pytest.raises(ValueError, match=name) as info:
                Fetch(cfg, **kwargs)
            del info
            gc.collect()


class ControlledFetch(FetchBench):
    """Fetch started from the control registers, its error code ending the run."""

    def __init__(self, cfg, **kwargs):
        super().__init__(cfg, **kwargs)
        self.regs = ControlRegs(cfg)

    def elaborate(self, platform):
        m = super().elaborate(platform)
        m.submodules.regs = regs = self.regs
        fetch = self.fetch
        m.d.comb += [
            fetch.start.eq(regs.launch),
            fetch.insn_count.eq(regs.insn_count),
            fetch.insn_addr.eq(regs.insn_addr),
            regs.error_code.eq(fetch.error),
            regs.fetch_busy.eq(fetch.busy),
            regs.fetch_stall.eq(fetch.stall),
            regs.queue_compute.eq(fetch.compute_level),
            regs.insn_fetched.eq(fetch.insn_fetched),
            regs.dma_fetch_beats.eq(self.master.read_beats[0]),
        ]
        return m


def test_error_finishes_the_run():
    """Through the control registers: a bad instruction ends the run with its error code."""
    cfg = config(64)
    isa = isa_for(cfg)
    gemm = isa.encode(opcode=Opcode.GEMM, uop_end=1, iter_out=1, iter_in=1)
    bad = isa.encode(opcode=Opcode.STORE, memory_type=MemId.OUT, pop_next=1)
    words = [gemm, gemm, gemm, bad, gemm]
    top = ControlledFetch(cfg, queue_depth=8, buffer_beats=4)
    sim = Simulator(top)
    sim.add_clock(1e-6)
    mem = AxiMemory(top.master.axi, MEM_SIZE, 64, seed=6, max_burst=16)
    raw = isa.words_to_array(words)
    mem.mem[0x300:0x300 + len(raw)] = raw
    mem.add_to(sim)
    bus = top.regs.bus


    async def bench(ctx):
        await axil_write(ctx, bus, REGISTERS["insn_count"], len(words))
        await axil_write(ctx, bus, REGISTERS["insn_addr"], 0x300)
        await axil_write(ctx, bus, REGISTERS["control"], 1)
        for _ in range(200):
            if await axil_read(ctx, bus, REGISTERS["control"]) == 0b10:
                break
        else:
            raise AssertionError("the run did not finish")
        status = await axil_read(ctx, bus, REGISTERS["status"])
        assert status == 0b110 | ErrorCode.RESERVED_DEP_FLAG << 8
        assert await axil_read(ctx, bus, REGISTERS["insn_fetched"]) == 3
        assert await axil_read(ctx, bus, REGISTERS["queue_compute"]) == 3
        assert await axil_read(ctx, bus, REGISTERS["fetch_busy"]) > 0
        # Words up to the bad instruction, maybe more (counting stops at finish).
        assert 2 * 4 <= await axil_read(ctx, bus, REGISTERS["dma_fetch_beats"]) <= 2 * len(words)
        # Relaunch at once with the program fixed: the stale error must not stop the new run.
        fixed = isa.words_to_array([gemm] * len(words))
        mem.mem[0x300:0x300 + len(fixed)] = fixed
        await axil_write(ctx, bus, REGISTERS["control"], 1)
        await ctx.tick().repeat(150)
        assert await axil_read(ctx, bus, REGISTERS["control"]) == 0b01      # running: no FINISH in this bench
        assert await axil_read(ctx, bus, REGISTERS["status"]) == 0b001
        assert await axil_read(ctx, bus, REGISTERS["insn_fetched"]) == len(words)

    sim.add_testbench(bench)
    sim.run()
