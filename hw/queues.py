"""Dependency-token queues (docs/architecture.md §2.3).

A token carries no data, so a queue is a saturating counting semaphore, as in VTA's Chisel design:
the producer pushes one token per cycle at most, the consumer sees ``valid`` while the count is
non-zero and pops one token per cycle at most.
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .interfaces import TokenPopSignature, TokenPushSignature

__all__ = ["TokenQueue"]


class TokenQueue(wiring.Component):
    """A dependency-token counter between a producer and a consumer module.

    Ports
    -----
    ``producer.push`` (in): add one token this cycle.
    ``consumer.valid`` (out): at least one token is held (``count != 0``).
    ``consumer.pop`` (in): take one token this cycle; ignored while ``valid`` is low.
    ``count`` (out, ``range(depth + 1)``): tokens held, for the status registers.

    A push and a pop in the same cycle leave the count unchanged (also when the count is at
    ``depth``). A push into a full queue is dropped: the count saturates at ``depth`` and never
    wraps. ``overflow`` (out) is a sticky flag set by such a dropped push (cleared by ``clear``).
    ``clear`` (in) empties the queue (the top level pulses it at launch).

    Latency: one cycle from ``push`` to ``valid``/``count``; ``pop`` acts in the same cycle
    (``valid`` and ``count`` fall on the next cycle). Throughput: one push and one pop per cycle.

    Parameters
    ----------
    depth : int
        Largest count, 1..65535 (default 255, VTA's 8-bit semaphore).
    """

    def __init__(self, depth: int = 255):
        if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= 65535:
            raise ValueError(f"TokenQueue: depth must be an integer in [1, 65535], got {depth!r}")
        self.depth = depth
        super().__init__({
            "producer": In(TokenPushSignature),
            "consumer": In(TokenPopSignature),
            "count": Out(range(depth + 1)),
            "overflow": Out(1),
            "clear": In(1),
        })

    def elaborate(self, platform: object) -> Module:
        m = Module()
        count = Signal(range(self.depth + 1), init=0)
        nonzero = Signal()          # count != 0, kept as a register (timing: ``valid`` is a flip-flop)
        full = count == self.depth
        push = self.producer.push
        pop = self.consumer.pop & nonzero

        with m.If(self.clear):
            m.d.sync += [count.eq(0), nonzero.eq(0), self.overflow.eq(0)]
        with m.Elif(push & pop):  # untoggled: token-push-pop; unreachable: token-push-pop
            pass
        with m.Elif(push):
            with m.If(full):
                m.d.sync += self.overflow.eq(1)
            with m.Else():
                m.d.sync += [count.eq(count + 1), nonzero.eq(1)]
        with m.Elif(pop):
            m.d.sync += [count.eq(count - 1), nonzero.eq(count != 1)]

        m.d.comb += [
            self.count.eq(count),
            self.consumer.valid.eq(nonzero),
        ]
        return m
