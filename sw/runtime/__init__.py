"""The VTA runtime API (docs/architecture.md §5) on any target, also exported as tvm-ffi functions.

The module-level functions are VTA's C API in Python (:mod:`sw.runtime.api`), acting on command queues
(:mod:`sw.runtime.queue`) over a target (:mod:`sw.targets`: the golden model, a Zynq board; ``cosim`` provides
the RTL). Importing this package registers each API function as a tvm-ffi global function under its name and
with a ``vta.`` prefix (:mod:`sw.runtime.ffi`). :mod:`sw.runtime.runners` runs a whole function on a target
chosen by name.
"""

from __future__ import annotations

from sw.runtime import api as _api
from sw.runtime.api import (
    API,
    buffer_alloc,
    buffer_copy,
    buffer_cpu_ptr,
    buffer_free,
    command_handle,
    current,
    current_config,
    dep_pop,
    dep_push,
    load_2d,
    push_alu_op,
    push_depthwise_op,
    push_gemm_op,
    read_barrier,
    runtime_shutdown,
    set_current,
    set_debug_mode,
    store_2d,
    synchronize,
    uop_loop_begin,
    uop_loop_end,
    uop_push,
    use_target,
    write_barrier,
)
from sw.runtime.ffi import register
from sw.runtime.queue import (
    DEBUG_ALL,
    DEBUG_DUMP_INSN,
    DEBUG_DUMP_UOP,
    DEBUG_FORCE_SERIAL,
    DEBUG_SKIP_READ_BARRIER,
    DEBUG_SKIP_WRITE_BARRIER,
    MAX_WAIT_CYCLES,
    QID_COMPUTE,
    QID_LOAD,
    QID_STORE,
    CommandQueue,
    RuntimeError_,
)
from sw.runtime.uopkernel import UopKernel
from sw.targets import make_target

__all__ = [
    "CommandQueue", "UopKernel", "RuntimeError_", "current", "current_config", "set_current", "use_target", "make_target",
    "command_handle", "buffer_alloc", "buffer_free", "buffer_copy", "buffer_cpu_ptr", "load_2d", "store_2d",
    "uop_loop_begin", "uop_loop_end", "uop_push", "push_gemm_op", "push_alu_op", "push_depthwise_op", "dep_push", "dep_pop",
    "synchronize", "write_barrier", "read_barrier", "set_debug_mode", "runtime_shutdown",
    "DEBUG_DUMP_INSN", "DEBUG_DUMP_UOP", "DEBUG_SKIP_READ_BARRIER", "DEBUG_SKIP_WRITE_BARRIER",
    "DEBUG_FORCE_SERIAL", "DEBUG_ALL", "MAX_WAIT_CYCLES", "QID_LOAD", "QID_COMPUTE", "QID_STORE", "API",
]

register(_api, API)
