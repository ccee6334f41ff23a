"""A reusable AXI4 slave memory model for the Amaranth simulator.

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
"""

from collections import deque
import random

import numpy as np

__all__ = ["AxiMemory"]

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
