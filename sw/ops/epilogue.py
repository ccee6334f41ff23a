"""Epilogues: what the tensor ALU does to a tile's int32 accumulators before STORE writes them.

One type, :class:`Epilogue`, describes every way dense and conv2d finish a tile:

* a sequence of ALU steps ``(op, operand)`` applied in order, in place, to every accumulator:
  ``op`` an :class:`~sw.isa.AluOp` (MIN, MAX, ADD, SHR, MUL; MUL only on configs with ``ALU_MUL``),
  ``operand`` an int immediate (the ALU's 16-bit signed field, :data:`IMM_MIN`..:data:`IMM_MAX`) or
  ``"v0"``, ``"v1"``, ... for per-output-channel int32 vector i (loaded into the acc SRAM beside the
  tile before its first use and broadcast over the tile's rows: two cycles per micro-op);
* optionally a **residual**: an int8 tensor of the tile's shape (a skip connection), loaded into the acc
  SRAM beside the tile (LOAD ACC_8BIT, sign-extended), finished in place by its own ALU steps
  (``residual``: immediates or vectors, e.g. zero point and rescale), and used by a step with the operand
  ``"r"`` (element by element, two cycles per micro-op): a residual add fused into the producing
  layer's epilogue, so the two-input add makes no round trip through DRAM;
* optionally a **branch**: at step ``at`` the tile's values are copied into a second acc region (after the
  vectors; zeroed, then a tensor ADD), finished there by the branch's own steps, and combined back by a
  step with the operand ``"b"`` (``MAX b``: a LeakyRelu's two slopes, ``max(x A, x B)``);
* then ``planes`` bytes of each result: STORE writes the low 8 bits of an accumulator, so for
  ``planes = k > 1`` the tile is copied into k - 1 more acc regions, region p shifted right by 8p,
  and the k low bytes are stored and reassembled on the host into the low 8k bits, sign-extended.
  ``planes = 4`` reads the int32 accumulators back exactly.

The constructors name the common cases: :meth:`Epilogue.vta` is VTA's requantization (``>> shift``,
``+ bias``, clip to [0, 127]); :meth:`Epilogue.exact_int32` is a raw GEMM's readback; any other list
of steps is a fixed-point requantization with a multiplier, zero points and int8/uint8 saturation
(the ONNX importer's, docs/numerics.md). :meth:`Epilogue.reference` is the numpy definition, with
the golden model's own ALU arithmetic (:func:`sw.fsim.alu.alu_op`); :meth:`Epilogue.actions`
is the one lowering to ALU instructions that dense and conv2d share.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np
import numpy.typing as npt

from sw.config import Config
from sw.fsim.alu import alu_op
from sw.isa import ALUOP_IMM_BITS, AluOp
from sw.ops.kernels import Load, _alu_rows, _alu_tensor, _zero_rows

__all__ = ["Epilogue", "IMM_MIN", "IMM_MAX", "Operand", "AluStep", "bias_init", "vectors_2d"]

IMM_MIN, IMM_MAX = -(1 << (ALUOP_IMM_BITS - 1)), (1 << (ALUOP_IMM_BITS - 1)) - 1
"""The range of an ALU immediate (the instruction's sign-extended ``imm`` field)."""

Operand = int | str
AluStep = tuple[AluOp, Operand]
Loops = Sequence[tuple[int, int, int]]      # (extent, dst_factor, src_factor) of up to two loops, outer first

_ALLOWED_OPS = ", ".join(o.name for o in AluOp)

RESIDUAL_LOAD_PASSES = 2
"""The planner's cost of loading a residual, in ALU passes over the tile's rows (LOAD ACC_8BIT moves one
BATCH x BLOCK_OUT int8 row in about two bus beats on the compute module)."""


def _check_step(i: int, step) -> AluStep:
    if not isinstance(step, (tuple, list)) or len(step) != 2:
        raise ValueError(f"epilogue step {i} = {step!r}; expected (AluOp, operand)")
    op, operand = step
    try:
        op = AluOp[op.upper()] if isinstance(op, str) else AluOp(int(op))
    except (KeyError, ValueError):
        raise ValueError(f"epilogue step {i}: op {op!r}; allowed: {_ALLOWED_OPS}") from None
    if isinstance(operand, str):
        if not (operand in ("r", "b") or operand.startswith("v") and operand[1:].isdigit()):
            raise ValueError(f"epilogue step {i}: operand {operand!r}; allowed: an int immediate in "
                             f"[{IMM_MIN}, {IMM_MAX}], a vector 'v0', 'v1', ..., the residual 'r' or the branch 'b'")
        if op == AluOp.SHR:
            raise ValueError(f"epilogue step {i}: SHR takes an immediate shift in [{IMM_MIN}, {IMM_MAX}], "
                             f"not a tensor operand")
        return op, operand
    if isinstance(operand, bool) or not isinstance(operand, (int, np.integer)):
        raise ValueError(f"epilogue step {i}: operand {operand!r}; allowed: an int immediate in "
                         f"[{IMM_MIN}, {IMM_MAX}] or a vector 'v0', 'v1', ...")
    if not IMM_MIN <= int(operand) <= IMM_MAX:
        raise ValueError(f"epilogue step {i}: immediate {int(operand)}; allowed [{IMM_MIN}, {IMM_MAX}]")
    return op, int(operand)


@dataclass(frozen=True)
class Epilogue:
    """ALU ``steps`` on a tile's accumulators, then ``planes`` (1-4) low bytes of each stored.

    ``residual`` (None: no residual): the ALU steps (immediates or vectors) that finish the residual tensor
    in the acc SRAM before a step with operand ``"r"`` uses it. ``branch`` (None: none): ``(at, steps)``, a copy
    of the values before step ``at`` finished by ``steps`` (immediates or vectors), which a later step with
    operand ``"b"`` uses.

    Frozen and hashable: plans and micro-kernels are memoised on it. ``Epilogue(steps)`` validates the
    steps (any sequence of ``(AluOp | name, int | 'vI' | 'r')``) and names the bad field and its range.
    """
    steps: tuple[AluStep, ...] = ()
    planes: int = 1
    residual: tuple[AluStep, ...] | None = None
    branch: tuple[int, tuple[AluStep, ...]] | None = None

    def __post_init__(self):
        object.__setattr__(self, "steps", tuple(_check_step(i, s) for i, s in enumerate(self.steps)))
        if self.planes not in (1, 2, 3, 4):
            raise ValueError(f"epilogue planes = {self.planes!r}; allowed [1, 4] (bytes of each accumulator stored)")
        self._check_branch()
        uses_r = any(v == "r" for _, v in self.steps)
        if self.residual is None:
            if uses_r:
                raise ValueError("epilogue: a step uses the residual 'r' but the epilogue has no residual "
                                 "(residual=None)")
            return
        res = tuple(_check_step(i, s) for i, s in enumerate(self.residual))
        if any(v == "r" for _, v in res):
            raise ValueError("epilogue residual steps take immediates or vectors, not the residual 'r' itself")
        if not uses_r:
            raise ValueError("epilogue: a residual is given but no step uses it (operand 'r')")
        if self.planes != 1:
            raise ValueError(f"epilogue: a residual needs planes = 1 (got {self.planes})")
        object.__setattr__(self, "residual", res)

    def _check_branch(self) -> None:
        uses = [i for i, (_, v) in enumerate(self.steps) if v == "b"]
        if self.branch is None:
            if uses:
                raise ValueError("epilogue: a step uses the branch 'b' but the epilogue has no branch (branch=None)")
            return
        at, steps = self.branch
        if not isinstance(at, (int, np.integer)) or not 0 <= at < len(self.steps):
            raise ValueError(f"epilogue branch at step {at!r}; allowed [0, {len(self.steps) - 1}]")
        steps = tuple(_check_step(i, s) for i, s in enumerate(steps))
        if any(v in ("r", "b") for _, v in steps):
            raise ValueError("epilogue branch steps take immediates or vectors, not 'r' or 'b'")
        if not uses or uses[0] < at:
            raise ValueError(f"epilogue: the branch (copied before step {at}) must be used by a later step "
                             f"(operand 'b')")
        if self.residual is not None or self.planes != 1:
            raise ValueError("epilogue: a branch takes planes = 1 and no residual (they share the acc region)")
        object.__setattr__(self, "branch", (int(at), steps))

    # ------------------------------------------------------------------ constructors
    @classmethod
    def vta(cls, shift: int = 8, bias: bool = False, clip: bool = True) -> Epilogue:
        """VTA's requantization: ``>> shift``, ``+ v0`` (the bias, when ``bias``), MIN 127 then MAX 0."""
        if isinstance(shift, bool) or not isinstance(shift, (int, np.integer)) or not 0 <= shift <= 31:
            raise ValueError(f"shift = {shift!r}; allowed range [0, 31]")
        steps: list[AluStep] = [(AluOp.SHR, int(shift))] if shift else []
        if bias:
            steps.append((AluOp.ADD, "v0"))
        if clip:
            steps += [(AluOp.MIN, 127), (AluOp.MAX, 0)]
        return cls(tuple(steps))

    @classmethod
    def exact_int32(cls) -> Epilogue:
        """No ALU step; the four bytes of every accumulator read back (a raw GEMM)."""
        return cls((), 4)

    @classmethod
    def of(cls, alu: Epilogue | Iterable | None) -> Epilogue | None:
        """An Epilogue, a sequence of steps (one plane), or None, as an Epilogue (or None)."""
        if alu is None or isinstance(alu, Epilogue):
            return alu
        return cls(tuple(alu))

    # ------------------------------------------------------------------ properties
    @cached_property
    def vectors(self) -> int:
        """How many per-channel vectors the steps use (1 + the largest index)."""
        used = [int(v[1:]) for _, v in self.steps + (self.residual or ()) + self._branch_steps
                if isinstance(v, str) and v not in ("r", "b")]
        return 1 + max(used) if used else 0

    @cached_property
    def passes(self) -> int:
        """ALU passes over the tile's rows (one per step: a vector step reads its vector row once per channel
        block; two for the residual's tensor add, whose source row changes with every row; a copy and a shift
        per extra plane)."""
        n = sum(2 if v in ("r", "b") else 1 for _, v in self.steps) + 3 * (self.planes - 1)
        if self.residual is not None:
            n += len(self.residual) + RESIDUAL_LOAD_PASSES
        if self.branch is not None:
            n += 3 + len(self.branch[1])             # zeroing and copying the branch region, its steps
        return n

    @property
    def _branch_steps(self) -> tuple:
        return () if self.branch is None else self.branch[1]

    @cached_property
    def cost_proxy(self) -> Epilogue:
        """An epilogue the planner cannot tell from this one (the same planes, vectors and ALU passes: a plan
        depends on nothing else), the same for every epilogue of that cost: the layers of a network differ in
        their multipliers and shifts, not in their shapes, and then share one memoised plan."""
        def proxy(steps, top):
            n = sum(isinstance(v, str) and v not in ("r", "b") for _, v in steps)
            tensors = [(AluOp.ADD, v) for _, v in steps if v in ("r", "b")]
            return ([(AluOp.ADD, top)] * bool(n) + [(AluOp.ADD, "v0")] * max(0, n - 1) + tensors
                    + [(AluOp.ADD, 0)] * (len(steps) - n - len(tensors)))

        top = f"v{self.vectors - 1}"
        steps = proxy(self.steps, top)
        residual = None if self.residual is None else tuple(proxy(self.residual, top))
        branch = None if self.branch is None else (0, tuple(proxy(self.branch[1], top)))
        return Epilogue(tuple(steps), self.planes, residual, branch)

    @property
    def dtype(self) -> type[np.integer]:
        """The host type of a read-back element: int8 for one plane, int32 (sign-extended) otherwise."""
        return np.int8 if self.planes == 1 else np.int32

    def check(self, cfg: Config, n_vectors: int) -> None:
        """That ``cfg`` can run the steps and ``n_vectors`` vectors were given for them."""
        if not cfg.ALU_MUL and any(op == AluOp.MUL for op, _ in self.steps):
            raise ValueError(f"epilogue: MUL on config {cfg.name}, which has no ALU MUL (ALU_MUL = 0)")
        if self.vectors > n_vectors:
            raise ValueError(f"epilogue uses vectors v0..v{self.vectors - 1}; {n_vectors} given "
                             f"(the rows of bias)")

    def acc_rows(self, rows: int, tm: int) -> int:
        """Acc SRAM rows of a tile of ``rows`` accumulators over ``tm`` channel blocks."""
        return rows * self.planes + tm * self.vectors + (rows if self.residual is not None or self.branch else 0)

    # ------------------------------------------------------------------ numpy
    def reference(self, acc: npt.ArrayLike, vectors: Sequence[npt.ArrayLike] | np.ndarray | None = None,
                  channel_axis: int = 1, residual: npt.ArrayLike | None = None) -> np.ndarray:
        """The epilogue in numpy: int32 ``acc``, ``vectors`` (V, channels) along ``channel_axis``, the int8
        ``residual`` of acc's shape (when the epilogue has one); returns what the host reads back (int8
        for one plane, else int32 of the low 8*planes bits)."""
        y = self.apply(acc, vectors, channel_axis, residual)
        if self.planes == 4:
            return y
        bits = 8 * self.planes
        return ((y.astype(np.int64) << (64 - bits)) >> (64 - bits)).astype(self.dtype)

    def apply(self, acc: npt.ArrayLike, vectors: Sequence[npt.ArrayLike] | np.ndarray | None = None, channel_axis: int = 1,
              residual: npt.ArrayLike | None = None) -> np.ndarray:
        """The ALU steps alone: int32 accumulators in, int32 out (before STORE's truncation)."""
        y = np.asarray(acc).astype(np.int32)
        r = None
        if self.residual is not None:
            if residual is None or np.shape(residual) != y.shape:
                raise ValueError(f"the epilogue has a residual: expected an int8 tensor of shape {y.shape}, got "
                                 f"{None if residual is None else np.shape(residual)}")
            r = np.asarray(residual).astype(np.int8).astype(np.int32)
        def operand(v):
            if v == "r":
                return r
            if isinstance(v, str):
                i = int(v[1:])
                if vectors is None or i >= len(vectors):
                    raise ValueError(f"the epilogue uses vector {v} but {0 if vectors is None else len(vectors)} "
                                     f"were given")
                shape = [1] * y.ndim
                shape[channel_axis] = -1
                return np.asarray(vectors[i], np.int64).astype(np.int32).reshape(shape)
            return v

        for op, v in self.residual or ():
            assert r is not None          # set above: the epilogue has a residual
            r = alu_op(op, r, operand(v))
        for i, (op, v) in enumerate(self.steps):
            if self.branch is not None and i == self.branch[0]:
                b = y
                for bop, u in self.branch[1]:
                    b = alu_op(bop, b, operand(u))
            y = alu_op(op, y, b if v == "b" else operand(v))
        return y

    # ------------------------------------------------------------------ lowering
    def actions(self, acc: int, rows: int, tm: int, loops: Loops, load_vector: Callable[[int, int], Load],
                load_residual: Callable[[int], list] | None = None, vec_base: int | None = None) -> list:
        """The compute actions of a tile whose accumulators are acc rows [acc, acc + rows) over ``tm``
        channel blocks: vector i is loaded (``load_vector(i, sram_row)``) to acc + rows * planes + i * tm
        before its first use; ``loops`` ((extent, dst_factor, src_factor), outer first) walk the rows
        with the source on their channel block; then the copies of the extra planes. A residual is
        loaded first by ``load_residual(sram_row)`` (its LOADs, rows in the accumulators' order, to
        acc + rows + tm * vectors) and finished by its steps just before the first step that uses it
        (those ALU actions are marked ``reads_residual``: a scheduler that delays the loads queues them
        before the first such action). A branch uses the residual's rows. ``vec_base``: the vectors' rows
        elsewhere (a part of a tile's rows, finished on its own: :meth:`tail_actions`)."""
        acts = []
        vec_base = acc + rows * self.planes if vec_base is None else vec_base
        res_base = vec_base + tm * self.vectors
        loaded = set()

        def vector(i: int) -> list:
            """The LOAD of vector i before its first use."""
            if i in loaded:
                return []
            loaded.add(i)
            return [load_vector(i, vec_base + i * tm)]

        def step(op, v, dst, **kw) -> list:
            if isinstance(v, str):
                i = int(v[1:])
                return vector(i) + [_alu_tensor(dst, vec_base + i * tm, tuple(loops), op, **kw)]
            return [replace(_alu_rows(op, v, dst, rows), **kw)]

        residual = self.residual
        if residual is not None:
            if load_residual is None:
                raise ValueError("the epilogue has a residual: the operator must load it (load_residual)")
            acts += list(load_residual(res_base))
        for i, (op, v) in enumerate(self.steps):
            if self.branch is not None and i == self.branch[0]:
                # the branch: its region (the residual's place) zeroed, the values added in, its own steps
                acts += _zero_rows(res_base, rows)
                acts.append(_alu_tensor(res_base, acc, ((rows, 1, 1),), AluOp.ADD))
                for bop, u in self.branch[1]:
                    acts += step(bop, u, res_base)
            if v == "b":
                acts.append(_alu_tensor(acc, res_base, ((rows, 1, 1),), op))
            elif v == "r":
                if residual:
                    # the residual's own steps just before its first use (the loads may come late), the
                    # vectors they use loaded first
                    for _, u in residual:
                        if isinstance(u, str):
                            acts += vector(int(u[1:]))
                    for rop, u in residual:
                        acts += step(rop, u, res_base, reads_residual=True)
                    residual = ()
                acts.append(_alu_tensor(acc, res_base, ((rows, 1, 1),), op, reads_residual=True))
            else:
                acts += step(op, v, acc)
        if self.planes > 1:
            # the extra regions were reset to 0 with the tile: adding the tile copies it into each
            extra = self.planes - 1
            acts.append(_alu_tensor(acc + rows, acc, ((extra, rows, 0), (rows, 1, 1))))
            for p in range(1, self.planes):
                acts.append(_alu_rows(AluOp.SHR, 8 * p, acc + p * rows, rows))
        return acts

    def tail_actions(self, acc: int, parts: Sequence[tuple[int, int]], tm: int, loops_of: Callable[[int], Loops],
                     load_vector: Callable[[int, int], Load], init: bool = False) -> list[list]:
        """A tile's compute actions in ``parts`` ((first accumulator row, rows) each, in order, over [acc, acc +
        rows)), each finished on its own so that its store can start while the ALU works on the next:
        ``loops_of(rows)`` walks a part; the vectors are loaded once, before the first part, to the tile's
        own vector rows. ``init``: the accumulators were started at v0 (:meth:`init_actions`), so the first step
        is left out. One plane, no residual or branch."""
        epi = Epilogue(self.steps[1:]) if init else self
        vec_base = acc + sum(n for _, n in parts)
        out = []
        for i, (r, n) in enumerate(parts):
            acts = epi.actions(r, n, tm, loops_of(n), load_vector, vec_base=vec_base)
            out.append(acts if i == 0 else [a for a in acts if not isinstance(a, Load)])
        return out

    def init_actions(self, acc: int, rows: int, tm: int, loops: Loops,
                     load_vector: Callable[[int, int], Load]) -> tuple[list, list]:
        """For an epilogue that :func:`bias_init` made: (the actions that start a tile's accumulators at v0
        instead of 0: its LOAD and ``MIN v0``, one pass; exact where every accumulator already holds at least
        the largest v0, as a tile of the same operator leaves it), (the actions of the other steps)."""
        vec_base = acc + rows * self.planes
        init = [load_vector(0, vec_base), _alu_tensor(acc, vec_base, tuple(loops), AluOp.MIN)]
        return init, Epilogue(self.steps[1:], self.planes).actions(acc, rows, tm, loops, load_vector)

    def assemble(self, planes: np.ndarray) -> np.ndarray:
        """Read-back planes (planes, ...) int8 -> the values (int8, or int32 sign-extended)."""
        if self.planes == 1:
            return planes[0]
        u = planes.astype(np.uint8).astype(np.uint32)
        v = np.zeros(planes.shape[1:], np.uint32)
        for p in range(self.planes):
            v |= u[p] << np.uint32(8 * p)
        bits = 8 * self.planes
        return ((v.astype(np.int64) << (64 - bits)) >> (64 - bits)).astype(np.int32)


def bias_init(epi: Epilogue, vectors: npt.ArrayLike | None, acc_bound: int) -> tuple[Epilogue, np.ndarray] | None:
    """VTA's requantization with a bias (``>> s``, ``+ v0``, clip), rewritten so that a tile may start its
    accumulators at the bias instead of at zero, saving the ALU's ADD pass (or the GEMM's reset pass).

    Returns (``ADD v0'``, ``>> s``, the clip bounds minus c; the packed vectors with v0' = (v0 - c) << s)
    or None where the steps are not of that form (one plane, no residual or branch, a bias used once, then
    only MIN/MAX immediates, a lower bound among them) or the values do not allow it. c is a multiple of
    256 chosen so the new bounds still fit an immediate: every result is its old value minus c, and STORE
    writes the same low 8 bits. The new form is exact on its own; its point is :meth:`Epilogue.init_actions`:
    every accumulator a tile of the operator leaves holds at least its new lower bound, which is at least
    every v0', so on a region a tile of the same operator used, ``MIN v0'`` sets the accumulators to v0'
    in one pass. ``acc_bound``: the largest absolute value of an accumulator (the products' sum); the
    rewrite needs the accumulators plus v0' to stay within int32. ``vectors``: packed (blocks, BATCH,
    BLOCK_OUT) int32 rows of v0."""
    steps = list(epi.steps)
    s = 0
    if steps and steps[0][0] == AluOp.SHR and not isinstance(steps[0][1], str) and 0 <= steps[0][1] <= 24:
        s = int(steps.pop(0)[1])
    if (epi.planes != 1 or epi.residual is not None or epi.branch is not None or vectors is None
            or not steps or steps[0] != (AluOp.ADD, "v0") or not steps[1:]
            or any(op not in (AluOp.MIN, AluOp.MAX) or isinstance(v, str) for op, v in steps[1:])):
        return None
    bounds = [(op, v) for op, v in steps[1:] if not isinstance(v, str)]    # all of steps[1:] (checked above)
    lo, hi = -(1 << 31), (1 << 31) - 1
    for op, v in bounds:
        lo, hi = (min(lo, v), min(hi, v)) if op == AluOp.MIN else (max(lo, v), max(hi, v))
    if lo == -(1 << 31):
        return None
    c = (min(v for _, v in bounds) - IMM_MIN) // 256 * 256
    v0 = (np.asarray(vectors, np.int64) - c) << s
    if (v0.max() > lo - c or v0.min() - acc_bound < -(1 << 31) or v0.max() + acc_bound > (1 << 31) - 1
            or np.abs(np.asarray(vectors, np.int64)).max() + acc_bound + c > (1 << 31) - 1):
        return None
    new = [(AluOp.ADD, "v0")] + ([(AluOp.SHR, s)] if s else []) + [(op, v - c) for op, v in bounds]
    return Epilogue(tuple(new)), v0.astype(np.int32)


def vectors_2d(bias: npt.ArrayLike, channels: int) -> np.ndarray:
    """bias (channels,) or (V, channels) -> int32 (V, channels)."""
    b = np.asarray(bias)
    if b.ndim == 1:
        b = b[None]
    if b.ndim != 2 or b.shape[1] != channels:
        raise ValueError(f"bias has shape {np.shape(bias)}; expected ({channels},) or (V, {channels})")
    if np.any(b != b.astype(np.int32)):
        raise ValueError(f"bias vectors must fit int32 [{-(1 << 31)}, {(1 << 31) - 1}]")
    return b.astype(np.int32)


def packed_epilogue(epilogue: Epilogue | Iterable | None, shift: int, bias: npt.ArrayLike | None, clip: bool, blocks: int,
                    cfg: Config) -> tuple[Epilogue, np.ndarray | None]:
    """The epilogue of a packed operator call and its vectors as acc rows (V * blocks, BATCH, BLOCK_OUT)
    (or None): ``epilogue`` (an Epilogue or its steps), else VTA's of ``shift`` / ``bias`` / ``clip``;
    ``bias`` None, packed (blocks, BATCH, BLOCK_OUT) or (V, blocks, BATCH, BLOCK_OUT) int32."""
    epi = Epilogue.of(epilogue) or Epilogue.vta(shift, bias is not None, clip)
    B, O = cfg.BATCH, cfg.BLOCK_OUT
    v = np.zeros((0, blocks, B, O), np.int32) if bias is None else np.asarray(bias, np.int32)
    if v.ndim == 3:
        v = v[None]
    if v.ndim != 4 or v.shape[1:] != (blocks, B, O):
        raise ValueError(f"packed vectors have shape {v.shape}; expected (V, {blocks}, {B}, {O})")
    n = v.shape[0]
    epi.check(cfg, n)
    return epi, (v.reshape(n * blocks, B, O) if n else None)


def steps_multiplier(steps: Sequence[AluStep]) -> float:
    """The product of the MUL immediates over 2 ** the sum of the SHR immediates (for reports)."""
    shift, m = 0, 1
    for op, v in steps:
        if op == AluOp.SHR and not isinstance(v, str):
            shift += int(v)
        elif op == AluOp.MUL and not isinstance(v, str):
            m *= int(v)
    return m / 2.0 ** shift
