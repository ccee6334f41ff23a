"""Random valid programs for differential testing (golden model against RTL).

``random_program(seed, n_ops)`` builds and runs, through the runtime API on the current target, a
program of random LOADs (every memory type, random strides and padding), GEMM and ALU micro-kernels
(random micro-ops, one or two loop levels, every opcode, immediates at the edges), POSTs where the config
builds the post-processing unit (:meth:`_Gen.post`), DEPTHWISEs where it builds the depthwise mode
(:meth:`_Gen.depthwise`), and STOREs of random regions. Dependencies: whenever
consecutive operations run in different modules, a token goes from the first to the second (through
compute for load<->store), with random extra round trips, so every program is deadlock-free and
race-free, and every token queue is exercised.

Everything is drawn from one ``numpy.random.Generator(seed)``, so a seed is a reproducible program;
the result carries the program's disassembly for failure reports. ``python -m sw.testing.fuzz N`` runs N
seeds on the golden model.
"""

from __future__ import annotations

import numpy as np

from sw.cli import command, run_as_main
from sw.isa import POST_PARAM_ROWS, POST_RESIDUAL_STEPS, POST_STAGES, AluOp, MemId, alu_opcodes
from sw.testing.vta_tests import alu_rows

__all__ = ["random_program", "post_params"]

LOAD, COMPUTE, STORE = 1, 2, 3

# regions of each SRAM the programs use (small, so that operations touch each other's data); the acc
# region straddles the middle row, so micro-kernels fall in the lower bank, the upper one or both
# (the compute module runs a GEMM and an ALU instruction side by side when they are in different banks)
INP_ROWS, WGT_ROWS, ACC_ROWS = 96, 48, 96
SHIFTS = [0, 1, -1, 2, -2, 7, 8, -8, 15, -15, 31, -31, 32, -32, 40, -40]


I32_MIN, I32_MAX = -2**31, 2**31 - 1
# POST's operands beyond the requantization ranges: shifts that are negative (left) or beyond 31 (saturated), and
# multipliers beyond int16 (the unit's MUL takes its full int32 operand, wrapping)
POST_EDGE_SHIFTS = [-1, -8, -31, -32, -40, 32, 33, 40, 1000, -1000]
POST_EDGE_MULS = [0, 1, -1, 32767, -32768, 32768, 65535, -32769, 0x12345, -40000, I32_MAX, I32_MIN]
POST_BLOCKS = 8           # parameter blocks in a program's parameter buffer (each POST_PARAM_ROWS acc rows)

# what ``bias`` (functional-coverage steering, cosim/verify/funcov.py) may ask for, each a probability in [0, 1]
BIASES = ("pad", "reuse", "long_store", "hub", "big_kernel", "post", "depthwise")
BIG_KERNEL_UOPS = 1100      # a steered kernel this long is staged across a 4 KiB boundary of device memory
LONG_OUT_ELEMS = 512


def post_params(rng: np.random.Generator, lanes: int) -> np.ndarray:
    """A random parameter block of POST: (POST_PARAM_ROWS, ``lanes``) int32, row k the operand of stage k
    (:data:`sw.isa.POST_STAGES`), then those of the residual's steps (:data:`sw.isa.POST_RESIDUAL_STEPS`).

    Each row is per tensor (one value on every lane) or per channel. A stage gets its identity, a
    requantization-like value (a bias, clip bounds, an int16 multiplier, the rounding constant of the shift that
    follows, a shift in 0..31) or an edge value (int32's ends, a multiplier beyond int16, a negative or over-range
    shift, inverted clip bounds)."""
    r = rng
    rows = np.zeros((POST_PARAM_ROWS, lanes), np.int64)

    def lanes_of(values):
        return np.broadcast_to(np.asarray(values, np.int64), (lanes,))

    def count():
        return lanes if r.random() < 0.5 else 1
    for k, op in enumerate(POST_STAGES + POST_RESIDUAL_STEPS):
        u = r.random()
        if op == AluOp.ADD:
            v = (0 if u < 0.2 else r.integers(-2**16, 2**16, count()) if u < 0.7
                 else r.choice([1, -1, 1 << 30, -(1 << 30), I32_MAX, I32_MIN], count()) if u < 0.85
                 else r.integers(I32_MIN, I32_MAX, count(), endpoint=True))
        elif op == AluOp.MUL:
            v = (1 if u < 0.2 else r.integers(-2**15, 2**15, count()) if u < 0.7
                 else r.choice(POST_EDGE_MULS, count()) if u < 0.85
                 else r.integers(I32_MIN, I32_MAX, count(), endpoint=True))
        elif op == AluOp.SHR:
            v = 0 if u < 0.2 else r.integers(0, 32, count()) if u < 0.8 else r.choice(POST_EDGE_SHIFTS, count())
        elif op == AluOp.MAX:       # a clip: this MAX and the MIN after it
            if u < 0.2:
                lo, hi = I32_MIN, I32_MAX
            elif u < 0.7:
                lo, hi = [(-128, 127), (0, 127), (0, 255), (-32768, 32767), (-2**20, 2**20)][int(r.integers(0, 5))]
            else:                   # any two values, so also inverted bounds (the MIN wins)
                n = count()
                lo, hi = (r.integers(I32_MIN, I32_MAX, n, endpoint=True) for _ in range(2))
            rows[k], rows[k + 1] = lanes_of(lo), lanes_of(hi)
            continue
        elif op == AluOp.MIN:
            continue                # drawn with the MAX before it
        rows[k] = lanes_of(v)
    for k, op in enumerate(POST_STAGES[:-1]):
        if op == AluOp.ADD and POST_STAGES[k + 1] == AluOp.SHR and r.random() < 0.5:
            shift = np.clip(rows[k + 1], 0, 31)         # round to nearest: half of the shift's unit
            rows[k] = np.where(shift > 0, np.int64(1) << np.maximum(shift - 1, 0), 0)
    return rows.astype(np.int32)


def _rows(uops, loops, gemm: bool):
    """(dst, src, wgt) index arrays of every micro-op execution, in order, of a kernel of ``uops`` [(dst, src, wgt)]
    under ``loops`` [(extent, dst_factor, src_factor, wgt_factor)], with the runtime's loop placement (one loop is the
    outer one of a GEMM or DEPTHWISE, the inner one of an ALU)."""
    ext = [e for e, *_ in loops] + [1, 1]
    io, ii = np.meshgrid(np.arange(ext[0]), np.arange(ext[1]), indexing="ij")
    f = [(0, 0, 0)] * 2
    for i, (_, d, s, w) in enumerate(loops):
        f[i] = (d, s, w)
    if len(loops) == 1 and not gemm:
        f = [(0, 0, 0), f[0]]
        io, ii = np.meshgrid(np.arange(1), np.arange(ext[0]), indexing="ij")
    u = np.array(uops)
    return tuple((u[None, None, :, k] + io[..., None] * f[0][k] + ii[..., None] * f[1][k]).reshape(-1)
                 for k in range(3))


def _keeps_hazard_rule(d) -> bool:
    """No acc row written again by either of the two micro-op executions after the one that wrote it (VTA's rule:
    the minimizer's fair programs keep it)."""
    return not any(d.size > lag and np.any(d[lag:] == d[:-lag]) for lag in (1, 2))


class _Gen:
    def __init__(self, rt, cfg, rng, bias=None):
        self.rt, self.cfg, self.rng = rt, cfg, rng
        self.bias = dict(bias or {})
        self.last_kernel = None
        self.long_out = None                  # the buffer of steered long stores, allocated when first used
        self.post_buf = None                  # POST_BLOCKS parameter blocks of POST, made when first used
        self.cmd = rt.command_handle()
        self.stage = None
        r = rng
        cfg = self.cfg
        self.n_elems = {MemId.INP: 160, MemId.WGT: 48, MemId.ACC: 160, MemId.ACC_8BIT: 160}
        self.bufs = {}
        for mem, n in self.n_elems.items():
            eb = {MemId.INP: cfg.INP_ELEM_BYTES, MemId.WGT: cfg.WGT_ELEM_BYTES, MemId.ACC: cfg.ACC_ELEM_BYTES,
                  MemId.ACC_8BIT: cfg.ACC_ELEM_BYTES // 4}[mem]
            if mem == MemId.ACC:
                data = r.integers(-2**12, 2**12, size=n * eb // 4, dtype=np.int32).view(np.uint8)
                big = r.random(data.size // 4) < 0.05          # a few values near the int32 edges
                data.view(np.int32)[big] = r.integers(-2**31, 2**31, size=int(big.sum()), dtype=np.int64)
            else:
                data = r.integers(0, 256, size=n * eb, dtype=np.uint8)
            h = rt.buffer_alloc(data.size)
            np.from_dlpack(rt.buffer_cpu_ptr(self.cmd, h))[:] = data
            self.bufs[mem] = (h, eb, n)
        self.out_elems = 128
        self.out = rt.buffer_alloc(self.out_elems * cfg.OUT_ELEM_BYTES)
        self.acc0 = max(0, cfg.ACC_DEPTH // 2 - ACC_ROWS // 2)     # first acc row of the region

    # ------------------------------------------------------------------ dependencies
    def switch_to(self, stage):
        rt, cmd, prev = self.rt, self.cmd, self.stage
        if prev is not None and prev != stage:
            path = [prev, stage] if abs(prev - stage) == 1 else [prev, COMPUTE, stage]
            for a, b in zip(path, path[1:]):
                rt.dep_push(cmd, a, b)
                rt.dep_pop(cmd, a, b)
                if self.rng.random() < 0.15:          # an extra round trip: b -> a -> b
                    rt.dep_push(cmd, b, a)
                    rt.dep_pop(cmd, b, a)
                    rt.dep_push(cmd, a, b)
                    rt.dep_pop(cmd, a, b)
        self.stage = stage

    # ------------------------------------------------------------------ operations
    def load(self):
        r = self.rng
        mem = MemId(r.choice([MemId.INP, MemId.WGT, MemId.ACC, MemId.ACC_8BIT]))
        h, eb, n = self.bufs[mem]
        rows = {MemId.INP: INP_ROWS, MemId.WGT: WGT_ROWS}.get(mem, ACC_ROWS)
        x, y = int(r.integers(1, 9)), int(r.integers(1, 5))
        stride = x + int(r.integers(0, 4))
        pads = [int(v) if r.random() < 0.4 else 0 for v in r.integers(0, 3, size=4)]   # y0, x0, y1, x1
        if self.bias.get("pad") and r.random() < self.bias["pad"]:                     # steered: wide pads
            pads = [int(v) for v in r.integers(0, 7, size=4)]
            x, y = int(r.integers(1, 3)), 1
        total = (pads[1] + x + pads[3]) * (pads[0] + y + pads[2])
        if total > rows:
            return False
        sram = int(r.integers(0, rows - total + 1)) + (self.acc0 if mem in (MemId.ACC, MemId.ACC_8BIT) else 0)
        span = (y - 1) * stride + x
        if span > n:
            return False
        offset = int(r.integers(0, n - span + 1))
        self.switch_to(LOAD if mem in (MemId.INP, MemId.WGT) else COMPUTE)
        self.rt.load_2d(self.cmd, h, offset, x, y, stride, pads[1], pads[0], pads[3], pads[2], sram, int(mem))
        return True

    def _kernel_shape(self, gemm):
        """Random micro-ops and loops whose indices stay in range (and keep VTA's hazard rule, so the programs
        also suit VTA's pipelines; sw.testing.vta_tests.same_row covers rewriting a row)."""
        r = self.rng
        n_uops = int(r.integers(1, 6))
        loops = [(int(r.integers(1, 5)), int(r.integers(0, 4)), int(r.integers(0, 4)), int(r.integers(0, 4)))
                 for _ in range(int(r.integers(0, 3)))]
        if r.random() < 0.25:
            # a long kernel: an outer loop that repeats the same rows (so that a GEMM and an ALU
            # instruction in different banks overlap for many cycles)
            loops = [(int(r.integers(6, 17)), 0, 0, 0)] + loops[:1]
        uops = [(int(r.integers(0, 24)), int(r.integers(0, 24)), int(r.integers(0, 12))) for _ in range(n_uops)]
        d, s, w = _rows(uops, loops, gemm)
        src_rows = INP_ROWS if gemm else ACC_ROWS
        if d.max() >= ACC_ROWS or s.max() >= src_rows or (gemm and w.max() >= WGT_ROWS):
            return None
        for lag in (1, 2):
            if d.size > lag and np.any(d[lag:] == d[:-lag]):
                return None
        # half of the kernels move to the upper half of the acc region (the upper bank) when they fit
        up = ACC_ROWS // 2
        if r.random() < 0.5 and d.max() + up < ACC_ROWS and (gemm or s.max() + up < ACC_ROWS):
            uops = [(dd + up, ss if gemm else ss + up, ww) for dd, ss, ww in uops]
        return uops, loops

    def gemm(self):
        r = self.rng
        shape = self._kernel_shape(True)
        if shape is None:
            return False
        uops, loops = shape
        if self.bias.get("big_kernel") and r.random() < self.bias["big_kernel"]:
            n = min(BIG_KERNEL_UOPS, self.cfg.UOP_DEPTH // 2) - int(r.integers(0, 2))   # steered: a long kernel
            uops, loops = [(i % ACC_ROWS, i % INP_ROWS, i % WGT_ROWS) for i in range(n)], []
        reset = int(r.random() < 0.25)
        rt = self.rt
        kernel = self._gemm_kernel(uops, loops, reset)
        self.switch_to(COMPUTE)
        if self.bias.get("reuse") and self.last_kernel and r.random() < self.bias["reuse"]:
            kernel = self.last_kernel          # steered: the same micro-kernel again (its micro-ops are reused)
        self.last_kernel = kernel
        rt.push_gemm_op(self.cmd, kernel, 0)
        return True

    def _gemm_kernel(self, uops, loops, reset):
        """A micro-kernel of GEMM-mode micro-ops (GEMM and DEPTHWISE) under ``loops``, destinations in this
        program's acc region."""
        rt, acc0 = self.rt, self.acc0

        def kernel():
            for loop in loops:
                rt.uop_loop_begin(*loop)
            for d, s, w in uops:
                rt.uop_push(0, reset, acc0 + d, s, w, 0, 0, 0)
            for _ in loops:
                rt.uop_loop_end()
        return kernel

    def depthwise(self):
        """DEPTHWISE (configs with DEPTHWISE): a kernel of one to twenty GEMM-mode micro-ops under none, one or two
        loops (extents up to 5), so that windows are partial (fewer executions than BLOCK_IN) or full and cross
        inner and outer iteration boundaries; in a third of them every micro-op writes one row (as a depthwise
        convolution does: the last execution's value stays), elsewhere rows repeat at random distances (DEPTHWISE
        never reads its destination, so no hazard rule applies); reset in one of eight."""
        r, rt = self.rng, self.rt
        n_uops = int(r.integers(1, 21)) if r.random() < 0.3 else int(r.integers(1, 7))
        loops = [(int(r.integers(1, 6)), int(r.integers(0, 4)), int(r.integers(0, 4)), int(r.integers(0, 3)))
                 for _ in range(int(r.integers(0, 3)))]
        one_row = r.random() < 1 / 3
        dst0 = int(r.integers(0, 24))
        uops = [(dst0 if one_row else int(r.integers(0, 24)), int(r.integers(0, 24)), int(r.integers(0, 12)))
                for _ in range(n_uops)]
        d, s, w = _rows(uops, loops, True)
        if d.max() >= ACC_ROWS or s.max() >= INP_ROWS or w.max() >= WGT_ROWS:
            return False
        up = ACC_ROWS // 2
        if r.random() < 0.5 and d.max() + up < ACC_ROWS:
            uops = [(dd + up, ss, ww) for dd, ss, ww in uops]
        reset = int(r.random() < 0.125)
        self.switch_to(COMPUTE)
        rt.push_depthwise_op(self.cmd, self._gemm_kernel(uops, loops, reset), 0)
        return True

    def alu(self):
        r = self.rng
        shape = self._kernel_shape(False)
        if shape is None:
            return False
        uops, loops = shape
        ops = [op for op in alu_opcodes(self.cfg) if op != AluOp.POST]
        op = int(r.choice(ops))
        use_imm = int(r.random() < 0.5)
        if op == AluOp.SHR:
            imm = int(r.choice(SHIFTS))
        else:
            imm = int(r.choice([0, 1, -1, 127, -128, 32767, -32768, int(r.integers(-32768, 32768))]))
        rt = self.rt

        def kernel():
            for loop in loops:
                rt.uop_loop_begin(*loop)
            for d, s, _ in uops:
                rt.uop_push(1, 0, self.acc0 + d, self.acc0 + s, 0, op, use_imm, imm if use_imm else 0)
            for _ in loops:
                rt.uop_loop_end()
        self.switch_to(COMPUTE)
        rt.push_alu_op(self.cmd, kernel, 0)
        return True

    def _post_kernel(self, shape, use_imm):
        """(micro-ops [(dst, src)], loops, dst rows, src rows) of a POST kernel of ``shape`` on rows of the acc
        region (relative to its first row), or None when the draw does not fit:

        - "fast" (and "params"): the unit's fast shape, one micro-op whose destinations strictly increase (none,
          one or two loops), with the residual's rows apart from them;
        - "uops": two to four micro-ops;
        - "repeat": one micro-op whose loops come back to a destination row;
        - "overlap": one micro-op under a loop, the residual's rows overlapping the destinations.

        Every kernel keeps VTA's hazard rule (no row rewritten within two micro-op executions)."""
        r = self.rng
        row0 = int(r.integers(0, ACC_ROWS))             # the micro-op's destination row
        if shape in ("fast", "params"):
            n_loops = int(r.integers(0, 3))
            ni, di = int(r.integers(1, 9)), int(r.integers(1, 3))
            inner = (ni, di, int(r.integers(0, 3)), 0)
            outer = (int(r.integers(2, 5)), (ni - 1) * di + int(r.integers(1, 4)), int(r.integers(0, 9)), 0)
            loops = [[], [inner], [outer, inner]][n_loops]
            uops = [(row0, int(r.integers(0, ACC_ROWS)))]
        elif shape == "uops":
            uops = [(int(r.integers(0, ACC_ROWS)), int(r.integers(0, ACC_ROWS))) for _ in range(int(r.integers(2, 5)))]
            loops = [(int(r.integers(1, 4)), int(r.integers(0, 4)), int(r.integers(0, 4)), 0)][:int(r.integers(0, 2))]
        elif shape == "repeat":
            ni, di = int(r.integers(3, 7)), int(r.integers(1, 3))
            # the outer step a multiple of the inner one, at most ni - 3 of them: a row comes back 3 or more later
            loops = [(int(r.integers(2, 4)), di * int(r.integers(0, ni - 2)), int(r.integers(0, 3)), 0),
                     (ni, di, int(r.integers(0, 3)), 0)]
            uops = [(row0, int(r.integers(0, ACC_ROWS)))]
        else:   # "overlap"
            uops = [(row0, row0 + int(r.integers(-3, 4)))]
            loops = [(int(r.integers(2, 17)), int(r.integers(1, 3)), int(r.integers(0, 3)), 0)]
        if min(min(u) for u in uops) < 0:
            return None
        d, s = (np.array(rows) for rows in zip(*alu_rows(uops, loops)))
        if d.max() >= ACC_ROWS or s.max() >= ACC_ROWS or not _keeps_hazard_rule(d):
            return None
        increasing = d.size == 1 or bool(np.all(d[1:] > d[:-1]))
        apart = use_imm or not np.isin(s, d).any()
        if (shape in ("fast", "params")) != (len(uops) == 1 and increasing and apart):
            return None                               # (only a fast shape is fast)
        if shape == "repeat" and np.unique(d).size == d.size or shape == "overlap" and apart:
            return None
        return uops, loops, d, s

    def post(self):
        """POST (ALU opcode 5): a LOAD ACC of one of the program's parameter blocks (:func:`post_params`) into the
        parameter rows (or none: the rows' current values are the parameters), then POST with imm at them, with or
        without the residual (a tensor operand), on a kernel of the unit's fast shape or an irregular one
        (:meth:`_post_kernel`; "params": the fast shape with destinations among the parameter rows). The parameter
        rows are in the acc region or at either end of imm's range (row 0, the last POST_PARAM_ROWS rows)."""
        r, rt, cfg = self.rng, self.rt, self.cfg
        shape = str(r.choice(["fast", "fast", "uops", "repeat", "overlap", "params"]))
        use_imm = 0 if shape == "overlap" else int(r.random() < 0.5)
        kernel_rows = self._post_kernel(shape, use_imm)
        if kernel_rows is None:
            return False
        uops, loops, d, _ = kernel_rows
        d = d + self.acc0
        u = r.random()
        if shape == "params":        # a block that starts at most POST_PARAM_ROWS - 1 rows before a destination
            first = int(r.choice(d)) - int(r.integers(0, POST_PARAM_ROWS))
            p = min(max(first, 0), cfg.ACC_DEPTH - POST_PARAM_ROWS)
        else:
            p = 0 if u < 0.1 else cfg.ACC_DEPTH - POST_PARAM_ROWS if u < 0.2 else \
                self.acc0 + int(r.integers(0, ACC_ROWS - POST_PARAM_ROWS + 1))
        if (shape == "params") != bool(np.any((d >= p) & (d < p + POST_PARAM_ROWS))):
            return False
        self.switch_to(COMPUTE)
        if r.random() < 0.85:
            if self.post_buf is None:
                lanes = cfg.BATCH * cfg.BLOCK_OUT
                blocks = np.concatenate([post_params(r, lanes) for _ in range(POST_BLOCKS)])
                self.post_buf = rt.buffer_alloc(blocks.nbytes)
                dev = np.from_dlpack(rt.buffer_cpu_ptr(self.cmd, self.post_buf))
                dev[:blocks.nbytes] = blocks.view(np.uint8).reshape(-1)
            block = int(r.integers(0, POST_BLOCKS)) * POST_PARAM_ROWS
            rt.load_2d(self.cmd, self.post_buf, block, POST_PARAM_ROWS, 1, POST_PARAM_ROWS, 0, 0, 0, 0, p,
                       int(MemId.ACC))

        def kernel():
            for loop in loops:
                rt.uop_loop_begin(*loop)
            for dd, ss in uops:
                rt.uop_push(1, 0, self.acc0 + dd, self.acc0 + ss, 0, int(AluOp.POST), use_imm, p)
            for _ in loops:
                rt.uop_loop_end()
        rt.push_alu_op(self.cmd, kernel, 0)
        return True

    def hub(self):
        """Steered: a GEMM that waits for tokens from load and/or store and sends tokens to either or both
        (the dependency-flag combinations of compute that the stage-to-stage path never makes)."""
        r, rt, cmd = self.rng, self.rt, self.cmd
        pop_prev, pop_next, push_prev, push_next = (bool(b) for b in r.integers(0, 2, size=4))
        if not (pop_prev or pop_next):
            self.switch_to(COMPUTE)                  # the usual path: compute waits for what ran before
        if pop_prev:
            self.switch_to(LOAD)
            rt.dep_push(cmd, LOAD, COMPUTE)          # one token more than the path consumes
        if pop_next:
            self.switch_to(STORE)
            rt.dep_push(cmd, STORE, COMPUTE)
        if pop_prev:
            rt.dep_pop(cmd, LOAD, COMPUTE)
        if pop_next:
            rt.dep_pop(cmd, STORE, COMPUTE)
        self.stage = COMPUTE
        reuse = self.bias.get("reuse", 0)
        self.bias["reuse"] = 1.0      # a cached kernel: no micro-op load takes the pops before the GEMM does
        for _ in range(20):
            if self.gemm():
                break
        self.bias["reuse"] = reuse
        if push_prev:
            rt.dep_push(cmd, COMPUTE, LOAD)
        if push_next:
            rt.dep_push(cmd, COMPUTE, STORE)
            rt.dep_pop(cmd, COMPUTE, STORE)          # taken by the next store-stage instruction
        if push_prev:
            rt.dep_pop(cmd, COMPUTE, LOAD)
            h, _, _ = self.bufs[MemId.INP]
            rt.load_2d(cmd, h, 0, 1, 1, 1, 0, 0, 0, 0, 0, int(MemId.INP))   # a load that takes it
            self.stage = LOAD
        return True

    def store(self):
        r = self.rng
        if self.bias.get("long_store") and r.random() < self.bias["long_store"]:
            # steered: one long row of any acc rows (outside the region the same on both models) into a buffer of
            # two 4 KiB pages or more: bursts of up to 256 beats, across a 4 KiB boundary
            elems = max(LONG_OUT_ELEMS, 2 * 4096 // self.cfg.OUT_ELEM_BYTES)      # two 4 KiB pages or more
            if self.long_out is None:
                self.long_out = self.rt.buffer_alloc(elems * self.cfg.OUT_ELEM_BYTES)
            most = min(elems // 2, self.cfg.ACC_DEPTH)
            x = most if r.random() < 0.3 else int(r.integers(elems // 8, most + 1))
            sram = int(r.integers(0, self.cfg.ACC_DEPTH - x + 1))
            offset = int(r.integers(0, elems - x + 1))
            self.switch_to(STORE)
            self.rt.store_2d(self.cmd, sram, int(MemId.OUT), self.long_out, offset, x, 1, x)
            return True
        x, y = int(r.integers(1, 9)), int(r.integers(1, 4))
        if x * y > ACC_ROWS:
            return False
        sram = int(r.integers(0, ACC_ROWS - x * y + 1)) + self.acc0
        stride = x + int(r.integers(0, 4))
        span = (y - 1) * stride + x
        if span > self.out_elems:
            return False
        offset = int(r.integers(0, self.out_elems - span + 1))
        self.switch_to(STORE)
        self.rt.store_2d(self.cmd, sram, int(MemId.OUT), self.out, offset, x, y, stride)
        return True


def random_program(seed: int, n_ops: int = 24, api_kind: str = "python", bias: dict[str, float] | None = None) -> dict:
    """Build and run one random program; return its output bytes, counters and disassembly.

    ``bias`` ({name in BIASES: probability}) steers the draws toward rarely generated shapes (functional
    coverage holes; "hub", "post" and "depthwise" add that share of hub GEMMs, POSTs and DEPTHWISEs to the draws of
    actions, "post" only on a config with POST_UNIT, "depthwise" only on one with DEPTHWISE); without it a seed is the
    same program as always."""
    from sw import runtime
    from sw.testing import vta_tests as programs

    rt = programs.api(api_kind)
    q = runtime.current()
    cfg = q.cfg
    for name, p in dict(bias or {}).items():
        if name not in BIASES or not 0 <= p <= 1:
            raise ValueError(f"random_program: bias {name!r} = {p!r}; allowed names {BIASES}, values in [0, 1]")
    g = _Gen(rt, cfg, np.random.default_rng(seed), bias)
    actions = [g.load, g.load, g.gemm, g.gemm, g.alu, g.alu, g.store]
    if cfg.POST_UNIT:
        actions.append(g.post)
    if cfg.DEPTHWISE:
        actions.append(g.depthwise)
    base = len(actions)
    built = {"hub": True, "post": cfg.POST_UNIT, "depthwise": cfg.DEPTHWISE}
    for name, action in (("hub", g.hub), ("post", g.post), ("depthwise", g.depthwise)):
        if bias and bias.get(name) and built[name]:
            actions += [action] * max(1, round(base * bias[name]))
    done = 0
    tries = 0
    while done < n_ops and tries < 20 * n_ops:
        tries += 1
        if actions[int(g.rng.integers(0, len(actions)))]():
            done += 1
    # make the end state observable: store the whole region the programs use
    g.switch_to(STORE)
    rt.store_2d(g.cmd, g.acc0, int(MemId.OUT), g.out, 0, g.out_elems // 2, 1, g.out_elems // 2)
    listing = q.dump()
    counters = {str(k): int(v) for k, v in dict(rt.synchronize(g.cmd, 1 << 31)).items()}
    out = np.from_dlpack(rt.buffer_cpu_ptr(g.cmd, g.out))[:g.out_elems * cfg.OUT_ELEM_BYTES].copy()
    for h, _, _ in g.bufs.values():
        rt.buffer_free(h)
    rt.buffer_free(g.out)
    for h in (g.long_out, g.post_buf):
        if h is not None:
            rt.buffer_free(h)
    return {"seed": seed, "out": out, "counters": counters, "listing": listing}


@command
def main(argv=None) -> int:
    import argparse

    from sw import runtime
    parser = argparse.ArgumentParser(description="run random programs on the golden model")
    parser.add_argument("n", type=int, nargs="?", default=100)
    parser.add_argument("--config", default=None)
    parser.add_argument("--start", type=int, default=0)
    args = parser.parse_args(argv)
    with runtime.use_target(args.config):
        for seed in range(args.start, args.start + args.n):
            random_program(seed)
    print(f"{args.n} random programs ran on the golden model")
    return 0


if __name__ == "__main__":
    run_as_main(__spec__)
