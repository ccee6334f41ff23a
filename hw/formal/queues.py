"""Token queues (:class:`hw.queues.TokenQueue`): a saturating counting semaphore.

Parameterization: ``TokenQueue(5)`` for the general rules (a depth that is not a power of two minus one, so a
count above the depth is representable and an overshoot shows; the logic does not depend on the depth otherwise),
and the production ``TokenQueue(255)`` (VTA's 8-bit semaphore, ``sw.isa.TOKEN_QUEUE_DEPTH``) for the 255-token
limit. Every input (``push``, ``pop``, ``clear``) is free in every cycle: a producer may push into a full queue and a
consumer may pop an empty one, which the queue must tolerate. Everything is proved by k-induction: the block's whole
state is its count, its ``nonzero`` flag and the overflow flag.
"""

from __future__ import annotations

from amaranth.hdl import Signal

from ..queues import TokenQueue
from .common import Check, Mutant, drive_inputs, past

__all__ = ["CHECKS"]

SMALL = 5
LIMIT = 255
WIDE_SMALL = 7


class _SaturatesLate(TokenQueue):
    """Mutant: the full test is one token late (``count == depth + 1``), so the count overshoots the depth and,
    at depth 255, wraps the 8-bit count to 0."""

    def elaborate(self, platform):
        self.depth += 1
        try:
            return super().elaborate(platform)
        finally:
            self.depth -= 1


def _valid_bypass(q, dm):
    # mutant: ``valid`` also shows a token being pushed this cycle (a bypass), so a consumer pops a token that is
    # not counted yet, and the queue ignores that pop
    dm.d.comb += q.consumer.valid.eq((q.count != 0) | q.producer.push)


def _overflow_not_sticky(q, dm):
    # mutant: the overflow flag clears itself in the next cycle without a push
    with dm.If(~q.producer.push):
        dm.d.sync += q.overflow.eq(0)


def build(h, m, prop, mutant):
    # the 255 limit's mutant runs at 7 = 2**3 - 1, the same rule at 3 bits (at 255 its counterexample would be 257
    # cycles long); the real 255-deep queue is proved by induction
    depth = SMALL if prop != "queue-limit" else LIMIT if mutant is None else WIDE_SMALL
    q = (_SaturatesLate if mutant == "saturates-late" else TokenQueue)(depth)
    h.block(m, q, "q", {"valid-bypass": _valid_bypass, "overflow-not-sticky": _overflow_not_sticky}.get(mutant))
    ins = drive_inputs(h, m, q, "q")
    push, pop, clear = ins[("producer", "push")], ins[("consumer", "pop")], ins[("clear",)]
    count, wide = q.count, Signal(range(2 * (depth + 2)), name="count_wide")
    m.d.comb += wide.eq(q.count)
    before = past(m, wide)

    if prop == "queue-bounds":
        # never above the depth; no wrap either way: one step up or down at most per cycle, or 0 after a clear
        h.check(m, prop, count <= depth)
        h.check(m, prop + ":helper", q.consumer.valid == (count != 0))     # (induction: the flag and the count agree)
        with m.If(h.started & ~past(m, clear)):
            h.check(m, prop, (wide == before) | (wide == before + 1) | (wide + 1 == before))

    elif prop == "queue-model":
        # the docstring's semaphore, as a reference model: clear empties and clears overflow; a push and a pop in
        # the same cycle cancel (also when full); a push into a full queue is dropped and sets the sticky overflow;
        # a pop of an empty queue is ignored; valid iff a token is held
        ref = Signal(range(depth + 1), name="ref_count")
        ref_over = Signal(name="ref_overflow")
        taken = pop & (ref != 0)
        with m.If(clear):
            m.d.sync += [ref.eq(0), ref_over.eq(0)]
        with m.Elif(push & ~taken):
            with m.If(ref == depth):
                m.d.sync += ref_over.eq(1)
            with m.Else():
                m.d.sync += ref.eq(ref + 1)
        with m.Elif(taken & ~push):
            m.d.sync += ref.eq(ref - 1)
        h.check(m, prop, (count == ref) & (q.overflow == ref_over) & (q.consumer.valid == (ref != 0)))
        h.check(m, prop + ":helper", ref <= depth)       # (induction: the model's own range)

    elif prop == "queue-limit":
        # the production queue: the count fits VTA's 8 bits and stops at 255; the 256th token is dropped and
        # flagged, whatever else happened before
        h.check(m, prop, count <= depth)
        with m.If(h.started & past(m, (count == depth) & push & ~pop & ~clear)):
            h.check(m, prop, (count == depth) & q.overflow)
        with m.If(h.started & ~past(m, clear) & (past(m, count) == depth)):
            h.check(m, prop, count >= depth - 1)             # from full, only a pop leaves (one token)


CHECKS = [
    Check("queue-bounds", "queues", "the count never exceeds the depth and never wraps (it moves by one token per "
          "cycle at most, or to 0 on clear), whatever the producer and consumer do", "prove", 4, 6,
          (Mutant("saturates-late", "the full test one token late: the count reaches depth + 1", SMALL + 3),),
          build=build),
    Check("queue-model", "queues", "the count is the docstring's saturating semaphore (push and pop cancel, a push "
          "into a full queue dropped and the sticky overflow set, a pop of an empty queue ignored, clear empties), "
          "valid iff a token is held", "prove", 4, 6,
          (Mutant("valid-bypass", "valid also high in the cycle of a push (a pop of that token is lost)", 3),
           Mutant("overflow-not-sticky", "the overflow flag clears itself when no push follows", SMALL + 4)),
          build=build),
    Check("queue-limit", "queues", "TokenQueue(255): the count never exceeds 255 and a push into a full queue "
          "leaves 255 and sets overflow (VTA's 8-bit semaphore)", "prove", 4, 6,
          (Mutant("saturates-late", "the full test one token late, on TokenQueue(7) (the same rule at 3 bits): "
                  "8 tokens wrap the count to 0", WIDE_SMALL + 3),),
          build=build),
]
