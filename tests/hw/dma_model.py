"""A simulated DRAM serving the DMA client protocol of ``hw/interfaces.py`` from a numpy array.

``DmaModel(mem, bus_width, seed)`` holds ``mem`` (a 1-D uint8 array: DRAM byte 0 onwards). Add one
background process per client with ``add_read(sim, client)`` / ``add_write(sim, client)``, where
``client`` is the DUT's DMA member (``Out(dma_read_signature(...))``). Back-pressure and gaps are
random (probability ``stall``), read data starts ``latency`` cycles after its command and write
``done`` pulses come ``latency`` cycles after the last beat, in command order. Protocol violations
(unaligned or out-of-range address, zero beats, a wrong ``last`` flag) raise AssertionError, which
fails the test. ``reads`` / ``writes`` record the commands seen, as (addr, beats).
"""

from collections import deque
import random

import numpy as np

__all__ = ["DmaModel", "pack_rows", "unpack_rows"]


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
