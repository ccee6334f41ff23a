"""Programs that look at state a freshly started accelerator must not have (for tests of cosim.sim.server).

Each is a module-level function that runs on any target (golden model or RTL) and returns plain data.
"""

from __future__ import annotations

import os
import signal

import numpy as np

from sw import runtime as rt
from sw.isa import MemId

from .pages import page_digests

QCOMPUTE, QSTORE = 2, 3


def leftovers(rows: int = 4) -> dict:
    """A GEMM without reset over SRAM rows this call never loaded (acc 0..rows-1 += inp 0 x wgt 0..rows-1),
    the out rows it writes stored to DRAM, and digests of the first 4 MiB of device memory per 64 KiB.

    On a fresh accelerator every SRAM row and every byte of device memory outside this call's buffers is zero.
    """
    q = rt.current()
    cfg, cmd = q.cfg, q.handle
    dst = rt.buffer_alloc(rows * cfg.OUT_ELEM_BYTES)

    def kernel():
        rt.uop_loop_begin(rows, 1, 0, 1)
        rt.uop_push(0, 0, 0, 0, 0, 0, 0, 0)
        rt.uop_loop_end()
    rt.push_gemm_op(cmd, kernel, 0)
    rt.dep_push(cmd, QCOMPUTE, QSTORE)
    rt.dep_pop(cmd, QCOMPUTE, QSTORE)
    rt.store_2d(cmd, 0, int(MemId.OUT), dst, 0, rows, 1, rows)
    rt.synchronize(cmd, 1 << 31)
    out = np.from_dlpack(rt.buffer_cpu_ptr(cmd, dst)).copy()
    rt.buffer_free(dst)
    return {"out": out, "pages": page_digests(q.dram, page=1 << 16)}


def die(how: str = "kill") -> None:
    """End the simulation process abruptly: ``kill`` (SIGKILL) or ``exit`` (exit code 3 without cleanup)."""
    if how == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    os._exit(3)


def server_pid() -> int:
    """The process the call runs in (a child of the simulator server)."""
    return os.getppid()


def kill_server() -> None:
    """Kill the simulator server this call was forked from (the call itself ends normally)."""
    os.kill(os.getppid(), signal.SIGKILL)
