"""Raw device programs: instruction streams written straight into device memory, past the runtime's checks.

:func:`run_raw` is how a test or a coverage run makes the accelerator execute a stream the runtime would
never emit (a bad opcode, a reserved flag, an ALU with no iterations, token traffic on every queue): the
words are ints or field dicts for the ISA encoder; the result is ``{"error": type name or None,
"message", "counters", "changed": bytes of device memory that changed}``, errors included, so several
programs can run in one simulator launch. The directed programs of ``make coverage`` are here too.
"""

from __future__ import annotations

import numpy as np

from sw import runtime
from sw.isa import MEMOP_SIZE_BITS, AluOp, MemId, Opcode
from sw.launch import window_alignment

from .pages import CHECK_BYTES

__all__ = ["run_raw", "store_insn", "finish_after_store", "register_sweep", "empty_alu", "token_traffic",
           "field_sweep", "address_sweep", "high_window", "top_fetch", "token_fill", "directed_calls", "check_directed",
           "AXI_CASES"]


X_SIZE_MAX = (1 << MEMOP_SIZE_BITS) - 1      # the most elements one row of a LOAD or STORE moves


def run_raw(fields_list, wait_cycles: int = 1 << 31, at: int | None = None) -> dict:
    """Write the stream into a fresh buffer (or at byte address ``at`` of device memory, outside any buffer: the
    caller saves what is there), run it on the current target, and report what happened."""
    q = runtime.current()
    isa = q.isa
    raw = isa.words_to_array(f if isinstance(f, int) else isa.encode(**f) for f in fields_list)
    h = q.alloc(max(raw.size, 4096)) if at is None else None
    addr = q.memory.get(h).phys if at is None else at
    q.dram[addr:addr + raw.size] = raw
    before = q.dram[:CHECK_BYTES].copy()
    out = {"error": None, "message": ""}
    try:
        out["counters"] = q.target.run(addr, len(fields_list), wait_cycles)
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


def register_sweep() -> dict:
    """On the RTL: read every register offset of the AXI4-Lite window up to one past the map (host registers
    after writing them, read-only ones after writing to them, and an unmapped offset), then check that
    writes to read-only registers changed nothing. Returns {offset: (first read, second read)}."""
    from cocotb.task import resume

    from hw import control

    dev = runtime.current().target
    read, write = resume(dev.read_reg), resume(dev.write_reg)
    offsets = sorted(r.offset for r in control.REGISTER_MAP)
    host = {r.offset for r in control.REGISTER_MAP if r.kind == "host"}
    writable = {r.offset for r in control.REGISTER_MAP if r.access == "RW"}
    out = {}
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
    from sw import programs

    from . import faults

    dev = runtime.current().target
    base = (1 << 32) - window_alignment(len(dev.dram))
    dev.set_window(base)
    try:
        return {"window": base, "vector_add": programs.vector_add("python", seed=1), "sweep": address_sweep(),
                "axi_error": faults.axi_error("write", 0, "SLVERR"), "top_fetch": top_fetch()}
    finally:
        dev.set_window(0)


def top_fetch(n: int = 64) -> dict:
    """``n`` instructions fetched from the very top of device memory (NOP stores of each module, then FINISH): every
    fetch address bit above the instruction size goes to 1. What was there is put back."""
    q = runtime.current()
    at = len(q.dram) - n * q.isa.insn_bytes
    saved = q.dram[at:].copy()
    nop = [dict(opcode=Opcode.LOAD, memory_type=MemId.INP), dict(opcode=Opcode.LOAD, memory_type=MemId.UOP),
           dict(opcode=Opcode.STORE, memory_type=MemId.OUT)]
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
    dev = runtime.current().target
    dev.base_registers = 0xFFFFFFFF
    try:
        return run_raw(insns + [dict(opcode=Opcode.FINISH)])
    finally:
        dev.base_registers = None


def empty_alu() -> dict:
    """A raw ALU instruction with no iterations (iter_out = 0: the runtime never emits one) then FINISH: the ALU
    is done at once, without error."""
    return run_raw([dict(opcode=Opcode.ALU, alu_opcode=AluOp.ADD, use_imm=1, imm=1, uop_bgn=0, uop_end=1,
                          iter_out=0, iter_in=1), dict(opcode=Opcode.FINISH)])


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
    nop_load = dict(opcode=Opcode.LOAD, memory_type=MemId.INP)          # a load-module NOP
    nop_compute = dict(opcode=Opcode.LOAD, memory_type=MemId.UOP)       # a compute-module NOP
    nop_store = dict(opcode=Opcode.STORE, memory_type=MemId.OUT)        # a store-module NOP
    big_load = dict(opcode=Opcode.LOAD, memory_type=MemId.INP, sram_base=0, dram_base=base // cfg.INP_ELEM_BYTES,
                    y_size=1, x_size=inp, x_stride=inp)
    big_store = dict(opcode=Opcode.STORE, memory_type=MemId.OUT, sram_base=0, dram_base=base // cfg.OUT_ELEM_BYTES,
                     y_size=1, x_size=out, x_stride=out)
    loop = dict(opcode=Opcode.ALU, alu_opcode=AluOp.ADD, use_imm=1, imm=0, uop_bgn=0, uop_end=1, iter_out=32,
                iter_in=64)
    insns = ([dict(nop_load, push_next=1)] * n + [loop, big_store, big_store, big_load, big_load]
             + [dict(nop_compute, pop_prev=1, push_prev=1, push_next=1)] * n + [loop]
             + [dict(nop_load, pop_next=1)] * n + [dict(nop_load, push_next=1)]
             + [dict(nop_store, pop_prev=1, push_prev=1)] * n
             + [dict(nop_compute, pop_next=1)] * n + [dict(nop_compute, pop_prev=1), dict(opcode=Opcode.FINISH)])
    out_ = run_raw(insns)
    q.free(h)
    return out_


def directed_calls() -> list:
    """The directed programs of ``make coverage`` beside the regression: each error the hardware reports
    (cosim.verify.faults), the accelerator working again after them, and the register sweep."""
    from sw import programs

    from . import faults
    return [(faults.deadlock, (), {}), (faults.reserved_flag, (), {}), (faults.bad_opcode, (), {}),
            (faults.bad_memory_type, (), {}), (faults.timeout, (), {}), (programs.vector_add, ("python",), {}),
            (register_sweep, (), {}), (empty_alu, (), {}), (token_traffic, (), {}),
            *((faults.axi_error, case, {}) for case in AXI_CASES), (programs.vector_add, ("python",), {}),
            (field_sweep, (), {}), (address_sweep, (), {}), (high_window, (), {}), (token_fill, (), {}),
            (empty_alu, (), {})]   # (a last launch clears the counters)


# the AXI error responses of the directed programs: a fetch beat, a load beat, two write beats
AXI_CASES = (("read", 0, "SLVERR"), ("read", 5, "DECERR"), ("write", 0, "DECERR"), ("write", 1, "SLVERR"))


def check_directed(results) -> list:
    """Why the directed programs' results are wrong ([] when each did what it must)."""
    from hw import control

    want = ["WatchdogError", "VTAError", "VTAError", "VTAError", "RunTimeout"]
    bad = [f"directed program {i}: expected {w}, got {r.get('error')}" for i, (w, r) in enumerate(zip(want, results))
           if r.get("error") != w]
    if not np.array_equal(results[5]["result"], results[5]["expected"]):
        bad.append("vector_add after the faults: wrong result")
    for i, name in ((7, "empty_alu"), (8, "token_traffic")):
        if results[i]["error"] or results[i]["changed"]:
            bad.append(f"{name}: {results[i]['error']} {results[i]['message'][:300]}, {results[i]['changed']} bytes changed")
    for (channel, beat, response), r in zip(AXI_CASES, results[9:13]):
        if r.get("error") != "AxiResponseError" or f"{response} on the {channel} channel" not in r["message"]:
            bad.append(f"{response} on {channel} beat {beat}: expected an AxiResponseError naming it, got "
                       f"{r.get('error')}: {r.get('message', '')[:300]}")
    if not np.array_equal(results[13]["result"], results[13]["expected"]):
        bad.append("vector_add after the AXI errors: wrong result")
    if results[14]["error"] or results[14]["changed"]:
        bad.append(f"field_sweep: {results[14]['error']} {results[14]['message'][:300]}, "
                   f"{results[14]['changed']} bytes changed")
    if results[15]["error"]:
        bad.append(f"address_sweep: {results[15]['error']} {results[15]['message'][:300]}")
    high = results[16]
    if not np.array_equal(high["vector_add"]["result"], high["vector_add"]["expected"]):
        bad.append(f"vector_add with device memory at {high['window']:#x}: wrong result")
    if high["sweep"]["error"]:
        bad.append(f"address sweep at {high['window']:#x}: {high['sweep']['error']} {high['sweep']['message'][:300]}")
    if high["top_fetch"]["error"] or high["top_fetch"]["changed"]:
        bad.append(f"fetch from the top of device memory at {high['window']:#x}: {high['top_fetch']['error']} "
                   f"{high['top_fetch']['message'][:300]}, {high['top_fetch']['changed']} bytes changed")
    if results[17]["error"]:
        bad.append(f"token_fill: {results[17]['error']} {results[17]['message'][:300]}")
    err = high["axi_error"]
    if err["error"] != "AxiResponseError" or f"burst at {err['base']:#x}" not in err["message"]:
        bad.append(f"SLVERR with device memory at {high['window']:#x}: expected an AxiResponseError at offset "
                   f"{err['base']:#x}, got {err['error']}: {err['message'][:300]}")
    sweep = dict(results[6])
    bad += [f"register {off:#x}: wrote 0xffffffff, read {v:#x}" for off, v in sweep.pop("ones").items()
            if v != 0xFFFFFFFF]
    writable = {r.offset for r in control.REGISTER_MAP if r.access == "RW"}
    for off, (first, second) in sweep.items():
        if off in writable and off != 0 and first != 0x1000 + off:
            bad.append(f"register {off:#x}: wrote {0x1000 + off:#x}, read {first:#x}")
        if off not in writable and first != second:
            bad.append(f"register {off:#x}: a write to a read-only register changed it ({first:#x} -> {second:#x})")
    return bad
