"""The board design: the accelerator, its RAM, the launcher and a checker of the result, in one clock domain.

:class:`BoardSoC` is what a host and DRAM would be on a Zynq: :class:`~fpga.board.ram.AxiRam` (``ram_bytes``)
initialised with :func:`~fpga.board.program.test_program`, and :class:`~fpga.board.launcher.Launcher` doing
the runtime's register sequence (insn_count 0x08, insn_addr 0x0C, base pointers 0x10-0x20 = 0, control
0x00 = 1, then polling control bit 1 (finish) and reading status 0x40). A checker compares the stored OUT
row with the expected one (computed at elaboration) once the run has finished.

``leds``: 0 finish, 1 result correct, 2 error (status bit 2), 3 launched, 7 heartbeat (bit ``heartbeat_bit``
of a cycle counter).
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import Out

from hw.axi import axi4_lite_signature, axi4_signature
from hw.top import CTL_ADDR_BITS, Top
from sw.config import load_config
from sw.registers import REGISTERS

from .launcher import Launcher
from .program import INSN_AT, test_program
from .ram import AxiRam

__all__ = ["BoardSoC"]


class BoardSoC(wiring.Component):
    """Accelerator + RAM + launcher + checker, all in the ``sync`` domain. ``leds`` as in the module doc."""

    def __init__(self, cfg, ram_bytes: int = 4096, heartbeat_bit: int = 26):
        self.cfg = load_config(cfg)
        self.ram_bytes = ram_bytes
        self.heartbeat_bit = heartbeat_bit
        super().__init__({"leds": Out(8)})

    def elaborate(self, platform):
        cfg = self.cfg
        m = Module()
        image, count, out_at, expected = test_program(cfg, self.ram_bytes)
        m.submodules.vta = vta = Top(cfg)
        m.submodules.ram = ram = AxiRam(cfg.BUS_WIDTH, self.ram_bytes, image)
        writes = ([(REGISTERS["insn_count"], count), (REGISTERS["insn_addr"], INSN_AT)]
                  + [(REGISTERS[f"{mem}_addr"], 0) for mem in ("uop", "inp", "wgt", "acc", "out")]
                  + [(REGISTERS["control"], 1)])
        m.submodules.launcher = launcher = Launcher(writes)
        for name in axi4_signature(cfg.BUS_WIDTH).members:
            port, slave = getattr(vta, f"m_axi_{name}"), getattr(ram.axi, name)
            if axi4_signature(cfg.BUS_WIDTH).members[name].flow == wiring.Out:
                m.d.comb += slave.eq(port)
            else:
                m.d.comb += port.eq(slave)
        for name, member in axi4_lite_signature(CTL_ADDR_BITS, 32).members.items():
            master, port = getattr(launcher.bus, name), getattr(vta, f"s_axi_{name}")
            m.d.comb += (port.eq(master) if member.flow == wiring.Out else master.eq(port))
        # checker: compare the OUT row (whole bus words) once finished
        nb = cfg.BUS_WIDTH // 8
        exp = bytes(expected)
        nwords = (len(expected) + nb - 1) // nb
        exp_words = [int.from_bytes(exp[i * nb:(i + 1) * nb], "little") for i in range(nwords)]
        masks = [int.from_bytes(bytes([0xFF] * min(nb, len(expected) - i * nb)), "little") for i in range(nwords)]
        # a three-stage pipeline: address word k, register the RAM's output, compare
        k = Signal(range(nwords + 1))
        ok, checked = Signal(init=1), Signal()
        rd_valid, cmp_valid = Signal(), Signal()
        k_rd, k_cmp = Signal(range(nwords)), Signal(range(nwords))
        data_q = Signal(cfg.BUS_WIDTH)
        issue = launcher.finished & (k != nwords)
        m.d.comb += ram.check_addr.eq(out_at // nb + k)
        with m.If(issue):
            m.d.sync += k.eq(k + 1)
        m.d.sync += [rd_valid.eq(issue), k_rd.eq(k),
                     cmp_valid.eq(rd_valid), k_cmp.eq(k_rd), data_q.eq(ram.check_data)]
        with m.If(cmp_valid):
            exp_now = Signal(cfg.BUS_WIDTH)
            mask_now = Signal(cfg.BUS_WIDTH)
            with m.Switch(k_cmp):
                for i in range(nwords):
                    with m.Case(i):
                        m.d.comb += [exp_now.eq(exp_words[i]), mask_now.eq(masks[i])]
            with m.If((data_q & mask_now) != exp_now):
                m.d.sync += ok.eq(0)
            with m.If(k_cmp == nwords - 1):
                m.d.sync += checked.eq(1)
        beat = Signal(self.heartbeat_bit + 1)
        m.d.sync += beat.eq(beat + 1)
        m.d.comb += self.leds.eq(Cat(launcher.finished, checked & ok, launcher.error, launcher.launched,
                                     Const(0, 3), beat[-1]))
        return m

