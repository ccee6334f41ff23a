"""Instruction fetch (:class:`hw.fetch.Fetch`): every instruction to exactly one queue, bad ones stopped.

Parameterization: ``Fetch(small config, queue_depth=2, buffer_beats=4)``: a 64-bit bus (two beats per instruction,
the assembly path with a half-instruction register), a config without ALU MUL and DEPTHWISE (so MUL is one of the
bad ALU opcodes and 5 a bad opcode), 2-entry command queues that fill (their consumers' ready is free) and one-beat
DMA commands.

Environment (assumed): the DMA server delivers data only for beats it was asked for (in order; Fetch is always
ready). ``start``, ``insn_count``, ``insn_addr``, ``dma.cmd.ready``, the data words and the three queues' ready are
free in every cycle, so a start may come while a run (or the drain after an error) is going.

The harness's reference assembles the instruction words from the accepted DMA beats (low word first), counts them
from the run's start, and checks each one by the rules of Fetch's docstring (written out here, with
:mod:`hw.layouts`'s field positions): its error code, or its queue. Method: BMC. An instruction leaves its queue
7 cycles after its first beat is requested and the next follows two beats later, so 14 cycles route four
instructions into the 2-entry queues (``fetch-routing``, whose reference FIFO of expected instructions makes each
further step cost minutes) and 20 cycles route two and stop on a bad third with the queues full
(``fetch-errors``); the deepest mutant's counterexample needs 11.
"""

from __future__ import annotations

import dataclasses

from amaranth.hdl import Assume, Cat, Mux, Signal
from amaranth.lib import data

from sw.registers import ErrorCode

from ..fetch import Fetch
from ..layouts import insn_layouts
from .common import Check, Mutant, drive_inputs, internal, past

__all__ = ["CHECKS"]

INS = 128
QUEUES = ("load", "compute", "store")
LOAD, STORE, GEMM, FINISH, ALU, DEPTHWISE = 0, 1, 2, 3, 4, 5       # opcodes (sw.isa.Opcode)
UOP, WGT, INP, ACC, OUT, ACC_8BIT = range(6)        # memory types (sw.isa.MemId)


def _config(mul=False, depthwise=False):
    from sw.config import load_config
    cfg = load_config("small")
    return dataclasses.replace(cfg, ALU_MUL=int(mul or cfg.ALU_MUL), DEPTHWISE=int(depthwise or cfg.DEPTHWISE))


def reference(cfg, insn):
    """(error code, destination one-hot (load, compute, store)) of a 128-bit instruction, by Fetch's docstring."""
    lay = insn_layouts(cfg)
    mem, alu = data.View(lay["mem"], insn), data.View(lay["alu"], insn)
    op, mt = mem.opcode, mem.memory_type
    is_load, is_store = op == LOAD, op == STORE
    to_load = is_load & ((mt == INP) | (mt == WGT))
    bad_opcode = (op > ALU) & ~((op == DEPTHWISE) & bool(cfg.DEPTHWISE))
    bad_mem = (is_load | is_store) & ((mt > ACC_8BIT) | (is_load & (mt == OUT))
                                      | (is_store & (mem.x_size != 0) & (mt != OUT)))
    bad_dep = (to_load & (mem.pop_prev | mem.push_prev)) | (is_store & (mem.pop_next | mem.push_next))
    # MIN MAX ADD SHR, MUL with ALU_MUL, POST with POST_UNIT
    bad_alu = (op == ALU) & ((alu.alu_opcode > 5) | ((alu.alu_opcode == 4) & (not cfg.ALU_MUL))
                             | ((alu.alu_opcode == 5) & (not cfg.POST_UNIT)))
    code = Mux(bad_opcode, ErrorCode.BAD_OPCODE, Mux(bad_mem, ErrorCode.BAD_MEMORY_TYPE,
               Mux(bad_dep, ErrorCode.RESERVED_DEP_FLAG, Mux(bad_alu, ErrorCode.BAD_ALU_OPCODE, 0))))
    return code, Cat(to_load, ~is_store & ~to_load, is_store)


def _store_to_compute_too(f, dm):
    # mutant: the compute queue also takes the STOREs (its write enable ORs in the store destination)
    q, dq = dm.submodules.compute_queue, dm.submodules.decode_queue
    to_compute, to_store = dq.r_data[INS + 4 + 2], dq.r_data[INS + 4 + 3]
    dm.d.comb += q.w_en.eq(dq.r_rdy & ~internal(dm, "discard") & (to_compute | to_store) & q.w_rdy)


def _error_cleared_when_idle(f, dm):
    # mutant: the error code is dropped once fetch is idle, instead of being kept until the next start
    with dm.If(f.idle):
        dm.d.sync += f.error.eq(0)


def build(h, m, prop, mutant):
    cfg = _config()
    f = Fetch(_config(mul=mutant == "mul-config", depthwise=mutant == "depthwise-config"), queue_depth=2,
              buffer_beats=4)
    dm = h.block(m, f, "fetch", {"store-to-compute-too": _store_to_compute_too,
                                 "error-cleared-when-idle": _error_cleared_when_idle}.get(mutant))
    drive_inputs(h, m, f, "f")
    go = internal(dm, "go")                 # the cycle a run starts (a start held until idle, then taken)

    # the DMA server: data only for beats requested and not yet delivered
    cmd, dat = f.dma.cmd, f.dma.data
    owed = Signal(8, name="beats_owed")
    m.d.sync += owed.eq(owed + Mux(cmd.valid & cmd.ready, cmd.payload.beats, 0) - (dat.valid & dat.ready))
    m.d.comb += Assume(~dat.valid | (owed != 0))

    # the reference: assemble the run's instructions from the beats, check each
    low, half = Signal(64, name="ref_low"), Signal(name="ref_half")
    index = Signal(8, name="ref_index")                 # instructions assembled in this run
    bad_seen, bad_code = Signal(name="ref_bad_seen"), Signal(4, name="ref_bad_code")
    bad_index = Signal(8, name="ref_bad_index")
    insn = Signal(INS, name="ref_insn")
    beat = dat.valid & dat.ready
    done = Signal(name="ref_assembled")
    m.d.comb += [insn.eq(Cat(low, dat.payload.data)), done.eq(beat & half)]
    code, dest = reference(cfg, insn)
    with m.If(beat):
        m.d.sync += [low.eq(dat.payload.data), half.eq(~half)]
    with m.If(done):
        m.d.sync += index.eq(index + 1)
        with m.If(~bad_seen & (code != 0)):
            m.d.sync += [bad_seen.eq(1), bad_code.eq(code), bad_index.eq(index)]
    with m.If(go):
        m.d.sync += [half.eq(0), index.eq(0), bad_seen.eq(0)]

    # the instructions routed: what enters each command queue (the queues' write side, inside Fetch)
    qs = [dm.submodules[f"{name}_queue"] for name in QUEUES]
    pushes = Cat(q.w_en & q.w_rdy for q in qs)

    if prop == "fetch-routing":
        # each good instruction, in order, into exactly the one queue of its module; nothing from a bad one or
        # after it (the expected ones wait in a reference FIFO: assembled, good, before the first bad one)
        n = 6
        ents = [Signal(INS + 3, name=f"ref_route{i}") for i in range(n)]
        count = Signal(range(n + 1), name="ref_route_count")
        push = done & ~bad_seen & (code == 0)
        pop = pushes != 0
        with m.If(pop):
            m.d.sync += [ents[i].eq(ents[i + 1]) for i in range(n - 1)]
        slot = Signal(range(n + 1), name="ref_route_slot")
        m.d.comb += slot.eq(count - pop)
        with m.If(push):
            for i in range(n):
                with m.If(slot == i):
                    m.d.sync += ents[i].eq(Cat(insn, dest))
        m.d.sync += count.eq(count + push - pop)
        with m.If(go):
            m.d.sync += count.eq(0)
        head_insn, head_dest = ents[0][:INS], ents[0][INS:]
        h.check(m, prop, count < n)
        with m.If(pop):
            h.check(m, prop, (count != 0) & (pushes == head_dest) & (qs[0].w_data == head_insn))
        # what leaves a queue is one of its module's instructions
        for q, name in zip((f.load_queue, f.compute_queue, f.store_queue), QUEUES):
            with m.If(q.valid):
                h.check(m, prop, reference(cfg, q.payload)[1] == Cat(name == "load", name == "compute",
                                                                    name == "store"))

    elif prop == "fetch-errors":
        # a non-zero error is the code of the run's first bad instruction, with every instruction before it
        # routed (insn_fetched its index); it stays until a start (or the start of the next run, when a start came
        # while this one was going: Fetch holds it until idle); fetch stops asking for instructions;
        # and it never goes idle with a bad instruction unreported
        with m.If(f.error != 0):
            h.check(m, prop, bad_seen & (f.error == bad_code) & (f.insn_fetched == bad_index))
        with m.If(h.started & (past(m, f.error) != 0) & ~past(m, f.start | go)):
            h.check(m, prop, f.error == past(m, f.error))
        with m.If((f.error != 0) & cmd.valid):
            h.check(m, prop, past(m, cmd.valid & ~cmd.ready))
        with m.If(f.idle & bad_seen):
            h.check(m, prop, f.error == bad_code)


CHECKS = [
    Check("fetch-routing", "fetch", "each good instruction, in order, into exactly the one command queue of its "
          "module (STORE; LOAD INP/WGT; the rest), nothing from a bad one or after it; every instruction leaving a "
          "queue is that module's", "bmc", 14, 12,
          (Mutant("store-to-compute-too", "the compute queue also takes the STOREs", 10),
           Mutant("mul-config", "the decoder built for a config with ALU MUL (MUL routed, not rejected)", 10),
           Mutant("depthwise-config", "the decoder built for a config with DEPTHWISE (opcode 5 routed, not "
                  "rejected)", 10)),
          why_depth="see the module docstring", build=build),
    Check("fetch-errors", "fetch", "a bad instruction (opcode, memory type, reserved dependency flag, ALU opcode, "
          "in that order) stops the run with its code, insn_fetched its index; the code stays until the next start; "
          "no new request after it; never idle with it unreported", "bmc", 20, 12,
          (Mutant("error-cleared-when-idle", "the error code dropped once fetch is idle", 12),
           Mutant("mul-config", "the decoder built for a config with ALU MUL (MUL routed, not rejected)", 12),
           Mutant("depthwise-config", "the decoder built for a config with DEPTHWISE (opcode 5 routed, not "
                  "rejected)", 12)),
          why_depth="see the module docstring", build=build),
]
