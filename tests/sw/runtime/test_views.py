"""sw.runtime.views: the device range a handle or a tensor view names."""
import numpy as np
import pytest
import tvm_ffi

from sw.runtime.memory import PAGE_BYTES, BufferError, DeviceMemory
from sw.runtime.views import check_barrier, copy_bytes, device_range


@pytest.fixture
def mem():
    dram = np.zeros(16 * PAGE_BYTES, np.uint8)
    m = DeviceMemory(dram.size)
    return m, dram, m.alloc(100), m.alloc(PAGE_BYTES)


def test_a_handle_names_its_buffer_and_a_view_its_bytes(mem):
    m, dram, a, b = mem
    assert device_range(m, dram, a.handle, "t") == (a.phys, a.end, a)
    assert device_range(m, dram, np.int64(a.handle), "t") == (a.phys, a.end, a)
    view = dram[a.phys + 16:a.phys + 48]
    assert device_range(m, dram, view, "t") == (a.phys + 16, a.phys + 48, a)
    assert device_range(m, dram, tvm_ffi.from_dlpack(view.view(np.int32)), "t") == (a.phys + 16, a.phys + 48, a)


def test_views_that_are_not_one_range_of_one_buffer(mem):
    m, dram, a, b = mem
    with pytest.raises(BufferError, match=r"t: the tensor view is not contiguous \(shape \(8,\), strides \(2,\)"):
        device_range(m, dram, dram[a.phys:a.phys + 16:2], "t")
    with pytest.raises(BufferError, match="not contiguous"):
        device_range(m, dram, tvm_ffi.from_dlpack(dram[a.phys + 15:a.phys:-1]), "t")
    with pytest.raises(BufferError, match=r"covers device bytes \[0x1000, 0x2001\), past the end of its buffer "
                                          r"\[0x1000, 0x1064\)"):
        device_range(m, dram, dram[a.phys:b.phys + 1], "t")
    with pytest.raises(BufferError, match="is not device memory"):
        device_range(m, dram, np.zeros(4, np.uint8), "t")
    with pytest.raises(BufferError, match="not inside a live buffer"):
        device_range(m, dram, dram[3 * PAGE_BYTES:3 * PAGE_BYTES + 4], "t")
    with pytest.raises(BufferError, match="neither a buffer handle nor a DLPack tensor"):
        device_range(m, dram, 1.0, "t")


def test_copy_and_barrier_use_the_view_range(mem):
    m, dram, a, b = mem
    region = lambda obj, what: device_range(m, dram, obj, what)
    copy_bytes(region, dram, np.arange(8, dtype=np.uint8), 0, dram[b.phys + 8:b.phys + 16], 0, 8, 1)
    assert list(dram[b.phys:b.phys + 17]) == [0] * 8 + list(range(8)) + [0]
    with pytest.raises(BufferError, match=r"dst range \[0, 9\) exceeds its 8 bytes"):
        copy_bytes(region, dram, np.zeros(9, np.uint8), 0, dram[b.phys + 8:b.phys + 16], 0, 9, 1)
    check_barrier("read_barrier", region, dram[a.phys:a.phys + 32], 32, 4, 4, len(dram))
    with pytest.raises(BufferError, match=r"exceeds the buffer \(32 bytes\)"):
        check_barrier("read_barrier", region, dram[a.phys:a.phys + 32], 32, 4, 5, len(dram))
