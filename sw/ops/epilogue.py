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
is the one lowering to ALU instructions that dense, conv2d and pool2d share.

On a config with the post-processing unit (``POST_UNIT`` = 1), :meth:`Epilogue.lowered` cuts the steps into the
fewest passes of the unit's fixed chain (:mod:`sw.ops.post`) and keeps those that pay (``Epilogue.post``): each is
one POST instruction per channel block of a tile (one per tile when no step of it takes a vector), its parameter
rows built on the host (:meth:`Epilogue.pack`) and loaded beside the tile. The pass that adds the residual reads it as
its tensor operand and takes the residual's own steps too when they fit the unit's residual steps (``MUL``, then
``ADD``: :data:`~sw.isa.POST_RESIDUAL_STEPS`); otherwise they become passes over the residual's rows. A branch's
steps, the steps the unit cannot take and the copies of extra planes stay ALU instructions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from sw.config import Config
from sw.fsim.alu import alu_op
from sw.isa import ALUOP_IMM_BITS, POST_PARAM_ROWS, POST_RESIDUAL_STEPS, AluOp, MemId
from sw.ops import post as _post
from sw.ops.kernels import (
    ALU_INSN_CYCLES,
    POST_INSN_CYCLES,
    Alu,
    Load,
    _alu_rows,
    _alu_tensor,
    _k_alu,
    _zero_rows,
)

__all__ = ["Epilogue", "IMM_MIN", "IMM_MAX", "Operand", "AluStep", "PostPass", "TileOperands", "bias_init",
           "vectors_2d"]

IMM_MIN, IMM_MAX = -(1 << (ALUOP_IMM_BITS - 1)), (1 << (ALUOP_IMM_BITS - 1)) - 1
"""The range of an ALU immediate (the instruction's sign-extended ``imm`` field)."""

Operand = int | str
AluStep = tuple[AluOp, Operand]
Loops = Sequence[tuple[int, int, int]]      # (extent, dst_factor, src_factor) of up to two loops, outer first

_STEP_OPS = tuple(o for o in AluOp if o != AluOp.POST)        # a step is one ALU operation (POST is a chain of them)
_ALLOWED_OPS = ", ".join(o.name for o in _STEP_OPS)

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
        op = None
    if op not in _STEP_OPS:
        raise ValueError(f"epilogue step {i}: op {step[0]!r}; allowed: {_ALLOWED_OPS}")
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


def _clips_first(steps: tuple[AluStep, ...], at: int | None) -> tuple[AluStep, ...]:
    """``steps`` with each clip ``MIN a; MAX b`` of immediates b <= a written ``MAX b; MIN a`` (the same values:
    both give a where x > a, b where x < b, else x), the post-processing unit's order; not across step ``at`` (a
    branch copies the values before it)."""
    out = list(steps)
    for i in range(len(out) - 1):
        (o1, a), (o2, b) = out[i], out[i + 1]
        if (o1 == AluOp.MIN and o2 == AluOp.MAX and not isinstance(a, str) and not isinstance(b, str) and b <= a
                and at != i + 1):
            out[i], out[i + 1] = out[i + 1], out[i]
    return tuple(out)


def _param_imm(row: int) -> int:
    """A POST instruction's immediate: its parameter row, which the immediate field must reach."""
    if row > IMM_MAX:
        raise ValueError(f"POST parameter row {row}: the ALU immediate reaches row {IMM_MAX} at most")
    return row


class PostPass(NamedTuple):
    """One pass of the post-processing unit in an epilogue: steps [start, end) of its ``steps`` (``on`` = "steps")
    or of its residual's (``on`` = "residual"), at ``stages`` of the chain (:func:`sw.ops.post.stages`); ``vector``:
    a step takes a per-channel vector (one POST instruction per channel block, each with its own parameter rows);
    ``residual``: it adds the residual (its tensor operand, two cycles per row); ``residual_at``: the places in
    POST_RESIDUAL_STEPS of the residual's steps it takes (:func:`sw.ops.post.residual_stages`; the epilogue's
    whole residual, when :attr:`Epilogue.fused`), else ()."""
    on: str
    start: int
    end: int
    stages: tuple[int, ...]
    vector: bool
    residual: bool
    residual_at: tuple[int, ...] = ()


@dataclass(frozen=True)
class TileOperands:
    """A tile's view of an operator's epilogue operands in DRAM (:meth:`Epilogue.pack`): int32 rows of
    BATCH x BLOCK_OUT lanes in buffer ``dram`` (None: the operator has none), each vector ``blocks`` rows (one per
    channel block), the tile's channel blocks [``first``, ``first + count``)."""
    dram: int | None
    blocks: int
    first: int
    count: int

    def vector(self, i: int, sram: int) -> Load:
        """The LOAD of vector i's rows of the tile's channel blocks to acc rows [sram, sram + count)."""
        return self.rows(i * self.blocks + self.first, self.count, sram)

    def rows(self, first: int, n: int, sram: int) -> Load:
        """The LOAD of ``n`` consecutive operand rows from row ``first`` to acc rows [sram, sram + n)."""
        if self.dram is None:
            raise ValueError(f"the epilogue loads operand rows [{first}, {first + n}) but the operator has none (the "
                             f"vectors and parameters of Epilogue.pack)")
        return Load(self.dram, first, n, 1, n, sram, int(MemId.ACC))


PostPasses = tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...], bool]


@dataclass(frozen=True)
class Epilogue:
    """ALU ``steps`` on a tile's accumulators, then ``planes`` (1-4) low bytes of each stored.

    ``residual`` (None: no residual): the ALU steps (immediates or vectors) that finish the residual tensor
    in the acc SRAM before a step with operand ``"r"`` uses it. ``branch`` (None: none): ``(at, steps)``, a copy
    of the values before step ``at`` finished by ``steps`` (immediates or vectors), which a later step with
    operand ``"b"`` uses.

    ``post`` (None: every step an ALU instruction): (ranges of ``steps``, ranges of ``residual``, fused), each
    [start, end) range one pass of the post-processing unit (:mod:`sw.ops.post`), the steps outside them ALU
    instructions; ``fused``: the pass of ``steps`` that adds the residual takes every step of ``residual`` too (then
    no range of ``residual``; a pair of ranges means fused = False); as :meth:`lowered` chooses them for a config with
    the unit. One plane only, and no range across the branch's step.

    Frozen and hashable: plans and micro-kernels are memoised on it. ``Epilogue(steps)`` validates the
    steps (any sequence of ``(AluOp | name, int | 'vI' | 'r')``) and names the bad field and its range.
    """
    steps: tuple[AluStep, ...] = ()
    planes: int = 1
    residual: tuple[AluStep, ...] | None = None
    branch: tuple[int, tuple[AluStep, ...]] | None = None
    post: PostPasses | None = None

    def __post_init__(self):
        object.__setattr__(self, "steps", tuple(_check_step(i, s) for i, s in enumerate(self.steps)))
        if self.planes not in (1, 2, 3, 4):
            raise ValueError(f"epilogue planes = {self.planes!r}; allowed [1, 4] (bytes of each accumulator stored)")
        self._check_branch()
        self._check_residual()
        self._check_post()

    def _check_residual(self) -> None:
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

    def _check_post(self) -> None:
        if self.post is None:
            return
        if not isinstance(self.post, (tuple, list)) or len(self.post) not in (2, 3):
            raise ValueError(f"epilogue post = {self.post!r}; expected (ranges of the steps, ranges of the residual's "
                             f"steps[, fused]), each range (start, end)")
        fused = bool(self.post[2]) if len(self.post) == 3 else False
        if self.planes != 1:
            raise ValueError(f"epilogue post: the post-processing unit takes planes = 1 (got {self.planes})")
        at = None if self.branch is None else self.branch[0]
        out = []
        for name, steps, ranges in (("steps", self.steps, self.post[0]), ("residual", self.residual or (),
                                                                          self.post[1])):
            last, checked = 0, []
            for r in ranges:
                a, b = (r if isinstance(r, (tuple, list)) and len(r) == 2 else (None, None))
                if (not isinstance(a, (int, np.integer)) or not isinstance(b, (int, np.integer))
                        or not last <= a < b <= len(steps)):
                    raise ValueError(f"epilogue post: range {r!r} of the {name}; allowed: (start, end) with "
                                     f"{last} <= start < end <= {len(steps)}, in order, not overlapping")
                if not all(_post.eligible(s) for s in steps[a:b]) or _post.stages(steps[a:b]) is None:
                    raise ValueError(f"epilogue post: {name} [{a}, {b}) is not one pass of the post-processing "
                                     f"unit (an in-order part of {_post.template()}; the residual only as ADD 'r')")
                if name == "steps" and at is not None and a < at < b:
                    raise ValueError(f"epilogue post: steps [{a}, {b}) span the branch's step {at}")
                last = int(b)
                checked.append((int(a), int(b)))
            out.append(tuple(checked))
        if fused:
            adds = [(a, b) for a, b in out[0] if any(v == "r" for _, v in self.steps[a:b])]
            if out[1] or not adds or _post.residual_stages(self.residual or ()) is None:
                raise ValueError(f"epilogue post: a fused residual needs a pass of the steps that adds it, no range "
                                 f"of the residual, and residual steps that are an in-order part of "
                                 f"{' '.join(op.name for op in POST_RESIDUAL_STEPS)} (got residual "
                                 f"{self.residual!r}, post {self.post!r})")
        object.__setattr__(self, "post", (out[0], out[1], fused))

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

    def lowered(self, cfg: Config, rows: int | None = None, blocks: int = 1) -> Epilogue:
        """This epilogue as config ``cfg`` runs it. With the post-processing unit (``POST_UNIT`` = 1) and one plane,
        the steps and the residual's steps are cut into the fewest passes of the unit (:func:`sw.ops.post.segments`;
        none across the branch's step), each kept (:attr:`post`) where it costs less than its steps on the ALU over a
        tile of ``blocks`` channel blocks of ``rows`` accumulator rows each, its parameters' load included
        (:func:`sw.ops.post.pays`; ``rows`` None: where it takes two steps or more), a clip written ``MIN a; MAX b``
        with immediates b <= a first taken as ``MAX b; MIN a`` (the same values, in the unit's order). The residual's
        steps ride in the kept pass that adds the residual when they are an in-order part of POST_RESIDUAL_STEPS
        (:func:`sw.ops.post.residual_stages`; counted in that pass's cost), else they are cut into passes of their
        own. Otherwise, or where no pass pays, this epilogue (every step on the ALU); an epilogue already lowered is
        returned as it is."""
        if self.post is not None or not cfg.POST_UNIT or self.planes != 1:
            return self
        at = None if self.branch is None else self.branch[0]
        steps = _clips_first(self.steps, at)
        residual = None if self.residual is None else _clips_first(self.residual, None)
        ride = () if residual is None or _post.residual_stages(residual) is None else residual
        load = _post.load_cycles(cfg)

        def kept(seq, breaks, ride=()) -> tuple[tuple[int, int], ...]:
            def worth(part) -> bool:
                extra = ride if any(v == "r" for _, v in part) else ()
                return _post.pays(part, rows, blocks, load, extra) if rows is not None else len(part + extra) >= 2
            return tuple((a, b) for a, b in _post.segments(seq, breaks) if worth(seq[a:b]))

        main = kept(steps, () if at is None else (at,), ride)
        fused = bool(ride) and any(v == "r" for a, b in main for _, v in steps[a:b])
        res = () if fused else kept(residual or (), ())
        if not main and not res:
            return self
        return replace(self, steps=steps, residual=residual, post=(main, res, fused))

    @property
    def fused(self) -> bool:
        """Whether the POST pass that adds the residual takes the residual's own steps (:attr:`post`)."""
        return self.post is not None and self.post[2]

    # ------------------------------------------------------------------ properties
    @cached_property
    def vectors(self) -> int:
        """How many per-channel vectors the steps use (1 + the largest index)."""
        used = [int(v[1:]) for _, v in self.steps + (self.residual or ()) + self._branch_steps
                if isinstance(v, str) and v not in ("r", "b")]
        return 1 + max(used) if used else 0

    @cached_property
    def post_passes(self) -> tuple[PostPass, ...]:
        """The passes of the post-processing unit (:attr:`post`), the steps' first, then the residual's."""
        if self.post is None:
            return ()
        out = []
        for on, seq, ranges in (("steps", self.steps, self.post[0]), ("residual", self.residual or (), self.post[1])):
            for a, b in ranges:
                part = seq[a:b]
                at = _post.stages(part)
                assert at is not None           # checked by __post_init__
                adds = any(v == "r" for _, v in part)
                ride = self.residual or () if adds and self.fused else ()
                res_at = _post.residual_stages(ride)
                assert res_at is not None       # checked by __post_init__
                out.append(PostPass(on, a, b, at, any(isinstance(v, str) and v != "r" for _, v in part + ride),
                                    adds, res_at))
        return tuple(out)

    @cached_property
    def _on_alu(self) -> tuple[frozenset[int], frozenset[int]]:
        """The indices of the steps, and of the residual's steps, that are ALU instructions."""
        covered: dict[str, set[int]] = {"steps": set(), "residual": set()}
        for p in self.post_passes:
            covered[p.on].update(range(p.start, p.end))
            if p.residual_at:
                covered["residual"].update(range(len(p.residual_at)))
        return (frozenset(set(range(len(self.steps))) - covered["steps"]),
                frozenset(set(range(len(self.residual or ()))) - covered["residual"]))

    @cached_property
    def _slots(self) -> dict[int, int]:
        """Vector index -> its place among the tile's vector rows (``tm`` rows each): every vector without POST
        passes, else those the ALU instructions take, in order of index."""
        if self.post is None:
            return {i: i for i in range(self.vectors)}
        main, res = self._on_alu
        steps = ([s for i, s in enumerate(self.steps) if i in main]
                 + [s for i, s in enumerate(self.residual or ()) if i in res] + list(self._branch_steps))
        used = sorted({int(v[1:]) for _, v in steps if isinstance(v, str) and v not in ("r", "b")})
        return {i: k for k, i in enumerate(used)}

    @property
    def alu_vectors(self) -> int:
        """How many vectors the tile holds in its vector rows (those its ALU instructions take)."""
        return len(self._slots)

    @cached_property
    def passes(self) -> int:
        """ALU passes over the tile's rows (one per step: a vector step reads its vector row once per channel
        block; two for the residual's tensor add, whose source row changes with every row; a copy and a shift
        per extra plane). A pass of the post-processing unit counts one (two with the residual's add); the fixed
        cost of its instructions is in :meth:`alu_cycles`."""
        if self.post is None:
            n = sum(2 if v in ("r", "b") else 1 for _, v in self.steps) + 3 * (self.planes - 1)
            residual = len(self.residual or ())
        else:
            main, res = self._on_alu
            n = sum(2 if p.residual else 1 for p in self.post_passes)
            n += sum(2 if v in ("r", "b") else 1 for i, (_, v) in enumerate(self.steps) if i in main)
            residual = len(res)
        if self.residual is not None:
            n += residual + RESIDUAL_LOAD_PASSES
        if self.branch is not None:
            n += 3 + len(self.branch[1])             # zeroing and copying the branch region, its steps
        return n

    def post_insns(self, tm: int) -> int:
        """POST instructions per tile of ``tm`` channel blocks: one per block for a pass with vectors, else one."""
        return sum(tm if p.vector else 1 for p in self.post_passes)

    def param_rows(self, tm: int) -> int:
        """Acc rows of the POST passes' parameters in a tile of ``tm`` channel blocks."""
        return POST_PARAM_ROWS * self.post_insns(tm)

    def alu_cycles(self, rows: int, tm: int) -> int:
        """The planner's cycles of the epilogue on a tile of ``rows`` accumulators over ``tm`` channel blocks:
        :attr:`passes` per row, and the fixed cost of each POST instruction."""
        return rows * self.passes + POST_INSN_CYCLES * self.post_insns(tm)

    def insn_cycles(self, tm: int) -> int:
        """The planner's fixed cycles of the epilogue's instructions on a tile (or a part of one) of ``tm`` channel
        blocks, beyond its rows: an ALU instruction's per pass (at least one), a POST instruction's."""
        if self.post is None:
            return max(1, self.passes) * ALU_INSN_CYCLES
        alu = self.passes - sum(2 if p.residual else 1 for p in self.post_passes)
        return alu * ALU_INSN_CYCLES + POST_INSN_CYCLES * self.post_insns(tm)

    @property
    def _branch_steps(self) -> tuple:
        return () if self.branch is None else self.branch[1]

    @cached_property
    def cost_proxy(self) -> Epilogue:
        """An epilogue the planner cannot tell from this one (the same planes, vectors, ALU passes and POST passes:
        a plan depends on nothing else), the same for every epilogue of that cost: the layers of a network differ
        in their multipliers and shifts, not in their shapes, and then share one memoised plan."""
        if self.post is not None:
            return self._post_proxy()

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

    def _post_proxy(self) -> Epilogue:
        """The cost proxy of an epilogue with POST passes: the same operations and passes, immediates 0, a vector
        'v0' in a pass, 'v1', 'v2', ... for the vectors the ALU instructions take (their number kept)."""
        main, res = self._on_alu

        def canon(steps, alu) -> tuple:
            out = []
            for i, (op, v) in enumerate(steps):
                if isinstance(v, str) and v not in ("r", "b"):
                    v = f"v{1 + self._slots[int(v[1:])]}" if i in alu else "v0"
                elif not isinstance(v, str):
                    v = 0
                out.append((op, v))
            return tuple(out)

        residual = None if self.residual is None else canon(self.residual, res)
        branch = None if self.branch is None else (self.branch[0], canon(self.branch[1], range(len(self.branch[1]))))
        return Epilogue(canon(self.steps, main), 1, residual, branch, self.post)

    @property
    def dtype(self) -> type[np.integer]:
        """The host type of a read-back element: int8 for one plane, int32 (sign-extended) otherwise."""
        return np.int8 if self.planes == 1 else np.int32

    def check(self, cfg: Config, n_vectors: int) -> None:
        """That ``cfg`` can run the steps and ``n_vectors`` vectors were given for them."""
        if not cfg.ALU_MUL and any(op == AluOp.MUL for op, _ in self.steps):
            raise ValueError(f"epilogue: MUL on config {cfg.name}, which has no ALU MUL (ALU_MUL = 0)")
        if self.post is not None and not cfg.POST_UNIT:
            raise ValueError(f"epilogue: POST passes on config {cfg.name}, which has no post-processing unit "
                             f"(POST_UNIT = 0)")
        if self.vectors > n_vectors:
            raise ValueError(f"epilogue uses vectors v0..v{self.vectors - 1}; {n_vectors} given "
                             f"(the rows of bias)")

    def acc_rows(self, rows: int, tm: int) -> int:
        """Acc SRAM rows of a tile of ``rows`` accumulators over ``tm`` channel blocks: the accumulators (a region per
        plane), the vectors of its ALU instructions, the POST passes' parameters, the residual's (or the branch's)."""
        return (rows * self.planes + tm * self.alu_vectors + self.param_rows(tm)
                + (rows if self.residual is not None or self.branch else 0))

    def pack(self, vectors: npt.ArrayLike | None, blocks: int, cfg: Config) -> np.ndarray | None:
        """The operator's epilogue operands as DRAM rows (n, BATCH, BLOCK_OUT) int32 (None: there are none), which
        :meth:`actions` loads: the ``vectors`` (V, blocks, BATCH, BLOCK_OUT) int32, vector i at rows [i blocks,
        (i + 1) blocks); with POST passes only the :attr:`vectors` the steps use, then each pass's parameter rows
        (:func:`sw.ops.post.params`), in the order of :attr:`post_passes`: POST_PARAM_ROWS consecutive rows per
        channel block for a pass with vectors, POST_PARAM_ROWS for one without."""
        B, O = cfg.BATCH, cfg.BLOCK_OUT
        v = np.zeros((0, blocks, B, O), np.int32) if vectors is None else np.asarray(vectors, np.int32)
        if v.ndim != 4 or v.shape[1:] != (blocks, B, O):
            raise ValueError(f"packed vectors have shape {v.shape}; expected (V, {blocks}, {B}, {O})")
        if self.post is None:
            return v.reshape(-1, B, O) if len(v) else None
        parts = [v[:self.vectors].reshape(-1, B, O)]
        for p in self.post_passes:
            seq = self.steps if p.on == "steps" else self.residual or ()
            ride = (self.residual or ()) if p.residual_at else ()
            parts.append(_post.params(seq[p.start:p.end], p.stages, v, blocks if p.vector else 1, (B, O), ride,
                                      p.residual_at).reshape(-1, B, O))
        return np.concatenate(parts)

    def _param_layout(self, tm: int, blocks: int) -> list[tuple[int, int]]:
        """Per POST pass: (its first row in the packed operands of ``blocks`` channel blocks, its first row in a tile's
        parameter rows of ``tm`` channel blocks)."""
        dram, sram, out = self.vectors * blocks, 0, []
        for p in self.post_passes:
            out.append((dram, sram))
            dram += POST_PARAM_ROWS * (blocks if p.vector else 1)
            sram += POST_PARAM_ROWS * (tm if p.vector else 1)
        return out

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
    def actions(self, acc: int, rows: int, tm: int, loops: Loops, operands: TileOperands,
                load_residual: Callable[[int], list] | None = None, vec_base: int | None = None) -> list:
        """The compute actions of a tile whose accumulators are acc rows [acc, acc + rows) over ``tm``
        channel blocks (``operands``: where their operands lie in DRAM). ``loops`` ((extent, dst_factor,
        src_factor), outer first: the channel blocks, then a block's rows) walk the rows with the source on their
        channel block. The ALU instructions' vectors are loaded to their rows after the accumulators' (``tm``
        rows each, :attr:`alu_vectors`) before their first use; then come the POST passes' parameter rows
        (:meth:`param_rows`), each pass's loaded before it; then the residual's rows. A POST pass is one instruction
        per channel block (its loop the inner one of ``loops``, its parameters that block's POST_PARAM_ROWS rows),
        or one over every row when no step of it takes a vector; the copies of the extra planes come last.
        A residual is loaded first by ``load_residual(sram_row)`` (its LOADs, rows in the accumulators'
        order) and finished by its steps just before the first step that uses it (those actions are marked
        ``reads_residual``: a scheduler that delays the loads queues them before the first such action). A branch
        uses the residual's rows. ``vec_base``: the vectors' rows elsewhere (a part of a tile's rows, finished on its
        own: :meth:`tail_actions`), the parameter rows after them."""
        acts: list = []
        vec_base = acc + rows * self.planes if vec_base is None else vec_base
        par_base = vec_base + tm * self.alu_vectors
        res_base = par_base + self.param_rows(tm)
        slots = self._slots
        layout = dict(zip(self.post_passes, self._param_layout(tm, operands.blocks)))
        starts = {(p.on, p.start): p for p in self.post_passes}
        loaded = set()

        def vector(i: int) -> list:
            """The LOAD of vector i before its first use."""
            if i in loaded:
                return []
            loaded.add(i)
            return [operands.vector(i, vec_base + slots[i] * tm)]

        def step(op, v, dst, **kw) -> list:
            if isinstance(v, str):
                i = int(v[1:])
                return vector(i) + [_alu_tensor(dst, vec_base + slots[i] * tm, tuple(loops), op, **kw)]
            return [replace(_alu_rows(op, v, dst, rows), **kw)]

        def params(p: PostPass) -> Load:
            dram, sram = layout[p]
            if p.vector:
                return operands.rows(dram + operands.first * POST_PARAM_ROWS, POST_PARAM_ROWS * tm, par_base + sram)
            return operands.rows(dram, POST_PARAM_ROWS, par_base + sram)

        def post(p: PostPass, dst: int, **kw) -> list:
            """The POST instructions of pass ``p`` on the rows at ``dst`` (its parameters loaded)."""
            base = par_base + layout[p][1]
            per_row, use_imm = (2, 0) if p.residual else (1, 1)
            src = res_base if p.residual else dst
            if not p.vector:
                return [Alu(_k_alu(int(AluOp.POST), use_imm, _param_imm(base), dst, src, ((rows, 1, 1),)),
                            passes=per_row, uops=rows, post=True, **kw)]
            if len(loops) != 2 or loops[0][0] != tm:
                raise ValueError(f"a POST pass with vectors walks the channel blocks, then a block's rows: loops = "
                                 f"{tuple(loops)}; expected ((tm = {tm}, block stride, ...), (rows, row step, ...))")
            (_, stride, _), (e, df, _) = loops
            return [Alu(_k_alu(int(AluOp.POST), use_imm, _param_imm(base + j * POST_PARAM_ROWS), dst + j * stride,
                               src + j * stride, ((e, df, df),)), passes=per_row, uops=e, post=True, **kw)
                    for j in range(tm)]

        residual = None if self.fused else self.residual
        res_alu = self._on_alu[1]

        def finish_residual() -> list:
            """The residual's own steps, the loads of their operands first (the residual's loads may come late)."""
            assert residual is not None
            loads: list = []
            work: list = []
            i = 0
            while i < len(residual):
                p = starts.get(("residual", i))
                if p is not None:
                    loads.append(params(p))
                    work += post(p, res_base, reads_residual=True)
                    i = p.end
                    continue
                rop, u = residual[i]
                if isinstance(u, str):
                    loads += vector(int(u[1:]))
                assert i in res_alu
                work += step(rop, u, res_base, reads_residual=True)
                i += 1
            return loads + work

        if self.residual is not None:
            if load_residual is None:
                raise ValueError("the epilogue has a residual: the operator must load it (load_residual)")
            acts += list(load_residual(res_base))
        i = 0
        while i < len(self.steps):
            if self.branch is not None and i == self.branch[0]:
                # the branch: its region (the residual's place) zeroed, the values added in, its own steps
                acts += _zero_rows(res_base, rows)
                acts.append(_alu_tensor(res_base, acc, ((rows, 1, 1),), AluOp.ADD))
                for bop, u in self.branch[1]:
                    acts += step(bop, u, res_base)
            p = starts.get(("steps", i))
            op, v = self.steps[i]
            if p is not None or v == "r":
                if (p is None or p.residual) and residual is not None:
                    acts += finish_residual()
                    residual = None
            if p is not None:
                acts.append(params(p))
                acts += post(p, acc, reads_residual=p.residual)
                i = p.end
                continue
            if v == "b":
                acts.append(_alu_tensor(acc, res_base, ((rows, 1, 1),), op))
            elif v == "r":
                acts.append(_alu_tensor(acc, res_base, ((rows, 1, 1),), op, reads_residual=True))
            else:
                acts += step(op, v, acc)
            i += 1
        if self.planes > 1:
            # the extra regions were reset to 0 with the tile: adding the tile copies it into each
            extra = self.planes - 1
            acts.append(_alu_tensor(acc + rows, acc, ((extra, rows, 0), (rows, 1, 1))))
            for q in range(1, self.planes):
                acts.append(_alu_rows(AluOp.SHR, 8 * q, acc + q * rows, rows))
        return acts

    def tail_actions(self, acc: int, parts: Sequence[tuple[int, int]], tm: int, loops_of: Callable[[int], Loops],
                     operands: TileOperands, init: bool = False) -> list[list]:
        """A tile's compute actions in ``parts`` ((first accumulator row, rows) each, in order, over [acc, acc +
        rows)), each finished on its own so that its store can start while the ALU works on the next:
        ``loops_of(rows)`` walks a part; the vectors and parameters are loaded once, before the first part, to the
        tile's own rows. ``init``: the accumulators were started at v0 (:meth:`init_actions`), so the first step
        is left out. One plane, no residual or branch."""
        epi = Epilogue(self.steps[1:]) if init else self
        vec_base = acc + sum(n for _, n in parts)
        out = []
        for i, (r, n) in enumerate(parts):
            acts = epi.actions(r, n, tm, loops_of(n), operands, vec_base=vec_base)
            out.append(acts if i == 0 else [a for a in acts if not isinstance(a, Load)])
        return out

    def init_actions(self, acc: int, rows: int, tm: int, loops: Loops,
                     operands: TileOperands) -> tuple[list, list]:
        """For an epilogue that :func:`bias_init` made: (the actions that start a tile's accumulators at v0
        instead of 0: its LOAD and ``MIN v0``, one pass; exact where every accumulator already holds at least
        the largest v0, as a tile of the same operator leaves it), (the actions of the other steps)."""
        vec_base = acc + rows * self.planes
        init = [operands.vector(0, vec_base), _alu_tensor(acc, vec_base, tuple(loops), AluOp.MIN)]
        return init, Epilogue(self.steps[1:], self.planes).actions(acc, rows, tm, loops, operands)

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
    or None where the steps are not of that form (one plane, no residual, branch or POST pass, a bias used once,
    then only MIN/MAX immediates, a lower bound among them) or the values do not allow it (a POST pass adds the
    bias in its chain at no cost, so starting at it saves nothing). c is a multiple of
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
    if (epi.planes != 1 or epi.residual is not None or epi.branch is not None or epi.post is not None or vectors is None
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
                    cfg: Config, rows: int | None = None) -> tuple[Epilogue, np.ndarray | None]:
    """The epilogue of a packed operator call as ``cfg`` runs it (:meth:`Epilogue.lowered`, for tiles of up to
    ``rows`` accumulator rows per channel block) and its operands as DRAM rows (:meth:`Epilogue.pack`, or None):
    ``epilogue`` (an Epilogue or its steps), else VTA's of ``shift`` / ``bias`` / ``clip``; ``bias`` None, packed
    (blocks, BATCH, BLOCK_OUT) or (V, blocks, BATCH, BLOCK_OUT) int32, the vectors."""
    epi = Epilogue.of(epilogue) or Epilogue.vta(shift, bias is not None, clip)
    B, O = cfg.BATCH, cfg.BLOCK_OUT
    v = np.zeros((0, blocks, B, O), np.int32) if bias is None else np.asarray(bias, np.int32)
    if v.ndim == 3:
        v = v[None]
    if v.ndim != 4 or v.shape[1:] != (blocks, B, O):
        raise ValueError(f"packed vectors have shape {v.shape}; expected (V, {blocks}, {B}, {O})")
    epi.check(cfg, v.shape[0])
    epi = epi.lowered(cfg, rows, blocks)
    return epi, epi.pack(v, blocks, cfg)


def steps_multiplier(steps: Sequence[AluStep]) -> float:
    """The product of the MUL immediates over 2 ** the sum of the SHR immediates (for reports)."""
    shift, m = 0, 1
    for op, v in steps:
        if op == AluOp.SHR and not isinstance(v, str):
            shift += int(v)
        elif op == AluOp.MUL and not isinstance(v, str):
            m *= int(v)
    return m / 2.0 ** shift
