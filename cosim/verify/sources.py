"""The project's source files by line: what the coverage report quotes for a ``src`` attribute of the Verilog, and
the coverage annotations in their comments.

A coverage annotation is a comment on a line of the Amaranth source, ``# untoggled: KEY[, KEY...]`` or
``# unreachable: KEY`` (both kinds on one line: ``# untoggled: KEY; unreachable: KEY``). It applies to what the
Verilog generates from that line: the signals and ``if`` conditions whose ``src`` attribute names its
``file:line``. Each key names an entry of a reasons table (:data:`cosim.verify.toggle_rules.ANNOTATED`,
:data:`cosim.verify.line_waivers.ANNOTATED`); a key that is not in the table is an error.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Collection
from functools import cache
from pathlib import Path

__all__ = ["ROOT", "KINDS", "UnknownAnnotation", "source_line", "source_code", "file_annotations", "annotated_keys"]

ROOT = Path(__file__).resolve().parents[2]
KINDS = ("untoggled", "unreachable")
_ANNOTATION = re.compile(rf"\b({'|'.join(KINDS)}):\s*([\w-]+(?:\s*,\s*[\w-]+)*)")


class UnknownAnnotation(ValueError):
    """A coverage annotation names a key its reasons table does not have."""


@cache
def _lines(path: str, root: Path = ROOT) -> list:
    try:
        return (root / path).read_text().splitlines()
    except OSError:
        return []


def source_line(path: str, n: int) -> str | None:
    """Line ``n`` (from 1) of the source file ``path`` (relative to the project), stripped; None if there is none."""
    lines = _lines(path)
    return lines[n - 1].strip() if 0 < n <= len(lines) else None


@cache
def _comments(path: str, root: Path = ROOT) -> dict:
    """``{line: (column, text)}`` of the comments of the Python file ``path`` (empty if it does not tokenize)."""
    text = "\n".join(_lines(path, root)) + "\n"
    try:
        return {tok.start[0]: (tok.start[1], tok.string)
                for tok in tokenize.generate_tokens(io.StringIO(text).readline) if tok.type == tokenize.COMMENT}
    except (tokenize.TokenError, SyntaxError):
        return {}


def source_code(path: str, n: int) -> str | None:
    """:func:`source_line` without the line's comment (where the coverage annotations are)."""
    line = source_line(path, n)
    comment = _comments(path).get(n)
    return _lines(path)[n - 1][:comment[0]].strip() if line is not None and comment else line


@cache
def file_annotations(path: str, root: Path = ROOT) -> dict:
    """``{line: {kind: (key, ...)}}``: the coverage annotations in the comments of the Python file ``path``
    (relative to ``root``, the project by default); empty for a file that is missing or is not Python."""
    out: dict = {}
    for line, (_, comment) in _comments(path, root).items():
        for m in _ANNOTATION.finditer(comment):
            kinds = out.setdefault(line, {})
            kinds[m[1]] = kinds.get(m[1], ()) + tuple(k.strip() for k in m[2].split(","))
    return out


def annotated_keys(src: str | None, kind: str, known: Collection[str], root: Path = ROOT) -> tuple:
    """The keys of ``kind`` annotated on the project line ``src`` (``file:line``, as a ``src`` attribute names it),
    in their order on the line; raises :class:`UnknownAnnotation` (naming ``file:line`` and the ``known`` keys) for a
    key not in ``known``. Only project files are read: a path outside the project's own tree (the site-packages of a
    virtual environment) has none."""
    path, _, line = (src or "").rpartition(":")
    if not line.isdigit() or not path or path.startswith((".", "/")) or "site-packages/" in path:
        return ()
    keys = file_annotations(path, root).get(int(line), {}).get(kind, ())
    for key in keys:
        if key not in known:
            raise UnknownAnnotation(f"{path}:{line}: unknown '# {kind}:' key {key!r}; known keys: "
                                    f"{', '.join(sorted(known))}")
    return keys
