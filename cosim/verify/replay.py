"""Replayable programs: a failing run captured as an instruction stream, micro-ops and a data image.

A *program* (a plain dict, picklable and JSON-able through :func:`save`/:func:`load`) holds what one
run of the accelerator needs, independent of the runtime that built it:

* ``insns``: the decoded instruction stream (one field dict per instruction, ``kind`` included);
* ``image``: device memory as the runtime left it, up to the stream's end and every byte a LOAD or
  STORE touches (data, micro-ops), zlib-compressed;
* ``restore``: for each SRAM, the rows the stream reads before writing them and their contents on the
  golden model when the run began (a random program of a batch sees what earlier programs left).

:func:`replay_program` runs one on whatever target is current: it clears the low device memory,
reloads the SRAM rows with a short LOAD stream, writes the image and the stream, runs it and returns
the profiler counters and a digest of every 4 KiB page, or the error the target raised. The same
function runs on the golden model (called directly) and on the RTL (through ``cosim.run_many``).

:func:`record` captures a program from the golden model; :class:`Tracker` is the golden model that
also notes reads of SRAM rows nothing defined and micro-op hazards (what makes a program variant
unfit for comparison).
"""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sw import runtime
from sw.config import Config, load_config
from sw.fsim import COUNTER_NAMES, FsimDevice
from sw.isa import POST_PARAM_ROWS, AluOp, MemId, Opcode, isa_for
from sw.pipeline import elem_bytes
from sw.runtime.runners import Call

from .pages import CHECK_BYTES, PAGE, page_digests

__all__ = ["FORMAT", "CHECK_BYTES", "DRAM_BYTES", "record", "replay_program", "Tracker", "restore_ranges",
           "save", "load", "program_size", "listing", "config_of"]

FORMAT = "openvta-replay/1"
DRAM_BYTES = 64 << 20          # the golden device's memory (the testbench DRAM's default size)
WAIT_CYCLES = 1 << 31
SRAMS = {"inp": MemId.INP, "wgt": MemId.WGT, "acc": MemId.ACC, "uop": MemId.UOP}


def _depth(cfg, mem) -> int:
    return {MemId.INP: cfg.INP_DEPTH, MemId.WGT: cfg.WGT_DEPTH, MemId.ACC: cfg.ACC_DEPTH,
            MemId.UOP: cfg.UOP_DEPTH}[mem]


def _sram(device, mem) -> np.ndarray:
    """One SRAM of a golden device as (rows, bytes per row)."""
    return device._sram_bytes[mem]


# ---------------------------------------------------------------------- capture on the golden model
class _Recorder(FsimDevice):
    """The golden model, keeping its SRAMs, memory and stream as each run begins."""

    def run(self, insn_addr, insn_count, wait_cycles=None):
        ib = self.isa.insn_bytes
        self.snapshot = {"srams": {name: _sram(self, mem).copy() for name, mem in SRAMS.items()},
                         "insn_addr": insn_addr,
                         "raw": self.dram[insn_addr:insn_addr + insn_count * ib].copy()}
        end = insn_addr + insn_count * ib
        try:
            for insn in self.isa.decode_stream(self.snapshot["raw"]):
                if insn.kind == "mem" and insn.f["x_size"]:      # every byte a LOAD or STORE may touch
                    f = insn.f
                    eb = elem_bytes(self.cfg, f["memory_type"])
                    end = max(end, (f["dram_base"] + (f["y_size"] - 1) * f["x_stride"] + f["x_size"]) * eb)
        except (ValueError, KeyError):
            pass
        self.snapshot["image"] = self.dram[:min(end, len(self.dram))].copy()
        return super().run(insn_addr, insn_count, wait_cycles)


def record(calls: Sequence[Call], config: Config | str | None, index: int | None = None) -> dict:
    """The program of the last run of call ``index`` of ``calls`` ((fn, args, kwargs), run in order on
    one golden device with a fresh runtime each, as a batch runs on the RTL)."""
    cfg = load_config(config)
    device = _Recorder(cfg, dram_bytes=DRAM_BYTES)
    index = len(calls) - 1 if index is None else index
    for fn, args, kwargs in calls[:index + 1]:
        device.snapshot = None
        with runtime.use_target(device):
            try:
                fn(*args, **kwargs)
            except Exception:  # noqa: BLE001 - a failing call still leaves its stream in the snapshot
                pass
    snap = device.snapshot
    if snap is None:
        raise ValueError(f"call {index} ran nothing on the device: no program to record")
    isa = isa_for(cfg)
    insns = [dict(kind=i.kind, **i.f) for i in isa.decode_stream(snap["raw"])]
    program: dict[str, Any] = {
        "config": cfg.to_dict(), "config_name": cfg.name, "insn_addr": int(snap["insn_addr"]), "insns": insns,
        "image": zlib.compress(snap["image"].tobytes(), 6), "restore": {}}
    for name, (lo, hi) in restore_ranges(program).items():
        program["restore"][name] = [lo, zlib.compress(snap["srams"][name][lo:hi].tobytes(), 6)]
    return program


def config_of(program: dict) -> Config:
    """The config a program was recorded on (under its own name, so that its RTL model is the cached one)."""
    return Config.from_dict(dict(program["config"]), name=program.get("config_name", "replay"))


# ---------------------------------------------------------------------- the golden model that watches reads
class Tracker(FsimDevice):
    """The golden model noting SRAM rows read before anything defined them, and micro-op hazards.

    A GEMM reads its inp, wgt and destination rows; a DEPTHWISE its inp and wgt rows (it overwrites its destinations);
    with reset neither reads anything. An ALU instruction reads its destination rows, its tensor operand's rows and,
    for POST, its parameter rows. A row is defined once a LOAD (the restore stream's included) or a
    GEMM/DEPTHWISE/ALU destination wrote it. ``undefined`` maps each SRAM to a bool array of rows read while
    undefined; ``hazard`` is the first micro-op hazard seen (a GEMM or ALU micro-op writing the acc row one of the two
    before it wrote; a DEPTHWISE never reads its destinations, so it has none), or None.
    """

    def __init__(self, cfg: Config, dram_bytes: int = DRAM_BYTES) -> None:
        super().__init__(cfg, dram_bytes=dram_bytes)
        self.defined = {m: np.zeros(_depth(self.cfg, m), dtype=bool) for m in SRAMS.values()}
        self.undefined = {m: np.zeros(_depth(self.cfg, m), dtype=bool) for m in SRAMS.values()}
        self.hazard = None

    def _read(self, mem, rows):
        rows = np.asarray(rows, dtype=np.int64)
        self.undefined[mem][rows[~self.defined[mem][rows]]] = True

    def _load(self, f):
        super()._load(f)
        if f["x_size"]:
            mem = MemId.ACC if f["memory_type"] == MemId.ACC_8BIT else MemId(f["memory_type"])
            n = (f["x_pad_0"] + f["x_size"] + f["x_pad_1"]) * (f["y_pad_0"] + f["y_size"] + f["y_pad_1"])
            self.defined[mem][f["sram_base"]:f["sram_base"] + n] = True

    def _store(self, f):
        if f["x_size"]:
            self._read(MemId.ACC, np.arange(f["sram_base"], f["sram_base"] + f["x_size"] * f["y_size"]))
        super()._store(f)

    def _indices(self, f, kind):
        self._read(MemId.UOP, np.arange(f["uop_bgn"], f["uop_end"]))
        d, s, w, memo = super()._indices(f, kind)
        gemm_reset = kind == "gemm" and f["reset"]
        depthwise = f["opcode"] == Opcode.DEPTHWISE
        if kind == "gemm":
            if not gemm_reset:
                self._read(MemId.INP, s)
                self._read(MemId.WGT, w)
                if not depthwise:
                    self._read(MemId.ACC, d)
        else:
            self._read(MemId.ACC, d)
            if not f["use_imm"]:
                self._read(MemId.ACC, s)
            if f["alu_opcode"] == AluOp.POST and d.size:           # its parameter rows
                self._read(MemId.ACC, np.arange(f["imm"], f["imm"] + POST_PARAM_ROWS))
        if not gemm_reset and not depthwise and self.hazard is None:
            for lag in (1, 2):
                hit = np.flatnonzero(d[lag:] == d[:-lag]) if d.size > lag else []
                if len(hit):
                    self.hazard = f"micro-op execution {int(hit[0]) + lag} rewrites acc row {int(d[hit[0]])} {lag} after"
                    break
        self.defined[MemId.ACC][d] = True
        return d, s, w, memo


def restore_ranges(program: dict) -> dict:
    """For each SRAM, the row range [lo, hi) covering every row the stream reads before writing it."""
    cfg = config_of(program)
    device = Tracker(cfg)
    bare = dict(program, restore={})
    with runtime.use_target(device):
        out = replay_program(bare)
    if out.get("error"):
        raise ValueError(f"the program does not run on the golden model: {out['error']}: {out['message']}")
    ranges = {}
    for name, mem in SRAMS.items():
        rows = np.flatnonzero(device.undefined[mem])
        if rows.size:
            ranges[name] = (int(rows[0]), int(rows[-1]) + 1)
    return ranges


# ---------------------------------------------------------------------- running a program
def _encode(isa, insns) -> np.ndarray:
    return isa.words_to_array(isa.formats[f["kind"]].encode({k: v for k, v in f.items() if k != "kind"})
                              for f in insns)


def _restore_stream(cfg, program, base: int):
    """(bytes to write at ``base``, LOAD stream) that put the recorded rows back into each SRAM."""
    blobs: list = []
    loads: dict[str, list] = {"load": [], "compute": []}
    addr = base
    for name, (lo, blob) in sorted(program["restore"].items()):
        mem = SRAMS[name]
        data = zlib.decompress(blob)
        eb = elem_bytes(cfg, mem)
        rows = len(data) // eb
        addr = -(-addr // PAGE) * PAGE
        blobs.append((addr, data))
        for first in range(0, rows, 0xFFFF):            # x_size is a 16-bit field
            n = min(0xFFFF, rows - first)
            insn = dict(opcode=Opcode.LOAD, memory_type=int(mem), sram_base=lo + first,
                        dram_base=addr // eb + first, y_size=1, x_size=n, x_stride=n)
            loads["load" if mem in (MemId.INP, MemId.WGT) else "compute"].append(insn)
        addr += len(data)
    if not blobs:
        return [], []
    stream = list(loads["load"])
    if stream:
        stream[-1]["push_next"] = 1            # load -> compute: the compute loads and FINISH wait for them
        stream.append(dict(opcode=Opcode.LOAD, memory_type=int(MemId.UOP), pop_prev=1))
    stream += loads["compute"] + [dict(opcode=Opcode.FINISH)]
    return blobs, stream




def replay_program(program: dict, fault: str | None = None) -> dict:
    """Run ``program`` on the current target (with the named fault of :mod:`cosim.verify.injected`, if any).

    Returns ``{"counters", "pages"}`` or ``{"error": type name, "message"}``: errors are results, so
    that many programs run in one simulator launch.
    """
    from ..sim import axi_monitor
    from . import injected

    q = runtime.current()
    isa = q.isa
    target = injected.with_fault(q.target, fault) if fault else q.target
    image = np.frombuffer(zlib.decompress(program["image"]), dtype=np.uint8)
    insn_addr, insns = program["insn_addr"], program["insns"]
    stream_end = insn_addr + len(insns) * isa.insn_bytes
    clear = -(-max(CHECK_BYTES, stream_end, image.size) // PAGE) * PAGE
    try:
        with axi_monitor.raw_image():              # a raw image: no runtime allocated its buffers
            return _replay_runs(program, q, target, insns, insn_addr, image, clear)
    except Exception as err:  # noqa: BLE001 - the error is the result
        return {"error": type(err).__name__, "message": str(err)}


def _replay_runs(program, q, target, insns, insn_addr, image, clear) -> dict:
    """The restore stream (if any), then the program, on ``target``."""
    cfg, isa, dram = q.cfg, q.isa, q.dram
    raw = _encode(isa, insns)
    blobs, restore = _restore_stream(cfg, program, clear)
    dram[:clear + sum(len(b) + PAGE for _, b in blobs) + PAGE] = 0
    if restore:
        for addr, data in blobs:
            dram[addr:addr + len(data)] = np.frombuffer(data, dtype=np.uint8)
        r_raw = isa.words_to_array(isa.encode(**f) for f in restore)
        r_addr = -(-max(a + len(d) for a, d in blobs) // PAGE) * PAGE
        dram[r_addr:r_addr + r_raw.size] = r_raw
        q.target.run(r_addr, len(restore), WAIT_CYCLES)     # the restore stream never runs faulty
        dram[clear:r_addr + r_raw.size] = 0
    dram[:image.size] = image
    dram[insn_addr:insn_addr + raw.size] = raw
    counters = target.run(insn_addr, len(insns), WAIT_CYCLES)
    return {"counters": {k: int(counters[k]) for k in COUNTER_NAMES}, "pages": page_digests(dram)}


# ---------------------------------------------------------------------- files and reports
def _jsonable(value):
    if isinstance(value, bytes):
        return {"zlib-base64": base64.b64encode(value).decode()}
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.integer):
        return int(value)
    return value


def _from_json(value):
    if isinstance(value, dict):
        if set(value) == {"zlib-base64"}:
            return base64.b64decode(value["zlib-base64"])
        return {k: _from_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_from_json(v) for v in value]
    return value


def save(path: str | Path, replay: dict) -> Path:
    """Write a replay (``{"program", "fault", "seed", "failure", ...}``) as a self-contained JSON file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    body = dict(replay, format=FORMAT)
    body["listing"] = listing(replay["program"]).splitlines()
    path.write_text(json.dumps(_jsonable(body), indent=1) + "\n")
    return path


def load(path: str | Path) -> dict:
    body = _from_json(json.loads(Path(path).read_text()))
    if body.get("format") != FORMAT:
        raise ValueError(f"{path}: format {body.get('format')!r}; this reader knows {FORMAT!r}")
    return body


def listing(program: dict) -> str:
    """The disassembly of a program's stream, one instruction a line."""
    isa = isa_for(config_of(program))
    lines = []
    for i, f in enumerate(program["insns"]):
        fields = {k: v for k, v in f.items() if k != "kind"}
        lines.append(f"{i:4d} {isa.disasm(isa.decode(isa.formats[f['kind']].encode(fields)))}")
    return "\n".join(lines)


def program_size(program: dict) -> dict:
    """How big a program is: instructions (NOPs included), micro-op executions and bytes it moves."""
    cfg = config_of(program)
    work = nops = moved = 0
    for f in program["insns"]:
        if f["opcode"] in (Opcode.GEMM, Opcode.ALU, Opcode.DEPTHWISE):
            work += max(0, f["uop_end"] - f["uop_bgn"]) * f["iter_out"] * f["iter_in"]
        elif f["opcode"] in (Opcode.LOAD, Opcode.STORE):
            if f["x_size"] == 0:
                nops += 1
            else:
                moved += f["x_size"] * f["y_size"] * elem_bytes(cfg, f["memory_type"])
    return {"insns": len(program["insns"]), "nops": nops, "uop_executions": work, "bytes_moved": moved}
