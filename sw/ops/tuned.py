"""Measured tiles: a log of tiling choices timed on the RTL, which the planner prefers to its own cycle model.

The planner (:mod:`sw.ops.plan`) ranks the tiles that fit by a small cycle model, whose first choice need not
be the fastest on the RTL. ``python -m apps.tune`` times the model's best candidates of every problem a network
or benchmark plans, on the RTL, and writes the fastest to the log; ``plan_conv2d`` and ``plan_dense`` then use it
for that problem (the same config, shape, virtual threads and epilogue cost), if it still fits. Like TopHub's
pre-tuned logs for VTA, but measured on our own RTL, and only a choice among tiles the planner already accepts.

The log is ``sw/ops/tuned.json`` (kept in the repository); ``VTA_TUNING_LOG`` names another file (a user's own
tuning of their models) or ``none`` (the cycle model alone).
"""

from __future__ import annotations

import json
import os
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

    from sw.config import Config
    from sw.ops.epilogue import Epilogue

__all__ = ["LOG", "LOG_ENV", "conv_op", "block_groups", "problem_key", "config_key", "epilogue_key", "lookup",
           "recording", "record", "load", "entries"]

LOG = Path(__file__).with_name("tuned.json")
LOG_ENV = "VTA_TUNING_LOG"
_RECORD: list | None = None


def config_key(cfg: Config) -> str:
    """What a plan depends on in the config: the blocks, element widths, buffer sizes and the bus."""
    return f"{cfg.bitstream}_bus{cfg.BUS_WIDTH}"


def epilogue_key(epi: Epilogue) -> str:
    """The planner's view of an epilogue (its :attr:`~sw.ops.epilogue.Epilogue.cost_proxy`) as text."""
    epi = epi.cost_proxy
    steps = " ".join(f"{op.name}:{v}" for op, v in epi.steps)
    residual = "" if epi.residual is None else " residual:" + " ".join(f"{op.name}:{v}" for op, v in epi.residual)
    branch = "" if epi.branch is None else " branch:" + " ".join(f"{op.name}:{v}" for op, v in epi.branch[1])
    post = "" if epi.post is None else " post:" + "|".join(
        ",".join(f"{a}-{b}" for a, b in ranges) for ranges in epi.post[:2]) + " +r" * epi.fused
    return f"planes:{epi.planes} {steps}{residual}{branch}{post}"


def conv_op(block_groups: int) -> str:
    """A conv problem's operator name: ``conv2d``, or ``conv2d-g<n>`` for a grouped conv of n block-groups (each
    group reads its own weights: not the batched conv it plans as)."""
    return "conv2d" if block_groups == 1 else f"conv2d-g{block_groups}"


def block_groups(op: str) -> int:
    """The block-groups of a conv problem's operator name (:func:`conv_op`)."""
    return int(op.split("-g")[1]) if "-g" in op else 1


def problem_key(op: str, cfg: Config, shape: tuple, vt: int, epi: Epilogue) -> str:
    """One tuning problem: operator, config, blocked shape, virtual threads, the epilogue's cost (two epilogues
    that differ only in their immediates share a problem)."""
    return f"{op} {config_key(cfg)} {'x'.join(map(str, shape))} vt{vt} {epilogue_key(epi)}"


def _path() -> Path | None:
    value = os.environ.get(LOG_ENV, "")
    if value.lower() == "none":
        return None
    return Path(value) if value else LOG


@lru_cache(maxsize=4)
def _read(path: Path | None, mtime: float) -> dict:
    if path is None or not path.exists():
        return {}
    data = json.loads(path.read_text())
    if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
        raise ValueError(f"{path}: a tuning log is {{\"entries\": [...]}}")
    return {e["problem"]: e for e in data["entries"]}


def entries(path: Path | None = None) -> dict:
    """problem key -> entry of the log at ``path`` (default: the active log)."""
    path = path if path is not None else _path()
    return _read(path, path.stat().st_mtime if path is not None and path.exists() else 0.0)


def lookup(op: str, cfg: Config, shape: tuple, vt: int, epi: Epilogue) -> tuple | None:
    """The measured tiles of a problem, or None."""
    entry = entries().get(problem_key(op, cfg, shape, vt, epi))
    return None if entry is None else tuple(entry["tiles"])


def load(path: Path) -> dict:
    """A log file's whole content ({"entries": [...]}; empty when the file does not exist)."""
    return json.loads(path.read_text()) if path.exists() else {"entries": []}


def record(op: str, cfg: Config, shape: tuple, vt: int, epi: Epilogue) -> None:
    """Note a problem the planner was asked for (inside :func:`recording`), with its own epilogue (the key keeps
    only its cost; timing it takes the real one: the hardware's ALU reuse depends on the order of the steps,
    which the cost proxy does not keep)."""
    if _RECORD is not None:
        _RECORD.append((op, cfg, tuple(shape), vt, epi))


@contextmanager
def recording() -> Iterator[list]:
    """Collect the problems planned inside the block: a list of (op, cfg, shape, vt, epilogue)."""
    global _RECORD
    previous, _RECORD = _RECORD, []
    try:
        yield _RECORD
    finally:
        _RECORD = previous
