"""The golden model's device: :class:`FsimDevice`, its DRAM and SRAMs, and the execution of LOAD, STORE,
GEMM and ALU instructions (docs/architecture.md §2).

:class:`FsimDevice` owns a byte-addressed DRAM (a numpy array the runtime writes into directly) and
the SRAMs of one configuration. :meth:`FsimDevice.run` decodes ``insn_count`` instructions at
``insn_addr``, checks them all before executing any (so a bad stream changes nothing), then runs
them on three in-order cores with four token counters (:func:`sw.pipeline.schedule`). Each
instruction is one vectorised numpy step: no Python loop per lane or per MAC (the products in
:mod:`sw.fsim.gemm`, the ALU's arithmetic in :mod:`sw.fsim.alu`).

Physical addresses are byte offsets into ``dram``; the allocator of the runtime never hands out
page 0, so address 0 is never a valid buffer.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from sw.config import Config, load_config
from sw.fsim.alu import alu_op, post_op
from sw.fsim.gemm import gemm, gemm_fold
from sw.isa import (
    POST_PARAM_ROWS,
    AluOp,
    Insn,
    MemId,
    Opcode,
    depthwise_window,
    expand_uops,
    isa_for,
    uop_index_error,
)
from sw.pipeline import InsnError, VTAError, check_insn, elem_bytes, schedule

__all__ = ["FsimDevice", "COUNTER_NAMES", "DEFAULT_DRAM_BYTES"]

DEFAULT_DRAM_BYTES = 256 << 20

# The counters of VTA's profiler (docs/architecture.md §5.6), kept by every target.
COUNTER_NAMES = ("inp_load_nbytes", "wgt_load_nbytes", "acc_load_nbytes", "uop_load_nbytes",
                 "out_store_nbytes", "gemm_counter", "alu_counter")

_LOAD_COUNTER = {MemId.INP: "inp_load_nbytes", MemId.WGT: "wgt_load_nbytes", MemId.ACC: "acc_load_nbytes",
                 MemId.ACC_8BIT: "acc_load_nbytes", MemId.UOP: "uop_load_nbytes"}


class FsimDevice:
    """The golden model of one accelerator and its DRAM."""

    name = "fsim"

    def __init__(self, cfg: Config | str | None = None, dram_bytes: int = DEFAULT_DRAM_BYTES):
        self.cfg = cfg = load_config(cfg)
        self.isa = isa_for(cfg)
        self.dram = np.zeros(dram_bytes, dtype=np.uint8)
        B, I, O = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
        self.inp = np.zeros((cfg.INP_DEPTH, B, I), dtype=np.int8)
        self.wgt = np.zeros((cfg.WGT_DEPTH, O, I), dtype=np.int8)
        self.acc = np.zeros((cfg.ACC_DEPTH, B * O), dtype=np.int32)
        self.uop = np.zeros(cfg.UOP_DEPTH, dtype=np.uint32)
        # byte views of each SRAM, one row per element
        self._sram_bytes = {
            MemId.INP: self.inp.view(np.uint8).reshape(cfg.INP_DEPTH, -1),
            MemId.WGT: self.wgt.view(np.uint8).reshape(cfg.WGT_DEPTH, -1),
            MemId.ACC: self.acc.view(np.uint8).reshape(cfg.ACC_DEPTH, -1),
            MemId.UOP: self.uop.view(np.uint8).reshape(cfg.UOP_DEPTH, -1),
        }
        self.counters = dict.fromkeys(COUNTER_NAMES, 0)
        self._index_cache: dict = {}
        self._checked: tuple[int, np.ndarray, list, list | None] | None = None

    def checked_stream(self, insn_addr: int, raw: np.ndarray, insns: list, order: list | None = None) -> None:
        """The runtime announces the stream it wrote at ``insn_addr`` (its bytes ``raw``) and already checked: every
        instruction when it was queued, the tokens by its dry run, which ran them in ``order`` (the indices, as
        :func:`sw.pipeline.schedule` runs them). The next :meth:`run` of exactly those bytes executes ``insns`` in
        that order without decoding, checking and scheduling them again; any other run does all of that."""
        self._checked = (insn_addr, raw, insns, order)

    # ------------------------------------------------------------------ target interface
    def run(self, insn_addr: int, insn_count: int, wait_cycles: int | None = None) -> dict:
        """Execute a stream; return the profiler counters of this run."""
        ib = self.isa.insn_bytes
        if insn_count <= 0:
            raise VTAError(f"insn_count = {insn_count}; allowed range [1, {len(self.dram) // ib}]")
        end = insn_addr + insn_count * ib
        if insn_addr < 0 or insn_addr % ib or end > len(self.dram):
            raise VTAError(f"instruction range [{insn_addr:#x}, {end:#x}) must be {ib}-byte aligned and inside "
                           f"device memory [0, {len(self.dram):#x})")
        hint, self._checked = self._checked, None
        checked = (hint is not None and hint[0] == insn_addr and len(hint[2]) == insn_count
                   and np.array_equal(self.dram[insn_addr:end], hint[1]))
        if hint is not None and checked:
            insns = hint[2]
        else:
            try:
                insns = self.isa.decode_stream(self.dram[insn_addr:end])
            except ValueError as err:
                raise InsnError(str(err)) from None
            for i, insn in enumerate(insns):
                try:
                    check_insn(self.cfg, insn, len(self.dram), where="\0")
                except InsnError as err:            # name the instruction (disassembled only when it is wrong)
                    raise InsnError(str(err).replace("\0", f"instruction #{i} ({self.isa.disasm(insn)})", 1)) from None
        self.counters = dict.fromkeys(COUNTER_NAMES, 0)
        if hint is not None and checked and hint[3] is not None:
            execute = self._execute
            for i in hint[3]:
                execute(i, insns[i])
        else:
            schedule(self.cfg, insns, self._execute, self.isa.disasm, check_depth=not checked)
        return dict(self.counters)

    def reset(self) -> None:
        for arr in (self.inp, self.wgt, self.acc, self.uop):
            arr[...] = 0

    # ------------------------------------------------------------------ execution
    def _execute(self, index: int, insn: Insn):
        op = insn.opcode
        try:
            if op == Opcode.LOAD:
                self._load(insn.f)
            elif op == Opcode.STORE:
                self._store(insn.f)
            elif op == Opcode.GEMM:
                self._gemm(insn.f)
            elif op == Opcode.ALU:
                self._alu(insn.f)
            elif op == Opcode.DEPTHWISE:
                self._depthwise(insn.f)
        except InsnError as err:
            raise InsnError(f"instruction #{index} ({self.isa.disasm(insn)}): {err}") from None

    def _dram_rows(self, f, eb):
        """A (y_size, x_size * eb) strided byte view of the DRAM rows an instruction touches."""
        start = f["dram_base"] * eb
        return as_strided(self.dram[start:], shape=(f["y_size"], f["x_size"] * eb),
                          strides=(f["x_stride"] * eb, 1), writeable=True)

    def _load(self, f):
        if f["x_size"] == 0:
            return
        mem = f["memory_type"]
        eb = elem_bytes(self.cfg, mem)
        xs, ys = f["x_size"], f["y_size"]
        y0, y1, x0, x1 = f["y_pad_0"], f["y_pad_1"], f["x_pad_0"], f["x_pad_1"]
        pitch, rows = x0 + xs + x1, y0 + ys + y1
        base = f["sram_base"]
        src = self._dram_rows(f, eb)
        if mem == MemId.ACC_8BIT:
            region = self.acc[base:base + pitch * rows].reshape(rows, pitch, -1)
            region[...] = 0
            region[y0:y0 + ys, x0:x0 + xs] = src.view(np.int8).reshape(ys, xs, -1)
            nbytes = xs * ys * self.cfg.ACC_ELEM_BYTES
        else:
            region = self._sram_bytes[mem][base:base + pitch * rows].reshape(rows, pitch, -1)
            region[...] = 0
            region[y0:y0 + ys, x0:x0 + xs] = src.reshape(ys, xs, -1)
            nbytes = xs * ys * eb
        self.counters[_LOAD_COUNTER[mem]] += nbytes

    def _store(self, f):
        if f["x_size"] == 0:
            return
        xs, ys, base = f["x_size"], f["y_size"], f["sram_base"]
        # OUT mirrors the low bits of ACC (docs/architecture.md §2.4): a store truncates the accumulators.
        out = self.acc[base:base + xs * ys].astype(np.int8)
        dst = self._dram_rows(f, self.cfg.OUT_ELEM_BYTES)
        dst[...] = out.view(np.uint8).reshape(ys, -1)
        self.counters["out_store_nbytes"] += xs * ys * self.cfg.OUT_ELEM_BYTES

    def _indices(self, f, kind):
        """Flattened (dst, src, wgt) indices of every micro-op execution, in execution order, and a dict for what
        the units derive from them (a GEMM's fold plan, an ALU instruction's shape).

        Memoised (up to 4096 entries) on the micro-op words and the loop fields: a network repeats few distinct
        (kernel, loop) pairs many times."""
        words = self.uop[f["uop_bgn"]:f["uop_end"]]
        key = (kind, words.tobytes(), f["iter_out"], f["iter_in"], f["dst_factor_out"], f["dst_factor_in"],
               f["src_factor_out"], f["src_factor_in"], f.get("wgt_factor_out", 0), f.get("wgt_factor_in", 0))
        hit = self._index_cache.get(key)
        if hit is not None:
            return hit
        d, s, w = expand_uops(np.stack(self.isa.decode_uops(words), axis=-1), f, kind == "gemm")
        problem = uop_index_error(self.cfg, d, s, w, kind == "gemm")
        if problem:
            raise InsnError(problem)
        for a in (d, s, w):
            if a is not None:
                a.flags.writeable = False
        if len(self._index_cache) >= 4096:
            self._index_cache.clear()
        hit = self._index_cache[key] = (d, s, w, {})
        return hit

    def _gemm(self, f):
        d, s, w, memo = self._indices(f, "gemm")
        if d.size == 0:
            return
        if f["reset"]:
            self.acc[d] = 0
            return
        if "fold" not in memo:
            memo["fold"] = gemm_fold(d, s, w)
        gemm(self.acc, self.inp, self.wgt, d, s, w, memo["fold"])
        self.counters["gemm_counter"] += d.size

    def _depthwise(self, f):
        """DEPTHWISE (docs/isa.md): each execution e writes acc[d[e]][b, j] = sum_k window[e, k][b, j] *
        wgt[w[e]][j, k], the window holding the inp rows executions e, e - 1, ... read (zero before the first);
        executions are applied in order, so the last one writing a row wins."""
        d, s, w, _ = self._indices(f, "gemm")
        if d.size == 0:
            return
        if f["reset"]:
            self.acc[d] = 0
            return
        rows = np.empty((d.size, self.acc.shape[1]), np.int32)
        chunk = 4096
        for a in range(0, d.size, chunk):
            lo = max(0, a - self.cfg.BLOCK_IN + 1)
            win = depthwise_window(self.inp[s[lo:a + chunk]], self.cfg.BLOCK_IN)[a - lo:]  # (n, K, B, I)
            # sum over the window slots k of window[k][b, j] * wgt[j, k]: exact in int64
            rows[a:a + chunk] = np.einsum("nkbj,njk->nbj", win.astype(np.int64),
                                          self.wgt[w[a:a + chunk]].astype(np.int64)).reshape(len(win), -1)
        last = np.full(self.acc.shape[0], -1, np.int64)
        np.maximum.at(last, d, np.arange(d.size))      # the last execution writing each row
        written = np.flatnonzero(last >= 0)
        self.acc[written] = rows[last[written]]
        self.counters["gemm_counter"] += d.size

    def _alu(self, f):
        d, s, _, memo = self._indices(f, "alu")
        if d.size == 0:
            return
        self.counters["alu_counter"] += d.size
        op, use_imm, imm = f["alu_opcode"], f["use_imm"], f["imm"]
        acc = self.acc
        shape = memo.get(use_imm)
        if shape is None:
            shape = memo[use_imm] = self._alu_shape(d, s, use_imm)
        run, independent = shape
        if op == AluOp.POST:
            # the parameter rows as they are when the instruction starts; a tensor operand is the residual
            params = acc[imm:imm + POST_PARAM_ROWS].copy()
            if independent:
                acc[d] = post_op(acc[d], params, None if use_imm else acc[s])
            else:
                for j in range(d.size):
                    acc[d[j]] = post_op(acc[d[j]], params, None if use_imm else acc[s[j]])
        elif independent:
            b = np.int64(imm) if use_imm else acc[s]
            if run is not None:
                # the common case: a run of consecutive rows, in place on a view
                rows = acc[run[0]:run[1]]
                rows[...] = alu_op(op, rows, b)
            else:
                acc[d] = alu_op(op, acc[d], b)
        else:  # rare: a micro-op reads or rewrites a row an earlier one wrote; keep program order
            for j in range(d.size):
                b = np.int64(imm) if use_imm else acc[s[j]]
                acc[d[j]] = alu_op(op, acc[d[j]], b)

    def _alu_shape(self, d, s, use_imm):
        """(the destination rows as a run [first, end) or None, whether the micro-ops can run at once: no
        destination repeats and, with a tensor operand, none reads a row an earlier one of them wrote)."""
        n = d.size
        increasing = n == 1 or bool(np.all(d[1:] > d[:-1]))
        run = (int(d[0]), int(d[-1]) + 1) if increasing and d[-1] - d[0] == n - 1 else None
        independent = increasing or np.unique(d).size == n
        if independent and not use_imm:
            # every operand must be read before any earlier micro-op of this instruction writes it
            first_write = np.full(self.acc.shape[0], n, dtype=np.int64)
            first_write[d] = np.arange(n)
            independent = bool(np.all(first_write[s] >= np.arange(n)))
        return run, independent
