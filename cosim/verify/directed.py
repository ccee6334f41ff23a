"""The directed programs of ``make coverage``: raw streams (:func:`cosim.verify.raw.run_raw`) that reach what the
regression does not: the register and field sweeps, token traffic, device memory at the top of the bus, and the bits
only extreme values reach (huge transfers, the index and loop sweeps, saturated token queues, held pushes, full
command queues). Each returns the result of :func:`~cosim.verify.raw.run_raw` (or a list or dict of them);
:mod:`cosim.verify.directed_suite` lists them and checks what they must return.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

import numpy as np

from sw import runtime
from sw.config import Config
from sw.isa import POST_PARAM_ROWS, AluOp, MemId, Opcode
from sw.targets.launch import window_alignment

from .raw import NOP_COMPUTE, NOP_LOAD, NOP_STORE, OUTSIDE, X_SIZE_MAX, finish_after_store, run_raw

if TYPE_CHECKING:
    from cosim.sim.rtl import RtlDevice

__all__ = ["register_sweep", "address_sweep", "high_window", "top_fetch", "field_sweep", "empty_alu", "token_traffic",
           "token_fill", "queue_fill", "held_pushes", "token_saturate", "huge_transfers", "index_sweep", "loop_sweep",
           "FETCH_REFUSALS", "refusals_of", "fetch_refusals", "fetch_huge", "depthwise_window", "compute_reference"]


def register_sweep() -> dict:
    """On the RTL: read every register offset of the AXI4-Lite window up to one past the map (host registers
    after writing them, read-only ones after writing to them, and an unmapped offset), then check that
    writes to read-only registers changed nothing. Returns {offset: (first read, second read)}."""
    from cocotb.task import resume

    from hw import control

    dev = cast("RtlDevice", runtime.current().target)
    read, write = resume(dev.read_reg), resume(dev.write_reg)
    offsets = sorted(r.offset for r in control.REGISTER_MAP)
    host = {r.offset for r in control.REGISTER_MAP if r.kind == "host"}
    writable = {r.offset for r in control.REGISTER_MAP if r.access == "RW"}
    out: dict = {}
    for off in offsets + [offsets[-1] + 4]:
        if off in writable and off != 0:                      # host registers, cycles (0: control would launch)
            write(off, 0x1000 + off)
        first = read(off)
        if off not in writable:                               # read-only or unmapped: the write is ignored
            write(off, 0xFFFFFFFF)
        out[off] = (first, read(off))
    # every bit of every writable register (host registers, cycles) set and cleared again
    out["ones"] = {}
    for off in sorted(writable - {0}):
        write(off, 0xFFFFFFFF)
        out["ones"][off] = read(off)
        write(off, 0)
    for off in host:
        write(off, 0)
    # the last word of the AXI4-Lite window: every address bit above the map's set (unmapped: ignored, reads 0)
    far = (1 << 16) - 4
    write(far, 0xFFFFFFFF)
    out["far"] = read(far)
    return out


def address_sweep() -> dict:
    """On the RTL (toggle coverage): each memory type moved as one transfer of a whole SRAM (UOP, INP, WGT, ACC and
    ACC_8BIT loads, an OUT store) at the top of device memory, so every DMA address bit below the memory's size and
    every burst-count bit a transfer of that size can set goes to 1 and back. The store writes outside any buffer (the
    AXI checker's buffer rule is off for this run); what lands there is not checked."""
    from sw.pipeline import elem_bytes

    from ..sim import axi_monitor

    q = runtime.current()
    cfg = q.cfg
    top = len(q.dram)

    def whole(mem, depth, **flags):
        eb = elem_bytes(cfg, mem)
        n = min(depth, X_SIZE_MAX)
        return dict(opcode=Opcode.STORE if mem == MemId.OUT else Opcode.LOAD, memory_type=mem, sram_base=0,
                    dram_base=(top - n * eb) // eb, y_size=1, x_size=n, x_stride=n, **flags)
    insns = [whole(MemId.INP, cfg.INP_DEPTH), whole(MemId.WGT, cfg.WGT_DEPTH, push_next=1),
             whole(MemId.UOP, cfg.UOP_DEPTH), whole(MemId.ACC, cfg.ACC_DEPTH), whole(MemId.ACC_8BIT, cfg.ACC_DEPTH),
             whole(MemId.OUT, cfg.OUT_DEPTH, push_prev=1),
             dict(opcode=Opcode.LOAD, memory_type=MemId.UOP, pop_next=1), dict(opcode=Opcode.FINISH, pop_prev=1)]
    with axi_monitor.raw_image():
        return run_raw(insns)


def high_window() -> dict:
    """On the RTL (toggle coverage, and the board case of device memory high in the bus address map): device memory
    put at the highest window the 32-bit bus has for it (0xFC000000 for 64 MiB; :meth:`cosim.sim.rtl.RtlDevice.set_window`),
    then a vector addition through the runtime, the address sweep (every DMA address bit at 1) and a SLVERR on the
    store's write beat (the latched error address); device memory back at 0 after. Returns the three results and
    the window."""
    from sw.testing import vta_tests as programs

    from .faults import axi_error

    dev = cast("RtlDevice", runtime.current().target)
    base = (1 << 32) - window_alignment(len(dev.dram))
    dev.set_window(base)
    try:
        return {"window": base, "vector_add": programs.vector_add("python", seed=1), "sweep": address_sweep(),
                "axi_error": axi_error("write", 0, "SLVERR"), "top_fetch": top_fetch()}
    finally:
        dev.set_window(0)


def top_fetch(n: int = 64) -> dict:
    """``n`` instructions fetched from the very top of device memory (NOP stores of each module, then FINISH): every
    fetch address bit above the instruction size goes to 1. What was there is put back."""
    q = runtime.current()
    at = len(q.dram) - n * q.isa.insn_bytes
    saved = q.dram[at:].copy()
    nop = [NOP_LOAD, NOP_COMPUTE, NOP_STORE]
    try:
        return run_raw([nop[i % 3] for i in range(n - 1)] + [dict(opcode=Opcode.FINISH)], at=at)
    finally:
        q.dram[at:] = saved


def field_sweep() -> dict:
    """Instructions that do nothing but carry every field at its largest value through fetch, the command queues
    and each module's decoder (toggle coverage): NOP loads and stores (x_size = 0) of each module, a GEMM and an ALU
    with no iterations (iter_out = 0), each followed by the same instruction with its fields at zero; then FINISH.
    The launch sets every bit of the five base-address registers (a NOP moves no data, so the all-ones base is
    latched by each DMA module and never used); the next launch clears them. Nothing may change and no error may
    be raised."""
    cfg = runtime.current().cfg
    mem = dict(sram_base=0xFFFF, dram_base=0xFFFFFFFF, y_size=0xFFFF, x_size=0, x_stride=0xFFFF, y_pad_0=15,
               y_pad_1=15, x_pad_0=15, x_pad_1=15)
    top = cfg.UOP_DEPTH - 1
    loop = dict(uop_bgn=top, uop_end=top, iter_out=0, iter_in=(1 << 14) - 1, dst_factor_out=cfg.ACC_DEPTH - 1,
                dst_factor_in=cfg.ACC_DEPTH - 1)
    gemm = dict(opcode=Opcode.GEMM, reset=1, src_factor_out=cfg.INP_DEPTH - 1, src_factor_in=cfg.INP_DEPTH - 1,
                wgt_factor_out=cfg.WGT_DEPTH - 1, wgt_factor_in=cfg.WGT_DEPTH - 1, **loop)
    alu = dict(opcode=Opcode.ALU, alu_opcode=AluOp.MAX, use_imm=1, imm=-1, src_factor_out=cfg.ACC_DEPTH - 1,
               src_factor_in=cfg.ACC_DEPTH - 1, **loop)
    insns = []
    for f in ([dict(opcode=Opcode.LOAD, memory_type=m, **mem) for m in (MemId.INP, MemId.WGT, MemId.UOP, MemId.ACC,
                                                                       MemId.ACC_8BIT)]
              + [dict(opcode=Opcode.STORE, memory_type=MemId.OUT, **mem), gemm, alu]):
        insns += [f, {k: (v if k in ("opcode", "memory_type", "alu_opcode") else 0) for k, v in f.items()}]
    dev = cast("RtlDevice", runtime.current().target)
    dev.base_registers = 0xFFFFFFFF
    try:
        return run_raw(insns + [dict(opcode=Opcode.FINISH)])
    finally:
        dev.base_registers = None


def empty_alu() -> dict:
    """A raw ALU instruction with no iterations (iter_out = 0: the runtime never emits one), ADD and, on a config with
    POST_UNIT, POST with its parameter rows at the top of imm's range and the residual, then FINISH: the ALU is done
    at once, without error, and nothing changes."""
    cfg = runtime.current().cfg
    empty = dict(opcode=Opcode.ALU, alu_opcode=AluOp.ADD, use_imm=1, imm=1, uop_bgn=0, uop_end=1, iter_out=0, iter_in=1)
    posts = [dict(empty, alu_opcode=AluOp.POST, use_imm=0, imm=cfg.ACC_DEPTH - POST_PARAM_ROWS)] if cfg.POST_UNIT else []
    return run_raw([empty, *posts, dict(opcode=Opcode.FINISH)])


def token_traffic(rounds: int = 160) -> dict:
    """A raw stream in which every token queue is pushed and popped in the same cycle at some point: load,
    compute and store each run ``rounds`` short instructions of varied length, two tokens ahead on every
    queue (load reads INP rows and passes tokens to compute; compute runs ALU loops and passes tokens to
    load and store; store runs NOP stores and passes tokens back). Nothing is written to device memory."""
    q = runtime.current()
    h = q.alloc(1 << 16)
    base = q.memory.get(h).phys // q.cfg.INP_ELEM_BYTES
    insns = [dict(opcode=Opcode.LOAD, memory_type=MemId.UOP, sram_base=0, dram_base=base * q.cfg.INP_ELEM_BYTES
                  // q.cfg.UOP_ELEM_BYTES, y_size=1, x_size=1, x_stride=1)]
    for i in range(rounds):
        first = i < 2
        n = 1 + (i * 5) % 13
        insns.append(dict(opcode=Opcode.LOAD, memory_type=MemId.INP, sram_base=0, dram_base=base, y_size=1,
                          x_size=n, x_stride=n, push_next=1, pop_next=int(not first)))
        insns.append(dict(opcode=Opcode.ALU, alu_opcode=AluOp.ADD, use_imm=1, imm=1, uop_bgn=0, uop_end=1,
                          iter_out=1 + i % 11, iter_in=1 + (i * 7) % 9, pop_prev=1, push_prev=1, push_next=1,
                          pop_next=int(not first)))
        insns.append(dict(opcode=Opcode.STORE, memory_type=MemId.OUT, x_size=0, pop_prev=1, push_prev=1))
    insns.append(dict(opcode=Opcode.FINISH, pop_next=1))
    out = run_raw(insns)
    q.free(h)
    return out


def token_fill(n: int = 255) -> dict:
    """A raw stream that fills every token queue to ``n`` (the 255-token limit by default) and drains it again
    (toggle coverage of the queues' counts and the tokens_* registers): each producer pushes ``n`` tokens with NOP
    instructions while the consumer is busy with a long transfer or ALU loop, then the consumer pops them all. Load
    pushes l2g during compute's first ALU loop; compute pops them and pushes g2l and g2s while load and store move
    two whole SRAMs each; store pops g2s and pushes s2g during compute's second loop; everyone drains. Device
    memory outside its own scratch buffer is not touched."""
    q = runtime.current()
    cfg = q.cfg
    inp, out = min(cfg.INP_DEPTH, X_SIZE_MAX), min(cfg.OUT_DEPTH, X_SIZE_MAX)
    h = q.alloc(max(inp * cfg.INP_ELEM_BYTES, out * cfg.OUT_ELEM_BYTES))
    base = q.memory.get(h).phys
    big_load = dict(opcode=Opcode.LOAD, memory_type=MemId.INP, sram_base=0, dram_base=base // cfg.INP_ELEM_BYTES,
                    y_size=1, x_size=inp, x_stride=inp)
    big_store = dict(opcode=Opcode.STORE, memory_type=MemId.OUT, sram_base=0, dram_base=base // cfg.OUT_ELEM_BYTES,
                     y_size=1, x_size=out, x_stride=out)
    loop = dict(opcode=Opcode.ALU, alu_opcode=AluOp.ADD, use_imm=1, imm=0, uop_bgn=0, uop_end=1, iter_out=32,
                iter_in=64)
    insns = ([dict(NOP_LOAD, push_next=1)] * n + [loop, big_store, big_store, big_load, big_load]
             + [dict(NOP_COMPUTE, pop_prev=1, push_prev=1, push_next=1)] * n + [loop]
             + [dict(NOP_LOAD, pop_next=1)] * n + [dict(NOP_LOAD, push_next=1)]
             + [dict(NOP_STORE, pop_prev=1, push_prev=1)] * n
             + [dict(NOP_COMPUTE, pop_next=1)] * n + [dict(NOP_COMPUTE, pop_prev=1), dict(opcode=Opcode.FINISH)])
    out_ = run_raw(insns)
    q.free(h)
    return out_



def queue_fill(n: int = 520) -> list:
    """Fetch's command queues filled toward their depth (512 entries, hw.fetch.Fetch's ``queue_depth``; ``n`` must be
    more): the module waits for a token that an older, long instruction of another module gives only when it ends,
    while fetch queues ``n`` NOPs behind the waiting one (and stops when the queue is full; the compute queue stops
    at 511 in the coverage run). Three runs (load, store, compute queue); none may raise an error or change device
    memory."""
    q = runtime.current()
    cfg = q.cfg
    inp = min(cfg.INP_DEPTH, X_SIZE_MAX)
    h = q.alloc(inp * cfg.INP_ELEM_BYTES)
    base = q.memory.get(h).phys
    long_gemm = dict(opcode=Opcode.GEMM, uop_bgn=0, uop_end=1, iter_out=(1 << 13), iter_in=1)
    big_load = dict(opcode=Opcode.LOAD, memory_type=MemId.INP, sram_base=0, dram_base=base // cfg.INP_ELEM_BYTES,
                    y_size=1, x_size=inp, x_stride=inp)
    runs: list[list[dict]] = [
        # load waits for compute's token (after the GEMM); its last NOP hands FINISH a token
        [long_gemm, dict(NOP_COMPUTE, push_prev=1), dict(NOP_LOAD, pop_next=1)] + [NOP_LOAD] * n
        + [dict(NOP_LOAD, push_next=1), dict(opcode=Opcode.FINISH, pop_prev=1)],
        # store waits for compute's token; its last NOP hands FINISH a token
        [long_gemm, dict(NOP_COMPUTE, push_next=1), dict(NOP_STORE, pop_prev=1)] + [NOP_STORE] * n
        + [dict(NOP_STORE, push_prev=1), dict(opcode=Opcode.FINISH, pop_next=1)],
        # compute waits for load's token (after four whole-SRAM loads: fetch's reads share the bus with them)
        [big_load] * 4 + [dict(NOP_LOAD, push_next=1), dict(NOP_COMPUTE, pop_prev=1)] + [NOP_COMPUTE] * n
        + [dict(opcode=Opcode.FINISH)],
    ]
    out = [run_raw(insns) for insns in runs]
    q.free(h)
    return out


def held_pushes(n: int = 255) -> dict:
    """``n`` short ALU instructions, each pushing a token to load and to store, run beside one long GEMM (their
    accumulators in the other half of the acc SRAM): compute holds their pushes until the older GEMM ends, then lets
    them go one per cycle (toggle coverage of its held/due counts; 255 fills both token queues without overflow).
    No error may be raised; tokens_g2l and tokens_g2s must read ``n``."""
    q = runtime.current()
    cfg, isa = q.cfg, q.isa
    h = q.alloc(4096)
    at = q.memory.get(h).phys
    half = cfg.ACC_DEPTH // 2
    q.dram[at:at + 8] = np.array([0, isa.encode_uop(half, half)], dtype="<u4").view(np.uint8)
    insns = [dict(opcode=Opcode.LOAD, memory_type=MemId.UOP, sram_base=0, dram_base=at // cfg.UOP_ELEM_BYTES,
                  y_size=1, x_size=2, x_stride=2),
             dict(opcode=Opcode.GEMM, uop_bgn=0, uop_end=1, iter_out=(1 << 14) - 1, iter_in=1)]
    insns += [dict(opcode=Opcode.ALU, alu_opcode=AluOp.ADD, use_imm=1, imm=0, uop_bgn=1, uop_end=2, iter_out=1,
                   iter_in=1, push_prev=1, push_next=1)] * n
    out = run_raw(insns + [dict(opcode=Opcode.FINISH)])
    q.free(h)
    return out


def token_saturate(n: int = 255) -> dict:
    """Each token queue filled to ``n`` by its producer's NOPs with nobody popping (the 255-token limit by default),
    then FINISH; the tokens_* registers must read ``n``. (In :func:`token_fill` the consumers start popping while
    compute, at about 30 cycles per NOP, is still pushing, so not every queue gets full there.) The next launch clears
    the queues."""
    insns = ([dict(NOP_LOAD, push_next=1)] * n + [dict(NOP_STORE, push_prev=1)] * n
             + [dict(NOP_COMPUTE, push_prev=1)] * n + [dict(NOP_COMPUTE, push_next=1)] * n
             + [dict(opcode=Opcode.FINISH)])
    return run_raw(insns)


def huge_transfers(rows: int = (1 << 15) + 1, max_beats: int = 1 << 17) -> list:
    """On the RTL with the DPI DRAM (toggle coverage of the DMA paths' sizes, row and column counters, byte counters
    and burst commands): transfers far longer than any network makes, each stopped by an injected AXI error
    (DECERR). Per memory type a "wide" instruction (every size and stride field at its largest, x and bottom padding
    15, the SRAM base at the top: its first row runs for ``max_beats`` data beats; a top padding of 15 rows that
    wide would be a million SRAM writes first), an "allbits" one (rows x elements x element bytes = 2^32 - element
    bytes: the byte counters, reset by the error before, move every bit at once), two "mixed" ones (sizes and
    paddings of alternating bits; the first with base-register bits 0-29 set, stopped on its first beat, the second
    at element addresses with their top bits set and base registers 1, on its 17th), for the store a "row80" one
    (one burst of 80 beats) and a "tall" one (``rows`` rows of one element, y padding 15, at most ``max_beats`` data
    beats: the row counters pass 2^15 where a row is two beats); a UOP load is one row (the runtime refuses others).
    Every address is above device memory (reads give zeros, writes are dropped), so nothing changes. Then one small
    load of each memory type from device memory. Returns ``[(memory type, case, channel, beat, result of
    run_raw)]``, the last ``("all", "small", None, None, result)``; each stopped run must end in an AxiResponseError
    naming its channel, the small loads without an error."""
    from sw.ops.base import cdiv
    from sw.pipeline import elem_bytes, sram_depth

    from ..sim import axi_monitor

    q = runtime.current()
    cfg, dev = q.cfg, cast("RtlDevice", q.target)
    beat_bytes = cfg.BUS_WIDTH // 8
    out: list[tuple] = []
    for mem in (MemId.INP, MemId.WGT, MemId.UOP, MemId.ACC, MemId.ACC_8BIT, MemId.OUT):
        eb = elem_bytes(cfg, mem)
        store = mem == MemId.OUT
        # tokens make FINISH wait for the transfer (a load or store module runs beside compute)
        module = MemId.INP, MemId.WGT
        flags = dict(push_prev=1) if store else dict(push_next=1) if mem in module else {}
        base = dict(opcode=Opcode.STORE if store else Opcode.LOAD, memory_type=mem, dram_base=OUTSIDE // eb, **flags)
        finish = (finish_after_store() if store else [dict(opcode=Opcode.FINISH, pop_prev=1)] if mem in module
                  else [dict(opcode=Opcode.FINISH)])
        padded = mem not in (MemId.UOP, MemId.OUT)
        pads = dict(y_pad_0=15, y_pad_1=15, x_pad_0=15, x_pad_1=15) if padded else {}
        beats = max(1, eb // beat_bytes)                    # data beats per element
        rows_of = (lambda n: 1) if mem == MemId.UOP else (lambda n: n)      # a UOP load is one row
        cases = [
            # every size field at its largest; the row runs until max_beats
            ("wide", dict(base, sram_base=sram_depth(cfg, mem) - 1, y_size=rows_of(X_SIZE_MAX), x_size=X_SIZE_MAX,
                          x_stride=X_SIZE_MAX, **dict(pads, y_pad_0=0)),
             min(cdiv(X_SIZE_MAX * eb, beat_bytes), max_beats) - 1, None),
            # sizes with alternating bits, base-address bits 0-29 set (ORed into addresses that stay above
            # device memory and below 4 GiB): the bits that all-ones sizes carry into
            ("mixed", dict(base, dram_base=OUTSIDE // eb + (0x7FF << 16), sram_base=sram_depth(cfg, mem) // 2 + 1,
                           y_size=rows_of(0x7FFF), x_size=0x5555,
                           x_stride=0xAAAA, **({k: 1 << i for i, k in enumerate(pads)} if padded else {})), 0,
             (OUTSIDE >> 1) - 1),
            # an element address with its top bits set (byte address 0xFF000000 once scaled to 32 bits), base
            # registers 1 (a byte offset inside the first beat)
            ("mixed2", dict(base, sram_base=sram_depth(cfg, mem) // 4 + 2, y_size=rows_of(0x7FF0), x_size=0xAAAA,
                            x_stride=0x5555, dram_base=((eb - 1) << 32 | 0xFF000000) // eb), 16, 1)]
        if mem != MemId.UOP:
            # rows x elements x element bytes = 2^32 - element bytes: one instruction moves every bit of the byte
            # counters at once ((2^h - 1)(2^h + 1) = 2^2h - 1 elements); after "wide", whose error resets the
            # counters (this adds 2^32 - eb to 0, not to what earlier runs left), before the ones that clear its bits
            k = 32 - (eb.bit_length() - 1)
            cases.insert(1, ("allbits", dict(base, sram_base=0, y_size=(1 << k // 2) + 1,
                                             x_size=(1 << (k + 1) // 2) - 1, x_stride=(1 << (k + 1) // 2) - 1), 0, None))
        if store:       # a burst of 64-127 beats cut by no boundary (bit 6 of AWLEN); the runs above have none
            cases.append(("row80", dict(base, sram_base=0, y_size=1, x_size=(80 * beat_bytes) // eb, x_stride=1), 0,
                          None))
        if mem != MemId.UOP:
            cases.append(("tall", dict(base, sram_base=0, y_size=X_SIZE_MAX, x_size=1, x_stride=1,
                                       **dict(pads, x_pad_0=0, x_pad_1=0)), min(rows, max_beats // beats) * beats,
                          None))
        for case, insn, beat, bases in cases:
            channel = "write" if store else "read"
            beat += 0 if store else (1 + len(finish)) * q.isa.insn_bytes // beat_bytes    # after the fetch
            dev.inject_axi_error(channel, beat, "DECERR")
            dev.base_registers = bases
            try:
                with axi_monitor.raw_image():
                    out.append((mem.name, case, channel, beat, run_raw([insn, *finish])))
            finally:
                dev.base_registers = None
    # one element of each memory type loaded from device memory again: the address registers and their sums go back
    # to small values (their bits toggle back within this run of programs)
    h = q.alloc(4096)
    at = q.memory.get(h).phys
    small = [dict(opcode=Opcode.LOAD, memory_type=mem, sram_base=0, dram_base=at // elem_bytes(cfg, mem), y_size=1,
                  x_size=1, x_stride=1) for mem in (MemId.UOP, MemId.ACC, MemId.ACC_8BIT, MemId.INP, MemId.WGT)]
    small[-1]["push_next"] = 1
    out.append(("all", "small", None, None, run_raw(small + [dict(opcode=Opcode.FINISH, pop_prev=1)])))
    q.free(h)
    return out


def index_sweep() -> dict:
    """GEMMs (with and without reset) and tensor ALUs whose loops and micro-ops reach the top of every SRAM they index
    (toggle coverage of the micro-op sequencers' offsets and of the micro-op fields): three micro-ops at the last
    micro-op addresses (all indices 0; a GEMM's largest; an ALU's largest); the first run with 2 x 2 iterations of
    steps ``(depth / 2 - 1, depth / 2)`` and then the other way round (each SRAM's last index is ``depth - 1``,
    every offset bit goes to 1 and back), the other two once. No error may be raised."""
    q = runtime.current()
    cfg, isa = q.cfg, q.isa
    h = q.alloc(4096)
    at = q.memory.get(h).phys
    words = [0, isa.encode_uop(cfg.ACC_DEPTH - 1, cfg.INP_DEPTH - 1, cfg.WGT_DEPTH - 1),
             isa.encode_uop(cfg.ACC_DEPTH - 1, cfg.ACC_DEPTH - 1, cfg.WGT_DEPTH - 1)]     # (an ALU ignores wgt)
    q.dram[at:at + 4 * len(words)] = np.array(words, dtype="<u4").view(np.uint8)
    top = cfg.UOP_DEPTH - len(words)

    def steps(name, depth, swap):
        a, b = depth // 2 - 1, depth // 2
        return {f"{name}_factor_out": b if swap else a, f"{name}_factor_in": a if swap else b}

    def loop(uop, n, swap, src_depth, gemm):
        f = dict(uop_bgn=top + uop, uop_end=top + uop + 1, iter_out=n, iter_in=n, **steps("dst", cfg.ACC_DEPTH, swap),
                 **steps("src", src_depth, swap))
        return dict(f, **steps("wgt", cfg.WGT_DEPTH, swap)) if gemm else f
    gemm = [dict(opcode=Opcode.GEMM, reset=r, **loop(0, 2, swap, cfg.INP_DEPTH, True)) for r, swap in ((1, 0), (0, 1))]
    alu = [dict(opcode=Opcode.ALU, alu_opcode=AluOp.ADD, use_imm=0, **loop(0, 2, swap, cfg.ACC_DEPTH, False))
           for swap in (0, 1)]
    insns = [dict(opcode=Opcode.LOAD, memory_type=MemId.UOP, sram_base=top, dram_base=at // cfg.UOP_ELEM_BYTES,
                  y_size=1, x_size=len(words), x_stride=len(words)),
             *gemm, dict(opcode=Opcode.GEMM, **loop(1, 1, 0, cfg.INP_DEPTH, True)),
             *alu, dict(opcode=Opcode.ALU, alu_opcode=AluOp.MAX, use_imm=0, **loop(2, 1, 0, cfg.ACC_DEPTH, False)),
             dict(opcode=Opcode.FINISH)]
    out = run_raw(insns)
    q.free(h)
    return out


def loop_sweep() -> dict:
    """GEMMs and ALUs whose loop counters run to their largest values (toggle coverage of the micro-op sequencers):
    an outer loop of 2^14 - 1 iterations, an inner one of as many, and one pass over every micro-op address (the
    micro-op SRAM filled with zero micro-ops); every index stays 0 (all factors 0). No error may be raised."""
    q = runtime.current()
    cfg = q.cfg
    h = q.alloc(cfg.UOP_DEPTH * cfg.UOP_ELEM_BYTES)
    at = q.memory.get(h).phys
    q.dram[at:at + cfg.UOP_DEPTH * cfg.UOP_ELEM_BYTES] = 0
    most = (1 << 14) - 1                                    # the largest iter_out / iter_in (14-bit fields)
    loops = [dict(uop_bgn=0, uop_end=cfg.UOP_DEPTH, iter_out=1, iter_in=1),
             dict(uop_bgn=0, uop_end=1, iter_out=most, iter_in=1), dict(uop_bgn=0, uop_end=1, iter_out=1, iter_in=most)]
    insns = [dict(opcode=Opcode.LOAD, memory_type=MemId.UOP, sram_base=0, dram_base=at // cfg.UOP_ELEM_BYTES, y_size=1,
                  x_size=cfg.UOP_DEPTH, x_stride=cfg.UOP_DEPTH)]
    insns += [dict(opcode=Opcode.GEMM, reset=1, **loop) for loop in loops]
    insns += [dict(opcode=Opcode.ALU, alu_opcode=AluOp.ADD, use_imm=1, imm=1, **loop) for loop in loops]
    out = run_raw(insns + [dict(opcode=Opcode.FINISH)])
    q.free(h)
    return out


# (a UOP load of several rows or with padding is refused by the runtime and the golden model, not by the hardware:
# docs/architecture.md, errors in hardware)
FETCH_REFUSALS = (("BAD_ALU_OPCODE", dict(opcode=Opcode.ALU, alu_opcode=7, uop_bgn=0, uop_end=1, iter_out=1,
                                           iter_in=1)),
                  ("BAD_MEMORY_TYPE", dict(opcode=Opcode.LOAD, memory_type=MemId.OUT, x_size=1, y_size=1, x_stride=1)),
                  ("BAD_MEMORY_TYPE", dict(opcode=Opcode.STORE, memory_type=MemId.INP, x_size=1, y_size=1,
                                           x_stride=1)),
                  ("RESERVED_DEP_FLAG", dict(opcode=Opcode.STORE, memory_type=MemId.OUT, push_next=1)),
                  ("RESERVED_DEP_FLAG", dict(opcode=Opcode.STORE, memory_type=MemId.OUT, pop_next=1)))


def refusals_of(cfg: Config) -> tuple:
    """(error code, instruction) of each refusal of :func:`fetch_refusals` on ``cfg``: :data:`FETCH_REFUSALS`, then
    the ALU opcodes the config does not build (MUL without ALU_MUL, POST without POST_UNIT: ``BAD_ALU_OPCODE``), then
    DEPTHWISE without the depthwise mode (opcode 5: ``BAD_OPCODE``)."""
    unbuilt = [op for op, flag in ((AluOp.MUL, cfg.ALU_MUL), (AluOp.POST, cfg.POST_UNIT)) if not flag]
    depthwise = () if cfg.DEPTHWISE else (
        ("BAD_OPCODE", dict(opcode=Opcode.DEPTHWISE, uop_bgn=0, uop_end=1, iter_out=1, iter_in=1)),)
    return FETCH_REFUSALS + tuple(("BAD_ALU_OPCODE", dict(opcode=Opcode.ALU, alu_opcode=int(op), use_imm=1, imm=0,
                                                          uop_bgn=0, uop_end=1, iter_out=1, iter_in=1))
                                  for op in unbuilt) + depthwise


def fetch_refusals() -> list:
    """The instructions fetch refuses that the fault programs do not make (:func:`refusals_of` the current config: an
    ALU opcode 6-7 or one the config does not build, a LOAD of OUT, a STORE of another type, a STORE with a dependency
    flag of compute's side, DEPTHWISE where it is not built); each stream must stop with the error code its result's
    ``code`` names."""
    cfg = runtime.current().cfg
    return [dict(run_raw([insn, dict(opcode=Opcode.FINISH)]), code=code) for code, insn in refusals_of(cfg)]


def fetch_huge(beat: int = 256) -> dict:
    """On the RTL with the DPI DRAM (toggle coverage of fetch's counts): a launch of 2^32 - 1 instructions from the
    last instruction slot of device memory (the words past its end read as zeros: compute-module NOP loads), stopped
    by a DECERR on read beat ``beat``. Nothing changes; the run must end in an AxiResponseError."""
    from ..sim import axi_monitor

    q = runtime.current()
    at = len(q.dram) - q.isa.insn_bytes
    saved = q.dram[at:].copy()
    cast("RtlDevice", q.target).inject_axi_error("read", beat, "DECERR")
    try:
        with axi_monitor.raw_image():
            return run_raw([0], at=at, count=(1 << 32) - 1)
    finally:
        q.dram[at:] = saved


# ---------------------------------------------------------------------- DEPTHWISE (configs with DEPTHWISE)
def compute_reference(cfg: Config, acc: np.ndarray, inp: np.ndarray, wgt: np.ndarray, uops: Sequence[tuple],
                      f: dict) -> None:
    """One GEMM or DEPTHWISE instruction ``f`` (docs/isa.md) on host copies, in place, one micro-op execution at a
    time: ``acc`` (rows, BATCH, BLOCK_OUT) int64, ``inp`` (rows, BATCH, BLOCK_IN), ``wgt`` (rows, BLOCK_OUT, BLOCK_IN),
    ``uops`` [(dst, src, wgt)] the micro-op SRAM. A GEMM adds ``inp[src] . wgt[wgt]^T`` (int32 wrap-around); a
    DEPTHWISE keeps the window of the last BLOCK_IN inp rows it read (slot 0 this execution's, zero before its first)
    and overwrites ``acc[dst][b][j]`` with ``sum_k window[k][b][j] * wgt[wgt][j][k]``; with reset the row is set to 0."""
    window = np.zeros((cfg.BLOCK_IN, cfg.BATCH, cfg.BLOCK_IN), np.int64)
    depthwise = f["opcode"] == Opcode.DEPTHWISE
    for i in range(f["iter_out"]):
        for j in range(f["iter_in"]):
            for ud, us, uw in uops[f["uop_bgn"]:f["uop_end"]]:
                d = ud + i * f.get("dst_factor_out", 0) + j * f.get("dst_factor_in", 0)
                s = us + i * f.get("src_factor_out", 0) + j * f.get("src_factor_in", 0)
                w = uw + i * f.get("wgt_factor_out", 0) + j * f.get("wgt_factor_in", 0)
                window = np.concatenate([inp[s][None].astype(np.int64), window[:-1]])
                if f.get("reset"):
                    acc[d] = 0
                elif depthwise:
                    acc[d] = np.einsum("kbj,jk->bj", window, wgt[w].astype(np.int64))
                else:
                    total = acc[d] + inp[s].astype(np.int64) @ wgt[w].astype(np.int64).T
                    acc[d] = (total + (1 << 31)) % (1 << 32) - (1 << 31)


def depthwise_window() -> dict:
    """DEPTHWISE's edges in one raw stream (configs with DEPTHWISE), every result checked on all 32 bits (four byte
    planes per acc row, SHR 8 between the stores) against :func:`compute_reference`:

    - extremes: -128 x -128 and -128 x 127 in every slot, the window filling up one execution at a time (each
      execution its own row, BLOCK_IN + 2 of them: the sums grow to BLOCK_IN products and stay there), and an
      alternating -128 / 127 window;
    - a window across loop boundaries: three micro-ops x 3 inner x 3 outer iterations, each execution its own row
      (every slot of every window seen), right after a DEPTHWISE whose window held -128 rows (the window starts empty
      at each instruction);
    - overwrite against accumulate: GEMM, DEPTHWISE, GEMM back to back on the same rows (loaded with nonzero values);
    - reset: a DEPTHWISE with reset zeroes loaded rows; rows written by five consecutive executions (the last one's
      value stays) and one written again two executions later.

    Returns the :func:`~cosim.verify.raw.run_raw` result with ``result`` and ``expected``: (4, rows, BATCH, BLOCK_OUT)
    int8, byte plane k of every acc row."""
    q = runtime.current()
    cfg, isa = q.cfg, q.isa
    B, K, O = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
    rng = np.random.default_rng(5)
    inp = rng.integers(-128, 128, size=(32, B, K)).astype(np.int8)
    inp[0], inp[1] = -128, 127
    wgt = rng.integers(-128, 128, size=(8, O, K)).astype(np.int8)
    wgt[0], wgt[1] = -128, 127
    uops: list[tuple] = []
    program: list[dict] = []            # the compute instructions, in order

    def insn(opcode, kernel, **f):
        program.append(dict(opcode=opcode, uop_bgn=len(uops), uop_end=len(uops) + len(kernel), **f))
        uops.extend(kernel)
    dw, gemm = Opcode.DEPTHWISE, Opcode.GEMM
    # extremes: rows [0, K + 2), [K + 2, 2 K + 4), [2 K + 4, 3 K + 4)
    a, b, c = 0, K + 2, 2 * K + 4
    insn(dw, [(a, 0, 0)], iter_out=1, iter_in=K + 2, dst_factor_in=1)
    insn(dw, [(b, 0, 1), (b + 1, 1, 1)], iter_out=1, iter_in=K // 2 + 1, dst_factor_in=2)
    insn(dw, [(c, 0, 1)], iter_out=1, iter_in=K, dst_factor_in=1)
    # the window across inner and outer iterations: 27 rows
    x = 3 * K + 4
    insn(dw, [(x, 2, 2), (x + 1, 3, 3), (x + 2, 4, 4)], iter_out=3, iter_in=3, dst_factor_out=9, dst_factor_in=3,
         src_factor_out=5, src_factor_in=1, wgt_factor_out=1)
    # overwrite against accumulate: 4 rows
    y = x + 27
    insn(gemm, [(y + i, 20 + i, 2) for i in range(4)], iter_out=1, iter_in=1)
    insn(dw, [(y + i, 24 + i, 3) for i in range(4)], iter_out=1, iter_in=1)
    insn(gemm, [(y + i, 28 + i, 4) for i in range(4)], iter_out=1, iter_in=1)
    # reset, then rows written again by the next execution and two executions later: 8 rows
    z = y + 4
    insn(dw, [(z, 0, 0)], iter_out=1, iter_in=4, dst_factor_in=1, reset=1)
    insn(dw, [(z + 4, 5 + i, 5) for i in range(5)], iter_out=2, iter_in=1, dst_factor_out=1, src_factor_out=7)
    insn(dw, [(z + 6, 17, 6), (z + 7, 18, 6), (z + 6, 19, 7)], iter_out=1, iter_in=1)
    rows = z + 8
    acc0 = rng.integers(-2**20, 2**20, size=(rows, B, O)).astype(np.int32)
    expected = acc0.astype(np.int64)
    for f in program:
        compute_reference(cfg, expected, inp, wgt, uops, f)
    shr = len(uops)                                              # the ALU's micro-op: acc[i] >>= 8
    words = [isa.encode_uop(d, s, w) for d, s, w in uops] + [isa.encode_uop(0, 0)]

    # device memory: micro-ops, inp, wgt and acc rows, then the four planes, each part page-aligned
    parts = [np.array(words, "<u4").view(np.uint8), inp.view(np.uint8).reshape(-1), wgt.view(np.uint8).reshape(-1),
             acc0.view(np.uint8).reshape(-1)]
    out_bytes = 4 * rows * cfg.OUT_ELEM_BYTES
    offsets, size = [], 0
    for part in parts + [np.zeros(out_bytes, np.uint8)]:
        offsets.append(size)
        size += -(-part.size // 4096) * 4096
    h = q.alloc(size)
    base = q.memory.get(h).phys
    for off, part in zip(offsets, parts):
        q.dram[base + off:base + off + part.size] = part
    at = [base + off for off in offsets]

    def load(mem, addr, n, eb, **flags):
        return dict(opcode=Opcode.LOAD, memory_type=mem, sram_base=0, dram_base=addr // eb, y_size=1, x_size=n,
                    x_stride=n, **flags)
    stream = [load(MemId.INP, at[1], len(inp), cfg.INP_ELEM_BYTES),
              load(MemId.WGT, at[2], len(wgt), cfg.WGT_ELEM_BYTES, push_next=1),
              load(MemId.UOP, at[0], len(words), cfg.UOP_ELEM_BYTES, pop_prev=1),
              load(MemId.ACC, at[3], rows, cfg.ACC_ELEM_BYTES), *program]
    stream[-1] = dict(stream[-1], push_next=1)
    for k in range(4):
        if k:
            stream.append(dict(opcode=Opcode.ALU, alu_opcode=AluOp.SHR, use_imm=1, imm=8, uop_bgn=shr, uop_end=shr + 1,
                               iter_out=1, iter_in=rows, dst_factor_in=1, src_factor_in=1, pop_next=1, push_next=1))
        stream.append(dict(opcode=Opcode.STORE, memory_type=MemId.OUT, sram_base=0,
                           dram_base=at[4] // cfg.OUT_ELEM_BYTES + k * rows, y_size=1, x_size=rows, x_stride=rows,
                           pop_prev=1, push_prev=1))
    stream.append(dict(opcode=Opcode.FINISH, pop_next=1))
    out = run_raw(stream)
    planes = q.dram[at[4]:at[4] + out_bytes].copy().view(np.int8).reshape(4, rows, B, O)
    q.free(h)
    want = np.stack([(expected >> (8 * k)).astype(np.int8) for k in range(4)])
    return dict(out, result=planes, expected=want)
