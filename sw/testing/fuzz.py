"""Random valid programs for differential testing (golden model against RTL).

``random_program(seed, n_ops)`` builds and runs, through the runtime API on the current target, a
program of random LOADs (every memory type, random strides and padding), GEMM and ALU micro-kernels
(random micro-ops, one or two loop levels, every opcode, immediates at the edges), and STOREs of
random regions. Dependencies: whenever consecutive operations run in different modules, a token
goes from the first to the second (through compute for load<->store), with random extra round
trips, so every program is deadlock-free and race-free, and every token queue is exercised.

Everything is drawn from one ``numpy.random.Generator(seed)``, so a seed is a reproducible program;
the result carries the program's disassembly for failure reports. ``python -m sw.testing.fuzz N`` runs N
seeds on the golden model.
"""

from __future__ import annotations

import numpy as np

from sw.cli import command, run_as_main
from sw.isa import AluOp, MemId, alu_opcodes

__all__ = ["random_program"]

LOAD, COMPUTE, STORE = 1, 2, 3

# regions of each SRAM the programs use (small, so that operations touch each other's data); the acc
# region straddles the middle row, so micro-kernels fall in the lower bank, the upper one or both
# (the compute module runs a GEMM and an ALU instruction side by side when they are in different banks)
INP_ROWS, WGT_ROWS, ACC_ROWS = 96, 48, 96
SHIFTS = [0, 1, -1, 2, -2, 7, 8, -8, 15, -15, 31, -31, 32, -32, 40, -40]


# what ``bias`` (functional-coverage steering, cosim/verify/funcov.py) may ask for, each a probability in [0, 1]
BIASES = ("pad", "reuse", "long_store", "hub", "big_kernel")
BIG_KERNEL_UOPS = 1100      # a steered kernel this long is staged across a 4 KiB boundary of device memory
LONG_OUT_ELEMS = 512


class _Gen:
    def __init__(self, rt, cfg, rng, bias=None):
        self.rt, self.cfg, self.rng = rt, cfg, rng
        self.bias = dict(bias or {})
        self.last_kernel = None
        self.long_out = None                  # the buffer of steered long stores, allocated when first used
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
        ext = [e for e, *_ in loops] + [1, 1]
        io, ii = np.meshgrid(np.arange(ext[0]), np.arange(ext[1]), indexing="ij")
        f = [(0, 0, 0)] * 2
        for i, (_, d, s, w) in enumerate(loops):
            f[i] = (d, s, w)
        # the same loop placement as the runtime: GEMM with one loop puts it outside, ALU inside
        if len(loops) == 1 and not gemm:
            f = [(0, 0, 0), f[0]]
            io, ii = np.meshgrid(np.arange(1), np.arange(ext[0]), indexing="ij")
        u = np.array(uops)
        idx = [(u[None, None, :, k] + io[..., None] * f[0][k] + ii[..., None] * f[1][k]).reshape(-1) for k in range(3)]
        d, s, w = idx
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

        def kernel():
            for loop in loops:
                rt.uop_loop_begin(*loop)
            for d, s, w in uops:
                rt.uop_push(0, reset, self.acc0 + d, s, w, 0, 0, 0)
            for _ in loops:
                rt.uop_loop_end()
        self.switch_to(COMPUTE)
        if self.bias.get("reuse") and self.last_kernel and r.random() < self.bias["reuse"]:
            kernel = self.last_kernel          # steered: the same micro-kernel again (its micro-ops are reused)
        self.last_kernel = kernel
        rt.push_gemm_op(self.cmd, kernel, 0)
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
            # steered: one long row of any acc rows (zero outside the region on both models) into a buffer of
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
    coverage holes); without it a seed is the same program as always."""
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
    if bias and bias.get("hub"):
        actions += [g.hub] * max(1, round(len(actions) * bias["hub"]))
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
    if g.long_out is not None:
        rt.buffer_free(g.long_out)
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
