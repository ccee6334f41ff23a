"""The command queue: one instruction stream for a target, checked before anything reaches it.

A :class:`CommandQueue` builds one instruction stream for a *target* (docs/architecture.md §1.3): an
object with ``cfg``, a numpy ``dram`` (uint8, the device memory, shared without copying) and
``run(insn_addr, insn_count, wait_cycles) -> counters``; :func:`sw.targets.make_target` makes one.

Everything a user passes is checked here, before it reaches a target: every integer argument
(Python or numpy integers only: bool, float and str are errors that name the argument), fields
that do not fit, SRAM and DRAM ranges, memory types, dependency directions, and (at
``synchronize``) a token-level dry run of the whole stream that reports a deadlock by naming what
each module would wait for, or a token queue that could overflow. (There is no micro-op hazard
rule: docs/architecture.md §2.10.)

Addresses: a ``src``/``dst`` is a handle from ``buffer_alloc`` (its range is the whole buffer) or
a contiguous DLPack tensor that views device memory (its range is the tensor's bytes, which must
lie in one live buffer); an access must stay inside that range. Queued work holds the buffers it
uses: a buffer freed before ``synchronize`` keeps its pages until the stream has run, so no new
buffer is placed where the queued work still reads or writes (its handle is dead at once).

Micro-kernels are cached per command handle by (Python callable, key): through tvm-ffi the key is
the Python callable inside the ``tvm_ffi.Function`` wrapper (:func:`sw.runtime.ffi.python_callable`), so
a kernel is recorded once on both paths. The cache and the device memory it stages micro-ops in
are bounded (``uop_stage_bytes``, ``max_kernels``): when full, the cache is emptied and kernels
are recorded again on their next use; if the previous staging area is still used by queued work,
the stream is run first, as when the instruction queue fills.

Each queue has a re-entrant lock (``CommandQueue.lock``) that every API call on it takes.
"""

from __future__ import annotations

import itertools
import sys
import threading
from collections.abc import Callable, Hashable

import numpy as np

from sw.config import Config
from sw.isa import (
    STAGE_COMPUTE,
    STAGE_LOAD,
    STAGE_NAMES,
    STAGE_STORE,
    AluOp,
    EncodeError,
    Insn,
    MemId,
    Opcode,
    alu_opcode_error,
    expand_uops,
    isa_for,
    opcode_error,
    post_imm_error,
    uop_index_error,
)
from sw.pipeline import InsnError, VTAError, check_insn, check_int, elem_bytes, force_serial, format_stream, schedule
from sw.runtime import session
from sw.runtime.ffi import python_callable
from sw.runtime.memory import Buffer, BufferError, DeviceMemory
from sw.runtime.uopcache import STAGE_CHUNK, KernelCache
from sw.runtime.uopkernel import RECORDING, UopKernel
from sw.runtime.uopkernel import naturals as _naturals
from sw.runtime.views import device_range
from sw.targets import TargetDevice

__all__ = ["CommandQueue", "RuntimeError_", "DEBUG_DUMP_INSN", "DEBUG_DUMP_UOP", "DEBUG_SKIP_READ_BARRIER",
           "DEBUG_SKIP_WRITE_BARRIER", "DEBUG_FORCE_SERIAL", "DEBUG_ALL", "MAX_WAIT_CYCLES", "QID_LOAD", "QID_COMPUTE",
           "QID_STORE"]

DEBUG_DUMP_INSN = 1 << 1
DEBUG_DUMP_UOP = 1 << 2
DEBUG_SKIP_READ_BARRIER = 1 << 3
DEBUG_SKIP_WRITE_BARRIER = 1 << 4
DEBUG_FORCE_SERIAL = 1 << 5
DEBUG_ALL = (1 << 6) - 1
MAX_WAIT_CYCLES = (1 << 63) - 1

QID_LOAD, QID_COMPUTE, QID_STORE = STAGE_LOAD, STAGE_COMPUTE, STAGE_STORE

DEFAULT_MAX_INSNS = 1 << 16
# the most instructions one API call can append (2 compute NOPs, 2 memory NOPs, 1 NOP, FINISH)
_MAX_INSNS_PER_CALL = 6
DEFAULT_UOP_STAGE_BYTES = 4 * STAGE_CHUNK        # device memory for staged micro-ops (at most twice this)
DEFAULT_MAX_KERNELS = 4096                        # cached micro-kernels per command handle

RuntimeError_ = VTAError  # the base class of every error the runtime raises


class CommandQueue:
    """The instruction and micro-op queues of one runtime bound to one target."""

    _handles = itertools.count(1)

    def __init__(self, target: TargetDevice, max_insns: int = DEFAULT_MAX_INSNS, debug: int = 0,
                 uop_stage_bytes: int = DEFAULT_UOP_STAGE_BYTES, max_kernels: int = DEFAULT_MAX_KERNELS):
        self.target = target
        self.cfg: Config = target.cfg
        self.isa = isa_for(self.cfg)
        dram = len(target.dram)
        self.max_insns = check_int("CommandQueue", "max_insns", max_insns, 2 * _MAX_INSNS_PER_CALL,
                                   dram // self.isa.insn_bytes)
        self.uop_stage_bytes = check_int("CommandQueue", "uop_stage_bytes", uop_stage_bytes,
                                         self.cfg.UOP_DEPTH * self.cfg.UOP_ELEM_BYTES, dram)
        self.max_kernels = check_int("CommandQueue", "max_kernels", max_kernels, 1, 1 << 20)
        self.debug = check_int("CommandQueue", "debug", debug, 0, DEBUG_ALL)
        self.memory = DeviceMemory(len(target.dram))
        self.handle = next(self._handles)
        self.lock = threading.RLock()     # every API call on this handle holds it; see the module docstring
        self.out = sys.stdout
        self.insns: list[Insn] = []
        self.pending_pop_prev = {s: 0 for s in STAGE_NAMES}
        self.pending_pop_next = {s: 0 for s in STAGE_NAMES}
        self.cache = KernelCache(self.memory, target.dram, self.isa, self.uop_stage_bytes, self.max_kernels,
                                 in_use=lambda h: h in self._held, flush=lambda: self.synchronize(1 << 31))
        self.uop_cache: list[UopKernel] = []
        self.uop_sram_end = 0
        self._held: set[int] = set()         # buffers the queued stream uses (released by synchronize)
        self._insn_buf: int | None = None
        self.last_counters: dict = {}
        self._index_checks: dict = {}       # (kernel, loop fields) -> the index problem or None
        self._load_bounds: dict = {}        # memory type -> the bounds of load_2d / store_2d arguments
        self.runs = 0
        self.insns_run = 0              # instructions of every synchronize so far (FINISH included)

    # ------------------------------------------------------------------ buffers
    @property
    def kernels(self) -> dict:
        """The cached micro-kernels by (Python callable, key)."""
        return self.cache.kernels

    @property
    def dram(self) -> np.ndarray:
        """The target's device memory (uint8, shared without copying)."""
        return self.target.dram

    def resolve(self, obj: object, what: str) -> tuple[int, Buffer]:
        """(device address, buffer) of a handle or of a tensor that views device memory."""
        phys, _, buf = self.region(obj, what)
        return phys, buf

    def region(self, obj: object, what: str) -> tuple[int, int, Buffer]:
        """(start, end, buffer): the device byte range a handle or a tensor view names (``views.device_range``)."""
        return device_range(self.memory, self.dram, obj, what)

    def _hold(self, buf, what):
        """Keep ``buf``'s pages for the queued stream until it has run (a free meanwhile is deferred)."""
        if buf.handle not in self._held:
            self.memory.hold(buf.handle, what)
            self._held.add(buf.handle)

    def alloc(self, nbytes: int) -> int:
        """:func:`buffer_alloc` on this queue's device memory."""
        return self.memory.alloc(nbytes).handle

    def free(self, handle: int) -> None:
        """:func:`buffer_free` on this queue's device memory."""
        self.memory.free(handle)

    def cpu_view(self, handle: int) -> np.ndarray:
        """:func:`buffer_cpu_ptr`: the buffer's bytes of device memory, no copy."""
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
        return self._append(stage, kind, f)

    def _append(self, stage: int, kind: str, f: dict) -> Insn:
        """Queue the instruction of every field ``f`` (checked), with the stage's pending pops."""
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
            if isinstance(q, (bool, np.bool_)) or not isinstance(q, (int, np.integer)) or q not in STAGE_NAMES:
                raise VTAError(f"{what}: {name} = {q!r}; allowed: 1 (load), 2 (compute), 3 (store)")
        if abs(from_qid - to_qid) != 1:
            raise VTAError(f"{what}: no token queue from {STAGE_NAMES[from_qid]} ({from_qid}) to "
                           f"{STAGE_NAMES[to_qid]} ({to_qid}); queues join neighbouring stages only "
                           f"(1<->2, 2<->3)")

    def dep_pop(self, from_qid: int, to_qid: int) -> None:
        """:func:`dep_pop`: the next instruction of ``to_qid`` pops a token from ``from_qid``."""
        self._check_qids("dep_pop", from_qid, to_qid)
        from_qid, to_qid = int(from_qid), int(to_qid)
        pending = self.pending_pop_prev if from_qid < to_qid else self.pending_pop_next
        if pending[to_qid]:
            self._nop(to_qid)   # commit the older pop of the same kind first
        pending[to_qid] = 1

    def dep_push(self, from_qid: int, to_qid: int) -> None:
        """:func:`dep_push`: the last instruction of ``from_qid`` (or a NOP) pushes a token to ``to_qid``."""
        self._check_qids("dep_push", from_qid, to_qid)
        from_qid, to_qid = int(from_qid), int(to_qid)
        self._commit_pending_pops(from_qid)
        flag = "push_next" if from_qid < to_qid else "push_prev"
        if self.insns and self.insns[-1].stage == from_qid and not self.insns[-1].f[flag]:
            self.insns[-1].f[flag] = 1
        else:
            insn = self._nop(from_qid)
            insn.f[flag] = 1

    def load_2d(self, src: object, src_elem_offset: int, x_size: int, y_size: int, x_stride: int, x_pad_before: int,
                y_pad_before: int, x_pad_after: int, y_pad_after: int, dst_sram_index: int,
                dst_memory_type: int) -> None:
        """:func:`load_2d` (arguments, units and errors there)."""
        allowed = (MemId.INP, MemId.WGT, MemId.ACC, MemId.ACC_8BIT)
        if (isinstance(dst_memory_type, (bool, np.bool_)) or not isinstance(dst_memory_type, (int, np.integer))
                or dst_memory_type not in [int(m) for m in allowed]):
            raise InsnError(f"load_2d: dst_memory_type = {dst_memory_type!r}; allowed: "
                            + ", ".join(f"{int(m)} {m.name}" for m in allowed))
        mem = MemId(int(dst_memory_type))
        bounds = self._load_bounds.get(mem)
        if bounds is None:
            f = self.isa.formats["mem"]
            depth = {MemId.INP: self.cfg.INP_DEPTH, MemId.WGT: self.cfg.WGT_DEPTH}.get(mem, self.cfg.ACC_DEPTH)
            bounds = self._load_bounds[mem] = {
                "src_elem_offset": f["dram_base"].hi, "x_size": f["x_size"].hi, "y_size": f["y_size"].hi,
                "x_stride": f["x_stride"].hi, "x_pad_before": f["x_pad_0"].hi, "y_pad_before": f["y_pad_0"].hi,
                "x_pad_after": f["x_pad_1"].hi, "y_pad_after": f["y_pad_1"].hi, "dst_sram_index": depth - 1}
        n = _naturals("load_2d", bounds, src_elem_offset=src_elem_offset, x_size=x_size, y_size=y_size,
                      x_stride=x_stride, x_pad_before=x_pad_before, y_pad_before=y_pad_before,
                      x_pad_after=x_pad_after, y_pad_after=y_pad_after, dst_sram_index=dst_sram_index)
        dram_base, buf = self._dram_base("load_2d", src, n["src_elem_offset"], mem, n["x_size"], n["y_size"],
                                         n["x_stride"])
        stage = STAGE_LOAD if mem in (MemId.INP, MemId.WGT) else STAGE_COMPUTE
        fields = dict(opcode=Opcode.LOAD, memory_type=mem, sram_base=n["dst_sram_index"], dram_base=dram_base,
                      y_size=n["y_size"], x_size=n["x_size"], x_stride=n["x_stride"], y_pad_0=n["y_pad_before"],
                      y_pad_1=n["y_pad_after"], x_pad_0=n["x_pad_before"], x_pad_1=n["x_pad_after"])
        self._checked_insn("load_2d", stage, fields, buf)
        self._check_overflow()

    def store_2d(self, src_sram_index: int, src_memory_type: int, dst: object, dst_elem_offset: int, x_size: int,
                 y_size: int, x_stride: int) -> None:
        """:func:`store_2d` (arguments, units and errors there)."""
        if (isinstance(src_memory_type, (bool, np.bool_)) or not isinstance(src_memory_type, (int, np.integer))
                or src_memory_type != MemId.OUT):
            raise InsnError(f"store_2d: src_memory_type = {src_memory_type!r}; allowed: 4 OUT")
        bounds = self._load_bounds.get(MemId.OUT)
        if bounds is None:
            f = self.isa.formats["mem"]
            bounds = self._load_bounds[MemId.OUT] = {
                "src_sram_index": self.cfg.ACC_DEPTH - 1, "dst_elem_offset": f["dram_base"].hi,
                "x_size": f["x_size"].hi, "y_size": f["y_size"].hi, "x_stride": f["x_stride"].hi}
        n = _naturals("store_2d", bounds, src_sram_index=src_sram_index, dst_elem_offset=dst_elem_offset,
                      x_size=x_size, y_size=y_size, x_stride=x_stride)
        dram_base, buf = self._dram_base("store_2d", dst, n["dst_elem_offset"], MemId.OUT, n["x_size"], n["y_size"],
                                         n["x_stride"])
        fields = dict(opcode=Opcode.STORE, memory_type=MemId.OUT, sram_base=n["src_sram_index"], dram_base=dram_base,
                      y_size=n["y_size"], x_size=n["x_size"], x_stride=n["x_stride"])
        self._checked_insn("store_2d", STAGE_STORE, fields, buf)
        self._check_overflow()

    def _checked_insn(self, what, stage, fields, buf):
        # validate a copy first so that a bad call leaves the queue and its pending pops untouched
        kind = self.isa.kind_of(fields["opcode"])
        probe = dict.fromkeys(self.isa.formats[kind].fields, 0)
        probe.update(fields)
        try:
            self.isa.formats[kind].encode(probe)
            check_insn(self.cfg, Insn(kind, probe), where=what)
        except EncodeError as err:
            raise InsnError(f"{what}: {err}") from None
        self._hold(buf, what)     # raises if another thread freed the buffer meanwhile
        return self._append(stage, kind, probe)

    def _dram_base(self, what, obj, elem_offset, mem, x_size, y_size, x_stride) -> tuple[int, Buffer]:
        """The DRAM element address of an access, checked against the range ``obj`` names, and its buffer."""
        phys, end_ok, buf = self.region(obj, what)
        eb = elem_bytes(self.cfg, mem)
        if phys % eb:
            raise BufferError(f"{what}: device address {phys:#x} is not aligned to the {mem.name} element size "
                              f"({eb} bytes)")
        dram_base = phys // eb + elem_offset
        if x_size:
            start = dram_base * eb
            end = (dram_base + (y_size - 1) * x_stride + x_size) * eb if y_size else start
            if start < phys or end > end_ok:
                kind = "buffer" if end_ok == buf.end and phys == buf.phys else "tensor view"
                raise BufferError(
                    f"{what}: the access covers device bytes [{start:#x}, {end:#x}) but the {kind} is "
                    f"[{phys:#x}, {end_ok:#x}) ({end_ok - phys} bytes); elem_offset = {elem_offset}, "
                    f"x_size = {x_size}, y_size = {y_size}, x_stride = {x_stride} in {eb}-byte elements")
        return dram_base, buf

    # ------------------------------------------------------------------ micro-kernels
    def push_op(self, mode: int, kernel: Callable[[], None], key: Hashable) -> None:
        """:func:`push_gemm_op` (``mode`` 0), :func:`push_alu_op` (``mode`` 1) or :func:`push_depthwise_op`
        (``mode`` 2: a kernel of GEMM micro-ops run as a DEPTHWISE instruction)."""
        name = ("push_gemm_op", "push_alu_op", "push_depthwise_op")[mode]
        if not callable(kernel):
            raise VTAError(f"{name}: kernel must be a callable that records micro-ops, got {type(kernel).__name__}")
        if mode == 2 and (problem := opcode_error(self.cfg, Opcode.DEPTHWISE)):
            raise InsnError(f"{name}: {problem}")
        uop_mode = 0 if mode == 2 else mode
        inner = python_callable(kernel)       # through tvm-ffi: the Python callable, not this call's wrapper
        try:
            # (a DEPTHWISE kernel is cached apart from the same callable pushed as GEMM: its checked fields differ)
            cache_key = (kernel if inner is None else inner, key) + ((Opcode.DEPTHWISE,) if mode == 2 else ())
            k = self.cache.get(cache_key)
        except TypeError:
            raise VTAError(f"{name}: key {key!r} is not hashable") from None
        if k is None:
            k = self._record(name, kernel, uop_mode)
            self.cache.put(cache_key, k)
        elif k.mode != uop_mode:
            raise VTAError(f"{name}: the kernel for key {key!r} was recorded as "
                           f"{'GEMM' if k.mode == 0 else 'ALU'}")
        op = k.checked_op
        if op is None:          # (a kernel's instruction fields are checked once: they depend on the kernel only)
            fields = k.loop_fields()
            self._check_kernel_indices(name, k, fields)
            if mode == 2:
                op = dict(opcode=Opcode.DEPTHWISE, reset=k.reset, **fields)
            elif mode == 0:
                op = dict(opcode=Opcode.GEMM, reset=k.reset, **fields)
            else:
                # (the reset bit is written as VTA's runtime writes it; an ALU instruction ignores it)
                op = dict(opcode=Opcode.ALU, reset=k.reset, alu_opcode=k.alu_opcode, use_imm=k.use_imm, imm=k.imm,
                          **fields)
            try:       # the loop fields must fit before anything is queued
                self.isa.formats[self.isa.kind_of(op["opcode"])].encode(op)
            except EncodeError as err:
                raise InsnError(f"{name}: {err}") from None
            k.checked_op = op
        self._make_resident(k)
        # checked above; uop_bgn and uop_end come from the uop cache, inside the uop SRAM by construction
        self._new_insn(STAGE_COMPUTE, _checked=True, uop_bgn=k.sram_begin, uop_end=k.sram_end, **op)
        self._check_overflow()

    def _record(self, name, kernel, mode) -> UopKernel:
        if getattr(RECORDING, "kernel", None) is not None:
            raise VTAError(f"{name}: called while another micro-kernel is being recorded (by this thread)")
        k = UopKernel(self.cfg)
        RECORDING.kernel = k
        try:
            kernel()
        finally:
            RECORDING.kernel = None
        if k.open_loops:
            raise VTAError(f"{name}: the kernel left {k.open_loops} loop(s) open; close each uop_loop_begin "
                           f"with uop_loop_end")

        if not k.uops:
            raise VTAError(f"{name}: the kernel recorded no micro-ops")
        if k.mode != mode:
            raise VTAError(f"{name}: the kernel recorded {'GEMM' if k.mode == 0 else 'ALU'} micro-ops")
        if len(k.uops) > self.cfg.UOP_DEPTH:
            raise VTAError(f"{name}: the kernel has {len(k.uops)} micro-ops; the uop SRAM holds "
                           f"{self.cfg.UOP_DEPTH} (allowed range [1, {self.cfg.UOP_DEPTH}])")
        problem = alu_opcode_error(self.cfg, k.alu_opcode) if k.mode == 1 else None
        if problem is None and k.mode == 1 and k.alu_opcode == AluOp.POST:
            problem = post_imm_error(self.cfg, k.imm)
        if problem:
            raise InsnError(f"{name}: {problem}")
        self._stage_uops(k)
        if self.debug & DEBUG_DUMP_UOP:
            print(k.dump(self.isa), file=self.out)
        return k

    def _stage_uops(self, k: UopKernel):
        """Append the kernel's encoded micro-ops to device memory once (never relocated; see sw.runtime.uopcache)."""
        self.cache.stage(k)

    def _check_kernel_indices(self, name, k: UopKernel, f: dict):
        """Every index the instruction will touch is in range.

        There is no micro-op hazard rule: the GEMM and ALU pipelines forward an acc row written by
        any earlier micro-op, so a micro-op may write the row the one before it wrote
        (docs/architecture.md §2.10)."""
        key = (k, tuple(f.values()))
        problem = self._index_checks.get(key, False)
        if problem is False:                    # each (kernel, loops) pair is expanded once
            d, s, w = expand_uops(k.uops, f, k.mode == 0)
            problem = uop_index_error(self.cfg, d, s, w, k.mode == 0)
            if len(self._index_checks) >= 4096:
                self._index_checks.clear()
            self._index_checks[key] = problem
        if problem:
            raise InsnError(f"{name}: {problem}")

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
        self._hold(self.memory.get(k.chunk), "push_op")
        self._new_insn(STAGE_COMPUTE, opcode=Opcode.LOAD, memory_type=MemId.UOP, sram_base=k.sram_begin,
                       dram_base=k.dram_addr // self.cfg.UOP_ELEM_BYTES, y_size=1, x_size=n, x_stride=n)

    # ------------------------------------------------------------------ running
    def synchronize(self, wait_cycles: int = 1 << 31) -> dict:
        """Close the stream (docs/architecture.md §5: final tokens and FINISH), check it, run it and wait.

        With ``DEBUG_FORCE_SERIAL`` the dependency flags are first rewritten so the modules run the
        stream strictly in order (:func:`sw.pipeline.force_serial`); the results are the same."""
        if self.debug & DEBUG_FORCE_SERIAL:
            force_serial(self.insns)
            for s in STAGE_NAMES:
                self.pending_pop_prev[s] = self.pending_pop_next[s] = 0
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
            order: list[int] = []      # token-level dry run: deadlocks never reach a target
            schedule(self.cfg, insns, None, self.isa.disasm, trace=order)
            addr, raw = self._write_insns(insns)
            with session.run_lock(self.target):      # one run at a time on a device, whichever handle queued it
                checked = getattr(self.target, "checked_stream", None)
                if checked is not None:           # the golden model: the stream is checked, here are its Insns
                    checked(addr, raw, insns, order)
                counters = self.target.run(addr, len(insns), wait_cycles)
        finally:
            self._reset_stream()
        self.last_counters = dict(counters)
        self.runs += 1
        self.insns_run += len(insns)
        return counters

    def _write_insns(self, insns) -> tuple[int, np.ndarray]:
        """Write the stream into the instruction buffer; its device address and its bytes."""
        raw = self.isa.pack_stream(insns)   # every field was range-checked when the instruction was queued
        if self._insn_buf is None or self.memory.get(self._insn_buf).nbytes < raw.nbytes:
            if self._insn_buf is not None:
                self.free(self._insn_buf)
            self._insn_buf = self.alloc(max(raw.nbytes, self.max_insns * self.isa.insn_bytes))
        buf = self.memory.get(self._insn_buf)
        self.dram[buf.phys:buf.phys + raw.nbytes] = raw
        return buf.phys, raw

    def _reset_stream(self):
        self.insns = []
        for s in STAGE_NAMES:
            self.pending_pop_prev[s] = self.pending_pop_next[s] = 0
        for k in self.uop_cache:
            k.sram_begin = None
        self.uop_cache = []
        self.uop_sram_end = 0
        held, self._held = self._held, set()
        for h in held:
            self.memory.release(h)
        self.cache.stream_ran()

    def dump(self) -> str:
        """The queued stream, one instruction a line, with the token counts after each."""
        title = f"instruction stream ({len(self.insns)} instructions, config {self.cfg.name})"
        return format_stream(self.insns, self.isa.disasm, title)

