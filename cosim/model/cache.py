"""Build once, reuse everywhere: the cache-key digest and the locked build-or-reuse step of every cached build.

Every build of :mod:`cosim` (the Verilog of a config, the co-simulation models, the speed ceiling, the AXI
checker's bench) lives in its own directory under ``CACHE_DIR`` named by a :func:`digest` of everything the
build reads, so a change to any input makes a new directory and nothing else rebuilds. :func:`cached_build`
runs the build into that directory under an exclusive file lock, so concurrent processes (pytest-xdist
workers, Dask workers) wait for one build instead of building twice, and marks it done with a stamp file
written last, so a build that failed or was killed is built again.
"""

from __future__ import annotations

import fcntl
import hashlib
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["digest", "cached_build", "STAMP"]

STAMP = "BUILT"


def digest(*parts, length: int = 16) -> str:
    """A hex digest of ``parts`` in order (str, bytes, or a Path whose content is read)."""
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, Path):
            part = part.read_bytes()
        h.update(part if isinstance(part, bytes) else str(part).encode())
        h.update(b"\0")
    return h.hexdigest()[:length]


def cached_build(directory: Path, build: Callable[[Path], None], stamp: str = STAMP) -> float | None:
    """Run ``build(directory)`` once: ``None`` when ``directory/stamp`` already marks it done (by this or
    another process), else the build's seconds after it ran and the stamp was written. An exception from
    ``build`` leaves no stamp, so the next call builds again."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (directory / stamp).exists():
            return None
        t = time.time()
        build(directory)
        seconds = time.time() - t
        if stamp == STAMP:
            (directory / stamp).write_text(f"{seconds:.1f}\n")
        elif not (directory / stamp).exists():
            raise RuntimeError(f"the build of {directory} did not write {stamp}")
        return seconds
