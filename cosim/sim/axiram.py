"""cocotbext-axi's ``AxiRam`` as the accelerator's memory: an AXI4 slave nobody on this project wrote.

In the ``mem="cocotbext"`` model variant (:mod:`cosim.model.variants`) the testbench has no DPI DRAM slave and the
``m_axi_*`` signals are public; :func:`attach` connects an ``AxiRam`` to them inside the job's simulation. Its
storage is the same C++ buffer the runtime sees as device memory (a ``memoryview`` of it), so programs,
results and the regression's page digests are unchanged. Every channel gets random ready/valid pauses and
reads a random latency before a beat (seeded: a run is reproducible). This wakes Python every cycle: it is an
independent memory model for checking, not the fast path.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

__all__ = ["attach", "PAUSE_PROBABILITY", "MAX_LATENCY"]

PAUSE_PROBABILITY = 0.25      # chance that a channel pauses in a cycle
MAX_LATENCY = 24              # most extra cycles before a read beat


def _pauses(rng: random.Random, probability: float):
    while True:
        yield rng.random() < probability


def attach(dut: Any, dram: np.ndarray, seed: int = 0, latency: int = 20, probability: float = PAUSE_PROBABILITY) -> Any:
    """An ``AxiRam`` on ``dut``'s ``m_axi_*`` port over ``dram`` (numpy uint8), with seeded random pauses."""
    from cocotb.triggers import ClockCycles
    from cocotbext.axi import AxiBus, AxiRam

    # the port of axiram_port.svh: the AxiRam works on the falling edge, its outputs registered at the rising one
    ram = AxiRam(AxiBus.from_prefix(dut, "axiram"), dut.clk_n, dut.rst, reset_active_level=True,
                 mem=memoryview(dram))  # type: ignore[arg-type]  # an ndarray is a buffer (typed so for 3.12+ only)
    rng = random.Random(seed)
    channels = (ram.write_if.aw_channel, ram.write_if.w_channel, ram.write_if.b_channel, ram.read_if.ar_channel,
                ram.read_if.r_channel)
    for ch in channels:
        ch.set_pause_generator(_pauses(random.Random(rng.getrandbits(64)), probability))
    read = ram.read_if._read
    lat_rng = random.Random(rng.getrandbits(64))
    max_wait = max(0, min(int(latency), MAX_LATENCY))

    async def delayed_read(address, length):
        wait = lat_rng.randrange(max_wait + 1) if lat_rng.random() < 0.3 else 0
        if wait:
            await ClockCycles(dut.clk_n, wait)
        return await read(address, length)

    ram.read_if._read = delayed_read
    _add_error_injection(ram)
    return ram


def _add_error_injection(ram):
    """``ram.fail(channel, index)``: the ``index``-th read beat or write access (counted from this call) of
    ``channel`` ("read", "write"; None: none) raises inside the AxiRam, which answers it with SLVERR (the read beat
    carries zeros, the write access is not made)."""
    counts = {"read": 0, "write": 0}
    armed = {"channel": None, "index": 0}

    def failing(channel, inner):
        async def access(*args):
            n = counts[channel]
            counts[channel] += 1
            if armed["channel"] == channel and n == armed["index"]:
                raise OSError(f"injected {channel} error")
            return await inner(*args)
        return access

    ram.read_if._read = failing("read", ram.read_if._read)
    ram.write_if._write = failing("write", ram.write_if._write)

    def fail(channel, index=0):
        counts.update(read=0, write=0)
        armed.update(channel=channel, index=index)

    ram.fail = fail
