"""The micro-kernel (JIT) cache of one command handle and the device memory its micro-ops are staged in.

Recorded kernels are kept by a key (the runtime uses (Python callable, user key)); each kernel's
encoded micro-ops are appended once to a staging area in device memory, from which UOP loads
fetch them, and never move while the kernel is cached. Both are bounded: at most ``max_kernels``
kernels and ``stage_bytes`` of staging memory. When either is full the cache is emptied and a new
staging area begins; the old area is freed at once, and since the queued stream holds the
buffers it loads from, its pages come back only after that stream has run. If the area before
it is still waiting for that, ``flush`` (the runtime's synchronize) runs the stream first, so
staging never holds more than twice ``stage_bytes``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING

import numpy as np

from sw.runtime.memory import DeviceMemory

if TYPE_CHECKING:
    from sw.isa import ISA
    from sw.runtime.uopkernel import UopKernel

__all__ = ["KernelCache", "STAGE_CHUNK"]

STAGE_CHUNK = 1 << 16      # staging memory is allocated in chunks of this many bytes


class KernelCache:
    def __init__(self, memory: DeviceMemory, dram: np.ndarray, isa: ISA, stage_bytes: int, max_kernels: int,
                 in_use: Callable[[int], bool], flush: Callable[[], object]):
        self.memory = memory
        self.dram = dram
        self.isa = isa
        self.stage_bytes = stage_bytes
        self.max_kernels = max_kernels
        self._in_use = in_use          # in_use(handle): the queued stream loads from that buffer
        self._flush = flush            # flush(): run the queued stream
        self.kernels: dict[Hashable, UopKernel] = {}
        self.chunks: list[int] = []    # buffer handles of the current staging area
        self._used = 0                 # bytes used in the last chunk
        self._retired = False          # the previous staging area still waits for the stream to run

    def __len__(self) -> int:
        return len(self.kernels)

    def get(self, key: Hashable) -> UopKernel | None:
        """The cached kernel for ``key`` or None (TypeError if ``key`` is not hashable)."""
        return self.kernels.get(key)

    def add(self, key: Hashable, kernel: UopKernel) -> None:
        """Stage ``kernel`` and cache it under ``key``."""
        self.stage(kernel)
        self.put(key, kernel)

    def put(self, key: Hashable, kernel: UopKernel) -> None:
        """Cache a kernel staged by :meth:`stage` (since then the cache may have been emptied, not refilled)."""
        self.kernels[key] = kernel

    def stage(self, kernel: UopKernel) -> None:
        """Append ``kernel``'s micro-ops to the staging area (sets ``kernel.dram_addr`` and ``kernel.chunk``).

        If the cache or the staging area is full, the cache is emptied first (:meth:`evict`).
        """
        words = np.array([self.isa.encode_uop(*u) for u in kernel.uops], dtype=np.uint32)
        nbytes = words.nbytes
        chunk = min(max(STAGE_CHUNK, nbytes), self.stage_bytes)
        if len(self.kernels) >= self.max_kernels:
            self.evict()
        last = self.memory.get(self.chunks[-1]) if self.chunks else None
        if last is None or self._used + nbytes > last.nbytes:
            if self.staged_bytes() + chunk > self.stage_bytes:
                self.evict()
            last = self.memory.alloc(chunk)
            self.chunks.append(last.handle)
            self._used = 0
        addr = last.phys + self._used
        self.dram[addr:addr + nbytes] = words.view(np.uint8)
        self._used += nbytes
        kernel.dram_addr, kernel.chunk = addr, last.handle

    def staged_bytes(self) -> int:
        """Bytes of device memory in the current staging area."""
        return sum(self.memory.get(h).nbytes for h in self.chunks)

    def evict(self) -> None:
        """Empty the cache and free the staging area (its pages return once the queued stream has run)."""
        if self._retired:
            self._flush()
        self.kernels.clear()
        for h in self.chunks:
            self._retired |= self._in_use(h)
            self.memory.free(h)
        self.chunks, self._used = [], 0

    def stream_ran(self) -> None:
        """The queued stream has run (or was dropped): nothing loads from freed staging areas any more."""
        self._retired = False
