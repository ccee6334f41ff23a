"""sw.runtime.uopcache: the micro-kernel cache stages micro-ops once, and stays within its bounds."""
from types import SimpleNamespace

import numpy as np

from sw.config import load_config
from sw.isa import isa_for
from sw.runtime.memory import DeviceMemory
from sw.runtime.uopcache import STAGE_CHUNK, KernelCache


def make(stage_bytes=2 * STAGE_CHUNK, max_kernels=1000):
    isa = isa_for(load_config("default"))
    dram = np.zeros(4 << 20, np.uint8)
    memory = DeviceMemory(dram.size)
    state = SimpleNamespace(in_use=set(), flushes=0)

    def flush():
        state.flushes += 1
        for h in state.in_use:
            memory.release(h)
        state.in_use.clear()
        cache.stream_ran()
    cache = KernelCache(memory, dram, isa, stage_bytes, max_kernels, lambda h: h in state.in_use, flush)
    return cache, memory, dram, isa, state


def kernel(n, base=0):
    return SimpleNamespace(uops=[((base + i) % 2048, i % 2048, 0) for i in range(n)], dram_addr=None, chunk=None)


def test_micro_ops_are_staged_once_and_packed():
    cache, memory, dram, isa, _ = make()
    k1, k2 = kernel(3), kernel(5, 100)
    cache.add("a", k1)
    cache.add("b", k2)
    assert cache.get("a") is k1 and len(cache) == 2
    assert k2.dram_addr == k1.dram_addr + 12 and k1.chunk == k2.chunk
    words = dram[k2.dram_addr:k2.dram_addr + 20].view(np.uint32)
    assert list(words) == [isa.encode_uop(*u) for u in k2.uops]


def test_full_cache_starts_over_and_frees_its_staging():
    cache, memory, _, _, state = make(stage_bytes=STAGE_CHUNK, max_kernels=3)
    free = memory.free_bytes()
    for i in range(3):
        cache.add(i, kernel(1))
    assert memory.free_bytes() == free - STAGE_CHUNK
    cache.add(3, kernel(1))                    # the fourth kernel empties the cache first
    assert list(cache.kernels) == [3] and memory.free_bytes() == free - STAGE_CHUNK and state.flushes == 0


def test_staging_in_use_waits_for_the_stream_and_is_bounded():
    cache, memory, _, _, state = make(stage_bytes=STAGE_CHUNK, max_kernels=100)
    free = memory.free_bytes()
    big = 8192 // 2                              # 4096 micro-ops: 16 KiB, four kernels per area
    for i in range(40):
        k = kernel(big)
        cache.add(i, k)
        if k.chunk not in state.in_use:          # the queued stream loads from it
            memory.hold(k.chunk)
            state.in_use.add(k.chunk)
        assert free - memory.free_bytes() <= 2 * STAGE_CHUNK
    assert state.flushes == 4                   # areas 1..10: every second retirement runs the stream
