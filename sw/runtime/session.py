"""Which runtime the API functions use: the live command handles, the process-wide runtime, each thread's own.

The API names a runtime by an int handle (``cmd``) or, for ``buffer_alloc``/``buffer_free``/
``command_handle``, implicitly: the calling thread's innermost :func:`thread_current` block if it
has one, else the process-wide runtime of :func:`set_current`. Targets get one run lock each, so
two handles on one device never run at the same time. Everything here is guarded by one lock.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol, TypeVar

__all__ = ["register", "unregister", "lookup", "set_current", "current", "thread_current", "shutdown", "run_lock"]

class Queue(Protocol):
    """What this module needs of a runtime: a :class:`sw.runtime.queue.CommandQueue` (which imports this module)."""

    @property
    def handle(self) -> int: ...


Q = TypeVar("Q", bound=Queue)

_LOCK = threading.RLock()
_QUEUES: dict[int, Queue] = {}           # handle -> live command queue
_CURRENT: Queue | None = None            # the process-wide runtime
_THREAD = threading.local()              # .stack: this thread's thread_current runtimes, innermost last
_RUN_LOCKS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_STRONG_RUN_LOCKS: dict = {}


def register(queue: Queue) -> None:
    with _LOCK:
        _QUEUES[queue.handle] = queue


def unregister(queue: Queue) -> None:
    with _LOCK:
        _QUEUES.pop(queue.handle, None)


def lookup(handle: int) -> Queue | None:
    """The live queue with this handle, or None."""
    with _LOCK:
        return _QUEUES.get(handle)


def set_current(queue: Queue | None) -> Queue | None:
    """Make ``queue`` the process-wide runtime (and a live handle); return the previous one."""
    global _CURRENT
    with _LOCK:
        previous, _CURRENT = _CURRENT, queue
        if queue is not None:
            _QUEUES[queue.handle] = queue
    return previous


def current(make_default: Callable[[], Queue]) -> Queue:
    """The calling thread's innermost runtime, else the process-wide one (``make_default()`` on first use)."""
    global _CURRENT
    stack = getattr(_THREAD, "stack", None)
    if stack:
        return stack[-1]
    with _LOCK:
        if _CURRENT is None:
            _CURRENT = make_default()
            _QUEUES[_CURRENT.handle] = _CURRENT
        return _CURRENT


@contextmanager
def thread_current(queue: Q) -> Iterator[Q]:
    """Inside the block, ``queue`` is the calling thread's runtime and a live handle (other threads unaffected)."""
    register(queue)
    stack = _THREAD.__dict__.setdefault("stack", [])
    stack.append(queue)
    try:
        yield queue
    finally:
        stack.remove(queue)
        unregister(queue)


def shutdown() -> None:
    """Drop the process-wide runtime; the next :func:`current` makes a fresh one."""
    global _CURRENT
    with _LOCK:
        if _CURRENT is not None:
            _QUEUES.pop(_CURRENT.handle, None)
        _CURRENT = None


def run_lock(target: object) -> threading.Lock:
    """The lock that serialises runs on ``target``."""
    with _LOCK:
        try:
            lock = _RUN_LOCKS.get(target)
            if lock is None:
                lock = _RUN_LOCKS[target] = threading.Lock()
        except TypeError:                    # a target that cannot be weakly referenced: keep it by id
            lock = _STRONG_RUN_LOCKS.setdefault(id(target), (target, threading.Lock()))[1]
        return lock
