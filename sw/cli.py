"""What every command-line tool of the project shares: a wrong argument ends in one line, not a traceback.

A tool's ``main(argv)`` is wrapped with :func:`command`: an error of the user's making (an unknown
config or workload name, a missing file, a missing optional package) prints ``error: <message>`` on
stderr and returns exit code 2, like argparse's own usage errors. Every other exception is a bug
and keeps its traceback.

>>> @command
... def main(argv=None):
...     choose("workload", "nope", ["gemm", "conv"])
>>> main([])
2
"""

from __future__ import annotations

import functools
import importlib
import sys
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import TypeVar, overload

from sw.config import CONFIG_DIR, ConfigError

__all__ = ["UsageError", "MissingExtraError", "command", "choose", "require_extra", "config_names", "USER_ERRORS"]

T = TypeVar("T")
Main = Callable[[list[str] | None], int]     # a tool's main(argv): its exit code


class UsageError(ValueError):
    """A command-line argument names something that does not exist; the message lists what does."""


class MissingExtraError(RuntimeError):
    """A tool needs a package of an optional extra that is not installed; the message names the extra and its make target."""


def config_names() -> list:
    """The config names ``load_config`` accepts besides a path: the JSON files of ``configs/``."""
    return sorted(p.stem for p in CONFIG_DIR.glob("*.json"))


def choose(what: str, value: T, choices: Iterable[T]) -> T:
    """``value`` if it is one of ``choices``, else a :class:`UsageError` naming ``what`` and listing the choices."""
    choices = list(choices)
    if value not in choices:
        raise UsageError(f"unknown {what} {value!r}; choose one of: {', '.join(map(str, choices))}")
    return value


# the optional extras of pyproject.toml and the make target that installs each
EXTRA_TARGETS = {"fpga": "make venv-fpga (or .venv/bin/pip install -e '.[fpga]')",
                 "cosim": "make venv", "tvm": "make venv", "onnx": "make venv"}


def require_extra(module: str, extra: str) -> ModuleType:
    """Import ``module`` (a package of the optional ``extra``), or raise :class:`MissingExtraError` saying how to
    install it."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as err:
        if err.name != module.split(".")[0] and err.name != module:
            raise
        raise MissingExtraError(f"{module} is not installed: it comes with the '{extra}' extra of pyproject.toml; "
                                f"install it with {EXTRA_TARGETS.get(extra, f'pip install -e .[{extra}]')}") from None


USER_ERRORS = (ConfigError, UsageError, MissingExtraError, FileNotFoundError)


@overload
def command(main: Main, *, errors: tuple[type[BaseException], ...] = ()) -> Main: ...
@overload
def command(main: None = None, *, errors: tuple[type[BaseException], ...] = ()) -> Callable[[Main], Main]: ...


def command(main: Main | None = None, *, errors: tuple[type[BaseException], ...] = ()) -> Main | Callable[[Main], Main]:
    """Wrap a tool's ``main(argv)`` so that user errors (``USER_ERRORS`` and ``errors``) print one line, exit code 2."""
    def wrap(fn: Main) -> Main:
        @functools.wraps(fn)
        def wrapped(argv: list[str] | None = None) -> int:
            try:
                return fn(argv)
            except USER_ERRORS + tuple(errors) as err:
                print(f"error: {_message(err)}", file=sys.stderr)
                return 2
        return wrapped
    return wrap(main) if main is not None else wrap


def _message(err: BaseException) -> str:
    if isinstance(err, FileNotFoundError) and err.filename:
        return f"no such file: {err.filename}"
    return str(err)


def progress_bar(total: int, desc: str, file=None, **kwargs):
    """A tqdm progress bar on stderr (or ``file``) that draws only on a terminal: off a terminal (CI, a pipe,
    a log file) it writes nothing, so logs carry no carriage-return noise."""
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, file=file if file is not None else sys.stderr, disable=None, leave=False,
                dynamic_ncols=True, **kwargs)


def run_as_main(spec) -> None:
    """The ``if __name__ == "__main__":`` of every tool: exit with the ``main()`` of the module imported under
    its own name (``__spec__`` of ``python -m``), so the functions it sends to the simulator (``cosim.run``)
    are importable there by that name rather than as ``__main__``."""
    sys.exit(importlib.import_module(spec.name).main())
