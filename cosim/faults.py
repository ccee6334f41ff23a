"""Programs that must fail, for the hardware's error paths (they bypass the runtime's checks).

The instruction words of each stream are ints or field dicts for the ISA encoder.

Each function writes a raw instruction stream into device memory, runs it on the current target and
returns ``{"error": type name, "message": ..., "changed": bytes of device memory that changed}``
instead of raising, so several can run in one simulation. On the golden model the same streams
raise the golden model's errors.
"""

from __future__ import annotations

import numpy as np

from sw import runtime
from sw.isa import MemId, Opcode


def _run_raw(fields_list, wait_cycles=1 << 31, extra=None):
    q = runtime.current()
    isa = q.isa
    raw = isa.words_to_array(f if isinstance(f, int) else isa.encode(**f) for f in fields_list)
    h = q.alloc(max(raw.size, 4096))
    addr = q.memory.get(h).phys
    q.dram[addr:addr + raw.size] = raw
    before = q.dram[:4 << 20].copy()
    out = {"error": None, "message": ""}
    try:
        out["counters"] = q.target.run(addr, len(fields_list), wait_cycles)
    except Exception as err:  # noqa: BLE001 - the error is the result
        out["error"], out["message"] = type(err).__name__, str(err)
    out["changed"] = int(np.count_nonzero(q.dram[:4 << 20] != before))
    q.free(h)
    return out


def _store(addr_elems):
    return dict(opcode=Opcode.STORE, memory_type=MemId.OUT, sram_base=0, dram_base=addr_elems, y_size=1,
                x_size=4, x_stride=4, push_prev=1)


def _finish_after_store():
    return [dict(opcode=Opcode.LOAD, memory_type=MemId.UOP, pop_next=1), dict(opcode=Opcode.FINISH)]


def deadlock():
    """Load waits for compute (g2l) while compute waits for load (l2g): nothing can move."""
    return _run_raw([dict(opcode=Opcode.LOAD, memory_type=MemId.INP, pop_next=1, push_next=1),
                     dict(opcode=Opcode.LOAD, memory_type=MemId.UOP, pop_prev=1, push_prev=1),
                     dict(opcode=Opcode.FINISH)])


def reserved_flag():
    """A LOAD INP with push_prev (reserved) before a store: stops before the store runs."""
    return _run_raw([dict(opcode=Opcode.LOAD, memory_type=MemId.INP, push_prev=1), _store(0x100000 // 16),
                     *_finish_after_store()])


def bad_opcode():
    """Opcode 6 (no such instruction; a raw word, the encoder refuses it) before a store."""
    return _run_raw([6, _store(0x100000 // 16), *_finish_after_store()])


def bad_memory_type():
    """A LOAD of memory type 7 before a store."""
    return _run_raw([dict(opcode=Opcode.LOAD, memory_type=7, x_size=1, y_size=1, x_stride=1),
                     _store(0x100000 // 16), *_finish_after_store()])


def timeout(wait_cycles=50):
    """A legal program given fewer cycles than it needs."""
    loads = [dict(opcode=Opcode.LOAD, memory_type=MemId.ACC, sram_base=0, dram_base=0x1000 // 64, y_size=1,
                  x_size=64, x_stride=64)]
    return _run_raw(loads + [dict(opcode=Opcode.FINISH)], wait_cycles=wait_cycles)


def target_info(x):
    """Which target runs the calls, and a value to check that arguments and results pass unchanged."""
    q = runtime.current()
    return {"target": q.target.name, "config": q.cfg.name, "value": x, "double": [v * 2 for v in x]}


def raises(message):
    raise ValueError(message)
