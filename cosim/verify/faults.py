"""Programs that must fail, for the hardware's error paths (they bypass the runtime's checks), and two calls for
testing the simulator's plumbing (:func:`target_info`, :func:`raises`).

Each program is a raw instruction stream run by :func:`cosim.verify.raw.run_raw`, which
returns ``{"error": type name, "message": ..., "changed": bytes of device memory that changed}``
instead of raising, so several can run in one simulation. On the golden model the same streams
raise the golden model's errors. Faults injected into a run that would otherwise pass are in
:mod:`cosim.verify.injected`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn, cast

from sw import runtime
from sw.isa import MemId, Opcode

from .raw import finish_after_store, run_raw, store_insn

if TYPE_CHECKING:
    from cosim.sim.rtl import RtlDevice

__all__ = ["deadlock", "reserved_flag", "bad_opcode", "bad_memory_type", "timeout", "axi_error", "target_info",
           "raises"]


def deadlock() -> dict:
    """Load waits for compute (g2l) while compute waits for load (l2g): nothing can move."""
    return run_raw([dict(opcode=Opcode.LOAD, memory_type=MemId.INP, pop_next=1, push_next=1),
                     dict(opcode=Opcode.LOAD, memory_type=MemId.UOP, pop_prev=1, push_prev=1),
                     dict(opcode=Opcode.FINISH)])


def reserved_flag() -> dict:
    """A LOAD INP with push_prev (reserved) before a store: stops before the store runs."""
    return run_raw([dict(opcode=Opcode.LOAD, memory_type=MemId.INP, push_prev=1), store_insn(0x100000 // 16),
                     *finish_after_store()])


def bad_opcode() -> dict:
    """Opcode 6 (no such instruction; a raw word, the encoder refuses it) before a store."""
    return run_raw([6, store_insn(0x100000 // 16), *finish_after_store()])


def bad_memory_type() -> dict:
    """A LOAD of memory type 7 before a store."""
    return run_raw([dict(opcode=Opcode.LOAD, memory_type=7, x_size=1, y_size=1, x_stride=1),
                     store_insn(0x100000 // 16), *finish_after_store()])


def timeout(wait_cycles: int = 50) -> dict:
    """A legal program given fewer cycles than it needs."""
    loads = [dict(opcode=Opcode.LOAD, memory_type=MemId.ACC, sram_base=0, dram_base=0x1000 // 64, y_size=1,
                  x_size=64, x_stride=64)]
    return run_raw(loads + [dict(opcode=Opcode.FINISH)], wait_cycles=wait_cycles)


def axi_error(channel: str, beat: int, response: str = "SLVERR") -> dict:
    """On the RTL: a LOAD INP of 8 elements ("read") or a STORE of 4 OUT elements ("write") into a buffer of 0xAA,
    with the memory answering ``response`` on ``beat`` of that channel (:meth:`cosim.sim.rtl.RtlDevice.inject_axi_error`;
    read beats count the instruction fetch too). The result of :func:`run_raw`, the instruction index of the
    transfer, and the buffer's first 64 bytes after the run."""
    q = runtime.current()
    cfg = q.cfg
    h = q.alloc(4096)
    base = q.memory.get(h).phys
    q.dram[base:base + 4096] = 0xAA
    if channel == "read":
        eb = cfg.INP_ELEM_BYTES
        insns = [dict(opcode=Opcode.LOAD, memory_type=MemId.INP, sram_base=0, dram_base=base // eb, y_size=1,
                      x_size=8, x_stride=8, push_next=1), dict(opcode=Opcode.FINISH, pop_prev=1)]
    else:
        insns = [store_insn(base // cfg.OUT_ELEM_BYTES), *finish_after_store()]
    cast("RtlDevice", q.target).inject_axi_error(channel, beat, response)
    out = run_raw(insns)
    out["buffer"] = q.dram[base:base + 64].copy()
    out["base"] = base
    q.free(h)
    return out


def target_info(x: Sequence[int]) -> dict:
    """Which target runs the calls, and a value to check that arguments and results pass unchanged."""
    q = runtime.current()
    return {"target": q.target.name, "config": q.cfg.name, "value": x, "double": [v * 2 for v in x]}


def raises(message: str) -> NoReturn:
    raise ValueError(message)
