"""The Amaranth instruction layouts (hw/layouts.py) decode what sw.isa encodes: random field values,
viewed in the simulator, every field equal."""

import random

import pytest
from amaranth.hdl import Module, Signal
from amaranth.sim import Simulator

from hw.layouts import insn_layouts, uop_layout
from sw.config import load_config
from sw.isa import Opcode, isa_for

OPCODE_OF = {"mem": [Opcode.LOAD, Opcode.STORE], "gemm": [Opcode.GEMM, Opcode.FINISH], "alu": [Opcode.ALU]}


@pytest.mark.parametrize("name", ["default", "small", "batch2"])
def test_fields(name):
    cfg = load_config(name)
    isa = isa_for(cfg)
    rnd = random.Random(1234)
    cases = []
    for kind, fmt in isa.formats.items():
        for _ in range(40):
            f = {fld.name: rnd.randint(fld.lo, fld.hi) for fld in fmt}
            f["opcode"] = rnd.choice(OPCODE_OF[kind])
            cases.append((kind, f, isa.encode(**f)))
    for _ in range(40):
        f = {fld.name: rnd.randint(fld.lo, fld.hi) for fld in isa.uop}
        cases.append(("uop", f, isa.uop.encode(f)))

    m = Module()
    word = Signal(128)
    uword = Signal(32)
    m.d.comb += uword.eq(word[:32])
    views = {kind: layout(word) for kind, layout in insn_layouts(cfg).items()}
    views["uop"] = uop_layout(cfg)(uword)
    sim = Simulator(m)

    async def bench(ctx):
        for kind, f, w in cases:
            ctx.set(word, w)
            for name_, value in f.items():
                got = ctx.get(getattr(views[kind], name_))
                assert got == value, f"{kind}.{name_}: encoded {value}, the layout reads {got}"

    sim.add_testbench(bench)
    sim.run()
