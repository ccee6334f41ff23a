"""Device memory: a page allocator over a target's DRAM and the buffers handed to users.

Buffers are page aligned (4 KiB, like VTA's simulator), so every element type is aligned, and page
0 is never handed out, so physical address 0 never names a buffer. Handles are small integers that
are never reused, so a use after free is always detected.
"""

from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass

from .pipeline import VTAError

__all__ = ["PAGE_BYTES", "Buffer", "DeviceMemory", "BufferError"]

PAGE_BYTES = 1 << 12


class BufferError(VTAError, ValueError):
    """A buffer handle or device address is not valid."""


@dataclass
class Buffer:
    handle: int
    phys: int
    nbytes: int

    @property
    def end(self) -> int:
        return self.phys + self.nbytes


class DeviceMemory:
    """First-fit page allocator over ``[PAGE_BYTES, size)`` of a DRAM."""

    _handles = itertools.count(1)

    def __init__(self, size: int):
        self.size = size
        self._free = [(PAGE_BYTES, size - PAGE_BYTES)]   # sorted (start, length) runs
        self.buffers: dict[int, Buffer] = {}
        self._freed: set[int] = set()
        self._starts: list[int] = []                      # sorted phys of live buffers
        self._by_start: dict[int, Buffer] = {}

    def alloc(self, nbytes: int) -> Buffer:
        if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes <= 0:
            raise BufferError(f"buffer_alloc: nbytes = {nbytes!r}; allowed range [1, {self.size - PAGE_BYTES}]")
        need = -(-nbytes // PAGE_BYTES) * PAGE_BYTES
        for i, (start, length) in enumerate(self._free):
            if length >= need:
                if length == need:
                    del self._free[i]
                else:
                    self._free[i] = (start + need, length - need)
                buf = Buffer(next(self._handles), start, nbytes)
                self.buffers[buf.handle] = buf
                bisect.insort(self._starts, start)
                self._by_start[start] = buf
                return buf
        free = sum(length for _, length in self._free)
        raise BufferError(f"buffer_alloc: nbytes = {nbytes} does not fit in device memory "
                          f"({free} bytes free in {len(self._free)} runs of {self.size} bytes)")

    def free(self, handle) -> None:
        buf = self.get(handle, "buffer_free")
        del self.buffers[buf.handle]
        self._freed.add(buf.handle)
        self._starts.remove(buf.phys)
        del self._by_start[buf.phys]
        length = -(-buf.nbytes // PAGE_BYTES) * PAGE_BYTES
        bisect.insort(self._free, (buf.phys, length))
        merged = []
        for start, ln in self._free:
            if merged and merged[-1][0] + merged[-1][1] == start:
                merged[-1] = (merged[-1][0], merged[-1][1] + ln)
            else:
                merged.append((start, ln))
        self._free = merged

    def get(self, handle, what: str = "buffer") -> Buffer:
        if isinstance(handle, bool) or not isinstance(handle, int):
            raise BufferError(f"{what}: {handle!r} is not a buffer handle from buffer_alloc")
        buf = self.buffers.get(handle)
        if buf is None:
            if handle in self._freed:
                raise BufferError(f"{what}: buffer handle {handle} was freed (use after free)")
            raise BufferError(f"{what}: {handle} is not a live buffer handle from buffer_alloc")
        return buf

    def find(self, phys: int, what: str = "address") -> Buffer:
        """The live buffer that contains device address ``phys``."""
        i = bisect.bisect_right(self._starts, phys) - 1
        if i >= 0:
            buf = self._by_start[self._starts[i]]
            if phys < buf.end:
                return buf
        raise BufferError(f"{what}: device address {phys:#x} is not inside a live buffer "
                          f"(freed, or never allocated)")
