"""Where a whole function runs: the golden model, the RTL or a board, chosen by name in one registry.

A *runner* runs calls ``[(fn, args, kwargs), ...]`` in order on one target of a config, each call with a fresh
command queue on that target as the runtime's default (so ``fn`` uses the ordinary API), and returns a
:class:`Batch`: the calls' return values and the :class:`Timings` of the run. An exception raised by a call is
re-raised to the caller.

Registered here: ``"fsim"``, the golden model (:class:`sw.fsim.FsimDevice`, no options), and ``"board"``, a Zynq
board (options: ``spec``, a board spec such as ``"board:/dev/uio0,/dev/udmabuf0"``, and those of
:func:`sw.targets.zynq.open_board`). The Verilated RTL, ``"rtl"``, is registered by ``cosim`` (``sw`` never imports
it): when asked for a name it does not hold, the registry loads the runners that installed packages declare in the
``openvta.runners`` entry-point group, and importing ``cosim`` registers it as well.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

from sw.config import Config, load_config
from sw.pipeline import VTAError
from sw.runtime.api import use_target
from sw.targets import TargetDevice, make_target

__all__ = ["Batch", "Call", "Runner", "Timings", "get", "names", "register", "run", "run_batch"]

Call = tuple[Callable, tuple, dict]
ENTRY_POINTS = "openvta.runners"


@dataclass(frozen=True)
class Timings:
    """Wall seconds of one run: ``launch`` from the request to the first call's start (building or starting a
    simulator, of which ``server_start`` starting a simulator server), ``calls`` each call's own time, ``total``
    from the request to the return."""
    launch: float
    calls: tuple[float, ...]
    total: float
    server_start: float = 0.0


@dataclass(frozen=True)
class Batch:
    """The return values of a run's calls, in order, its :class:`Timings`, and what the runner adds (``extra``:
    the RTL's trace when asked for)."""
    values: list
    timings: Timings
    extra: dict = field(default_factory=dict)


# runner(calls, config, **options) -> Batch: each runner takes its own keyword options (a Protocol with **options
# would hold only runners that take any keyword at all)
Runner = Callable[..., Batch]


_RUNNERS: dict[str, Runner] = {}
_loaded = False


def register(name: str, runner: Runner) -> None:
    """Make ``runner`` the one that ``name`` chooses (replacing an earlier one of that name)."""
    _RUNNERS[name] = runner


def _load_entry_points() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        for ep in entry_points(group=ENTRY_POINTS):
            if ep.name not in _RUNNERS:
                register(ep.name, ep.load())


def names() -> tuple[str, ...]:
    """Every runner's name, the installed packages' included."""
    _load_entry_points()
    return tuple(sorted(_RUNNERS))


def get(name: str) -> Runner:
    """The runner ``name`` chooses; an unknown name raises :class:`VTAError` listing the known ones."""
    if name not in _RUNNERS:
        _load_entry_points()
    if name not in _RUNNERS:
        raise VTAError(f"target = {name!r} is not a runner; the runners are {', '.join(names())}")
    return _RUNNERS[name]


def run_batch(name: str, calls: Sequence[Call], config: Config | str | None = None, **options: Any) -> Batch:
    """Run ``calls`` in order on the target ``name`` of ``config``; see the module docstring."""
    return get(name)(list(calls), load_config(config), **options)


def run(name: str, fn: Callable, *args: Any, config: Config | str | None = None, **options: Any) -> Any:
    """``fn(*args)`` on the target ``name`` of ``config``; returns what ``fn`` returns."""
    return run_batch(name, [(fn, args, {})], config, **options).values[0]


def run_on(target: Callable[[], TargetDevice], calls: Sequence[Call], **queue_args: Any) -> Batch:
    """Run ``calls`` in order, each on a fresh command queue over the target that ``target()`` makes; the
    building block of the runners that run in this process."""
    t0 = time.perf_counter()
    device = target()
    values, seconds = [], []
    start = time.perf_counter()
    for fn, args, kwargs in calls:
        t = time.perf_counter()
        with use_target(device, **queue_args):
            values.append(fn(*args, **kwargs))
        seconds.append(time.perf_counter() - t)
    end = time.perf_counter()
    return Batch(values, Timings(launch=start - t0, calls=tuple(seconds), total=end - t0))


def _fsim(calls: Sequence[Call], config: Config, **options: Any) -> Batch:
    if options:
        raise VTAError(f"target 'fsim' takes no options, not {', '.join(sorted(options))}")
    return run_on(lambda: make_target(config), calls)


def _board(calls: Sequence[Call], config: Config, spec: str = "board", **options: Any) -> Batch:
    return run_on(lambda: make_target(spec, config=config, **options), calls)


register("fsim", _fsim)
register("board", _board)
