"""The project's source files by line: what the coverage report quotes for a ``src`` attribute of the Verilog."""

from __future__ import annotations

from functools import cache
from pathlib import Path

__all__ = ["ROOT", "source_line"]

ROOT = Path(__file__).resolve().parents[2]


@cache
def _lines(path: str) -> list:
    try:
        return (ROOT / path).read_text().splitlines()
    except OSError:
        return []


def source_line(path: str, n: int) -> str | None:
    """Line ``n`` (from 1) of the source file ``path`` (relative to the project), stripped; None if there is none."""
    lines = _lines(path)
    return lines[n - 1].strip() if 0 < n <= len(lines) else None
