"""The ISA encoding against words computed by hand from docs/architecture.md §2.1 (default config)."""
import numpy as np
import pytest

from sw.config import load_config
from sw.isa import AluOp, EncodeError, MemId, Opcode, isa_for


def bits(*pairs):
    """Build a word from (value, bit offset) pairs, independent of the ISA module."""
    word = 0
    for value, offset in pairs:
        word |= value << offset
    return word


@pytest.fixture
def isa():
    return isa_for(load_config("default"))


def test_memory_instruction_words(isa):
    word = isa.encode(opcode=Opcode.LOAD, pop_prev=0, pop_next=1, push_prev=0, push_next=1, memory_type=MemId.INP,
                      sram_base=0x123, dram_base=0xABCDE, y_size=3, x_size=5, x_stride=7,
                      y_pad_0=1, y_pad_1=2, x_pad_0=3, x_pad_1=4)
    assert word == bits((0, 0), (1, 4), (1, 6), (2, 7), (0x123, 10), (0xABCDE, 26), (3, 64), (5, 80), (7, 96),
                        (1, 112), (2, 116), (3, 120), (4, 124))
    store = isa.encode(opcode=Opcode.STORE, pop_prev=1, push_prev=1, memory_type=MemId.OUT, sram_base=0xFFFF,
                       dram_base=0xFFFFFFFF, y_size=0xFFFF, x_size=1, x_stride=0xFFFF)
    assert store == bits((1, 0), (1, 3), (1, 5), (4, 7), (0xFFFF, 10), (0xFFFFFFFF, 26), (0xFFFF, 64), (1, 80),
                         (0xFFFF, 96))
    # bits 58-63 stay unused
    assert (store >> 58) & 0x3F == 0


def test_gemm_and_finish_words(isa):
    word = isa.encode(opcode=Opcode.GEMM, pop_prev=1, push_next=1, reset=1, uop_bgn=0x1ABC, uop_end=0x2001,
                      iter_out=0x3FFF, iter_in=5, dst_factor_out=0x7FF, dst_factor_in=1, src_factor_out=2,
                      src_factor_in=0x400, wgt_factor_out=0x3FF, wgt_factor_in=9)
    assert word == bits((2, 0), (1, 3), (1, 6), (1, 7), (0x1ABC, 8), (0x2001, 21), (0x3FFF, 35), (5, 49),
                        (0x7FF, 64), (1, 75), (2, 86), (0x400, 97), (0x3FF, 108), (9, 118))
    assert (word >> 63) & 1 == 0
    assert isa.encode(opcode=Opcode.FINISH) == 3


def test_alu_words_and_signed_immediate(isa):
    word = isa.encode(opcode=Opcode.ALU, uop_bgn=1, uop_end=2, iter_out=1, iter_in=64, dst_factor_in=1,
                      src_factor_in=1, alu_opcode=AluOp.SHR, use_imm=1, imm=-5)
    assert word == bits((4, 0), (1, 8), (2, 21), (1, 35), (64, 49), (1, 75), (1, 97), (3, 108), (1, 111),
                        ((-5) & 0xFFFF, 112))
    assert isa.decode(word).imm == -5
    assert isa.decode(word).f["alu_opcode"] == AluOp.SHR


def test_uop_word(isa):
    assert isa.encode_uop(0x7FF, 0x5A5, 0x3FF) == bits((0x7FF, 0), (0x5A5, 11), (0x3FF, 22))
    assert isa.uop.used_bits == 32


@pytest.mark.parametrize("name", ["default", "small", "batch2"])
def test_round_trip_random(name):
    cfg = load_config(name)
    isa = isa_for(cfg)
    rng = np.random.default_rng(1)
    words = []
    for opcode, fmt in ((Opcode.LOAD, isa.mem), (Opcode.STORE, isa.mem), (Opcode.GEMM, isa.gemm),
                        (Opcode.FINISH, isa.gemm), (Opcode.ALU, isa.alu)):
        for _ in range(50):
            values = {f.name: int(rng.integers(f.lo, f.hi + 1)) for f in fmt}
            values["opcode"] = int(opcode)
            word = isa.encode(**values)
            assert isa.decode(word).f == values
            words.append((word, values))
    # the vectorised stream decoder agrees with the scalar one
    raw = isa.words_to_array(w for w, _ in words)
    assert [i.f for i in isa.decode_stream(raw)] == [v for _, v in words]
    # and the vectorised packer of the runtime's queued instructions writes the same bytes, in any order of kinds
    order = rng.permutation(len(words))
    np.testing.assert_array_equal(isa.pack_stream([isa.decode(words[i][0]) for i in order]),
                                  isa.words_to_array(words[i][0] for i in order))
    # the disassembler prints every instruction
    assert all(isa.disasm(w) for w, _ in words)


def test_layout_rule_restarts_at_bit_64():
    isa = isa_for(load_config("default"))
    assert isa.gemm["dst_factor_out"].offset == 64       # would have started at 63
    assert isa.mem["y_size"].offset == 64                # would have started at 58


def test_encode_errors_name_the_field(isa):
    with pytest.raises(EncodeError, match=r"mem.x_size = 65536 .*\[0, 65535\]"):
        isa.encode(opcode=Opcode.LOAD, x_size=1 << 16)
    with pytest.raises(EncodeError, match=r"alu.imm = 40000 .*signed.*\[-32768, 32767\]"):
        isa.encode(opcode=Opcode.ALU, imm=40000)
    with pytest.raises(EncodeError, match=r"gemm.uop_bgn = -1"):
        isa.encode(opcode=Opcode.GEMM, uop_bgn=-1)
    with pytest.raises(EncodeError, match="opcode = 6"):
        isa.encode(opcode=6)
    with pytest.raises(EncodeError, match="no field 'imm'"):
        isa.encode(opcode=Opcode.GEMM, imm=1)
    with pytest.raises(EncodeError, match=r"uop.dst_idx = 2048"):
        isa.encode_uop(2048, 0, 0)


def test_decode_stream_rejects_unknown_opcode(isa):
    raw = isa.words_to_array([3, 7])
    with pytest.raises(EncodeError, match="instruction 1: opcode = 7"):
        isa.decode_stream(raw)


def test_layout_table_lists_every_field(isa):
    table = isa.alu.table()
    for f in isa.alu:
        assert f"`{f.name}`" in table
    assert "112-127" in table


def test_generated_docs_are_current():
    from pathlib import Path

    from sw.docs import isa_markdown
    assert (Path(__file__).resolve().parent.parent.parent / "docs" / "isa.md").read_text() == isa_markdown(), \
        "docs/isa.md is stale: run python -m sw.docs"


def test_post_disassembly_names_its_parameter_rows_and_the_residual(isa):
    post = dict(opcode=Opcode.ALU, alu_opcode=AluOp.POST, uop_bgn=0, uop_end=1, iter_out=1, iter_in=4,
                dst_factor_in=1, src_factor_in=1, imm=2032)
    assert isa.disasm(isa.encode(**post, use_imm=1)).endswith("src=(0,1) params=acc[2032:2048]")
    assert isa.disasm(isa.encode(**post, use_imm=0)).endswith("src=(0,1) params=acc[2032:2048] residual")
    assert isa.disasm(isa.encode(**dict(post, alu_opcode=AluOp.ADD), use_imm=1)).endswith("src=(0,1) imm=2032")


def test_depthwise_opcodes_errors_word_and_disassembly(isa):
    from sw.isa import opcode_error, opcodes
    small, default, batch2 = (load_config(n) for n in ("small", "default", "batch2"))
    assert opcodes(small) == (Opcode.LOAD, Opcode.STORE, Opcode.GEMM, Opcode.FINISH, Opcode.ALU)
    assert opcodes(default) == opcodes(batch2) == opcodes(small) + (Opcode.DEPTHWISE,)
    assert opcode_error(small, 5) == ("opcode DEPTHWISE is not built in config small (DEPTHWISE = 0); allowed: 0 LOAD, "
                                      "1 STORE, 2 GEMM, 3 FINISH, 4 ALU")
    assert opcode_error(default, 5) is None and opcode_error(small, 2) is None
    assert opcode_error(default, 6) == ("opcode = 6 is not an instruction; allowed: 0 LOAD, 1 STORE, 2 GEMM, 3 FINISH, "
                                        "4 ALU, 5 DEPTHWISE")
    # the GEMM layout with opcode 5 in bits 0-2
    word = isa.encode(opcode=Opcode.DEPTHWISE, reset=1, uop_bgn=3, uop_end=9, iter_out=2, iter_in=4, dst_factor_out=1,
                      src_factor_in=5, wgt_factor_out=7)
    assert word == bits((5, 0), (1, 7), (3, 8), (9, 21), (2, 35), (4, 49), (1, 64), (5, 97), (7, 108))
    d = isa.decode(word)
    assert d.kind == "gemm" and d.opcode == Opcode.DEPTHWISE and d.stage == isa.decode(isa.encode(opcode=2)).stage
    assert isa.disasm(word) == ("DEPTHW reset    [----] uop[3:9] out=2 in=4 dst=(1,0) src=(0,5) wgt=(7,0)")
    assert isa.disasm(isa.encode(opcode=Opcode.GEMM, uop_end=1, iter_out=1, iter_in=1)).startswith("GEMM    ")
    assert isa.disasm_uop(isa.encode_uop(4, 7, 2), "depthwise") == "acc[4] = window(inp[7]) . wgt[2]"
    assert [i.opcode for i in isa.decode_stream(isa.words_to_array([word, 3]))] == [Opcode.DEPTHWISE, Opcode.FINISH]
