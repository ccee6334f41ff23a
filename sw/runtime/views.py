"""What an address argument names: device byte ranges of handles and tensor views, and host bytes.

A ``src``/``dst`` of the runtime API is a buffer handle, naming the whole buffer, or a DLPack
tensor that views device memory, naming exactly its own bytes: the tensor must be contiguous and
lie inside one live buffer, so an access is checked against the view's range, as against a
buffer's. ``buffer_copy`` and the barriers are built on the same ranges.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from sw.pipeline import check_int
from sw.runtime.memory import Buffer, BufferError, DeviceMemory

__all__ = ["device_range", "host_bytes", "copy_bytes", "check_barrier", "KIND_FROM_DEVICE", "KIND_TO_DEVICE"]

KIND_FROM_DEVICE, KIND_TO_DEVICE = 2, 1      # buffer_copy kind_mask bits: src is device memory, dst is

Region = Callable[[object, str], tuple[int, int, Buffer]]    # region(obj, what) -> (start, end, buffer)


def device_range(memory: DeviceMemory, dram: np.ndarray, obj: object, what: str) -> tuple[int, int, Buffer]:
    """(start, end, buffer): the device bytes a handle or a tensor view names, and the live buffer they are in."""
    if isinstance(obj, (int, np.integer)) and not isinstance(obj, (bool, np.bool_)):
        buf = memory.get(int(obj), what)
        return buf.phys, buf.end, buf
    try:
        arr = np.from_dlpack(obj)  # type: ignore[arg-type]  # any object: a non-producer raises, caught here
    except Exception:  # noqa: BLE001 - DLPack producers raise many types; the message says what was given
        raise BufferError(f"{what}: {type(obj).__name__} is neither a buffer handle nor a DLPack tensor "
                          f"that views device memory") from None
    ptr = arr.ctypes.data
    base = dram.ctypes.data
    phys = ptr - base
    if not 0 <= phys < len(dram):
        raise BufferError(f"{what}: the tensor at host address {ptr:#x} is not device memory (device memory "
                          f"is [{base:#x}, {base + len(dram):#x}); allocate with buffer_alloc and view it "
                          f"with buffer_cpu_ptr)")
    if not (arr.flags.c_contiguous or arr.size <= 1):
        raise BufferError(f"{what}: the tensor view is not contiguous (shape {arr.shape}, strides {arr.strides} "
                          f"bytes); it must name one contiguous range of device bytes")
    buf = memory.find(phys, what)
    end = phys + arr.nbytes
    if end > buf.end:
        raise BufferError(f"{what}: the tensor view covers device bytes [{phys:#x}, {end:#x}), past the end "
                          f"of its buffer [{buf.phys:#x}, {buf.end:#x})")
    return phys, end, buf


def host_bytes(obj: object, what: str, writable: bool) -> np.ndarray:
    """The bytes of a host array or DLPack tensor (``buffer_copy``'s host side), as a flat uint8 view."""
    arr: np.ndarray | None
    try:
        arr = np.from_dlpack(obj) if not isinstance(obj, np.ndarray) else obj  # type: ignore[arg-type]  # as above
    except Exception:  # noqa: BLE001 - not a DLPack producer: try the buffer protocol
        try:
            arr = np.frombuffer(obj, dtype=np.uint8) if not writable else None  # type: ignore[call-overload]  # as above
        except TypeError:
            arr = None
        if arr is None:
            raise BufferError(f"buffer_copy: {what} is a {type(obj).__name__}, not a host array or DLPack tensor") from None
    if not arr.flags.c_contiguous:
        raise BufferError(f"buffer_copy: {what} must be contiguous")
    if writable and not arr.flags.writeable:
        raise BufferError(f"buffer_copy: {what} is read-only")
    return arr.reshape(-1).view(np.uint8)


def copy_bytes(region: Region, dram: np.ndarray, src: object, src_offset: int, dst: object, dst_offset: int,
               nbytes: int, kind_mask: int) -> None:
    """``buffer_copy``: ``region(obj, what)`` resolves a device side to (start, end, buffer)."""
    kind_mask = check_int("buffer_copy", "kind_mask", kind_mask, 0, 3)
    limit = len(dram) if kind_mask else (1 << 63) - 1       # a device side lies in device memory
    src_offset, dst_offset, nbytes = (check_int("buffer_copy", name, v, 0, limit, BufferError) for name, v in
                                      (("src_offset", src_offset), ("dst_offset", dst_offset), ("nbytes", nbytes)))

    def side(obj, offset, is_device, what, writable):
        if is_device:
            start, end, _ = region(obj, f"buffer_copy {what}")
            arr = dram[start:end]
        else:
            arr = host_bytes(obj, what, writable)
        if offset + nbytes > arr.size:
            raise BufferError(f"buffer_copy: {what} range [{offset}, {offset + nbytes}) exceeds its "
                              f"{arr.size} bytes")
        return arr[offset:offset + nbytes]

    s = side(src, src_offset, kind_mask & KIND_FROM_DEVICE, "src", False)
    d = side(dst, dst_offset, kind_mask & KIND_TO_DEVICE, "dst", True)
    d[...] = s


def check_barrier(what: str, region: Region, handle: object, elem_bits: int, start: int, extent: int,
                  dram_bytes: int) -> None:
    """A barrier's range (``start``, ``extent`` elements of ``elem_bits``) must lie in what ``handle`` names."""
    elem_bits = check_int(what, "elem_bits", elem_bits, 1, 8 * dram_bytes, BufferError)
    start, extent = (check_int(what, name, v, 0, 8 * dram_bytes, BufferError)
                     for name, v in (("start", start), ("extent", extent)))
    phys, end, _ = region(handle, what)
    nbytes = (start + extent) * ((elem_bits + 7) // 8)
    if phys + nbytes > end:
        raise BufferError(f"{what}: range start = {start}, extent = {extent} of {elem_bits}-bit elements "
                          f"exceeds the buffer ({end - phys} bytes)")
