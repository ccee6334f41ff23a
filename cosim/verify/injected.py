"""Faults injected into runs that would otherwise pass, for testing triage and the error paths of random programs.

:class:`FetchFault` wraps a device so the accelerator reads a mutated instruction stream (a decoder fault in the
fetch path, :data:`FAULTS`); :data:`AXI_FAULTS` make the memory answer an AXI error response on one beat of a random
program (:func:`axi_error_run`), after which :func:`works_after_errors` checks the accelerator still computes.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, cast

import numpy as np

from sw import runtime
from sw.isa import AluOp, Opcode
from sw.targets import TargetDevice

if TYPE_CHECKING:
    from cosim.sim.rtl import RtlDevice

__all__ = ["FetchFault", "FAULTS", "AXI_FAULTS", "axi_fault_for", "axi_error_run", "works_after_errors", "with_fault"]


class FetchFault:
    """A device whose accelerator reads a mutated instruction stream: a decoder fault injected in the
    fetch path, for testing triage (the RTL really executes the mutated instructions).

    ``run`` rewrites the matching instruction words in device memory, runs the device and puts the
    original words back; everything else is the wrapped device's.
    """

    def __init__(self, device: TargetDevice, name: str):
        if name not in FAULTS:
            raise ValueError(f"fault = {name!r}; allowed: {', '.join(sorted(FAULTS))}")
        self.device, self.fault = device, name
        self.name, self.cfg = device.name, device.cfg

    @property
    def dram(self) -> np.ndarray:
        return self.device.dram

    def __getattr__(self, attr):
        return getattr(self.device, attr)

    def run(self, insn_addr: int, insn_count: int, wait_cycles: int | None = None) -> dict:
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


# AXI error responses for the fuzzer: each random program first runs with the memory answering an error on one beat
# (the channel, the beat and the response drawn from the seed), then runs again cleanly and is compared as usual
AXI_FAULTS = {"axi-read": ("read",), "axi-write": ("write",), "axi-errors": ("read", "write")}


def axi_fault_for(name: str, seed: int, mem: str = "dpi") -> tuple:
    """(channel, beat, response) of fault ``name`` for the program of ``seed``: a read beat among the first eight
    (the instruction fetch or the first loads), or the first write beat (every random program ends with a store);
    SLVERR or DECERR (SLVERR only with cocotbext-axi's AxiRam)."""
    rng = random.Random(seed)
    channel = rng.choice(AXI_FAULTS[name])
    beat = rng.randrange(8) if channel == "read" else 0
    return channel, beat, "SLVERR" if mem == "cocotbext" else rng.choice(("SLVERR", "DECERR"))


def axi_error_run(name: str, seed: int, n_ops: int = 24, bias: dict[str, float] | None = None) -> dict:
    """On the RTL: random program ``seed`` with the AXI error of :func:`axi_fault_for` injected. ``ok`` says whether
    the run stopped with an :class:`~cosim.sim.rtl.AxiResponseError` naming the injected channel and response; device
    memory is put back afterwards."""
    from sw.testing import fuzz

    from .pages import CHECK_BYTES

    device = cast("RtlDevice", runtime.current().target)
    channel, beat, response = axi_fault_for(name, seed, getattr(device, "mem", "dpi"))
    before = device.dram[:CHECK_BYTES].copy()
    device.inject_axi_error(channel, beat, response)
    try:
        fuzz.random_program(seed, n_ops, bias=bias)
        got, ok = "finished without an error", False
    except Exception as err:  # noqa: BLE001 - the error is the result
        got = f"raised {type(err).__name__}: {str(err)[:500]}"
        ok = (type(err).__name__ == "AxiResponseError"
              and (getattr(err, "channel", None), getattr(err, "response", None)) == (channel, response))
    device.dram[:CHECK_BYTES] = before
    return {"injected": f"{response} on {channel} beat {beat}", "got": got, "ok": ok}


def works_after_errors() -> str:
    """'' when a vector addition (which reads no state of earlier programs) is right, else why not."""
    from sw.testing import vta_tests as programs
    try:
        r = programs.vector_add("python")
    except Exception as err:  # noqa: BLE001 - the error is the result
        return f"after the AXI errors, a vector addition raised {type(err).__name__}: {err}"
    return "" if np.array_equal(r["result"], r["expected"]) else "after the AXI errors, a vector addition was wrong"


def with_fault(device: TargetDevice, name: str | None) -> TargetDevice:
    """``device`` with the named fault injected (``device`` itself for None)."""
    return FetchFault(device, name) if name else device
