"""The tensor ALU's arithmetic (sw.fsim.alu.alu_op) against Python integers, exact, on every opcode."""
import itertools

import numpy as np
import pytest

from sw.fsim.alu import alu_op
from sw.isa import AluOp
from sw.pipeline import InsnError

I32_MIN, I32_MAX = -2**31, 2**31 - 1
LANES = [0, 1, -1, 2, -2, 7, -7, 255, -256, 123456789, -987654321, 2**30, -2**30, I32_MAX, I32_MIN,
         I32_MAX - 1, I32_MIN + 1]
# immediates (the 16-bit field's ends), shift amounts at and over the width, int32's ends as tensor operands
OPERANDS = [0, 1, -1, 2, -2, 7, -7, 8, -8, 30, -30, 31, -31, 32, -32, 33, -33, 40, -40, 63, -63, 64, -64,
            127, -128, 32767, -32768, 65535, 2**30, -2**30, I32_MAX, I32_MIN]


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


@pytest.mark.parametrize("op", list(AluOp))
def test_immediate_operand_on_every_lane(op):
    a = np.array(LANES, dtype=np.int32)
    for b in OPERANDS:
        got = alu_op(op, a, b)
        assert got.dtype == np.int32 and got.shape == a.shape
        assert got.tolist() == [python_alu(op, x, b) for x in LANES], (op.name, b)


@pytest.mark.parametrize("op", list(AluOp))
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
