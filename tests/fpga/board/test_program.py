"""The board design's built-in test program (fpga.board.program)."""
from fpga.board.program import INSN_AT, OUT_AT, UOP_AT
from fpga.board.program import test_program as program_image
from sw.config import load_config
from sw.isa import MemId, Opcode, isa_for

ULX3S = load_config("configs/ulx3s.json")


def test_program_layout():
    image, count, out_at, expected = program_image(ULX3S)
    assert len(image) == 4096 and count == 7 and len(expected) == ULX3S.BATCH * ULX3S.BLOCK_OUT
    assert out_at == OUT_AT
    assert not any(image[out_at:out_at + len(expected)])        # the OUT row is written by the run
    isa = isa_for(ULX3S)
    insns = [isa.decode(isa.from_bytes(image[INSN_AT + 16 * i:INSN_AT + 16 * (i + 1)])) for i in range(count)]
    assert [i.opcode for i in insns] == [Opcode.LOAD] * 3 + [Opcode.GEMM] * 2 + [Opcode.STORE, Opcode.FINISH]
    assert (insns[0].memory_type, insns[0].dram_base) == (MemId.UOP, UOP_AT // 4)
    assert (insns[5].memory_type, insns[5].dram_base) == (MemId.OUT, OUT_AT // len(expected))
    assert insns[-1].pop_next == 1


def test_program_depends_on_the_seed():
    assert program_image(ULX3S, seed=1) == program_image(ULX3S)
    assert program_image(ULX3S, seed=2)[3] != program_image(ULX3S)[3]
