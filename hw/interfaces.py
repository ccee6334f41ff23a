"""Signatures shared by the blocks of the accelerator.

These are the contracts between the memory system (AXI4 master, fetch, control) and the datapath
(load, compute, store). Everything is a ``wiring.Signature`` seen from the block that *uses* the
memory (a DMA client): ``Out`` members are driven by the client.

DMA read client
    ``cmd``  (Out stream): ``addr`` byte address (aligned to the bus width, i.e. the low
             LOG_BUS_WIDTH-3 bits are zero), ``beats`` number of bus words to read (>= 1).
    ``data`` (In stream):  ``data`` one bus word (little-endian bytes), ``last`` on the final word
             of the command. Words arrive in address order; the client may apply back-pressure.
    A client may issue its next command before the data of the previous one has arrived; data
    comes back in command order.

DMA write client
    ``cmd``  (Out stream): ``addr`` (bus aligned) and ``beats``.
    ``data`` (Out stream): ``data``, ``strb`` (one bit per byte), ``last``.
    ``done`` (In): a one-cycle pulse when every word of one command has been acknowledged by
             the memory (AXI B response); one pulse per command, in command order.

Token port (dependency queues, docs/architecture.md §2.3)
    A producer drives ``push`` for one cycle per token; a consumer sees ``valid`` (count > 0) and
    drives ``pop`` for one cycle to consume one.
"""

from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["dma_read_signature", "dma_write_signature", "TokenPushSignature", "TokenPopSignature",
           "DMA_BEATS_BITS", "ADDR_BITS", "flat_members"]

ADDR_BITS = 32
DMA_BEATS_BITS = 24


def dma_cmd_layout():
    return data.StructLayout({"addr": ADDR_BITS, "beats": DMA_BEATS_BITS})


def dma_read_signature(bus_width: int) -> wiring.Signature:
    return wiring.Signature({
        "cmd": Out(stream.Signature(dma_cmd_layout())),
        "data": In(stream.Signature(data.StructLayout({"data": bus_width, "last": 1}))),
    })


def dma_write_signature(bus_width: int) -> wiring.Signature:
    return wiring.Signature({
        "cmd": Out(stream.Signature(dma_cmd_layout())),
        "data": Out(stream.Signature(data.StructLayout(
            {"data": bus_width, "strb": bus_width // 8, "last": 1}))),
        "done": In(1),
    })


# Seen from the producer of tokens.
TokenPushSignature = wiring.Signature({"push": Out(1)})
# Seen from the consumer of tokens.
TokenPopSignature = wiring.Signature({"valid": In(1), "pop": Out(1)})


def flat_members(prefix: str, signature: wiring.Signature, *, flip: bool) -> dict:
    """The members of ``signature`` as flat ports of a component: ``{f"{prefix}_{name}": In/Out(shape)}``.

    Each member keeps its flow (``flip=False``: the component drives the signature's ``Out`` members, as a
    master does) or has it reversed (``flip=True``: as a slave). The top level exposes its AXI4 master as
    ``m_axi_*`` and its AXI4-Lite slave as ``s_axi_*`` this way, so the Verilog ports carry the AMBA names.
    """
    out = {}
    for name, member in signature.members.items():
        flow = member.flow.flip() if flip else member.flow
        out[f"{prefix}_{name}"] = (In if flow == wiring.In else Out)(member.shape)
    return out
