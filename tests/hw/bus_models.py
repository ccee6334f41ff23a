"""The Python bus models the hardware unit tests share (Amaranth simulator).

* :class:`AxiMemory`: an AXI4 slave memory with random back-pressure and latency that checks the
  master's side of the protocol (for the AXI master, fetch and the top level).
* :class:`DmaModel`: a DRAM serving the internal DMA client protocol of ``hw/interfaces.py`` (for
  the loaders, store and compute, which talk to the AXI master through it).
* :func:`axil_write` / :func:`axil_read`: an AXI4-Lite master for the control registers.

AxiMemory
---------
A reusable AXI4 slave memory model for the Amaranth simulator.

``AxiMemory(axi, size, data_width, seed=...)`` serves the AXI4 port ``axi`` (the master's
``axi4_signature`` interface object) from a numpy ``uint8`` array ``mem`` of ``size`` bytes. It adds
random back-pressure on every channel (``ready_prob``, ``valid_prob``), a random latency between
an address handshake and its data or response (0..``max_latency`` cycles), and checks the master's
side of the protocol:

* burst length <= ``max_burst``, AxBURST = INCR, AxSIZE = the bus width, addresses bus-aligned;
* no burst crosses a 4 KiB boundary, and none leaves the backing array;
* AxVALID, once high, stays high with stable address and length until AxREADY;
* WVALID stays high with stable data until WREADY; WLAST exactly on the last beat of each burst.

Violations raise ``AssertionError`` in the simulation (and are listed in ``violations``). Every
burst is logged in ``bursts`` as ``(kind, addr, beats)``. Addresses in ``error_ranges``
(``(lo, hi)`` byte ranges) are answered with SLVERR (reads return zeros, writes are dropped).

Use: ``mem = AxiMemory(dut.axi, 1 << 16, 64, seed=1); mem.add_to(sim)`` before ``sim.run()``.

DmaModel
--------
A simulated DRAM serving the DMA client protocol of ``hw/interfaces.py`` from a numpy array.

``DmaModel(mem, bus_width, seed)`` holds ``mem`` (a 1-D uint8 array: DRAM byte 0 onwards). Add one
background process per client with ``add_read(sim, client)`` / ``add_write(sim, client)``, where
``client`` is the DUT's DMA member (``Out(dma_read_signature(...))``). Back-pressure and gaps are
random (probability ``stall``), read data starts ``latency`` cycles after its command and write
``done`` pulses come ``latency`` cycles after the last beat, in command order. Protocol violations
(unaligned or out-of-range address, zero beats, a wrong ``last`` flag) raise AssertionError, which
fails the test. ``reads`` / ``writes`` record the commands seen, as (addr, beats).
"""

import gc
import random
import warnings
from collections import deque

import numpy as np
import pytest
from amaranth.hdl import UnusedElaboratable

__all__ = ["AxiMemory", "DmaModel", "pack_rows", "unpack_rows", "axil_write", "axil_read", "assert_value_error"]

OKAY, SLVERR = 0, 2


class AxiMemory:
    def __init__(self, axi, size, data_width, *, seed=0, ready_prob=0.7, valid_prob=0.7,
                 max_latency=6, max_burst=256):
        self.axi = axi
        self.mem = np.zeros(size, dtype=np.uint8)
        self.data_width = data_width
        self.nbytes = data_width // 8
        self.log_bytes = self.nbytes.bit_length() - 1
        self.rng = random.Random(seed)
        self.ready_prob = ready_prob
        self.valid_prob = valid_prob
        self.max_latency = max_latency
        self.max_burst = max_burst
        self.error_ranges = []
        self.bursts = []
        self.violations = []
        self.now = 0
        self._reads = deque()    # (ready cycle, addr, beats)
        self._writes = deque()   # (addr, beats) accepted on AW, waiting for W
        self._resps = deque()    # (ready cycle, resp)

    # ------------------------------------------------------------------ helpers
    def _fail(self, msg):
        self.violations.append(msg)
        raise AssertionError(f"AXI protocol violation at cycle {self.now}: {msg}")

    def _check_burst(self, kind, addr, length, size, burst):
        beats = length + 1
        if beats > self.max_burst:
            self._fail(f"{kind} burst of {beats} beats at {addr:#x} is longer than {self.max_burst}")
        if burst != 1:
            self._fail(f"{kind} burst type {burst} is not INCR")
        if size != self.log_bytes:
            self._fail(f"{kind} size {size} is not the bus width ({self.log_bytes})")
        if addr % self.nbytes:
            self._fail(f"{kind} address {addr:#x} is not aligned to {self.nbytes} bytes")
        end = addr + beats * self.nbytes
        if addr // 4096 != (end - 1) // 4096:
            self._fail(f"{kind} burst {addr:#x}..{end - 1:#x} crosses a 4 KiB boundary")
        if end > len(self.mem):
            self._fail(f"{kind} burst {addr:#x}..{end - 1:#x} is outside the {len(self.mem)}-byte memory")
        self.bursts.append((kind, addr, beats))

    def _is_error(self, addr, beats):
        end = addr + beats * self.nbytes
        return any(lo < end and addr < hi for lo, hi in self.error_ranges)

    def _latency(self):
        return self.now + self.rng.randint(0, self.max_latency)

    def _ready(self):
        return self.rng.random() < self.ready_prob

    def add_to(self, sim):
        for proc in (self._clock, self._ar, self._r, self._aw, self._w, self._b):
            sim.add_testbench(proc, background=True)

    # ------------------------------------------------------------------ processes
    async def _clock(self, ctx):
        while True:
            await ctx.tick()
            self.now += 1

    async def _address(self, ctx, kind, valid_s, ready_s, addr_s, len_s, size_s, burst_s, accept):
        pending = None
        while True:
            ready = self._ready()
            ctx.set(ready_s, ready)
            _, _, valid, addr, length, size, burst = await ctx.tick().sample(
                valid_s, addr_s, len_s, size_s, burst_s)
            if pending is not None and (not valid or (addr, length) != pending):
                self._fail(f"{kind}VALID dropped or its address changed before {kind}READY")
            if valid and ready:
                self._check_burst(kind, addr, length, size, burst)
                accept(addr, length + 1)
                pending = None
            else:
                pending = (addr, length) if valid else None

    async def _ar(self, ctx):
        a = self.axi
        await self._address(ctx, "AR", a.arvalid, a.arready, a.araddr, a.arlen, a.arsize, a.arburst,
                            lambda addr, beats: self._reads.append((self._latency(), addr, beats)))

    async def _aw(self, ctx):
        a = self.axi
        await self._address(ctx, "AW", a.awvalid, a.awready, a.awaddr, a.awlen, a.awsize, a.awburst,
                            lambda addr, beats: self._writes.append((addr, beats)))

    async def _r(self, ctx):
        a = self.axi
        ctx.set(a.rvalid, 0)
        while True:
            if not (self._reads and self._reads[0][0] <= self.now):
                await ctx.tick()
                continue
            _, addr, beats = self._reads.popleft()
            error = self._is_error(addr, beats)
            for beat in range(beats):
                while self.rng.random() >= self.valid_prob:
                    ctx.set(a.rvalid, 0)
                    await ctx.tick()
                base = addr + beat * self.nbytes
                word = 0 if error else int.from_bytes(self.mem[base:base + self.nbytes].tobytes(), "little")
                ctx.set(a.rvalid, 1)
                ctx.set(a.rdata, word)
                ctx.set(a.rlast, beat == beats - 1)
                ctx.set(a.rresp, SLVERR if error else OKAY)
                ctx.set(a.rid, 0)
                while True:
                    _, _, ready = await ctx.tick().sample(a.rready)
                    if ready:
                        break
            ctx.set(a.rvalid, 0)

    async def _w(self, ctx):
        a = self.axi
        ctx.set(a.wready, 0)
        beat = 0
        pending = None
        while True:
            ready = bool(self._writes) and self._ready()
            ctx.set(a.wready, ready)
            _, _, valid, data, strb, last = await ctx.tick().sample(a.wvalid, a.wdata, a.wstrb, a.wlast)
            if pending is not None and (not valid or (data, strb, last) != pending):
                self._fail("WVALID dropped or W data changed before WREADY")
            pending = None
            if not valid:
                continue
            if not ready:
                pending = (data, strb, last)
                continue
            addr, beats = self._writes[0]
            if bool(last) != (beat == beats - 1):
                self._fail(f"WLAST = {last} on beat {beat} of a {beats}-beat burst at {addr:#x}")
            error = self._is_error(addr, beats)
            if not error:
                base = addr + beat * self.nbytes
                raw = data.to_bytes(self.nbytes, "little")
                for i in range(self.nbytes):
                    if strb >> i & 1:
                        self.mem[base + i] = raw[i]
            beat += 1
            if beat == beats:
                self._writes.popleft()
                self._resps.append((self._latency(), SLVERR if error else OKAY))
                beat = 0

    async def _b(self, ctx):
        a = self.axi
        ctx.set(a.bvalid, 0)
        while True:
            if not (self._resps and self._resps[0][0] <= self.now) or self.rng.random() >= self.valid_prob:
                ctx.set(a.bvalid, 0)
                await ctx.tick()
                continue
            _, resp = self._resps.popleft()
            ctx.set(a.bvalid, 1)
            ctx.set(a.bresp, resp)
            ctx.set(a.bid, 0)
            while True:
                _, _, ready = await ctx.tick().sample(a.bready)
                if ready:
                    break
            ctx.set(a.bvalid, 0)


class DmaModel:
    def __init__(self, mem, bus_width, *, seed=0, stall=0.3, latency=3):
        self.mem = mem
        self.bus_bytes = bus_width // 8
        self.rng = random.Random(seed)
        self.stall = stall
        self.latency = latency
        self.reads = []
        self.writes = []

    def _check_cmd(self, addr, beats):
        assert addr % self.bus_bytes == 0, f"DMA address {addr:#x} is not aligned to {self.bus_bytes} bytes"
        assert beats >= 1, "DMA command with 0 beats"
        assert addr + beats * self.bus_bytes <= len(self.mem), \
            f"DMA command [{addr:#x}, +{beats} beats) is outside the {len(self.mem)}-byte memory"

    def _go(self):
        return self.rng.random() >= self.stall

    def add_read(self, sim, client):
        bb = self.bus_bytes

        async def process(ctx):
            pending = deque()       # [addr, beats, cycle when servable]
            cycle = 0
            presented = None        # (addr, last) of the word on the data bus
            ctx.set(client.cmd.ready, 0)
            ctx.set(client.data.valid, 0)
            async for _, _, cvalid, cready, caddr, cbeats, dvalid, dready in ctx.tick().sample(
                    client.cmd.valid, client.cmd.ready, client.cmd.payload.addr,
                    client.cmd.payload.beats, client.data.valid, client.data.ready):
                cycle += 1
                if cvalid and cready:
                    self._check_cmd(caddr, cbeats)
                    self.reads.append((caddr, cbeats))
                    pending.append([caddr, cbeats, cycle + self.latency])
                if dvalid and dready:
                    presented = None
                    head = pending[0]
                    head[0] += bb
                    head[1] -= 1
                    if head[1] == 0:
                        pending.popleft()
                ctx.set(client.cmd.ready, self._go())
                if presented is None and pending and pending[0][2] <= cycle and self._go():
                    addr, beats = pending[0][0], pending[0][1]
                    word = int.from_bytes(self.mem[addr:addr + bb].tobytes(), "little")
                    ctx.set(client.data.payload.data, word)
                    ctx.set(client.data.payload.last, beats == 1)
                    presented = addr
                ctx.set(client.data.valid, presented is not None)

        sim.add_process(process)

    def add_write(self, sim, client):
        bb = self.bus_bytes

        async def process(ctx):
            pending = deque()       # [addr, beats left]
            dones = deque()         # cycles at which to pulse done
            cycle = 0
            ctx.set(client.cmd.ready, 0)
            ctx.set(client.data.ready, 0)
            ctx.set(client.done, 0)
            async for _, _, cvalid, cready, caddr, cbeats, dvalid, dready, ddata, dstrb, dlast in \
                    ctx.tick().sample(client.cmd.valid, client.cmd.ready, client.cmd.payload.addr,
                                      client.cmd.payload.beats, client.data.valid, client.data.ready,
                                      client.data.payload.data, client.data.payload.strb,
                                      client.data.payload.last):
                cycle += 1
                if cvalid and cready:
                    self._check_cmd(caddr, cbeats)
                    self.writes.append((caddr, cbeats))
                    pending.append([caddr, cbeats])
                if dvalid and dready:
                    assert pending, "DMA write data before its command"
                    head = pending[0]
                    word = ddata.to_bytes(bb, "little")
                    for i in range(bb):
                        if dstrb >> i & 1:
                            self.mem[head[0] + i] = word[i]
                    head[0] += bb
                    head[1] -= 1
                    assert bool(dlast) == (head[1] == 0), \
                        f"DMA write: last = {dlast} with {head[1]} beats left in the command"
                    if head[1] == 0:
                        pending.popleft()
                        dones.append(max(cycle + self.latency, dones[-1] + 1 if dones else 0))
                ctx.set(client.cmd.ready, self._go())
                ctx.set(client.data.ready, bool(pending) and self._go())
                if dones and dones[0] <= cycle:
                    dones.popleft()
                    ctx.set(client.done, 1)
                else:
                    ctx.set(client.done, 0)

        sim.add_process(process)


def pack_rows(arr, dtype):
    """SRAM words (Python ints) from an array [depth, ...] of lanes of ``dtype``, lane 0 lowest."""
    arr = np.ascontiguousarray(np.asarray(arr).astype(dtype))
    rows = arr.reshape(arr.shape[0], -1)
    return [int.from_bytes(r.tobytes(), "little") for r in rows]


def unpack_rows(words, dtype, shape):
    """The inverse of :func:`pack_rows`: an array [len(words), *shape] of ``dtype`` lanes."""
    itemsize = np.dtype(dtype).itemsize
    nbytes = itemsize * int(np.prod(shape))
    raw = b"".join(int(w).to_bytes(nbytes, "little") for w in words)
    return np.frombuffer(raw, dtype=dtype).reshape(len(words), *shape).copy()


def assert_value_error(match, cls, *args, **kwargs):
    """``cls(*args, **kwargs)`` raises a ValueError whose message matches ``match``."""
    with warnings.catch_warnings():
        # The half-built object is never elaborated; do not warn about it.
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(ValueError, match=match) as info:
            cls(*args, **kwargs)
        del info
        gc.collect()


async def axil_write(ctx, bus, addr, data, strb=0xF):
    ctx.set(bus.awaddr, addr)
    ctx.set(bus.wdata, data)
    ctx.set(bus.wstrb, strb)
    ctx.set(bus.awvalid, 1)
    ctx.set(bus.wvalid, 1)
    await ctx.tick().until(bus.awready & bus.wready)
    ctx.set(bus.awvalid, 0)
    ctx.set(bus.wvalid, 0)
    ctx.set(bus.bready, 1)
    resp, = await ctx.tick().sample(bus.bresp).until(bus.bvalid)
    ctx.set(bus.bready, 0)
    assert resp == 0


async def axil_read(ctx, bus, addr):
    ctx.set(bus.araddr, addr)
    ctx.set(bus.arvalid, 1)
    await ctx.tick().until(bus.arready)
    ctx.set(bus.arvalid, 0)
    ctx.set(bus.rready, 1)
    data, resp = await ctx.tick().sample(bus.rdata, bus.rresp).until(bus.rvalid)
    ctx.set(bus.rready, 0)
    assert resp == 0
    return data
