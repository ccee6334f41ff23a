"""Runtime targets: the devices a :class:`~sw.runtime.queue.CommandQueue` runs its stream on, by name.

A target is any object with ``cfg``, ``dram`` (the device memory as a writable 1-D uint8 numpy array) and
``run(insn_addr, insn_count, wait_cycles) -> counters`` (docs/architecture.md §1.3). :func:`make_target` makes
the golden model of a config (:class:`sw.fsim.FsimDevice`) or opens a Zynq board (:mod:`sw.targets.zynq`);
the Verilated RTL is a target only inside a co-simulation, which ``cosim`` creates.

Running a whole function somewhere (the golden model, the RTL, a board) is chosen by name in
:mod:`sw.runtime.runners`.
"""

from __future__ import annotations

from typing import Protocol, TypeGuard

import numpy as np

from sw.config import Config, load_config
from sw.pipeline import VTAError

__all__ = ["make_target", "is_board_spec", "TargetDevice"]


class TargetDevice(Protocol):
    """What a target offers (the module docstring): its name, config, device memory and ``run``."""

    @property
    def name(self) -> str: ...

    @property
    def cfg(self) -> Config: ...

    @property
    def dram(self) -> np.ndarray: ...

    def run(self, insn_addr: int, insn_count: int, wait_cycles: int | None = None) -> dict: ...


def is_board_spec(spec: object) -> TypeGuard[str]:
    """Whether ``spec`` names a board: ``"board"`` or ``"board:UIO[,MEM[@PHYS]]"``."""
    return isinstance(spec, str) and (spec == "board" or spec.startswith("board:"))


def make_target(config: Config | str | dict | None = None, /, **options) -> TargetDevice:
    """The target ``config`` names: a board spec, ``"board"`` or ``"board:UIO[,MEM[@PHYS]]"`` (e.g.
    ``"board:/dev/uio0,/dev/udmabuf0"``), opens the accelerator of a Zynq board (:func:`sw.targets.zynq.open_board`,
    which takes the ``options``: ``uio``, ``udmabuf``, ``phys``, ``size``, ``config``, ``timeout``, ``reset``);
    anything else is a config (a Config, a config name or JSON path, or None for VTA_CONFIG/default) and gives its
    golden model (no options)."""
    if is_board_spec(config):
        from sw.targets.zynq import open_board
        return open_board(config, **options)
    if options:
        raise VTAError(f"make_target: options {', '.join(sorted(options))} are for a board target only; "
                       f"config = {config!r} is a golden model")
    from sw.fsim import FsimDevice
    return FsimDevice(load_config(config))
