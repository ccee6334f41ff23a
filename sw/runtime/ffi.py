"""The runtime's tvm-ffi face: global functions, error classes, and the Python callable behind an FFI function.

:func:`register` exports the API functions as tvm-ffi globals (under their names and with a
``vta.`` prefix) and registers every :class:`sw.pipeline.VTAError` subclass, including those
defined later (the RTL target's), so an error keeps its type when it crosses tvm-ffi.

:func:`python_callable` undoes tvm-ffi's wrapping of a Python callable. A Python function passed
to an FFI global arrives as a new ``tvm_ffi.Function`` on every call, so the runtime keys its
micro-kernel cache by the Python callable inside. tvm-ffi has no API for that, so this reads the
function object's closure, after checking at import that the layout holds: a probe callable must
come back as itself, and a function is only read if its type-specific words match the probe's.
When the check fails (another tvm-ffi build) every lookup answers None and the runtime keys by
the wrapper.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Iterable
from types import ModuleType

import tvm_ffi

from sw.pipeline import on_error_class

__all__ = ["register", "python_callable", "UNWRAPS"]

# ExternCFunctionObjImpl, in pointer-sized words: TVMFFIObject header (ref counts, type index,
# deleter), TVMFFIFunctionCell (safe_call, cpp_call), then self_ (the Python callback closure,
# whose first word is the PyObject*), safe_call_ and deleter_.
_W_TYPE, _W_DELETER, _W_SAFE_CALL, _W_CPP_CALL, _W_CLOSURE, _W_PY_SAFE_CALL, _W_PY_DELETER = 1, 2, 3, 4, 5, 6, 7
_HEADER_WORDS, _ALL_WORDS = 5, 8


def _words(fn, n):
    return list((ctypes.c_void_p * n).from_address(fn.__chandle__()))


def _probe():
    """The words that mark a tvm-ffi function made from a Python callable, or None if the layout differs."""
    def sentinel():
        return None
    try:
        fn = tvm_ffi.convert(sentinel)
        w = _words(fn, _ALL_WORDS)
        if w[_W_CPP_CALL] is not None or not w[_W_CLOSURE]:
            return None
        if ctypes.c_void_p.from_address(w[_W_CLOSURE]).value != id(sentinel):
            return None
        w[_W_TYPE] = (w[_W_TYPE] or 0) & 0xFFFFFFFF       # the type index; the upper half is padding
        return {i: w[i] for i in (_W_TYPE, _W_DELETER, _W_SAFE_CALL, _W_PY_SAFE_CALL, _W_PY_DELETER)}
    except Exception:   # noqa: BLE001 - any surprise means: do not read function objects
        return None


_SIGNATURE = _probe()
UNWRAPS = _SIGNATURE is not None   # whether python_callable can see through tvm-ffi functions here


def python_callable(fn: object) -> Callable | None:
    """The Python callable that the ``tvm_ffi.Function`` ``fn`` wraps, else None."""
    if _SIGNATURE is None or not isinstance(fn, tvm_ffi.Function):
        return None
    head = _words(fn, _HEADER_WORDS)
    head[_W_TYPE] = (head[_W_TYPE] or 0) & 0xFFFFFFFF
    if any(head[i] != _SIGNATURE[i] for i in (_W_TYPE, _W_DELETER, _W_SAFE_CALL)):
        return None                      # not a function made from a C callback: its size is unknown
    w = _words(fn, _ALL_WORDS)
    if (w[_W_PY_SAFE_CALL], w[_W_PY_DELETER]) != (_SIGNATURE[_W_PY_SAFE_CALL], _SIGNATURE[_W_PY_DELETER]):
        return None                      # a C callback, but not tvm-ffi's Python one
    addr = ctypes.c_void_p.from_address(w[_W_CLOSURE]).value
    # (addr is the closure's PyObject*, kept alive by fn's closure while we take our reference)
    return ctypes.cast(addr, ctypes.py_object).value  # type: ignore[arg-type]  # never None: probe checked layout


def register(module: ModuleType, names: Iterable[str]) -> None:
    """Export ``module``'s functions ``names`` as tvm-ffi globals and keep error types across tvm-ffi."""
    from sw.config import ConfigError
    from sw.isa import EncodeError

    for cls in (ConfigError, EncodeError):
        tvm_ffi.register_error(cls.__name__, cls)
    on_error_class(lambda cls: tvm_ffi.register_error(cls.__name__, cls))
    for name in names:
        fn = getattr(module, name)
        tvm_ffi.register_global_func(name, fn, override=True)
        tvm_ffi.register_global_func(f"vta.{name}", fn, override=True)
