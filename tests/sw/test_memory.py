import pytest

from sw.memory import PAGE_BYTES, BufferError, DeviceMemory


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
