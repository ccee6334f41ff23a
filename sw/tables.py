"""Tables of results, printed aligned for a terminal or as Markdown for docs/, and written into a document.

Every tool that reports rows (benchmarks, per-layer network reports, coverage, resource estimates) builds
them with :func:`format_table`: a list of dicts and the columns to show, each column a key, a title and a
format spec; numbers are right-aligned, text left-aligned. :func:`write_markdown` puts a table into a
Markdown file between ``<!-- marker -->`` and ``<!-- /marker -->`` lines, which is how ``make bench`` and
``make fpga-report`` keep the figures of docs/ current.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Column", "format_table", "write_markdown"]


@dataclass(frozen=True)
class Column:
    """One column: the row key it shows, its title, and how a value is written: a format spec
    (``".3f"``, ``",d"``, ``".1%"``) or a function of the value (and NaN/None are written ``n/a``)."""
    key: str
    title: str = ""
    fmt: str | Callable[[object], str] = ""

    def text(self, value: object) -> str:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return "n/a"
        if callable(self.fmt):
            return self.fmt(value)
        return format(value, self.fmt) if self.fmt else str(value)


def _columns(columns: Iterable[Column | str | tuple]) -> list[Column]:
    out = []
    for c in columns:
        if isinstance(c, Column):
            out.append(c)
        elif isinstance(c, str):
            out.append(Column(c, c))
        else:
            out.append(Column(*c))
    return out


def format_table(rows: Sequence[dict], columns: Iterable[Column | str | tuple], markdown: bool = False) -> str:
    """``rows`` as a table of ``columns`` (a :class:`Column`, a key, or a ``(key, title, fmt)`` tuple)."""
    cols = _columns(columns)
    cells = [[c.text(r.get(c.key)) for c in cols] for r in rows]
    titles = [c.title or c.key for c in cols]
    numeric = [all(isinstance(r.get(c.key), (int, float)) and not isinstance(r.get(c.key), bool)
                   or r.get(c.key) is None for r in rows) and bool(rows) for c in cols]
    if markdown:
        lines = ["| " + " | ".join(titles) + " |", "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]
        lines += ["| " + " | ".join(row) + " |" for row in cells]
        return "\n".join(lines)
    widths = [max([len(t)] + [len(row[i]) for row in cells]) for i, t in enumerate(titles)]

    def line(values):
        return "  ".join(v.rjust(w) if n else v.ljust(w) for v, w, n in zip(values, widths, numeric)).rstrip()

    return "\n".join([line(titles)] + [line(row) for row in cells])


def write_markdown(path: str | Path, text: str, marker: str) -> None:
    """Put ``text`` between the ``<!-- marker -->`` and ``<!-- /marker -->`` lines of the Markdown file
    ``path`` (appended with the markers when they are missing)."""
    p = Path(path)
    doc = p.read_text() if p.exists() else ""
    begin, end = f"<!-- {marker} -->", f"<!-- /{marker} -->"
    block = f"{begin}\n{text.rstrip()}\n{end}"
    if begin in doc and end in doc:
        a, b = doc.index(begin), doc.index(end) + len(end)
        doc = doc[:a] + block + doc[b:]
    else:
        doc = doc + ("\n" if doc and not doc.endswith("\n") else "") + block + "\n"
    p.write_text(doc)
