"""The VTA runtime API (DESIGN §5, reference §5) on any target, also exported as tvm-ffi functions.

A :class:`CommandQueue` builds one instruction stream for a *target*: an object with ``cfg``, a
numpy ``dram`` (uint8, the device memory, shared without copying) and
``run(insn_addr, insn_count, wait_cycles) -> counters``. :class:`sw.fsim.FsimDevice` is the golden
target; cosim provides the RTL one. The module-level functions are VTA's C API in Python; importing
this module registers each of them as a tvm-ffi global function under the same name (and with a
``vta.`` prefix).

Everything a user passes is checked here, before it reaches a target: fields that do not fit,
SRAM and DRAM ranges, memory types, dependency directions, the micro-op hazard rule, and (at
``synchronize``) a token-level dry run of the whole stream that reports a deadlock by naming what
each module would wait for.
"""

from __future__ import annotations

import itertools
import sys
from contextlib import contextmanager

import numpy as np

from .config import Config, load_config
from .fsim import FsimDevice
from .isa import (AluOp, Insn, MemId, Opcode, STAGE_COMPUTE, STAGE_LOAD, STAGE_NAMES, STAGE_STORE, EncodeError,
                  alu_opcode_error, expand_uops, isa_for, uop_index_error)
from .memory import BufferError, DeviceMemory
from .pipeline import InsnError, VTAError, check_insn, elem_bytes, schedule

__all__ = [
    "CommandQueue", "UopKernel", "RuntimeError_", "current", "set_current", "use_target", "make_target",
    "command_handle", "buffer_alloc", "buffer_free", "buffer_copy", "buffer_cpu_ptr", "load_2d", "store_2d",
    "uop_loop_begin", "uop_loop_end", "uop_push", "push_gemm_op", "push_alu_op", "dep_push", "dep_pop",
    "synchronize", "write_barrier", "read_barrier", "set_debug_mode", "runtime_shutdown",
    "DEBUG_DUMP_INSN", "DEBUG_DUMP_UOP", "DEBUG_SKIP_READ_BARRIER", "DEBUG_SKIP_WRITE_BARRIER",
    "DEBUG_FORCE_SERIAL", "QID_LOAD", "QID_COMPUTE", "QID_STORE",
]

DEBUG_DUMP_INSN = 1 << 1
DEBUG_DUMP_UOP = 1 << 2
DEBUG_SKIP_READ_BARRIER = 1 << 3
DEBUG_SKIP_WRITE_BARRIER = 1 << 4
DEBUG_FORCE_SERIAL = 1 << 5

QID_LOAD, QID_COMPUTE, QID_STORE = STAGE_LOAD, STAGE_COMPUTE, STAGE_STORE

DEFAULT_MAX_INSNS = 1 << 16
# the most instructions one API call can append (2 compute NOPs, 2 memory NOPs, 1 NOP, FINISH)
_MAX_INSNS_PER_CALL = 6
_UOP_STAGE_CHUNK = 1 << 16
_KIND_FROM_VTA, _KIND_TO_VTA = 2, 1

RuntimeError_ = VTAError  # the base class of every error the runtime raises


class UopKernel:
    """A recorded micro-kernel: its micro-ops, up to two loops, and its mode and ALU operation."""

    def __init__(self, cfg):
        self.cfg = cfg
        self.uops: list[tuple[int, int, int]] = []
        self.loops: list[tuple[int, int, int, int]] = []
        self.mode = None          # 0 GEMM, 1 ALU
        self.reset = 0
        self.alu_opcode = 0
        self.use_imm = 0
        self.imm = 0
        self.dram_addr = None     # where its encoded micro-ops live in device memory
        self.sram_begin = None    # its range in the uop SRAM while resident

    @property
    def sram_end(self):
        return None if self.sram_begin is None else self.sram_begin + len(self.uops)

    def loop_fields(self) -> dict:
        """Instruction loop fields (reference §5.3: GEMM puts a single loop outside, ALU inside)."""
        loops = [(1, 0, 0, 0), (1, 0, 0, 0)]
        if len(self.loops) == 2:
            loops = list(self.loops)
        elif len(self.loops) == 1:
            loops[0 if self.mode == 0 else 1] = self.loops[0]
        (eo, do, so, wo), (ei, di, si, wi) = loops
        f = dict(iter_out=eo, iter_in=ei, dst_factor_out=do, dst_factor_in=di,
                 src_factor_out=so, src_factor_in=si)
        if self.mode == 0:
            f.update(wgt_factor_out=wo, wgt_factor_in=wi)
        return f

    def dump(self, isa) -> str:
        mode = "GEMM" if self.mode == 0 else f"ALU {AluOp(self.alu_opcode).name}"
        head = f"kernel {mode}{' reset' if self.reset else ''}"
        if self.mode == 1:
            head += f" {'imm=' + str(self.imm) if self.use_imm else 'tensor'}"
        lines = [head + " loops=" + ", ".join(f"(extent={e}, dst={d}, src={s}, wgt={w})" for e, d, s, w in self.loops)]
        for i, (d, s, w) in enumerate(self.uops):
            lines.append(f"  uop {i:4d}: " + isa.disasm_uop(isa.encode_uop(d, s, w), "gemm" if self.mode == 0 else "alu"))
        return "\n".join(lines)


class CommandQueue:
    """The instruction and micro-op queues of one runtime bound to one target."""

    _handles = itertools.count(1)

    def __init__(self, target, max_insns: int = DEFAULT_MAX_INSNS, debug: int = 0):
        if max_insns < 2 * _MAX_INSNS_PER_CALL:
            raise VTAError(f"max_insns = {max_insns}; allowed range [{2 * _MAX_INSNS_PER_CALL}, ...)")
        self.target = target
        self.cfg: Config = target.cfg
        self.isa = isa_for(self.cfg)
        self.memory = DeviceMemory(len(target.dram))
        self.handle = next(self._handles)
        self.max_insns = max_insns
        self.debug = debug
        self.out = sys.stdout
        self.insns: list[Insn] = []
        self.pending_pop_prev = {s: 0 for s in STAGE_NAMES}
        self.pending_pop_next = {s: 0 for s in STAGE_NAMES}
        self.kernels: dict = {}
        self.uop_cache: list[UopKernel] = []
        self.uop_sram_end = 0
        self._uop_chunk = None        # (buffer, used bytes) of the current uop staging chunk
        self._insn_buf = None
        self.recording: UopKernel | None = None
        self.last_counters: dict = {}
        self.runs = 0

    # ------------------------------------------------------------------ buffers
    @property
    def dram(self) -> np.ndarray:
        return self.target.dram

    def resolve(self, obj, what: str) -> tuple[int, object]:
        """(device address, buffer) of a handle or of a tensor that views device memory."""
        if isinstance(obj, (int, np.integer)) and not isinstance(obj, bool):
            buf = self.memory.get(int(obj), what)
            return buf.phys, buf
        try:
            arr = np.from_dlpack(obj)
        except Exception:
            raise BufferError(f"{what}: {type(obj).__name__} is neither a buffer handle nor a DLPack tensor "
                              f"that views device memory") from None
        ptr = arr.ctypes.data
        base = self.dram.ctypes.data
        phys = ptr - base
        if not 0 <= phys < len(self.dram):
            raise BufferError(f"{what}: the tensor at host address {ptr:#x} is not device memory (device memory "
                              f"is [{base:#x}, {base + len(self.dram):#x}); allocate with buffer_alloc and view it "
                              f"with buffer_cpu_ptr)")
        return phys, self.memory.find(phys, what)

    def alloc(self, nbytes: int) -> int:
        return self.memory.alloc(nbytes).handle

    def free(self, handle: int) -> None:
        self.memory.free(handle)

    def cpu_view(self, handle) -> np.ndarray:
        buf = self.memory.get(handle, "buffer_cpu_ptr")
        return self.dram[buf.phys:buf.end]

    # ------------------------------------------------------------------ instructions
    def _new_insn(self, stage: int, _checked=False, **fields) -> Insn:
        opcode = fields["opcode"]
        kind = self.isa.kind_of(opcode)
        f = dict.fromkeys(self.isa.formats[kind].fields, 0)
        f.update(fields)
        if not _checked:
            try:
                self.isa.formats[kind].encode(f)
            except EncodeError as err:
                raise InsnError(str(err)) from None
        f["pop_prev"] = self.pending_pop_prev[stage]
        f["pop_next"] = self.pending_pop_next[stage]
        self.pending_pop_prev[stage] = self.pending_pop_next[stage] = 0
        insn = Insn(kind, f)
        assert insn.stage == stage, (insn, stage)
        self.insns.append(insn)
        return insn

    def _nop(self, stage: int) -> Insn:
        if stage == STAGE_STORE:
            return self._new_insn(stage, opcode=Opcode.STORE, memory_type=MemId.UOP)
        mem = MemId.INP if stage == STAGE_LOAD else MemId.UOP
        return self._new_insn(stage, opcode=Opcode.LOAD, memory_type=mem)

    def _commit_pending_pops(self, stage: int):
        if self.pending_pop_prev[stage] or self.pending_pop_next[stage]:
            self._nop(stage)

    def _check_overflow(self):
        if len(self.insns) + _MAX_INSNS_PER_CALL > self.max_insns:
            self.synchronize(1 << 31)

    def _check_qids(self, what, from_qid, to_qid):
        for name, q in (("from_qid", from_qid), ("to_qid", to_qid)):
            if q not in STAGE_NAMES:
                raise VTAError(f"{what}: {name} = {q!r}; allowed: 1 (load), 2 (compute), 3 (store)")
        if abs(from_qid - to_qid) != 1:
            raise VTAError(f"{what}: no token queue from {STAGE_NAMES[from_qid]} ({from_qid}) to "
                           f"{STAGE_NAMES[to_qid]} ({to_qid}); queues join neighbouring stages only "
                           f"(1<->2, 2<->3)")

    def dep_pop(self, from_qid: int, to_qid: int):
        self._check_qids("dep_pop", from_qid, to_qid)
        pending = self.pending_pop_prev if from_qid < to_qid else self.pending_pop_next
        if pending[to_qid]:
            self._nop(to_qid)   # commit the older pop of the same kind first
        pending[to_qid] = 1

    def dep_push(self, from_qid: int, to_qid: int):
        self._check_qids("dep_push", from_qid, to_qid)
        self._commit_pending_pops(from_qid)
        flag = "push_next" if from_qid < to_qid else "push_prev"
        if self.insns and self.insns[-1].stage == from_qid and not self.insns[-1].f[flag]:
            self.insns[-1].f[flag] = 1
        else:
            insn = self._nop(from_qid)
            insn.f[flag] = 1

    def load_2d(self, src, src_elem_offset, x_size, y_size, x_stride, x_pad_before, y_pad_before,
                x_pad_after, y_pad_after, dst_sram_index, dst_memory_type):
        allowed = (MemId.INP, MemId.WGT, MemId.ACC, MemId.ACC_8BIT)
        if dst_memory_type not in [int(m) for m in allowed]:
            raise InsnError(f"load_2d: dst_memory_type = {dst_memory_type!r}; allowed: "
                            + ", ".join(f"{int(m)} {m.name}" for m in allowed))
        mem = MemId(dst_memory_type)
        dram_base = self._dram_base("load_2d", src, src_elem_offset, mem, x_size, y_size, x_stride)
        stage = STAGE_LOAD if mem in (MemId.INP, MemId.WGT) else STAGE_COMPUTE
        fields = dict(opcode=Opcode.LOAD, memory_type=mem, sram_base=dst_sram_index, dram_base=dram_base,
                      y_size=y_size, x_size=x_size, x_stride=x_stride, y_pad_0=y_pad_before,
                      y_pad_1=y_pad_after, x_pad_0=x_pad_before, x_pad_1=x_pad_after)
        self._checked_insn("load_2d", stage, fields)
        self._check_overflow()

    def store_2d(self, src_sram_index, src_memory_type, dst, dst_elem_offset, x_size, y_size, x_stride):
        if src_memory_type != MemId.OUT:
            raise InsnError(f"store_2d: src_memory_type = {src_memory_type!r}; allowed: 4 OUT")
        dram_base = self._dram_base("store_2d", dst, dst_elem_offset, MemId.OUT, x_size, y_size, x_stride)
        fields = dict(opcode=Opcode.STORE, memory_type=MemId.OUT, sram_base=src_sram_index, dram_base=dram_base,
                      y_size=y_size, x_size=x_size, x_stride=x_stride)
        self._checked_insn("store_2d", STAGE_STORE, fields)
        self._check_overflow()

    def _checked_insn(self, what, stage, fields):
        # validate a copy first so that a bad call leaves the queue and its pending pops untouched
        kind = self.isa.kind_of(fields["opcode"])
        probe = dict.fromkeys(self.isa.formats[kind].fields, 0)
        probe.update(fields)
        try:
            self.isa.formats[kind].encode(probe)
            check_insn(self.cfg, Insn(kind, probe), where=what)
        except EncodeError as err:
            raise InsnError(f"{what}: {err}") from None
        return self._new_insn(stage, _checked=True, **fields)

    def _dram_base(self, what, obj, elem_offset, mem, x_size, y_size, x_stride) -> int:
        for name, v in (("elem_offset", elem_offset), ("x_size", x_size), ("y_size", y_size), ("x_stride", x_stride)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise InsnError(f"{what}: {name} = {v!r} must be a non-negative integer")
        phys, buf = self.resolve(obj, what)
        eb = elem_bytes(self.cfg, mem)
        if phys % eb:
            raise BufferError(f"{what}: device address {phys:#x} is not aligned to the {mem.name} element size "
                              f"({eb} bytes)")
        dram_base = phys // eb + int(elem_offset)
        if x_size:
            start = dram_base * eb
            end = (dram_base + (y_size - 1) * x_stride + x_size) * eb if y_size else start
            if start < buf.phys or end > buf.end:
                raise BufferError(
                    f"{what}: the access covers device bytes [{start:#x}, {end:#x}) but the buffer is "
                    f"[{buf.phys:#x}, {buf.end:#x}) ({buf.nbytes} bytes); elem_offset = {elem_offset}, "
                    f"x_size = {x_size}, y_size = {y_size}, x_stride = {x_stride} in {eb}-byte elements")
        return dram_base

    # ------------------------------------------------------------------ micro-kernels
    def push_op(self, mode: int, kernel, key):
        name = "push_gemm_op" if mode == 0 else "push_alu_op"
        if not callable(kernel):
            raise VTAError(f"{name}: kernel must be a callable that records micro-ops, got {type(kernel).__name__}")
        try:
            cache_key = (kernel, key)
            k = self.kernels.get(cache_key)
        except TypeError:
            raise VTAError(f"{name}: key {key!r} is not hashable") from None
        if k is None:
            k = self._record(name, kernel, mode)
            self.kernels[cache_key] = k
        elif k.mode != mode:
            raise VTAError(f"{name}: the kernel for key {key!r} was recorded as "
                           f"{'GEMM' if k.mode == 0 else 'ALU'}")
        fields = k.loop_fields()
        self._check_kernel_indices(name, k, fields)
        self._make_resident(k)
        if mode == 0:
            self._new_insn(STAGE_COMPUTE, opcode=Opcode.GEMM, reset=k.reset, uop_bgn=k.sram_begin,
                           uop_end=k.sram_end, **fields)
        else:
            self._new_insn(STAGE_COMPUTE, opcode=Opcode.ALU, uop_bgn=k.sram_begin, uop_end=k.sram_end,
                           alu_opcode=k.alu_opcode, use_imm=k.use_imm, imm=k.imm, **fields)
        self._check_overflow()

    def _record(self, name, kernel, mode) -> UopKernel:
        global _RECORDING
        if _RECORDING is not None:
            raise VTAError(f"{name}: called while another micro-kernel is being recorded")
        k = UopKernel(self.cfg)
        _RECORDING = k
        try:
            kernel()
        finally:
            _RECORDING = None
        if not k.uops:
            raise VTAError(f"{name}: the kernel recorded no micro-ops")
        if k.mode != mode:
            raise VTAError(f"{name}: the kernel recorded {'GEMM' if k.mode == 0 else 'ALU'} micro-ops")
        if len(k.uops) > self.cfg.UOP_DEPTH:
            raise VTAError(f"{name}: the kernel has {len(k.uops)} micro-ops; the uop SRAM holds "
                           f"{self.cfg.UOP_DEPTH} (allowed range [1, {self.cfg.UOP_DEPTH}])")
        problem = alu_opcode_error(self.cfg, k.alu_opcode) if k.mode == 1 else None
        if problem:
            raise InsnError(f"{name}: {problem}")
        self._stage_uops(k)
        if self.debug & DEBUG_DUMP_UOP:
            print(k.dump(self.isa), file=self.out)
        return k

    def _stage_uops(self, k: UopKernel):
        """Append the kernel's encoded micro-ops to device memory once (never relocated)."""
        words = np.array([self.isa.encode_uop(*u) for u in k.uops], dtype=np.uint32)
        nbytes = words.nbytes
        if self._uop_chunk is None or self._uop_chunk[1] + nbytes > self.memory.buffers[self._uop_chunk[0]].nbytes:
            handle = self.alloc(max(_UOP_STAGE_CHUNK, nbytes))
            self._uop_chunk = [handle, 0]
        buf = self.memory.buffers[self._uop_chunk[0]]
        addr = buf.phys + self._uop_chunk[1]
        self.dram[addr:addr + nbytes] = words.view(np.uint8)
        self._uop_chunk[1] += nbytes
        k.dram_addr = addr

    def _check_kernel_indices(self, name, k: UopKernel, f: dict):
        """Every index the instruction will touch is in range, and the hazard rule holds across loops."""
        d, s, w = expand_uops(k.uops, f, k.mode == 0)
        problem = uop_index_error(self.cfg, d, s, w, k.mode == 0)
        if problem:
            raise InsnError(f"{name}: {problem}")
        if not (k.mode == 0 and k.reset):
            for lag in (1, 2):
                hit = np.flatnonzero(d[lag:] == d[:-lag]) if d.size > lag else []
                if len(hit):
                    j = int(hit[0]) + lag
                    raise InsnError(f"{name}: micro-op hazard: execution {j} writes acc row {int(d[j])}, which the "
                                    f"micro-op {lag} before it also writes (reference §3.3: a micro-op may not write "
                                    f"the acc row written by either of the two previous ones; reorder the loops)")

    def _make_resident(self, k: UopKernel):
        if k.sram_begin is not None:
            return
        n = len(k.uops)
        if self.uop_sram_end + n > self.cfg.UOP_DEPTH:
            for c in self.uop_cache:
                c.sram_begin = None
            self.uop_cache = []
            self.uop_sram_end = 0
        k.sram_begin = self.uop_sram_end
        self.uop_sram_end += n
        self.uop_cache.append(k)
        self._new_insn(STAGE_COMPUTE, opcode=Opcode.LOAD, memory_type=MemId.UOP, sram_base=k.sram_begin,
                       dram_base=k.dram_addr // self.cfg.UOP_ELEM_BYTES, y_size=1, x_size=n, x_stride=n)

    # ------------------------------------------------------------------ running
    def synchronize(self, wait_cycles: int = 1 << 31) -> dict:
        """Close the stream (DESIGN §5: final tokens and FINISH), check it, run it and wait."""
        self.dep_push(QID_STORE, QID_COMPUTE)
        self.dep_push(QID_LOAD, QID_COMPUTE)
        self.dep_pop(QID_STORE, QID_COMPUTE)
        self.dep_pop(QID_LOAD, QID_COMPUTE)
        self._commit_pending_pops(STAGE_COMPUTE)
        self._new_insn(STAGE_COMPUTE, opcode=Opcode.FINISH)
        insns = self.insns
        try:
            if any(self.pending_pop_prev.values()) or any(self.pending_pop_next.values()):
                raise VTAError("synchronize: dependency pops are still pending")
            if self.debug & DEBUG_DUMP_INSN:
                print(self.dump(), file=self.out)
            schedule(self.cfg, insns, None, self.isa.disasm)   # token-level dry run: deadlocks never reach a target
            addr = self._write_insns(insns)
            counters = self.target.run(addr, len(insns), wait_cycles)
        finally:
            self._reset_stream()
        self.last_counters = dict(counters)
        self.runs += 1
        return counters

    def _write_insns(self, insns) -> int:
        raw = self.isa.words_to_array(self.isa.formats[i.kind].encode(i.f) for i in insns)
        if self._insn_buf is None or self.memory.buffers[self._insn_buf].nbytes < raw.nbytes:
            if self._insn_buf is not None:
                self.free(self._insn_buf)
            self._insn_buf = self.alloc(max(raw.nbytes, self.max_insns * self.isa.insn_bytes))
        buf = self.memory.buffers[self._insn_buf]
        self.dram[buf.phys:buf.phys + raw.nbytes] = raw
        return buf.phys

    def _reset_stream(self):
        self.insns = []
        for s in STAGE_NAMES:
            self.pending_pop_prev[s] = self.pending_pop_next[s] = 0
        for k in self.uop_cache:
            k.sram_begin = None
        self.uop_cache = []
        self.uop_sram_end = 0

    def dump(self) -> str:
        """The queued stream, one instruction a line, with the token counts after each."""
        tokens = {"l2g": 0, "g2l": 0, "g2s": 0, "s2g": 0}
        push = {STAGE_LOAD: {"push_next": "l2g"}, STAGE_COMPUTE: {"push_prev": "g2l", "push_next": "g2s"},
                STAGE_STORE: {"push_prev": "s2g"}}
        pop = {STAGE_LOAD: {"pop_next": "g2l"}, STAGE_COMPUTE: {"pop_prev": "l2g", "pop_next": "s2g"},
               STAGE_STORE: {"pop_prev": "g2s"}}
        lines = [f"instruction stream ({len(self.insns)} instructions, config {self.cfg.name})"]
        for i, insn in enumerate(self.insns):
            for flag, q in pop[insn.stage].items():
                tokens[q] -= insn.f[flag]
            for flag, q in push[insn.stage].items():
                tokens[q] += insn.f[flag]
            counts = " ".join(f"{q}={n}" for q, n in tokens.items())
            lines.append(f"{i:6d} {STAGE_NAMES[insn.stage]:7s} {self.isa.disasm(insn):90s} {counts}")
        return "\n".join(lines)


# ---------------------------------------------------------------------- the current runtime
_RECORDING: UopKernel | None = None
_QUEUES: dict[int, CommandQueue] = {}
_CURRENT: CommandQueue | None = None


def make_target(config=None):
    """The golden-model target for a config (a Config, a JSON path, or None for VTA_CONFIG/default)."""
    return FsimDevice(load_config(config))


def set_current(queue: CommandQueue | None) -> CommandQueue | None:
    """Make ``queue`` the runtime that the API functions use; return the previous one."""
    global _CURRENT
    previous = _CURRENT
    _CURRENT = queue
    if queue is not None:
        _QUEUES[queue.handle] = queue
    return previous


def current() -> CommandQueue:
    """The current runtime, created on first use on the golden model of the default config."""
    if _CURRENT is None:
        set_current(CommandQueue(make_target()))
    return _CURRENT


@contextmanager
def use_target(target, **kwargs):
    """Run the API functions on ``target`` (or a config for a fresh golden model) inside the block."""
    if target is None or isinstance(target, (Config, str, dict)):
        target = make_target(target)
    queue = CommandQueue(target, **kwargs)
    previous = set_current(queue)
    try:
        yield queue
    finally:
        set_current(previous)
        _QUEUES.pop(queue.handle, None)


def _queue(cmd) -> CommandQueue:
    if isinstance(cmd, CommandQueue):
        return cmd
    if isinstance(cmd, bool) or not isinstance(cmd, (int, np.integer)) or int(cmd) not in _QUEUES:
        raise VTAError(f"cmd = {cmd!r} is not a live command handle; get one from command_handle()")
    return _QUEUES[int(cmd)]


def _recording(what) -> UopKernel:
    if _RECORDING is None:
        raise VTAError(f"{what}: no micro-kernel is being recorded; call it from the kernel passed to "
                       f"push_gemm_op or push_alu_op")
    return _RECORDING


# ---------------------------------------------------------------------- the API (DESIGN §5)
def command_handle() -> int:
    return current().handle


def buffer_alloc(nbytes: int) -> int:
    return current().alloc(int(nbytes))


def buffer_free(handle: int) -> None:
    current().free(handle)


def buffer_cpu_ptr(cmd, handle) -> np.ndarray:
    """A 1-D uint8 view of the buffer's device memory (no copy)."""
    return _queue(cmd).cpu_view(handle)


def _host_bytes(obj, what, writable):
    try:
        arr = np.from_dlpack(obj) if not isinstance(obj, np.ndarray) else obj
    except Exception:
        try:
            arr = np.frombuffer(obj, dtype=np.uint8) if not writable else None
        except TypeError:
            arr = None
        if arr is None:
            raise BufferError(f"buffer_copy: {what} is a {type(obj).__name__}, not a host array or DLPack tensor") from None
    if not arr.flags.c_contiguous:
        raise BufferError(f"buffer_copy: {what} must be contiguous")
    if writable and not arr.flags.writeable:
        raise BufferError(f"buffer_copy: {what} is read-only")
    return arr.reshape(-1).view(np.uint8)


def buffer_copy(src, src_offset, dst, dst_offset, nbytes, kind_mask) -> None:
    """Copy bytes; kind_mask bit 1 (2): ``src`` is a device buffer, bit 0 (1): ``dst`` is one."""
    q = current()
    if isinstance(kind_mask, bool) or kind_mask not in (0, 1, 2, 3):
        raise VTAError(f"buffer_copy: kind_mask = {kind_mask!r}; allowed range [0, 3]")
    for name, v in (("src_offset", src_offset), ("dst_offset", dst_offset), ("nbytes", nbytes)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise VTAError(f"buffer_copy: {name} = {v!r} must be a non-negative integer")

    def side(obj, offset, is_device, what, writable):
        if is_device:
            phys, buf = q.resolve(obj, f"buffer_copy {what}")
            arr = q.dram[phys:buf.end]
        else:
            arr = _host_bytes(obj, what, writable)
        if offset + nbytes > arr.size:
            raise BufferError(f"buffer_copy: {what} range [{offset}, {offset + nbytes}) exceeds its "
                              f"{arr.size} bytes")
        return arr[offset:offset + nbytes]

    s = side(src, src_offset, kind_mask & _KIND_FROM_VTA, "src", False)
    d = side(dst, dst_offset, kind_mask & _KIND_TO_VTA, "dst", True)
    d[...] = s


def _barrier(what, cmd, handle, elem_bits, start, extent):
    q = _queue(cmd)
    phys, buf = q.resolve(handle, what)
    nbytes = (int(start) + int(extent)) * ((int(elem_bits) + 7) // 8)
    if start < 0 or extent < 0 or phys + nbytes > buf.end:
        raise BufferError(f"{what}: range start = {start}, extent = {extent} of {elem_bits}-bit elements "
                          f"exceeds the buffer ({buf.nbytes} bytes)")
    # Device memory is coherent on every target of this project: nothing to flush or invalidate.


def write_barrier(cmd, handle, elem_bits, start, extent) -> None:
    _barrier("write_barrier", cmd, handle, elem_bits, start, extent)


def read_barrier(cmd, handle, elem_bits, start, extent) -> None:
    _barrier("read_barrier", cmd, handle, elem_bits, start, extent)


def set_debug_mode(cmd, flag) -> None:
    _queue(cmd).debug = int(flag)


def load_2d(cmd, src, src_elem_offset, x_size, y_size, x_stride, x_pad_before, y_pad_before, x_pad_after,
            y_pad_after, dst_sram_index, dst_memory_type) -> None:
    _queue(cmd).load_2d(src, src_elem_offset, x_size, y_size, x_stride, x_pad_before, y_pad_before,
                        x_pad_after, y_pad_after, dst_sram_index, dst_memory_type)


def store_2d(cmd, src_sram_index, src_memory_type, dst, dst_elem_offset, x_size, y_size, x_stride) -> None:
    _queue(cmd).store_2d(src_sram_index, src_memory_type, dst, dst_elem_offset, x_size, y_size, x_stride)


def uop_loop_begin(extent, dst_factor, src_factor, wgt_factor) -> None:
    k = _recording("uop_loop_begin")
    if k.uops:
        raise VTAError("uop_loop_begin: loops must begin before the first uop_push of a kernel")
    if len(k.loops) >= 2:
        raise VTAError("uop_loop_begin: a kernel has at most 2 loops (allowed range [0, 2])")
    if int(extent) < 1:
        raise InsnError(f"uop_loop_begin: extent = {extent}; allowed range [1, 16383]")
    k.loops.append((int(extent), int(dst_factor), int(src_factor), int(wgt_factor)))


def uop_loop_end() -> None:
    _recording("uop_loop_end")


def uop_push(mode, reset_out, dst_index, src_index, wgt_index, opcode, use_imm, imm_val) -> None:
    k = _recording("uop_push")
    mode, reset_out, use_imm = int(mode), int(reset_out), int(use_imm)
    if mode not in (0, 1):
        raise VTAError(f"uop_push: mode = {mode}; allowed: 0 GEMM, 1 ALU")
    cfg = k.cfg
    isa = isa_for(cfg)
    try:
        isa.encode_uop(dst_index, src_index, wgt_index)
    except EncodeError as err:
        raise InsnError(f"uop_push: {err}") from None
    if mode == 1:
        problem = alu_opcode_error(cfg, opcode)
        if problem:
            raise InsnError(f"uop_push: {problem}")
        try:
            isa.alu.encode({"imm": int(imm_val), "use_imm": use_imm})
        except EncodeError as err:
            raise InsnError(f"uop_push: {err}") from None
    if not k.uops:
        k.mode, k.reset = mode, reset_out
        if mode == 1:
            k.alu_opcode, k.use_imm, k.imm = int(opcode), use_imm, int(imm_val)
    else:
        if (mode, reset_out) != (k.mode, k.reset):
            raise VTAError("uop_push: mode and reset_out must equal those of the kernel's first micro-op")
        if mode == 1 and (int(opcode), use_imm, int(imm_val)) != (k.alu_opcode, k.use_imm, k.imm):
            raise VTAError("uop_push: an ALU kernel has one opcode and one immediate; they must equal the first "
                           "micro-op's")
        if not (mode == 0 and reset_out):
            for lag in (1, 2):
                if len(k.uops) >= lag and k.uops[-lag][0] == int(dst_index):
                    raise InsnError(f"uop_push: micro-op hazard: dst_index {dst_index} is also written by the micro-op "
                                    f"{lag} before it (reference §3.3: a micro-op may not write the acc row written "
                                    f"by either of the two previous ones)")
    k.uops.append((int(dst_index), int(src_index), int(wgt_index)))


def push_gemm_op(cmd, kernel, key=0) -> None:
    _queue(cmd).push_op(0, kernel, key)


def push_alu_op(cmd, kernel, key=0) -> None:
    _queue(cmd).push_op(1, kernel, key)


def dep_push(cmd, from_qid, to_qid) -> None:
    _queue(cmd).dep_push(int(from_qid), int(to_qid))


def dep_pop(cmd, from_qid, to_qid) -> None:
    _queue(cmd).dep_pop(int(from_qid), int(to_qid))


def synchronize(cmd, wait_cycles=1 << 31) -> dict:
    return _queue(cmd).synchronize(int(wait_cycles))


def runtime_shutdown() -> None:
    """Drop the current runtime (its device memory and kernels); the next call makes a fresh one."""
    global _CURRENT
    if _CURRENT is not None:
        _QUEUES.pop(_CURRENT.handle, None)
    _CURRENT = None


# ---------------------------------------------------------------------- tvm-ffi registration
_API = ("command_handle", "buffer_alloc", "buffer_free", "buffer_copy", "buffer_cpu_ptr", "load_2d", "store_2d",
        "uop_loop_begin", "uop_loop_end", "uop_push", "push_gemm_op", "push_alu_op", "dep_push", "dep_pop",
        "synchronize", "write_barrier", "read_barrier", "set_debug_mode", "runtime_shutdown")


def _register_ffi():
    import tvm_ffi

    from .config import ConfigError
    from .pipeline import DeadlockError

    for cls in (VTAError, InsnError, DeadlockError, BufferError, ConfigError, EncodeError):
        tvm_ffi.register_error(cls.__name__, cls)   # errors keep their type through tvm-ffi calls
    module = sys.modules[__name__]
    for name in _API:
        fn = getattr(module, name)
        tvm_ffi.register_global_func(name, fn, override=True)
        tvm_ffi.register_global_func(f"vta.{name}", fn, override=True)


_register_ffi()
