"""Functional coverage of the differential regression (cocotb-coverage), sampled from the executed streams.

Every instruction stream the regression executes is sampled when it is launched (:func:`sampled` wraps the
golden-model device of :func:`cosim.verify.regress.run_golden`; the RTL executes the same bytes, checked bit for bit):
opcode x memory type, each pad side x size, size and stride edges, micro-op loop shapes, each ALU op x
immediate/tensor (x shift sign for SHR), GEMM reset, every dependency-flag combination per module, micro-op
reuse, and the DMA traffic the memory instructions cause (burst lengths, 4 KiB boundary crossings, rows that
are not a whole number of bus beats). Each POST (on a config with POST_UNIT) is sampled as the golden model
executes it, on the values it computes (:func:`sample_post`): with or without the residual x the unit's fast or
irregular kernel shape, why a kernel is irregular, each stage clipping (MAX, MIN) or wrapping (ADD, MUL, a left
SHR, the residual's ADD), each SHR stage's shift amounts, with the residual each of its own steps' operands
the identity or not, and the parameter rows at either end of imm's range. Each DEPTHWISE (on a config with DEPTHWISE)
is sampled as the golden model executes it (:func:`sample_depthwise`): reset, whether its window gets full (BLOCK_IN
executions) and how many loop iterations a window spans, which loop boundaries windows cross, and whether a row is
written again by the next execution or a later one. Backpressure on the memory port is
sampled from the RTL run (:func:`sample_backpressure`, the AXI checker's stall counters: cosim/sim/axi_monitor.py).

Coverage travels as plain counts, ``{item: {bin: hits}}``: :func:`snapshot` reads this process's, :func:`delta`
and :func:`merge` subtract and add them (a cluster shard returns its delta, the client merges each shard once).
:func:`report` prints coverage and the bins never hit; :func:`holes` names them for the generator
(:func:`steer`, :func:`wants_stalls`). Without ``counts`` these read this process's coverage.
"""

from __future__ import annotations

import numpy as np
from cocotb_coverage.coverage import CoverPoint, coverage_db

from sw.config import Config
from sw.fsim import FsimDevice
from sw.fsim.alu import alu_op
from sw.isa import (
    POST_PARAM_ROWS,
    POST_RESIDUAL_STAGE,
    POST_RESIDUAL_STEPS,
    POST_STAGES,
    AluOp,
    MemId,
    Opcode,
    alu_opcodes,
    expand_uops,
    isa_for,
)
from sw.pipeline import elem_bytes

__all__ = ["sampled", "sample_stream", "sample_post", "sample_depthwise", "sample_backpressure", "snapshot", "delta",
           "merge", "report", "holes", "bins_total", "steer", "wants_stalls", "ROOT", "BACKPRESSURE", "POST_IRREGULAR",
           "SHIFT_CLASSES", "DW_WINDOW", "DW_CROSSES", "DW_DST"]

ROOT = "vta"
SIZE_CLASSES = ("1", "2-3", "4+")
LOADS = ("UOP", "WGT", "INP", "ACC", "ACC_8BIT")
FLAGS = ("pop_prev", "pop_next", "push_prev", "push_next")
MAX_BURST_CLASS = ("1", "2-15", "16-255", "256")
# (direction, channel of cosim.sim.axi_monitor.STALL_CHANNELS): the memory made the accelerator wait
BACKPRESSURE = (("read", "AR"), ("read", "R_paused"), ("read", "R_held"), ("write", "AW"), ("write", "W"))


# why a POST kernel is not of the unit's fast shape (one micro-op, destinations strictly increasing, the residual's
# rows and the parameter rows apart from them): the hardware runs such a kernel one micro-op at a time
POST_IRREGULAR = ("several micro-ops", "destinations not increasing", "residual over destinations",
                  "parameters over destinations")
SHIFT_CLASSES = ("0", "1-15", "16-31", ">31", "<0")
I32 = (-2**31, 2**31 - 1)
IDENTITY = {AluOp.MUL: 1, AluOp.ADD: 0}     # the residual steps' operands that leave the residual as it is


def _shift_class(b: int) -> str:
    return "<0" if b < 0 else "0" if b == 0 else "1-15" if b < 16 else "16-31" if b < 32 else ">31"


def _post_bins() -> dict:
    """The POST items' bins (stage k's event: a clip for MAX and MIN, a wrap out of int32 for ADD, MUL, a left SHR
    and the residual's ADD; the residual's step j: its operand the identity on every lane, or not)."""
    stage = [(k, op.name, "clips" if op in (AluOp.MAX, AluOp.MIN) else "wraps") for k, op in enumerate(POST_STAGES)]
    return {
        "kernel": [(res, shape) for res in ("none", "residual") for shape in ("fast", "irregular")],
        "irregular": list(POST_IRREGULAR),
        "stage": stage + [("residual", "ADD", "wraps")],
        "shift": [(k, c) for k, op in enumerate(POST_STAGES) if op == AluOp.SHR for c in SHIFT_CLASSES],
        "residual_step": [(j, op.name, c) for j, op in enumerate(POST_RESIDUAL_STEPS) for c in ("identity", "other")],
        "imm": ["first", "inside", "last"],
    }


# DEPTHWISE: how many executions' rows its fullest window holds ("partial": fewer than BLOCK_IN, so a zero slot is
# left; "full": BLOCK_IN) x how many loop iterations (inner iterations of the loop nest) those rows come from
DW_WINDOW = tuple((fill, span) for fill in ("partial", "full") for span in ("1", "2", "3+"))
# the loop boundaries a window crosses (holds rows of an earlier inner, or outer, iteration)
DW_CROSSES = ("none", "iter_in", "iter_out", "both")
# rows written more than once: every row once, a row written again by the very next execution, or by a later one
DW_DST = ("distinct", "again next", "again later")


def _depthwise_bins() -> dict:
    return {"reset": [0, 1], "window": list(DW_WINDOW), "crosses": list(DW_CROSSES), "dst": list(DW_DST)}


def _size_class(n: int) -> str:
    return "1" if n == 1 else "2-3" if n < 4 else "4+"


def _flag_bins(module: str) -> list:
    out = []
    for bits in range(16):
        flags = tuple((bits >> i) & 1 for i in range(4))
        if module == "load" and (flags[0] or flags[2]):
            continue                  # load has no previous stage
        if module == "store" and (flags[1] or flags[3]):
            continue                  # store has no next stage
        out.append((module, flags))
    return out


def _alu_bins(cfg) -> list:
    ops = [AluOp(o).name for o in alu_opcodes(cfg)]
    out = [(op, src, "-") for op in ops for src in ("imm", "tensor") if not (op == "SHR" and src == "imm")]
    if "SHR" in ops:
        out += [("SHR", "imm", s) for s in ("neg", "zero", "pos")]
    return out


def _dma_bins(cfg, what: str) -> list:
    """DMA bins that the config can produce: a 1-beat burst or a partial beat needs elements narrower than the
    bus (reads: micro-ops and 8-bit acc rows; writes: out elements)."""
    bus = cfg.BUS_WIDTH // 8
    narrow = {"read": min(cfg.UOP_ELEM_BYTES, cfg.INP_ELEM_BYTES, cfg.WGT_ELEM_BYTES, cfg.ACC_ELEM_BYTES // 4),
              "write": cfg.OUT_ELEM_BYTES}
    partial = {d: narrow[d] % bus != 0 for d in narrow}
    out: list[tuple[str, ...]] = []
    for d in ("read", "write"):
        if what == "len":
            out += [(d, b) for b in MAX_BURST_CLASS if b != "1" or narrow[d] <= bus]
        elif what == "rem":
            out += [(d, r) for r in ("whole", "partial") if r == "whole" or partial[d]]
        else:
            out += [(d, c, r) for c in ("within", "crosses") for r in ("whole", "partial") if r == "whole" or partial[d]]
    return out


def _define(cfg) -> dict:
    """The sampling functions of ``cfg`` (coverage items registered under ``vta.*`` once per config)."""
    if _DEFINED.get("cfg") == cfg.name:
        return _DEFINED["fns"]
    coverage_db.clear() if hasattr(coverage_db, "clear") else None
    fns = {}

    @CoverPoint(f"{ROOT}.insn.opcode_mem", xf=lambda k: k,
                bins=[("LOAD", m) for m in LOADS] + [("LOAD", "NOP"), ("STORE", "OUT"), ("STORE", "NOP"),
                                                     ("GEMM", "-"), ("ALU", "-"), ("FINISH", "-")]
                + [("DEPTHWISE", "-")] * bool(cfg.DEPTHWISE))
    def opcode_mem(k):
        pass
    fns["opcode_mem"] = opcode_mem

    @CoverPoint(f"{ROOT}.load.pad", xf=lambda k: k,
                bins=[(m, side, s) for m in ("INP", "ACC") for side in ("y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1")
                      for s in SIZE_CLASSES])
    def pad(k):
        pass
    fns["pad"] = pad

    @CoverPoint(f"{ROOT}.mem.shape", xf=lambda k: k,
                bins=[("UOP", e) for e in ("x=1", "x>1")] +     # the runtime loads micro-ops as one row
                     [(m, e) for m in LOADS[1:] + ("OUT",) for e in ("x=1", "x>1", "y=1", "y>1", "stride=x", "stride>x")])
    def shape(k):
        pass
    fns["shape"] = shape

    @CoverPoint(f"{ROOT}.compute.loops", xf=lambda k: k,
                bins=[(kind, o, i, u) for kind in ("GEMM", "ALU") + ("DEPTHWISE",) * bool(cfg.DEPTHWISE)
                      for o in ("1", ">1") for i in ("1", ">1") for u in ("1", ">1")])
    def loops(k):
        pass
    fns["loops"] = loops

    @CoverPoint(f"{ROOT}.alu.op_src_shift", xf=lambda k: k, bins=_alu_bins(cfg))
    def alu(k):
        pass
    fns["alu"] = alu

    @CoverPoint(f"{ROOT}.gemm.reset", xf=lambda k: k, bins=[0, 1])
    def gemm_reset(k):
        pass
    fns["gemm_reset"] = gemm_reset

    @CoverPoint(f"{ROOT}.deps.flags", xf=lambda k: k,
                bins=_flag_bins("load") + _flag_bins("compute") + _flag_bins("store"))
    def deps(k):
        pass
    fns["deps"] = deps

    @CoverPoint(f"{ROOT}.uop.reuse", xf=lambda k: k, bins=["fresh", "reused"])
    def reuse(k):
        pass
    fns["reuse"] = reuse

    @CoverPoint(f"{ROOT}.dma.burst_len", xf=lambda k: (k[0], k[1]), bins=_dma_bins(cfg, "len"))
    @CoverPoint(f"{ROOT}.dma.cross_4k", xf=lambda k: (k[0], k[2]),
                bins=[(d, c) for d in ("read", "write") for c in ("within", "crosses")])
    @CoverPoint(f"{ROOT}.dma.bus_remainder", xf=lambda k: (k[0], k[3]), bins=_dma_bins(cfg, "rem"))
    @CoverPoint(f"{ROOT}.dma.cross_x_remainder", xf=lambda k: (k[0], k[2], k[3]), bins=_dma_bins(cfg, "cross"))
    def dma(k):
        pass
    fns["dma"] = dma

    @CoverPoint(f"{ROOT}.axi.backpressure", xf=lambda k: k, bins=list(BACKPRESSURE))
    def backpressure(k):
        pass
    fns["backpressure"] = backpressure

    if cfg.POST_UNIT:
        for item, bins in _post_bins().items():
            fns[f"post_{item}"] = CoverPoint(f"{ROOT}.post.{item}", xf=lambda k: k, bins=bins)(lambda k: None)
    if cfg.DEPTHWISE:
        for item, bins in _depthwise_bins().items():
            fns[f"depthwise_{item}"] = CoverPoint(f"{ROOT}.depthwise.{item}", xf=lambda k: k, bins=bins)(lambda k: None)

    _DEFINED.update(cfg=cfg.name, fns=fns)
    return fns


_DEFINED: dict = {}


def _dma(fns, cfg, direction, addr, nbytes):
    """The AXI bursts of one row transfer (split at 4 KiB and at 256 beats, as the hardware's master does)."""
    bus = cfg.BUS_WIDTH // 8
    first, end = addr - addr % bus, addr + nbytes
    partial = "partial" if addr % bus or end % bus else "whole"
    beats = -(-(end - first) // bus)
    crosses = "crosses" if first // 4096 != (end - 1) // 4096 else "within"
    while beats:
        n = min(beats, 256, (4096 - first % 4096) // bus)
        cls = "1" if n == 1 else "2-15" if n < 16 else "16-255" if n < 256 else "256"
        fns["dma"]((direction, cls, crosses, partial))
        first += n * bus
        beats -= n


def sample_stream(device: FsimDevice, insn_addr: int, insn_count: int) -> None:
    """Sample one launched stream of ``device`` (its DRAM holds the instructions and micro-ops)."""
    cfg, isa = device.cfg, device.isa
    fns = _define(cfg)
    insns = isa.decode_stream(device.dram[insn_addr:insn_addr + insn_count * isa.insn_bytes])
    used_uops: set = set()
    for insn in insns:
        f, op = insn.f, Opcode(insn.f["opcode"])
        if op == Opcode.LOAD and f["memory_type"] in (MemId.INP, MemId.WGT):
            module = "load"
        else:
            module = "store" if op == Opcode.STORE else "compute"     # uop/acc loads run in compute
        fns["deps"]((module, tuple(int(f[k]) for k in FLAGS)))
        if op in (Opcode.LOAD, Opcode.STORE):
            mem = MemId(f["memory_type"])
            if not f["x_size"]:
                fns["opcode_mem"]((op.name, "NOP"))
                continue
            fns["opcode_mem"]((op.name, mem.name))
            fns["shape"]((mem.name, "x=1" if f["x_size"] == 1 else "x>1"))
            fns["shape"]((mem.name, "y=1" if f["y_size"] == 1 else "y>1"))
            fns["shape"]((mem.name, "stride=x" if f["x_stride"] == f["x_size"] else "stride>x"))
            for side in ("y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1"):
                if f[side]:
                    fns["pad"]((mem.name, side, _size_class(f[side])))
            eb = elem_bytes(cfg, mem)
            if mem == MemId.UOP:
                used_uops -= set(range(f["sram_base"], f["sram_base"] + f["x_size"]))
            for y in range(f["y_size"]):
                _dma(fns, cfg, "read" if op == Opcode.LOAD else "write", (f["dram_base"] + y * f["x_stride"]) * eb,
                     f["x_size"] * eb)
        elif op in (Opcode.GEMM, Opcode.ALU, Opcode.DEPTHWISE):
            fns["opcode_mem"]((op.name, "-"))
            fns["loops"]((op.name, "1" if f["iter_out"] == 1 else ">1", "1" if f["iter_in"] == 1 else ">1",
                          "1" if f["uop_end"] - f["uop_bgn"] == 1 else ">1"))
            span = set(range(f["uop_bgn"], f["uop_end"]))
            fns["reuse"]("reused" if span & used_uops else "fresh")
            used_uops |= span
            if op == Opcode.GEMM:
                fns["gemm_reset"](int(f["reset"]))
            elif op == Opcode.ALU:
                name = AluOp(f["alu_opcode"]).name
                sign = "-" if name != "SHR" or not f["use_imm"] else \
                    ("neg" if f["imm"] < 0 else "zero" if f["imm"] == 0 else "pos")
                fns["alu"]((name, "imm" if f["use_imm"] else "tensor", sign))
        else:
            fns["opcode_mem"]((op.name, "-"))


def _post_chain(x: np.ndarray, params: np.ndarray, residual: np.ndarray | None, events: set) -> np.ndarray:
    """POST's chain on rows ``x`` (sw.fsim.alu.post_op's steps), adding to ``events`` the stage bins they hit."""
    y = x.astype(np.int64)
    if residual is not None:
        for j, op in enumerate(POST_RESIDUAL_STEPS):
            residual = alu_op(op, residual, params[len(POST_STAGES) + j])

    def step(k, op, b):
        nonlocal y
        out = alu_op(op, y, b).astype(np.int64)
        if op in (AluOp.MAX, AluOp.MIN):
            hit = np.any(out != y)
        else:
            exact = y + b if op == AluOp.ADD else y * b if op == AluOp.MUL else \
                np.where(b < 0, y << np.clip(-b, 0, 31), out)       # SHR: a left shift may leave int32
            hit = np.any((exact < I32[0]) | (exact > I32[1]))
        if hit:
            events.add((k, op.name, "clips" if op in (AluOp.MAX, AluOp.MIN) else "wraps"))
        y = out
    for k, op in enumerate(POST_STAGES):
        step(k, op, params[k])
        if k == POST_RESIDUAL_STAGE and residual is not None:
            step("residual", AluOp.ADD, residual.astype(np.int64))
    return y


def sample_post(device: FsimDevice, f: dict) -> None:
    """Sample the POST instruction ``f`` that ``device`` is about to execute (its micro-ops in the uop SRAM, its
    parameter rows and operands in the acc SRAM): kernel shape, the stage events of the values it computes (micro-op
    by micro-op where one reads a row an earlier one writes), shift amounts, the residual's step operands (with the
    residual), where imm is."""
    cfg = device.cfg
    fns = _define(cfg)
    isa = isa_for(cfg)
    words = device.uop[f["uop_bgn"]:f["uop_end"]]
    d, s, _ = expand_uops(np.stack(isa.decode_uops(words), axis=-1), f, False)
    imm, residual = f["imm"], not f["use_imm"]
    if not d.size or not 0 <= imm <= cfg.ACC_DEPTH - POST_PARAM_ROWS or d.max() >= cfg.ACC_DEPTH \
            or s.max() >= cfg.ACC_DEPTH:
        return                                    # nothing runs, or the golden model refuses it
    fns["post_imm"]("first" if imm == 0 else "last" if imm == cfg.ACC_DEPTH - POST_PARAM_ROWS else "inside")
    reasons = [why for why, hit in zip(POST_IRREGULAR, (
        words.size > 1, d.size > 1 and not np.all(d[1:] > d[:-1]), residual and np.isin(s, d).any(),
        np.any((d >= imm) & (d < imm + POST_PARAM_ROWS)))) if hit]
    fns["post_kernel"](("residual" if residual else "none", "irregular" if reasons else "fast"))
    for why in reasons:
        fns["post_irregular"](why)
    raw = device.acc[imm:imm + POST_PARAM_ROWS].astype(np.int64)
    for k, op in enumerate(POST_STAGES):
        if op == AluOp.SHR:
            for c in {_shift_class(int(b)) for b in np.unique(raw[k])}:
                fns["post_shift"]((k, c))
    if residual:
        for j, op in enumerate(POST_RESIDUAL_STEPS):
            row = raw[len(POST_STAGES) + j]
            fns["post_residual_step"]((j, op.name, "identity" if np.all(row == IDENTITY[op]) else "other"))
    params, acc = raw, device.acc
    events: set = set()
    if np.unique(d).size == d.size and not (residual and np.isin(s, d).any()):
        _post_chain(acc[d], params, acc[s] if residual else None, events)
    else:                                         # in order, on the rows as earlier micro-ops leave them
        rows: dict = {}
        for dj, sj in zip(d.tolist(), s.tolist()):
            x = rows.get(dj, acc[dj])[None]
            r = rows.get(sj, acc[sj])[None] if residual else None
            rows[dj] = _post_chain(x, params, r, events)[0]
    for event in events:
        fns["post_stage"](event)


def sample_depthwise(device: FsimDevice, f: dict) -> None:
    """Sample the DEPTHWISE instruction ``f`` that ``device`` is about to execute (its micro-ops in the uop SRAM):
    reset; without reset the window bins (:data:`DW_WINDOW`: whether the fullest window holds BLOCK_IN executions'
    rows and from how many loop iterations, an iteration being one pass over the micro-ops) and the loop boundaries
    windows cross (:data:`DW_CROSSES`); the rows written more than once (:data:`DW_DST`)."""
    cfg = device.cfg
    fns = _define(cfg)
    words = device.uop[f["uop_bgn"]:f["uop_end"]]
    d, _, _ = expand_uops(np.stack(isa_for(cfg).decode_uops(words), axis=-1), f, True)
    if not d.size:
        return                                    # nothing runs
    fns["depthwise_reset"](int(f["reset"]))
    prev: dict[int, int] = {}                     # row -> the last execution writing it
    again: set[str] = set()
    for i, row in enumerate(d.tolist()):
        if row in prev:
            again.add("again next" if prev[row] == i - 1 else "again later")
        prev[row] = i
    for b in again or {"distinct"}:
        fns["depthwise_dst"](b)
    if f["reset"]:
        return                                    # the row is set to 0: no window is used
    n, k = int(words.size), cfg.BLOCK_IN
    e = np.arange(d.size)
    first = np.maximum(e - k + 1, 0)              # the oldest execution in each window
    span = int(np.max(e // n - first // n)) + 1
    fns["depthwise_window"](("full" if d.size >= k else "partial", str(span) if span < 3 else "3+"))
    # (a window holds the row of the execution before, so every later iteration's first window crosses a boundary)
    inner, outer = f["iter_in"] > 1, f["iter_out"] > 1
    fns["depthwise_crosses"]("both" if inner and outer else "iter_in" if inner else "iter_out" if outer else "none")


def sampled(device: FsimDevice) -> FsimDevice:
    """``device`` with its ``run`` sampling each launched stream first, and each POST and DEPTHWISE it executes
    (:func:`sample_post`, :func:`sample_depthwise`; the golden model of the regression)."""
    run = device.run

    def run_and_sample(insn_addr, insn_count, wait_cycles=None):
        try:
            sample_stream(device, insn_addr, insn_count)
        except ValueError:
            pass                       # a malformed stream: the run itself reports it
        return run(insn_addr, insn_count, wait_cycles)

    device.run = run_and_sample  # type: ignore[method-assign]  # this device's run, wrapped
    if device.cfg.POST_UNIT:
        alu = device._alu

        def alu_and_sample(f):
            if f["alu_opcode"] == AluOp.POST:
                sample_post(device, f)
            return alu(f)
        device._alu = alu_and_sample  # type: ignore[method-assign]  # this device's ALU step, wrapped
    if device.cfg.DEPTHWISE:
        depthwise = device._depthwise

        def depthwise_and_sample(f):
            sample_depthwise(device, f)
            return depthwise(f)
        device._depthwise = depthwise_and_sample  # type: ignore[method-assign]  # this device's DEPTHWISE, wrapped
    return device


def sample_backpressure(cfg: Config, stalls: dict) -> None:
    """One RTL program's stall cycles per channel (cosim.sim.axi_monitor.stall_counts differences): a bin per
    channel that waited at least once."""
    fns = _define(cfg)
    for direction, channel in BACKPRESSURE:
        if stalls.get(channel):
            fns["backpressure"]((direction, channel))


def define(cfg) -> None:
    """Register the coverage items of ``cfg`` (every bin at 0 hits), as sampling would."""
    _define(cfg)


def _items():
    return {name: item for name, item in coverage_db.items() if name.startswith(ROOT + ".") and
            not any(other != name and other.startswith(name + ".") for other in coverage_db)}


def snapshot() -> dict:
    """This process's coverage as counts: {item: {bin: hits}} (every bin, hit or not)."""
    return {name: dict(item.detailed_coverage) for name, item in _items().items()}


def delta(after: dict, before: dict) -> dict:
    """The hits of ``after`` not already in ``before`` (two snapshots of one process)."""
    return {name: {b: n - before.get(name, {}).get(b, 0) for b, n in bins.items()} for name, bins in after.items()}


def merge(into: dict, part: dict) -> dict:
    """Add the counts ``part`` into ``into`` (in place; bins that ``into`` lacks are added) and return it."""
    for name, bins in part.items():
        mine = into.setdefault(name, {})
        for b, n in bins.items():
            mine[b] = mine.get(b, 0) + n
    return into


def _counts(counts):
    return snapshot() if counts is None else counts


def holes(counts: dict | None = None) -> dict:
    """{coverage item: [bins never hit]}."""
    out = {}
    for name, bins in _counts(counts).items():
        missed = [b for b, hits in bins.items() if not hits]
        if missed:
            out[name] = missed
    return out


def bins_total(counts: dict | None = None) -> tuple:
    """(bins hit, bins) over every coverage item."""
    hit = total = 0
    for bins in _counts(counts).values():
        hit += sum(1 for h in bins.values() if h)
        total += len(bins)
    return hit, total


def report(counts: dict | None = None) -> str:
    if counts is None and not _DEFINED or counts is not None and not counts:
        return "functional coverage: nothing sampled"
    counts = _counts(counts)
    lines = ["functional coverage (bins hit / bins):"]
    for name, bins in sorted(counts.items()):
        n, got = len(bins), sum(1 for h in bins.values() if h)
        lines.append(f"  {name:28s} {got:4d} / {n:4d}  {100.0 * got / n:6.2f} %")
    hit, total = bins_total(counts)
    lines.append(f"  {'total':28s} {hit:4d} / {total:4d}  {100.0 * hit / total:6.2f} %")
    missing = holes(counts)
    lines.append("bins never hit:" + ("" if missing else " none"))
    for name, bins in sorted(missing.items()):
        lines.append(f"  {name}: {', '.join(map(str, bins))}")
    return "\n".join(lines)


def steer(probability: float = 0.3, counts: dict | None = None) -> dict:
    """The ``bias`` of :func:`sw.testing.fuzz.random_program` toward the holes ({} when every bin is hit)."""
    bias = {}
    for name, bins in holes(counts).items():
        if name.endswith("load.pad"):
            bias["pad"] = probability
        elif name.endswith("deps.flags"):
            bias["hub"] = probability
        elif name.endswith("uop.reuse"):
            bias["reuse"] = probability
        elif name.startswith(f"{ROOT}.post."):
            bias["post"] = probability
        elif name.startswith(f"{ROOT}.depthwise.") or any(isinstance(b, tuple) and b[0] == "DEPTHWISE" for b in bins):
            bias["depthwise"] = probability
        elif name.startswith(f"{ROOT}.dma"):
            if any("write" in map(str, b) for b in bins):
                bias["long_store"] = probability
            if any("read" in map(str, b) for b in bins):
                bias["big_kernel"] = round(probability / 3, 3)      # micro-op rows across 4 KiB
    return bias


def wants_stalls(counts: dict | None = None) -> bool:
    """Whether a backpressure bin is a hole (the generator cannot help: the memory must pause)."""
    return f"{ROOT}.axi.backpressure" in holes(counts)
