"""The AXI4 protocol checker seen from inside the simulator: its violations and stall counters, per run.

Every co-simulation model carries the checker (``cosim/model/axi_checker.sv`` + ``axi_checker.cpp``, added by
:mod:`cosim.model.variants`): SystemVerilog immediate assertions evaluated at each clock edge inside the
simulator (Verilator ``--assert``), so Python is never woken per cycle. A violation is recorded in C++ with
its rule, channel and cycle. Before each run :func:`begin_run` gives the checker the byte ranges of the run's
allocated buffers, so a write outside them is a violation too; after it :func:`check_run` raises
:class:`AxiProtocolError` naming the violations. Each rule is proven to fire by :mod:`cosim.verify.axi_check`.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from sw.pipeline import VTAError

__all__ = ["AxiProtocolError", "RULES", "STALL_CHANNELS", "begin_run", "check_run", "raw_image", "violations",
           "stall_counts"]

RULES = ("valid_dropped", "payload_changed", "boundary_4k", "bad_size", "bad_burst", "bad_len", "wlast_early",
         "wlast_missing", "rlast_wrong", "unexpected_resp", "resp_not_taken", "write_outside")


class AxiProtocolError(VTAError):
    """The accelerator's AXI4 traffic broke a protocol rule; the message names the rule, channel and cycle."""


def _lib():
    lib = ctypes.CDLL(None)
    lib.vta_axi_violation_count.restype = ctypes.c_uint64
    lib.vta_axi_violation_message.restype = ctypes.c_char_p
    lib.vta_axi_violation_message.argtypes = [ctypes.c_uint64]
    lib.vta_axi_range_add.argtypes = [ctypes.c_uint64, ctypes.c_uint64]
    return lib


_RAW = threading.local()


@contextmanager
def raw_image() -> Iterator[None]:
    """Runs inside the block write a raw device-memory image that no runtime allocated (replays): the
    buffer rule is off for them; every other rule still holds."""
    _RAW.on = True
    try:
        yield
    finally:
        _RAW.on = False


def begin_run(device: object) -> None:
    """Clear the violations and give the checker the buffers the run may write.

    The buffers are those of the calling thread's runtime when it drives ``device`` (every allocated buffer,
    page-rounded, and those freed while queued work still holds them); without such a runtime (a raw launch)
    every address inside device memory is allowed.
    """
    from sw import runtime

    lib = _lib()
    lib.vta_axi_clear()
    q = runtime.current()
    raw = getattr(_RAW, "on", False)
    memory = getattr(q, "memory", None) if getattr(q, "target", None) is device and not raw else None
    lib.vta_axi_ranges_reset(int(memory is not None))
    if memory is None:
        return
    with memory._lock:
        bufs = list(memory.buffers.values()) + list(memory._held_freed.values())
    for buf in bufs:
        lib.vta_axi_range_add(buf.phys, buf.phys + buf.pages)          # pages: bytes of its whole pages


STALL_CHANNELS = ("AR", "R_paused", "AW", "W", "R_held", "B_held")


def stall_counts() -> dict | None:
    """Cycles each channel of the memory port has waited since the model started ({channel: cycles}; None
    outside an RTL model): AR, AW, W without READY from the memory, R paused by the memory inside a burst,
    R and B held by the accelerator (no READY). Differences of two readings give a program's backpressure."""
    lib = ctypes.CDLL(None)
    if not hasattr(lib, "vta_axi_stall_count"):
        return None
    lib.vta_axi_stall_count.restype = ctypes.c_uint64
    return {name: int(lib.vta_axi_stall_count(i)) for i, name in enumerate(STALL_CHANNELS)}


def violations() -> tuple[list[str], int]:
    """The violations of the current run (at most 32 messages) and their total count."""
    lib = _lib()
    n = int(lib.vta_axi_violation_count())
    return [lib.vta_axi_violation_message(i).decode() for i in range(min(n, 32))], n


def check_run(stopped_on_error: bool = False) -> None:
    """Raise :class:`AxiProtocolError` when the run broke an AXI rule. A run the accelerator stopped on an error
    (``stopped_on_error``) may end with bursts in flight (the device is reset after it): ``resp_not_taken`` is
    not a violation then."""
    messages, n = violations()
    if stopped_on_error:
        kept = [m for m in messages if not m.startswith("resp_not_taken")]
        n, messages = n - (len(messages) - len(kept)), kept
    if n:
        more = f"\n  ... and {n - len(messages)} more" if n > len(messages) else ""
        raise AxiProtocolError(f"the accelerator's AXI4 port broke the protocol {n} times:\n  " +
                               "\n  ".join(messages) + more)
