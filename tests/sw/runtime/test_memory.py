import threading

import numpy as np
import pytest

from sw.runtime.memory import PAGE_BYTES, BufferError, DeviceMemory
from tests.conftest import run_threads


def test_alloc_is_page_aligned_and_never_page_zero():
    m = DeviceMemory(1 << 20)
    a, b = m.alloc(1), m.alloc(PAGE_BYTES + 1)
    assert a.phys == PAGE_BYTES and b.phys == 2 * PAGE_BYTES
    assert m.alloc(10).phys == 4 * PAGE_BYTES
    assert m.find(b.phys + PAGE_BYTES) is b
    with pytest.raises(BufferError, match="not inside a live buffer"):
        m.find(a.phys + 1)
    with pytest.raises(BufferError, match="not inside a live buffer"):
        m.find(0)


def test_free_merges_and_reuses():
    m = DeviceMemory(16 * PAGE_BYTES)
    bufs = [m.alloc(PAGE_BYTES) for _ in range(15)]
    with pytest.raises(BufferError, match="does not fit"):
        m.alloc(1)
    for b in bufs[3:6]:
        m.free(b.handle)
    big = m.alloc(3 * PAGE_BYTES)
    assert big.phys == bufs[3].phys
    assert big.handle not in [b.handle for b in bufs]     # handles are never reused


def test_bad_handles():
    m = DeviceMemory(1 << 20)
    b = m.alloc(100)
    m.free(b.handle)
    with pytest.raises(BufferError, match="was freed"):
        m.get(b.handle)
    with pytest.raises(BufferError, match="not a live buffer handle"):
        m.get(999999)
    with pytest.raises(BufferError, match="not a buffer handle"):
        m.get("x")
    with pytest.raises(BufferError, match=r"buffer_alloc: nbytes = 0; allowed range \[1, "):
        m.alloc(0)


def test_freeing_a_held_buffer_defers_its_pages():
    m = DeviceMemory(8 * PAGE_BYTES)
    a, b = m.alloc(PAGE_BYTES), m.alloc(2 * PAGE_BYTES)
    m.hold(b.handle)
    m.hold(b.handle)
    m.free(b.handle)
    with pytest.raises(BufferError, match=f"buffer handle {b.handle} was freed"):
        m.get(b.handle)
    with pytest.raises(BufferError, match="not inside a live buffer"):
        m.find(b.phys)
    c = m.alloc(PAGE_BYTES)
    assert c.phys == b.end                      # b's pages are not handed out while held
    with pytest.raises(BufferError, match=r"does not fit .*8192 more bytes are freed but still used by queued work"):
        m.alloc(4 * PAGE_BYTES)
    m.release(b.handle)
    assert m.alloc(PAGE_BYTES).phys == c.end    # one hold left
    m.release(b.handle)
    assert m.alloc(2 * PAGE_BYTES).phys == b.phys
    with pytest.raises(BufferError, match="was freed"):
        m.hold(a.handle) or m.free(a.handle) or m.hold(a.handle)


def test_numpy_integers_and_exact_arguments():
    m = DeviceMemory(1 << 20)
    b = m.alloc(np.int64(100))
    assert m.get(np.int32(b.handle)) is b
    for bad in (100.0, True, "100", None):
        with pytest.raises(BufferError, match=f"buffer_alloc: nbytes = {bad!r} must be an integer"):
            m.alloc(bad)
    with pytest.raises(BufferError, match="is not a buffer handle"):
        m.get(float(b.handle))


def test_threads_alloc_and_free_without_overlap_or_loss():
    """4 threads x 1,000 allocations: buffers never overlap, no internal error, no page is lost."""
    m = DeviceMemory(4 << 20)
    owner = np.zeros((4 << 20) // PAGE_BYTES, np.int64)     # page -> tag of the buffer on it, 0 free
    start = threading.Barrier(4)

    def worker(tag):
        rng = np.random.default_rng(tag)
        live = []
        start.wait()
        for i in range(1000):
            buf = m.alloc(int(rng.integers(1, 3 * PAGE_BYTES)))
            pages = slice(buf.phys // PAGE_BYTES, -(-buf.end // PAGE_BYTES))
            mark = tag * 10_000 + i + 1
            owner[pages] = mark                           # only this thread may have these pages
            live.append((buf, pages, mark))
            if len(live) > 3 or rng.random() < 0.5:
                old, old_pages, old_mark = live.pop(int(rng.integers(len(live))))
                assert (owner[old_pages] == old_mark).all(), "two live buffers shared a page"
                owner[old_pages] = 0
                m.free(old.handle)
        for old, old_pages, old_mark in live:
            assert (owner[old_pages] == old_mark).all(), "two live buffers shared a page"
            m.free(old.handle)
    assert run_threads(worker, range(1, 5)) == []
    assert m.buffers == {} and m.free_bytes() == m.size - PAGE_BYTES
    assert m.alloc(m.size - PAGE_BYTES).phys == PAGE_BYTES  # one run again: nothing fragmented or lost
