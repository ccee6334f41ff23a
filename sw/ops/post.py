"""The post-processing unit (ALU opcode POST): which runs of an epilogue's ALU steps it takes, and their parameters.

A POST instruction takes every accumulator row of its micro-ops through the fixed chain of ALU steps
:data:`~sw.isa.POST_STAGES` (``ADD MAX MIN | MUL ADD SHR | MUL ADD SHR | MUL ADD SHR | MAX MIN``), stage k with the
k-th of :data:`~sw.isa.POST_PARAM_ROWS` parameter rows at its immediate as its operand (one int32 per lane), and with
a tensor operand (``use_imm = 0``) the residual row, taken through its own steps :data:`~sw.isa.POST_RESIDUAL_STEPS`
(``MUL ADD``, the last two parameter rows), added right after the ADD of stage :data:`~sw.isa.POST_RESIDUAL_STAGE`
(:func:`sw.fsim.alu.post_op`). Every step is the ALU's own (a MUL by its full int32 operand). A step whose operand is
the identity (:data:`IDENTITY`) leaves the value as it is. So a list of epilogue steps that is an in-order
subsequence of the chain, the residual's ``ADD r`` at the residual stage, with immediate or per-channel vector
operands, is one pass of the unit, with the same int32 values as the steps on the ALU, by construction; and the
residual's own steps ride along in the pass that adds it when they are an in-order subsequence of
POST_RESIDUAL_STEPS:

* :func:`stages` places the steps of one pass (the earliest stage for each, in order), or says they do not fit;
  :func:`residual_stages` does the same for the residual's steps;
* :func:`segments` cuts a list of steps into the fewest passes (greedy: each pass the longest run of steps that fits,
  which no other cut beats, since a run's part fits wherever the run does), leaving to the ALU the steps the unit
  cannot take (a tensor operand other than the residual's ADD);
* :func:`pays` says whether a pass is cheaper than its steps on the ALU for a tile's shape, its instructions' fixed
  cost and the DMA of its parameter rows (:func:`load_cycles`) included;
* :func:`params` builds a pass's parameter rows: one block of POST_PARAM_ROWS rows per channel block when a step
  takes a vector, else one block for every row.

Speed (the hardware's rules, the planner's model): a POST instruction reads its parameter rows and fills its
pipeline, :data:`~sw.ops.kernels.POST_INSN_CYCLES` cycles, then takes one row per cycle, or one per two cycles
with the residual; a kernel of one micro-op whose destination rows increase over its loops runs at that speed, and
the lowering (:meth:`sw.ops.epilogue.Epilogue.actions`) issues only such kernels.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from sw.isa import POST_PARAM_ROWS, POST_RESIDUAL_STAGE, POST_RESIDUAL_STEPS, POST_STAGES, AluOp
from sw.ops.kernels import ALU_INSN_CYCLES, POST_INSN_CYCLES

if TYPE_CHECKING:
    from sw.config import Config

__all__ = ["IDENTITY", "stages", "residual_stages", "eligible", "segments", "pays", "load_cycles", "params",
           "template"]

IDENTITY = {AluOp.ADD: 0, AluOp.MUL: 1, AluOp.SHR: 0, AluOp.MAX: -(1 << 31), AluOp.MIN: (1 << 31) - 1}
"""The operand that leaves a stage's value unchanged (a stage no step of a pass takes)."""

def template() -> str:
    """The chain as text, its residual add marked (for messages)."""
    names = [op.name + (" +r" if k == POST_RESIDUAL_STAGE else "") for k, op in enumerate(POST_STAGES)]
    return " ".join(names)


def stages(steps: Sequence[tuple]) -> tuple[int, ...] | None:
    """The stage of each step of one pass, or None when the steps are not one pass: each step takes the earliest
    stage of its operation after the stage of the step before it; the residual's ``ADD r`` takes
    POST_RESIDUAL_STAGE (the residual is added after that stage's own ADD, so an ``ADD`` there may come before it).
    Only the operations and the residual matter here; the operands are the caller's concern (:func:`eligible`)."""
    pos = -1                              # twice the stage of the last step; the residual add at 2 R + 1
    out = []
    for op, v in steps:
        if v == "r":
            if op != AluOp.ADD or pos > 2 * POST_RESIDUAL_STAGE:
                return None
            pos = 2 * POST_RESIDUAL_STAGE + 1
            out.append(POST_RESIDUAL_STAGE)
            continue
        k = next((k for k in range(len(POST_STAGES)) if POST_STAGES[k] == op and 2 * k > pos), None)
        if k is None:
            return None
        pos = 2 * k
        out.append(k)
    return tuple(out)


def residual_stages(steps: Sequence[tuple]) -> tuple[int, ...] | None:
    """The residual's steps of one pass: the index in POST_RESIDUAL_STEPS of each step (immediate or vector operands),
    each after the one before, or None when they are not an in-order subsequence of POST_RESIDUAL_STEPS."""
    j, out = 0, []
    for op, v in steps:
        if v in ("r", "b"):
            return None
        while j < len(POST_RESIDUAL_STEPS) and POST_RESIDUAL_STEPS[j] != op:
            j += 1
        if j == len(POST_RESIDUAL_STEPS):
            return None
        out.append(j)
        j += 1
    return tuple(out)


def eligible(step: tuple) -> bool:
    """Whether the unit can take ``step`` at all: not the branch 'b', the residual only as ``ADD r``."""
    op, v = step
    if v == "b":
        return False
    return op == AluOp.ADD if v == "r" else True


def segments(steps: Sequence[tuple], breaks: Collection[int] = ()) -> tuple[tuple[int, int], ...]:
    """The fewest passes of the unit that run ``steps``: [start, end) ranges, each the longest run from its start that
    is one pass (:func:`stages`) of steps the unit takes (:func:`eligible`); the steps outside every
    range are the ALU's. No range spans an index of ``breaks`` (a range may start there): a branch copies the values
    before its step. A range may hold one step; :func:`pays` decides whether a pass is worth it."""
    out: list[tuple[int, int]] = []
    start = None
    for i, step in enumerate(steps):
        if not eligible(step):
            if start is not None:
                out.append((start, i))
            start = None
            continue
        if start is not None and i not in breaks and stages(steps[start:i + 1]) is not None:
            continue
        if start is not None:
            out.append((start, i))
        start = i
    if start is not None:
        out.append((start, len(steps)))
    return tuple(out)


def _alu_passes(v) -> int:
    return 2 if v in ("r", "b") else 1


def pays(steps: Sequence[tuple], rows: int, blocks: int, load: float = 0.0, residual: Sequence[tuple] = ()) -> bool:
    """Whether one pass of ``steps`` (and of the residual's steps ``residual`` it takes) costs fewer cycles than the
    steps on the ALU over a tile of ``blocks`` channel blocks of ``rows`` accumulator rows each: the pass is one POST
    instruction per channel block when a step takes a vector (else one), each POST_INSN_CYCLES and ``load`` (the DMA
    of its parameter rows, :func:`load_cycles`) plus a cycle per row (two with the residual); on the ALU, each step
    is an instruction of ALU_INSN_CYCLES plus a cycle per row (two for the residual's add)."""
    both = tuple(steps) + tuple(residual)
    vector = any(isinstance(v, str) and v != "r" for _, v in both)
    per_row = 2 if any(v == "r" for _, v in steps) else 1
    n = rows * blocks
    post = (blocks if vector else 1) * (POST_INSN_CYCLES + load) + n * per_row
    alu = sum(ALU_INSN_CYCLES + n * _alu_passes(v) for _, v in both)
    return post < alu


def load_cycles(cfg: Config) -> float:
    """The planner's cycles to load one block of parameter rows (POST_PARAM_ROWS acc rows) over the bus."""
    return POST_PARAM_ROWS * cfg.ACC_ELEM_BYTES / (cfg.BUS_WIDTH // 8)


def params(steps: Sequence[tuple], at: Sequence[int], vectors: npt.ArrayLike | None, blocks: int,
           lanes: tuple[int, int], residual: Sequence[tuple] = (), residual_at: Sequence[int] = ()) -> np.ndarray:
    """The parameter rows of one pass: (blocks, POST_PARAM_ROWS, *lanes) int32, row k of block b the operand of the
    step at stage k (``at``: :func:`stages` of ``steps``), row len(POST_STAGES) + j that of the residual's step at
    POST_RESIDUAL_STEPS[j] (``residual_at``: :func:`residual_stages` of ``residual``), an immediate on every lane or
    row b of a vector, and the identity where no step is. ``vectors`` (V, blocks, *lanes) int32, packed like the
    accumulators; ``blocks`` = 1 for a pass without vectors (its one block serves every row)."""
    p = np.empty((blocks, POST_PARAM_ROWS, *lanes), np.int64)
    for k, op in enumerate(POST_STAGES + POST_RESIDUAL_STEPS):
        p[:, k] = IDENTITY[op]
    v = None if vectors is None else np.asarray(vectors)
    rows = list(zip(steps, at)) + [(s, len(POST_STAGES) + j) for s, j in zip(residual, residual_at)]
    for (_, operand), k in rows:
        if operand == "r":
            continue
        if isinstance(operand, str):
            i = int(operand[1:])
            if v is None or i >= len(v) or v.shape[1] != blocks:
                raise ValueError(f"a POST pass uses vector {operand}: expected vectors (V > {i}, {blocks}, "
                                 f"{', '.join(map(str, lanes))}), got {None if v is None else v.shape}")
            p[:, k] = v[i]
        else:
            p[:, k] = int(operand)
    return p.astype(np.int32)
