"""Device memory: a page allocator over a target's DRAM and the buffers handed to users.

Buffers are page aligned (4 KiB, like VTA's simulator), so every element type is aligned, and page
0 is never handed out, so physical address 0 never names a buffer. Handles are small integers that
are never reused, so a use after free is always detected.

Queued work *holds* the buffers it uses (:meth:`DeviceMemory.hold`): freeing a held buffer ends
its handle at once (any later use is a use after free), but its pages return to the free list only
when the last hold is released, so no new buffer is placed where queued work will still read or
write. Every method takes one lock, so threads may allocate and free concurrently (VTA's simulator
allocator takes a mutex the same way).
"""

from __future__ import annotations

import bisect
import itertools
import threading
from dataclasses import dataclass

from sw.pipeline import VTAError, check_int

__all__ = ["PAGE_BYTES", "Buffer", "DeviceMemory", "BufferError"]

PAGE_BYTES = 1 << 12


class BufferError(VTAError, ValueError):
    """A buffer handle or device address is not valid."""


@dataclass
class Buffer:
    """A live allocation: its handle, its device byte address ``phys`` (page-aligned) and its size in bytes."""

    handle: int
    phys: int
    nbytes: int

    @property
    def end(self) -> int:
        """One past the buffer's last device byte."""
        return self.phys + self.nbytes

    @property
    def pages(self) -> int:
        """Bytes of the whole pages the buffer occupies."""
        return -(-self.nbytes // PAGE_BYTES) * PAGE_BYTES


class DeviceMemory:
    """First-fit page allocator over ``[PAGE_BYTES, size)`` of a DRAM; safe to share between threads."""

    _handles = itertools.count(1)

    def __init__(self, size: int):
        self.size = size
        self._lock = threading.RLock()
        self._free = [(PAGE_BYTES, size - PAGE_BYTES)]   # sorted (start, length) runs
        self.buffers: dict[int, Buffer] = {}
        self._freed: set[int] = set()
        self._starts: list[int] = []                      # sorted phys of live buffers
        self._by_start: dict[int, Buffer] = {}
        self._holds: dict[int, int] = {}                  # handle -> holds of queued work
        self._held_freed: dict[int, Buffer] = {}          # freed while held: pages not yet returned

    def alloc(self, nbytes: int) -> Buffer:
        """A new buffer of ``nbytes`` (an int in [1, size - PAGE_BYTES]) at the first free run of whole pages
        large enough; :class:`BufferError` when ``nbytes`` is out of range or does not fit."""
        nbytes = check_int("buffer_alloc", "nbytes", nbytes, 1, self.size - PAGE_BYTES, BufferError)
        need = -(-nbytes // PAGE_BYTES) * PAGE_BYTES
        with self._lock:
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
            held = sum(b.pages for b in self._held_freed.values())
        raise BufferError(f"buffer_alloc: nbytes = {nbytes} does not fit in device memory "
                          f"({free} bytes free in {len(self._free)} runs of {self.size} bytes"
                          + (f"; {held} more bytes are freed but still used by queued work until synchronize"
                             if held else "") + ")")

    def free(self, handle: int) -> None:
        """Kill ``handle`` now; its pages return to the free list now, or after the last hold when queued
        work still uses them. :class:`BufferError` for anything but a live handle."""
        with self._lock:
            buf = self.get(handle, "buffer_free")
            del self.buffers[buf.handle]
            self._freed.add(buf.handle)
            self._starts.remove(buf.phys)
            del self._by_start[buf.phys]
            if self._holds.get(buf.handle):
                self._held_freed[buf.handle] = buf
            else:
                self._return_pages(buf)

    def _return_pages(self, buf: Buffer) -> None:
        bisect.insort(self._free, (buf.phys, buf.pages))
        merged: list[tuple[int, int]] = []
        for start, ln in self._free:
            if merged and merged[-1][0] + merged[-1][1] == start:
                merged[-1] = (merged[-1][0], merged[-1][1] + ln)
            else:
                merged.append((start, ln))
        self._free = merged

    def hold(self, handle: int, what: str = "buffer") -> None:
        """Keep the pages of a live buffer out of the free list until :meth:`release` (queued work uses them)."""
        with self._lock:
            buf = self.get(handle, what)
            self._holds[buf.handle] = self._holds.get(buf.handle, 0) + 1

    def release(self, handle: int) -> None:
        """Drop one hold; the pages of a buffer freed meanwhile return to the free list with the last one."""
        with self._lock:
            n = self._holds.get(handle, 0) - 1
            if n > 0:
                self._holds[handle] = n
                return
            self._holds.pop(handle, None)
            buf = self._held_freed.pop(handle, None)
            if buf is not None:
                self._return_pages(buf)

    def free_bytes(self) -> int:
        """Bytes in the free list (what :meth:`alloc` can hand out, before fragmentation)."""
        with self._lock:
            return sum(length for _, length in self._free)

    def get(self, handle: int, what: str = "buffer") -> Buffer:
        """The live buffer of ``handle``; :class:`BufferError` prefixed with ``what`` for a non-handle, a freed
        handle (a use after free) or an unknown one."""
        if isinstance(handle, bool) or type(handle).__name__ == "bool_":
            raise BufferError(f"{what}: {handle!r} is not a buffer handle from buffer_alloc")
        try:
            h = handle.__index__()
        except (AttributeError, TypeError):
            raise BufferError(f"{what}: {handle!r} is not a buffer handle from buffer_alloc") from None
        with self._lock:
            buf = self.buffers.get(h)
            if buf is None:
                if h in self._freed:
                    raise BufferError(f"{what}: buffer handle {h} was freed (use after free)")
                raise BufferError(f"{what}: {h} is not a live buffer handle from buffer_alloc")
            return buf

    def find(self, phys: int, what: str = "address") -> Buffer:
        """The live buffer that contains device address ``phys``."""
        with self._lock:
            i = bisect.bisect_right(self._starts, phys) - 1
            if i >= 0:
                buf = self._by_start[self._starts[i]]
                if phys < buf.end:
                    return buf
        raise BufferError(f"{what}: device address {phys:#x} is not inside a live buffer "
                          f"(freed, or never allocated)")
