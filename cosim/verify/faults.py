"""Programs that must fail, for the hardware's error paths (they bypass the runtime's checks), and faults
injected into the RTL's instruction stream, for testing triage.

Each program is a raw instruction stream run by :func:`cosim.verify.programs.run_raw`, which
returns ``{"error": type name, "message": ..., "changed": bytes of device memory that changed}``
instead of raising, so several can run in one simulation. On the golden model the same streams
raise the golden model's errors.
"""

from __future__ import annotations

import numpy as np

from sw import runtime
from sw.isa import AluOp, MemId, Opcode

from .programs import finish_after_store, run_raw, store_insn


def deadlock():
    """Load waits for compute (g2l) while compute waits for load (l2g): nothing can move."""
    return run_raw([dict(opcode=Opcode.LOAD, memory_type=MemId.INP, pop_next=1, push_next=1),
                     dict(opcode=Opcode.LOAD, memory_type=MemId.UOP, pop_prev=1, push_prev=1),
                     dict(opcode=Opcode.FINISH)])


def reserved_flag():
    """A LOAD INP with push_prev (reserved) before a store: stops before the store runs."""
    return run_raw([dict(opcode=Opcode.LOAD, memory_type=MemId.INP, push_prev=1), store_insn(0x100000 // 16),
                     *finish_after_store()])


def bad_opcode():
    """Opcode 6 (no such instruction; a raw word, the encoder refuses it) before a store."""
    return run_raw([6, store_insn(0x100000 // 16), *finish_after_store()])


def bad_memory_type():
    """A LOAD of memory type 7 before a store."""
    return run_raw([dict(opcode=Opcode.LOAD, memory_type=7, x_size=1, y_size=1, x_stride=1),
                     store_insn(0x100000 // 16), *finish_after_store()])


def timeout(wait_cycles=50):
    """A legal program given fewer cycles than it needs."""
    loads = [dict(opcode=Opcode.LOAD, memory_type=MemId.ACC, sram_base=0, dram_base=0x1000 // 64, y_size=1,
                  x_size=64, x_stride=64)]
    return run_raw(loads + [dict(opcode=Opcode.FINISH)], wait_cycles=wait_cycles)


def target_info(x):
    """Which target runs the calls, and a value to check that arguments and results pass unchanged."""
    q = runtime.current()
    return {"target": q.target.name, "config": q.cfg.name, "value": x, "double": [v * 2 for v in x]}


def raises(message):
    raise ValueError(message)


# ---------------------------------------------------------------------- injected faults
class FetchFault:
    """A device whose accelerator reads a mutated instruction stream: a decoder fault injected in the
    fetch path, for testing triage (the RTL really executes the mutated instructions).

    ``run`` rewrites the matching instruction words in device memory, runs the device and puts the
    original words back; everything else is the wrapped device's.
    """

    def __init__(self, device, name: str):
        if name not in FAULTS:
            raise ValueError(f"fault = {name!r}; allowed: {', '.join(sorted(FAULTS))}")
        self.device, self.fault = device, name
        self.name, self.cfg = device.name, device.cfg

    @property
    def dram(self):
        return self.device.dram

    def __getattr__(self, attr):
        return getattr(self.device, attr)

    def run(self, insn_addr, insn_count, wait_cycles=None):
        from sw.isa import isa_for

        isa = isa_for(self.cfg)
        end = insn_addr + insn_count * isa.insn_bytes
        original = self.dram[insn_addr:end].copy()
        try:
            insns = isa.decode_stream(original)
        except ValueError:
            insns = []          # a stream the decoder refuses reaches the device unchanged
        mutate = FAULTS[self.fault]
        changed = False
        for i, insn in enumerate(insns):
            f = mutate(dict(insn.f), insn.kind)
            if f is not None:
                word = isa.formats[insn.kind].encode(f)
                self.dram[insn_addr + i * isa.insn_bytes:insn_addr + (i + 1) * isa.insn_bytes] = \
                    np.frombuffer(isa.to_bytes(word), dtype=np.uint8)
                changed = True
        try:
            return self.device.run(insn_addr, insn_count, wait_cycles)
        finally:
            if changed:
                self.dram[insn_addr:end] = original


def _max_imm_as_min(f, kind):
    """ALU MAX with an immediate decoded as MIN."""
    if kind == "alu" and f["opcode"] == Opcode.ALU and f["alu_opcode"] == AluOp.MAX and f["use_imm"]:
        f["alu_opcode"] = int(AluOp.MIN)
        return f
    return None


FAULTS = {"alu-max-imm-as-min": _max_imm_as_min}


def with_fault(device, name: str | None):
    """``device`` with the named fault injected (``device`` itself for None)."""
    return FetchFault(device, name) if name else device
