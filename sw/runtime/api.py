"""VTA's runtime API (docs/architecture.md §5) as Python functions, on the calling thread's current runtime.

``cmd`` is a command handle (:func:`command_handle`); each function checks its arguments (a wrong one raises
an error naming it and its allowed range) and forwards to the :class:`~sw.runtime.queue.CommandQueue` of the
handle, under its lock.

Threads: the device allocator is thread-safe, micro-kernel recording is per thread, and a handle shared by
threads never corrupts its state. A handle is *one* instruction stream, though: calls from several threads
interleave in it, and a ``synchronize`` runs whatever the others have queued so far. A thread that builds a
program on a shared handle holds ``with queue.lock:`` around it; otherwise each thread uses its own handle
(``with use_target(...)`` makes a runtime current for the calling thread only, so ``buffer_alloc`` and
``command_handle`` in that thread use it). ``set_current`` sets the process-wide runtime that threads without
their own use.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import cast

import numpy as np

from sw.config import Config
from sw.pipeline import VTAError, check_int
from sw.runtime import session
from sw.runtime.queue import DEBUG_ALL, MAX_WAIT_CYCLES, CommandQueue
from sw.runtime.uopkernel import uop_loop_begin, uop_loop_end, uop_push
from sw.runtime.views import check_barrier, copy_bytes
from sw.targets import TargetDevice, make_target

Target = object     # a buffer handle (int) from buffer_alloc, or a DLPack tensor viewing device memory

__all__ = [
    "current", "current_config", "set_current", "use_target", "command_handle", "buffer_alloc", "buffer_free",
    "buffer_copy", "buffer_cpu_ptr", "load_2d", "store_2d", "uop_loop_begin", "uop_loop_end", "uop_push",
    "push_gemm_op", "push_alu_op", "push_depthwise_op", "dep_push", "dep_pop", "synchronize", "write_barrier",
    "read_barrier", "set_debug_mode", "runtime_shutdown", "API",
]

# ---------------------------------------------------------------------- the current runtime
set_current = session.set_current


def current() -> CommandQueue:
    """The calling thread's runtime (innermost ``use_target``), else the process-wide one (``set_current``).

    The process-wide runtime is created on first use, on the golden model of the default config.
    """
    return cast(CommandQueue, session.current(lambda: CommandQueue(make_target())))   # (session holds only these)


def current_config() -> Config:
    """The hardware configuration of the calling thread's runtime (:func:`current`)."""
    return current().cfg


@contextmanager
def use_target(target: TargetDevice | Config | str | dict | None, **kwargs) -> Iterator[CommandQueue]:
    """Run the calling thread's API calls on ``target`` in the block: a target object, a board spec such as
    ``"board:/dev/uio0,/dev/udmabuf0"`` or a config for a fresh golden model (:func:`make_target`); ``kwargs`` go to
    the :class:`CommandQueue`."""
    if target is None or isinstance(target, (Config, str, dict)):
        target = make_target(target)
    with session.thread_current(CommandQueue(target, **kwargs)) as queue:
        yield queue


def _queue(cmd) -> CommandQueue:
    if isinstance(cmd, CommandQueue):
        return cmd
    q = None
    if isinstance(cmd, (int, np.integer)) and not isinstance(cmd, (bool, np.bool_)):
        q = session.lookup(int(cmd))
    if q is None:
        raise VTAError(f"cmd = {cmd!r} is not a live command handle; get one from command_handle()")
    return cast(CommandQueue, q)



# ---------------------------------------------------------------------- the API (docs/architecture.md §5)
def command_handle() -> int:
    """The handle (an int) of the calling thread's current runtime.

    That is the innermost ``with use_target(...)`` of this thread, else the process-wide runtime,
    created on first use on the golden model of ``$VTA_CONFIG`` or configs/default.json; inside
    ``cosim.run`` it is the RTL. Every function below that takes ``cmd`` takes this handle."""
    return current().handle


def buffer_alloc(nbytes: int) -> int:
    """Allocate ``nbytes`` bytes of device memory; return its handle (an int).

    ``nbytes``: an integer in [1, device memory size - 4096]. The buffer starts on a 4 KiB page
    and is not zeroed. Raises :class:`sw.runtime.memory.BufferError` (a ``VTAError`` and ``ValueError``)
    when ``nbytes`` is not an integer in range or no free run of pages is large enough (the
    message gives the free bytes, and those freed but still used by queued work)."""
    return current().alloc(nbytes)


def buffer_free(handle: int) -> None:
    """Free the buffer ``handle`` from :func:`buffer_alloc`; the handle is dead at once.

    Work queued before ``synchronize`` that uses it keeps its pages until the stream has run.
    Raises :class:`sw.runtime.memory.BufferError` for anything but a live handle (naming a use after free)."""
    current().free(handle)


def buffer_cpu_ptr(cmd: int, handle: int) -> np.ndarray:
    """A 1-D uint8 numpy view of the buffer's ``nbytes`` bytes of device memory (no copy).

    What the host writes there is what the accelerator reads, and the other way round (device
    memory is coherent on every target). Raises ``VTAError`` for a dead ``cmd`` and
    :class:`sw.runtime.memory.BufferError` for a ``handle`` that is not a live buffer."""
    return _queue(cmd).cpu_view(handle)


def buffer_copy(src: Target, src_offset: int, dst: Target, dst_offset: int, nbytes: int, kind_mask: int) -> None:
    """Copy ``nbytes`` bytes from ``src`` at ``src_offset`` to ``dst`` at ``dst_offset`` (offsets in bytes).

    ``kind_mask`` in [0, 3]: bit 1 (value 2) means ``src`` is device memory (a handle or a tensor
    viewing device memory), bit 0 (value 1) means ``dst`` is; a host side is a contiguous numpy
    or DLPack array (``dst`` writable). Raises :class:`sw.runtime.memory.BufferError` when a range leaves
    its buffer or array, or a side is not what ``kind_mask`` says."""
    q = current()
    copy_bytes(q.region, q.dram, src, src_offset, dst, dst_offset, nbytes, kind_mask)


def _barrier(what, cmd, handle, elem_bits, start, extent):
    q = _queue(cmd)
    check_barrier(what, q.region, handle, elem_bits, start, extent, len(q.dram))
    # Device memory is coherent on every target of this project: nothing to flush or invalidate.


def write_barrier(cmd: int, handle: Target, elem_bits: int, start: int, extent: int) -> None:
    """VTA's write barrier: check that ``start``, ``extent`` (in ``elem_bits``-bit elements) lie in ``handle``.

    Device memory is coherent on every target, so there is nothing to flush. Raises
    :class:`sw.runtime.memory.BufferError` when the range leaves the buffer or ``elem_bits`` < 1."""
    _barrier("write_barrier", cmd, handle, elem_bits, start, extent)


def read_barrier(cmd: int, handle: Target, elem_bits: int, start: int, extent: int) -> None:
    """VTA's read barrier: check that ``start``, ``extent`` (in ``elem_bits``-bit elements) lie in ``handle``.

    Device memory is coherent on every target, so there is nothing to invalidate. Raises
    :class:`sw.runtime.memory.BufferError` when the range leaves the buffer or ``elem_bits`` < 1."""
    _barrier("read_barrier", cmd, handle, elem_bits, start, extent)


def set_debug_mode(cmd: int, flag: int) -> None:
    """Set the debug flags of ``cmd``: ``flag`` is a non-negative int, a bit mask of the ``DEBUG_*`` constants.

    ``DEBUG_DUMP_INSN`` (2) prints each stream at ``synchronize`` with the token counts,
    ``DEBUG_DUMP_UOP`` (4) prints each micro-kernel when it is recorded, ``DEBUG_FORCE_SERIAL`` (32)
    runs the modules strictly in order; 8 and 16 (skip barriers) are accepted and change nothing."""
    _queue(cmd).debug = check_int("set_debug_mode", "flag", flag, 0, DEBUG_ALL)


def load_2d(cmd: int, src: Target, src_elem_offset: int, x_size: int, y_size: int, x_stride: int, x_pad_before: int,
            y_pad_before: int, x_pad_after: int, y_pad_after: int, dst_sram_index: int, dst_memory_type: int) -> None:
    """Queue a 2-D load from device memory into an SRAM (a LOAD instruction; nothing runs until ``synchronize``).

    ``src``: a buffer handle or a tensor viewing device memory. Sizes and offsets count elements of
    ``dst_memory_type`` (``MemId.INP`` 2 and ``MemId.WGT`` 1: one BATCH x BLOCK_IN or BLOCK_OUT x
    BLOCK_IN int8 block; ``MemId.ACC`` 3, or VTA's ``MemId.ACC_8BIT`` 5: one BATCH x BLOCK_OUT
    block of the acc SRAM): ``y_size`` rows of ``x_size`` elements from element
    ``src_elem_offset`` of ``src``, ``x_stride`` elements apart, into consecutive SRAM rows from
    ``dst_sram_index``, with ``x_pad_before/after`` and ``y_pad_before/after`` zero elements
    around (``x_size`` = 0 queues a NOP; otherwise ``y_size`` >= 1).
    Every value must fit its instruction field (docs/isa.md) and the SRAM's depth. INP and WGT go
    to the load module, ACC to the compute module. Raises :class:`sw.pipeline.InsnError` for a
    field out of range or a bad memory type, :class:`sw.runtime.memory.BufferError` when the access leaves
    ``src`` or ``src`` is not aligned to the element size; on an error nothing is queued."""
    q = _queue(cmd)
    with q.lock:
        q.load_2d(src, src_elem_offset, x_size, y_size, x_stride, x_pad_before, y_pad_before,
                  x_pad_after, y_pad_after, dst_sram_index, dst_memory_type)


def store_2d(cmd: int, src_sram_index: int, src_memory_type: int, dst: Target, dst_elem_offset: int, x_size: int,
             y_size: int, x_stride: int) -> None:
    """Queue a 2-D store from the OUT SRAM to device memory (a STORE instruction on the store module).

    ``src_memory_type`` must be ``MemId.OUT`` (4). Sizes and offsets count OUT elements (one
    BATCH x BLOCK_OUT int8 block): ``y_size`` rows of ``x_size`` elements from SRAM row
    ``src_sram_index`` to element ``dst_elem_offset`` of ``dst`` (a handle or a tensor viewing
    device memory), rows ``x_stride`` elements apart. Raises :class:`sw.pipeline.InsnError` for a
    field out of range, :class:`sw.runtime.memory.BufferError` when the access leaves ``dst``; on an
    error nothing is queued."""
    q = _queue(cmd)
    with q.lock:
        q.store_2d(src_sram_index, src_memory_type, dst, dst_elem_offset, x_size, y_size, x_stride)


def push_gemm_op(cmd: int, kernel: Callable[[], None], key: object = 0) -> None:
    """Queue a GEMM instruction running the micro-kernel ``kernel`` records.

    ``kernel``: a callable without arguments that records micro-ops with :func:`uop_loop_begin`,
    :func:`uop_push` (mode 0) and :func:`uop_loop_end`; it is called only when (``kernel``,
    ``key``) is not yet cached for this handle (``key``: any hashable value, default 0). A LOAD of
    the micro-ops into the uop SRAM is queued first when they are not resident. Raises
    ``VTAError`` when ``kernel`` is not callable, records nothing, leaves a loop open, records ALU
    micro-ops or more than UOP_DEPTH, or ``key`` is not hashable; :class:`sw.pipeline.InsnError`
    when an index the loops reach leaves its SRAM or a loop field does not fit."""
    q = _queue(cmd)
    with q.lock:
        q.push_op(0, kernel, key)


def push_alu_op(cmd: int, kernel: Callable[[], None], key: object = 0) -> None:
    """Queue an ALU instruction running the micro-kernel ``kernel`` records (micro-ops of mode 1).

    As :func:`push_gemm_op`; the kernel's first micro-op fixes its ALU opcode and immediate
    (an opcode the config does not build, such as MUL without ALU_MUL or POST without POST_UNIT, is an
    ``InsnError``, and so is a POST whose parameter rows ``[imm, imm + 14)`` leave the acc SRAM)."""
    q = _queue(cmd)
    with q.lock:
        q.push_op(1, kernel, key)


def push_depthwise_op(cmd: int, kernel: Callable[[], None], key: object = 0) -> None:
    """Queue a DEPTHWISE instruction (docs/isa.md "DEPTHWISE"; configs with ``DEPTHWISE`` = 1) running the
    micro-kernel ``kernel`` records: GEMM micro-ops (mode 0), each writing its acc row with the window of the
    inp rows read so far dotted, lane by lane, with its wgt row. As :func:`push_gemm_op`; on a config without
    the depthwise mode it raises :class:`sw.pipeline.InsnError` naming ``DEPTHWISE``. An extension of VTA's API."""
    q = _queue(cmd)
    with q.lock:
        q.push_op(2, kernel, key)


def dep_push(cmd: int, from_qid: int, to_qid: int) -> None:
    """Make the last queued instruction of module ``from_qid`` push a token to module ``to_qid``.

    Queue ids: 1 load, 2 compute, 3 store; tokens flow between neighbours only (1<->2, 2<->3).
    When that instruction already pushes that way, a NOP of ``from_qid`` carries the token.
    Raises ``VTAError`` naming the argument for any other pair."""
    q = _queue(cmd)
    with q.lock:
        q.dep_push(from_qid, to_qid)


def dep_pop(cmd: int, from_qid: int, to_qid: int) -> None:
    """Make the next instruction queued on module ``to_qid`` wait for a token from module ``from_qid``.

    Queue ids as in :func:`dep_push`. A deadlock (a pop no push feeds) is found at
    ``synchronize``, before anything runs."""
    q = _queue(cmd)
    with q.lock:
        q.dep_pop(from_qid, to_qid)


def synchronize(cmd: int, wait_cycles: int = 1 << 31) -> dict[str, int]:
    """Run everything queued on ``cmd`` and wait for it; return the run's counters (a dict of ints).

    The stream is closed as VTA's runtime does (final tokens, FINISH) and checked by a token-level
    dry run first: a deadlock raises :class:`sw.pipeline.DeadlockError` naming what each module
    would wait for. ``wait_cycles`` (a non-negative int) bounds the run on the RTL (the golden
    model ignores it): more raises ``RunTimeout``, no progress for the watchdog budget raises
    ``WatchdogError`` saying what each module waits for. The counters are VTA's profiler counters
    (``inp_load_nbytes`` ... ``out_store_nbytes`` in bytes, ``gemm_counter``, ``alu_counter`` in
    micro-ops) on both targets, and on the RTL also ``cycles`` and the hardware's own (named as
    their registers, docs/registers.md). The queue is empty afterwards, also after an error."""
    q = _queue(cmd)
    wait_cycles = check_int("synchronize", "wait_cycles", wait_cycles, 0, MAX_WAIT_CYCLES)
    with q.lock:
        return q.synchronize(wait_cycles)


def runtime_shutdown() -> None:
    """Drop the process-wide runtime (its device memory and kernels); the next call makes a fresh one."""
    session.shutdown()



# the functions of VTA's C API, exported as tvm-ffi globals (docs/architecture.md §5)
API = ("command_handle", "buffer_alloc", "buffer_free", "buffer_copy", "buffer_cpu_ptr", "load_2d", "store_2d",
       "uop_loop_begin", "uop_loop_end", "uop_push", "push_gemm_op", "push_alu_op", "push_depthwise_op", "dep_push",
       "dep_pop", "synchronize", "write_barrier", "read_barrier", "set_debug_mode", "runtime_shutdown")
