"""Lane arithmetic shared by the tensor ALU (hw.alu) and the post-processing unit (hw.post)."""

from amaranth.hdl import Mux, Value

__all__ = ["shift_amount"]


def shift_amount(b: Value) -> tuple[Value, Value]:
    """SHR's shift of a lane of w = len(b) bits (the accumulator width) by signed ``b``: ``(left, amount)``.
    b >= 0: right (arithmetic) by min(b, w - 1); b < 0: left by min(-b, w - 1). Built from bit tests and a
    log2(w)-bit negation (no w-bit compare), for timing."""
    w = len(b)
    lw = w.bit_length() - 1
    lo, hi, sign = b[:lw], b[lw:w - 1], b[w - 1]
    small_neg = hi.all() & lo.any()              # b in [-(w - 1), -1]
    amount = Mux(sign, Mux(small_neg, (-lo)[:lw], w - 1), Mux(hi.any(), w - 1, lo))
    return sign, amount
