"""Digests of device memory page by page: how two runs' memories are compared without moving them.

The runtime allocates inputs, outputs, micro-ops and instruction streams in the first ``CHECK_BYTES`` of
device memory; :func:`page_digests` gives one short hash per page of that range, so the golden model's and
the RTL's memories (or a replay's) are compared byte for byte by comparing lists of strings, and a
difference names its page.
"""

from __future__ import annotations

import hashlib

import numpy as np

__all__ = ["CHECK_BYTES", "PAGE", "page_digests"]

CHECK_BYTES = 4 << 20          # where the runtime allocates
PAGE = 4096


def page_digests(dram: np.ndarray, page: int = PAGE, nbytes: int = CHECK_BYTES) -> list[str]:
    """One 8-byte blake2b hex digest per ``page`` bytes of the first ``nbytes`` of ``dram``."""
    view = np.asarray(dram[:nbytes]).reshape(-1, page)
    return [hashlib.blake2b(row.tobytes(), digest_size=8).hexdigest() for row in view]
