"""The tensor ALU's arithmetic (sw.fsim.alu.alu_op) and the post-processing unit's chain (post_op) against
Python integers, exact, on every opcode."""
import itertools

import numpy as np
import pytest

from sw.fsim.alu import alu_op, post_op
from sw.isa import POST_PARAM_ROWS, POST_RESIDUAL_STAGE, POST_RESIDUAL_STEPS, POST_STAGES, AluOp
from sw.pipeline import InsnError

I32_MIN, I32_MAX = -2**31, 2**31 - 1
LANES = [0, 1, -1, 2, -2, 7, -7, 255, -256, 123456789, -987654321, 2**30, -2**30, I32_MAX, I32_MIN,
         I32_MAX - 1, I32_MIN + 1]
# immediates (the 16-bit field's ends), shift amounts at and over the width, int32's ends as tensor operands
OPERANDS = [0, 1, -1, 2, -2, 7, -7, 8, -8, 30, -30, 31, -31, 32, -32, 33, -33, 40, -40, 63, -63, 64, -64,
            127, -128, 32767, -32768, 65535, 2**30, -2**30, I32_MAX, I32_MIN]


LANE_OPS = [op for op in AluOp if op != AluOp.POST]


def wrap(v: int) -> int:
    return (v + 2**31) % 2**32 - 2**31


def python_alu(op, x: int, b: int) -> int:
    """docs/architecture.md §2.8 in Python integers (unbounded, then wrapped to 32 bits)."""
    if op == AluOp.MIN:
        return min(x, b)
    if op == AluOp.MAX:
        return max(x, b)
    if op == AluOp.ADD:
        return wrap(x + b)
    if op == AluOp.MUL:
        return wrap(x * b)
    return x >> min(b, 31) if b >= 0 else wrap(x << min(-b, 31))


@pytest.mark.parametrize("op", LANE_OPS)
def test_immediate_operand_on_every_lane(op):
    a = np.array(LANES, dtype=np.int32)
    for b in OPERANDS:
        got = alu_op(op, a, b)
        assert got.dtype == np.int32 and got.shape == a.shape
        assert got.tolist() == [python_alu(op, x, b) for x in LANES], (op.name, b)


@pytest.mark.parametrize("op", LANE_OPS)
def test_tensor_operand_on_every_pair(op):
    """An array operand (the ALU's tensor form, one operand per lane) gives what each immediate gives."""
    pairs = list(itertools.product(LANES, OPERANDS))
    a = np.array([x for x, _ in pairs], dtype=np.int32)
    b = np.array([v for _, v in pairs], dtype=np.int64)
    got = alu_op(int(op), a, b)
    assert got.dtype == np.int32
    assert got.tolist() == [python_alu(op, x, v) for x, v in pairs]


def test_operand_broadcasts_per_channel():
    a = np.array([[1, -1, 1000], [-7, 8, I32_MIN]], dtype=np.int32)
    got = alu_op(AluOp.ADD, a, np.array([[I32_MAX], [-1]], dtype=np.int32))
    assert got.tolist() == [[I32_MIN, 2**31 - 2, wrap(1000 + I32_MAX)], [-8, 7, I32_MAX]]


@pytest.mark.parametrize("op, a, b, want", [
    (AluOp.SHR, 1, -40, I32_MIN),          # left shifts saturate at 31 and wrap
    (AluOp.SHR, 3, -31, I32_MIN),
    (AluOp.SHR, 1, -32, I32_MIN),
    (AluOp.SHR, 2, -31, 0),
    (AluOp.SHR, -5, 40, -1),               # right shifts saturate at 31, arithmetic
    (AluOp.SHR, I32_MAX, 32, 0),
    (AluOp.SHR, I32_MIN, 31, -1),
    (AluOp.SHR, I32_MIN, 30, -2),
    (AluOp.SHR, -9, 1, -5),                # floor, not truncation
    (AluOp.SHR, 12345, 0, 12345),          # SHR 0 copies
    (AluOp.SHR, 0x40000000, -1, I32_MIN),
    (AluOp.ADD, I32_MAX, 1, I32_MIN),
    (AluOp.ADD, I32_MIN, -1, I32_MAX),
    (AluOp.ADD, I32_MIN, I32_MIN, 0),
    (AluOp.MUL, I32_MIN, -1, I32_MIN),
    (AluOp.MUL, 65536, 65536, 0),
    (AluOp.MUL, 65535, 65537, -1),
    (AluOp.MUL, I32_MAX, I32_MAX, 1),
    (AluOp.MIN, I32_MIN, I32_MAX, I32_MIN),
    (AluOp.MAX, I32_MIN, -32768, -32768),
])
def test_edge_values(op, a, b, want):
    for operand in (b, np.array([b])):                         # an immediate and a tensor operand
        assert alu_op(op, np.array([a], np.int32), operand).tolist() == [want]


def test_inputs_of_any_integer_type():
    assert alu_op(AluOp.ADD, np.array([-128, 127], np.int8), np.int64(1)).tolist() == [-127, 128]
    assert alu_op(AluOp.SHR, np.array([2**40 + 5], np.int64), 1).tolist() == [2]    # wrapped after the shift
    assert alu_op(AluOp.MAX, [3, -3], 0).tolist() == [3, 0]


@pytest.mark.parametrize("op", [5, 6, 7, -1])
def test_unknown_opcode(op):
    with pytest.raises(InsnError, match=rf"alu_opcode = {op}; allowed: 0 MIN, 1 MAX, 2 ADD, 3 SHR, 4 MUL"):
        alu_op(op, np.zeros(2, np.int32), 1)


def python_post(x: int, params: list[int], residual: int | None) -> int:
    """POST's chain in Python integers: each stage one ALU step (a MUL by its full operand); the residual through its
    own MUL and ADD (the last two parameters), then added after stage POST_RESIDUAL_STAGE's ADD."""
    if residual is not None:
        residual = wrap(wrap(residual * params[len(POST_STAGES)]) + params[len(POST_STAGES) + 1])
    for k, op in enumerate(POST_STAGES):
        x = python_alu(op, x, params[k])
        if k == POST_RESIDUAL_STAGE and residual is not None:
            x = wrap(x + residual)
    return x


def _random_params(rng, lanes: int, per_channel: bool) -> np.ndarray:
    """Operands of every kind a stage sees: identities, requantization-like values, int32's ends."""
    rows = []
    for op in POST_STAGES + POST_RESIDUAL_STEPS:
        pool = {AluOp.ADD: [0, 1 << 14, -(1 << 20), I32_MAX, I32_MIN, 127, -128],
                AluOp.MAX: [I32_MIN, -128, 0, -(1 << 24), I32_MAX],
                AluOp.MIN: [I32_MAX, 127, 255, 1 << 24, I32_MIN],
                AluOp.MUL: [1, 32767, -32768, 181, 65535, 0x12345, -1, 0],
                AluOp.SHR: [0, 1, 8, 15, 23, 31, 40, -1, -33]}[op]
        n = lanes if per_channel else 1
        vals = [pool[i] for i in rng.integers(0, len(pool), n)] if rng.random() < 0.5 else \
            rng.integers(I32_MIN, I32_MAX, n, endpoint=True).tolist()
        if op == AluOp.SHR and rng.random() < 0.7:
            vals = rng.integers(-40, 40, n).tolist()
        rows.append(np.broadcast_to(np.array(vals, np.int64), (lanes,)))
    return np.stack(rows)


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("residual", [False, True])
def test_post_chain_equals_python_over_int32(per_channel, residual):
    """Random and edge accumulators over the whole int32 range (its ends, rounding ties of every shift, values
    that saturate at the clips), random parameters, per tensor and per channel, with and without the residual."""
    rng = np.random.default_rng(46 + 2 * per_channel + residual)
    lanes = 8
    ties = [(1 << s) * k + (1 << (s - 1)) for s in (1, 8, 15, 23) for k in (-3, -1, 0, 2)]
    edge = LANES + ties
    for trial in range(60):
        params = _random_params(rng, lanes, per_channel)
        a = np.array(rng.choice(edge, lanes) if trial % 3 == 0 else
                     rng.integers(I32_MIN, I32_MAX, lanes, endpoint=True), np.int64)
        r = rng.integers(-128, 128, lanes) if residual else None
        got = post_op(a, params, r)
        want = [python_post(int(a[i]), [int(p[i]) for p in params], None if r is None else int(r[i]))
                for i in range(lanes)]
        assert got.dtype == np.int32 and got.tolist() == want, (trial, params.tolist())


def test_post_identity_operands_skip_every_stage():
    ident = {AluOp.ADD: 0, AluOp.MUL: 1, AluOp.SHR: 0, AluOp.MAX: I32_MIN, AluOp.MIN: I32_MAX}
    params = np.array([ident[op] for op in POST_STAGES + POST_RESIDUAL_STEPS], np.int64)[:, None]
    a = np.array(LANES, np.int64)
    assert post_op(a, params).tolist() == LANES
    assert post_op(np.zeros_like(a), params, a).tolist() == LANES        # the residual's steps leave it as it is
    assert len(params) == POST_PARAM_ROWS
