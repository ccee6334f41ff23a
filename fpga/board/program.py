"""The board design's built-in test program: ``out[0] = int8(inp[0] . wgt[0]^T)`` through LOAD/GEMM/STORE/FINISH.

The RAM image holds the instructions at :data:`INSN_AT`, then the micro-op, the input, the weights and the
OUT row at the byte addresses :data:`UOP_AT`, :data:`INP_AT`, :data:`WGT_AT`, :data:`OUT_AT`; the
instructions carry the dependency tokens a runtime would set.
"""

from __future__ import annotations

import numpy as np

from sw.isa import MemId, Opcode, isa_for

__all__ = ["test_program", "INSN_AT", "UOP_AT", "INP_AT", "WGT_AT", "OUT_AT"]

INSN_AT, UOP_AT, INP_AT, WGT_AT, OUT_AT = 0x000, 0x100, 0x200, 0x400, 0x600


def test_program(cfg, ram_bytes: int = 4096, seed: int = 1):
    """The built-in program for ``cfg`` with random int8 operands drawn from ``seed``.

    Returns ``(image, insn_count, out_addr, expected)``: the RAM image (``ram_bytes`` bytes), the instruction
    count, the byte address of the OUT row and its expected bytes."""
    isa = isa_for(cfg)
    rng = np.random.default_rng(seed)
    b, bi, bo = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
    inp = rng.integers(-128, 128, size=(b, bi), dtype=np.int64)
    wgt = rng.integers(-128, 128, size=(bo, bi), dtype=np.int64)
    out = ((inp @ wgt.T) & 0xFF).astype(np.uint8)
    ib, wb, ob = b * bi, bo * bi, b * bo            # element bytes of inp, wgt, out
    assert UOP_AT + 4 <= INP_AT and INP_AT + ib <= WGT_AT and WGT_AT + wb <= OUT_AT and OUT_AT + ob <= ram_bytes
    mem = dict(opcode=Opcode.LOAD, y_size=1, x_size=1, x_stride=1, sram_base=0)
    loop = dict(opcode=Opcode.GEMM, uop_bgn=0, uop_end=1, iter_out=1, iter_in=1)
    insns = [
        isa.encode(**mem, memory_type=MemId.UOP, dram_base=UOP_AT // 4),
        isa.encode(**mem, memory_type=MemId.WGT, dram_base=WGT_AT // wb),
        isa.encode(**mem, memory_type=MemId.INP, dram_base=INP_AT // ib, push_next=1),
        isa.encode(**loop, reset=1),
        isa.encode(**loop, pop_prev=1, push_next=1),
        isa.encode(opcode=Opcode.STORE, memory_type=MemId.OUT, y_size=1, x_size=1, x_stride=1, sram_base=0,
                   dram_base=OUT_AT // ob, pop_prev=1, push_prev=1),
        isa.encode(opcode=Opcode.FINISH, pop_next=1),
    ]
    image = bytearray(ram_bytes)
    for i, word in enumerate(insns):
        image[INSN_AT + 16 * i:INSN_AT + 16 * (i + 1)] = isa.to_bytes(word)
    image[UOP_AT:UOP_AT + 4] = isa.encode_uop(0, 0, 0).to_bytes(4, "little")
    image[INP_AT:INP_AT + ib] = (inp & 0xFF).astype(np.uint8).tobytes()
    image[WGT_AT:WGT_AT + wb] = (wgt & 0xFF).astype(np.uint8).tobytes()
    return bytes(image), len(insns), OUT_AT, out.tobytes()
