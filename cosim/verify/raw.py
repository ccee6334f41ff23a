"""Raw device programs: instruction streams written straight into device memory, past the runtime's checks.

:func:`run_raw` makes the accelerator execute a stream the runtime would never emit (a bad opcode, a reserved flag,
an ALU with no iterations, token traffic on every queue): the words are ints or field dicts for the ISA encoder; the
result is ``{"error": type name or None, "message", "counters", "changed": bytes of device memory that changed}``,
errors included, so several programs can run in one simulator launch. The NOP instructions and the store that hands
compute a token are the building blocks the directed programs (:mod:`cosim.verify.directed`) and the fault programs
(:mod:`cosim.verify.faults`) share.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sw import runtime
from sw.isa import MEMOP_SIZE_BITS, MemId, Opcode

from .pages import CHECK_BYTES

__all__ = ["run_raw", "store_insn", "finish_after_store", "X_SIZE_MAX", "NOP_LOAD", "NOP_COMPUTE", "NOP_STORE",
           "OUTSIDE"]


X_SIZE_MAX = (1 << MEMOP_SIZE_BITS) - 1      # the most elements one row of a LOAD or STORE moves

# an instruction that does nothing in each module (x_size = 0), to carry dependency flags
NOP_LOAD = dict(opcode=Opcode.LOAD, memory_type=MemId.INP)
NOP_COMPUTE = dict(opcode=Opcode.LOAD, memory_type=MemId.UOP)
NOP_STORE = dict(opcode=Opcode.STORE, memory_type=MemId.OUT)

OUTSIDE = 1 << 31        # a bus address above any device memory: the DPI DRAM reads zeros there and drops writes


def run_raw(fields_list: Sequence[int | dict], wait_cycles: int = 1 << 31, at: int | None = None,
            count: int | None = None) -> dict:
    """Write the stream into a fresh buffer (or at byte address ``at`` of device memory, outside any buffer: the
    caller saves what is there), run it on the current target (``count`` instructions: all of them by default), and
    report what happened."""
    q = runtime.current()
    isa = q.isa
    raw = isa.words_to_array(f if isinstance(f, int) else isa.encode(**f) for f in fields_list)
    h = None
    if at is None:
        h = q.alloc(max(raw.size, 4096))
        addr = q.memory.get(h).phys
    else:
        addr = at
    q.dram[addr:addr + raw.size] = raw
    before = q.dram[:CHECK_BYTES].copy()
    out: dict[str, object] = {"error": None, "message": ""}
    try:
        out["counters"] = q.target.run(addr, len(fields_list) if count is None else count, wait_cycles)
    except Exception as err:  # noqa: BLE001 - the error is the result
        out["error"], out["message"] = type(err).__name__, str(err)
    out["changed"] = int(np.count_nonzero(q.dram[:CHECK_BYTES] != before))
    if h is not None:
        q.free(h)
    return out


def store_insn(addr_elems: int) -> dict:
    """A 4-element STORE of OUT row 0 to element address ``addr_elems`` that hands a token back to compute."""
    return dict(opcode=Opcode.STORE, memory_type=MemId.OUT, sram_base=0, dram_base=addr_elems, y_size=1,
                x_size=4, x_stride=4, push_prev=1)


def finish_after_store() -> list:
    """Compute takes the store's token, then FINISH."""
    return [dict(opcode=Opcode.LOAD, memory_type=MemId.UOP, pop_next=1), dict(opcode=Opcode.FINISH)]
