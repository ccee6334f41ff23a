"""The compute module: GEMM, ALU, FINISH and the LOADs of UOP, ACC and ACC_8BIT."""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from sw.isa import MemId, Opcode
from .alu import Alu
from .gemm import Gemm
from .interfaces import ADDR_BITS, TokenPopSignature, TokenPushSignature, dma_read_signature
from .isa import insn_layouts
from .load import TensorLoad, dma_read_mux
from .sram import check_config, make_memory, read_signature, write_signature

__all__ = ["Compute"]

# which unit owns the acc/uop ports
_GEMM, _ALU, _LD_UOP, _LD_ACC, _LD_ACC8 = range(5)


class Compute(wiring.Component):
    """The compute module (reference §3.3, §3.4, §3.7, DESIGN §2).

    Takes one instruction at a time from ``insn``: waits for the tokens it pops (``pop_prev``: l2g,
    ``pop_next``: s2g) and consumes them, runs it, then pushes its tokens (``push_prev``: g2l,
    ``push_next``: g2s) in the cycle after its last acc/uop write. Instructions:

    * LOAD UOP / ACC / ACC_8BIT: a :class:`~hw.load.TensorLoad` into the uop or acc SRAM (x_size = 0
      is a NOP). ACC_8BIT reads BATCH*BLOCK_OUT int8 lanes per element and sign-extends them.
      DRAM addresses are ORed with ``uop_base`` (UOP) or ``acc_base`` (ACC, ACC_8BIT).
    * GEMM: :class:`~hw.gemm.Gemm`, one micro-op per cycle.
    * ALU: :class:`~hw.alu.Alu`, one micro-op per cycle with an immediate, one per 2 cycles with a
      tensor operand.
    * FINISH: pulses ``finish`` for one cycle, in the cycle of its pops (if any) and before its pushes.

    OUT mirror: every acc write (loads, GEMM including reset, ALU) also writes the low 8 bits of each
    lane to the same row of the out SRAM through ``out_wr``. A bad instruction (STORE, LOAD of
    INP/WGT/OUT or an unknown memory type, an unknown opcode, MUL when ``cfg.ALU_MUL`` = 0) sets
    the sticky ``error`` before popping any token and stops the module.

    Overhead per instruction: about 4 cycles around the unit's own latency (GEMM: N + 5 cycles for
    N micro-ops, ALU: N + 4 or 2N + 4, loads: DMA latency + one cycle per SRAM row).

    Members:
        ``insn``        In(stream of 128 bits)
        ``dma``         Out(DMA read client)    UOP, ACC and ACC_8BIT loads
        ``inp_rd``      In(ReadPort.Signature(addr_width=LOG_INP_DEPTH, shape=INP_MATRIX_WIDTH))
        ``wgt_rd``      In(ReadPort.Signature(addr_width=LOG_WGT_DEPTH, shape=WGT_MATRIX_WIDTH))
        ``out_wr``      In(WritePort.Signature(addr_width=LOG_ACC_DEPTH, shape=OUT_MATRIX_WIDTH))
        ``l2g``, ``s2g``  Out(TokenPopSignature)   (pop_prev, pop_next)
        ``g2l``, ``g2s``  Out(TokenPushSignature)  (push_prev, push_next)
        ``uop_base``, ``acc_base``  In(32)
        ``finish``      Out(1)  one-cycle pulse per FINISH
        ``acc_writes``  Out(32) acc rows written (control register 0x24)
        ``gemm_uops``   Out(32) non-reset GEMM micro-ops executed (fsim gemm_counter)
        ``alu_uops``    Out(32) ALU micro-ops executed
        ``busy``        Out(1)  an instruction is in progress (including waiting for tokens)
        ``stall``       Out(1)  waiting for a token
        ``error``       Out(1)  sticky, a bad instruction stopped the module
        ``clear``       In(1)   leave the error halt (clears ``error``; ignored unless halted), e.g. at launch

    The uop and acc SRAMs are inside (``uop_mem``, ``acc_mem`` attributes, for tests); the acc read
    port is transparent to the acc write port, which the GEMM and ALU pipelines rely on.
    """

    def __init__(self, cfg):
        check_config(cfg, self)
        self._cfg = cfg
        super().__init__({
            "insn": In(stream.Signature(128)),
            "dma": Out(dma_read_signature(cfg.BUS_WIDTH)),
            "inp_rd": In(read_signature(cfg, "inp")),
            "wgt_rd": In(read_signature(cfg, "wgt")),
            "out_wr": In(write_signature(cfg, "out")),
            "l2g": Out(TokenPopSignature),
            "s2g": Out(TokenPopSignature),
            "g2l": Out(TokenPushSignature),
            "g2s": Out(TokenPushSignature),
            "uop_base": In(ADDR_BITS),
            "acc_base": In(ADDR_BITS),
            "finish": Out(1),
            "acc_writes": Out(32),
            "gemm_uops": Out(32),
            "alu_uops": Out(32),
            "busy": Out(1),
            "stall": Out(1),
            "error": Out(1),
            "clear": In(1),
        })
        self.uop_mem = make_memory(cfg, "uop")
        self.acc_mem = make_memory(cfg, "acc")

    def elaborate(self, platform):
        m = Module()
        cfg = self._cfg
        lanes = cfg.BATCH * cfg.BLOCK_OUT
        m.submodules.uop_mem = self.uop_mem
        m.submodules.acc_mem = self.acc_mem
        uop_wr = self.uop_mem.write_port()
        uop_rd = self.uop_mem.read_port()
        acc_wr = self.acc_mem.write_port()
        acc_rd = self.acc_mem.read_port(transparent_for=(acc_wr,))

        m.submodules.gemm = gemm = Gemm(cfg)
        m.submodules.alu = alu = Alu(cfg)
        m.submodules.ld_uop = ld_uop = TensorLoad(cfg, elem_bytes=cfg.UOP_ELEM_BYTES, depth=cfg.UOP_DEPTH)
        m.submodules.ld_acc = ld_acc = TensorLoad(cfg, elem_bytes=cfg.ACC_ELEM_BYTES, depth=cfg.ACC_DEPTH)
        m.submodules.ld_acc8 = ld_acc8 = TensorLoad(cfg, elem_bytes=cfg.OUT_ELEM_BYTES, depth=cfg.ACC_DEPTH)
        wiring.connect(m, gemm.inp_rd, wiring.flipped(self.inp_rd))
        wiring.connect(m, gemm.wgt_rd, wiring.flipped(self.wgt_rd))
        wiring.connect(m, ld_uop.wr, uop_wr)

        word = Signal(128)
        layouts = insn_layouts(cfg)
        mem = layouts["mem"](word)
        gem = layouts["gemm"](word)
        alu_insn = layouts["alu"](word)
        unit = Signal(3)
        for t in (ld_uop, ld_acc, ld_acc8):
            m.d.comb += t.insn.eq(word)
        m.d.comb += [gemm.insn.eq(word), alu.insn.eq(word),
                     ld_uop.base.eq(self.uop_base), ld_acc.base.eq(self.acc_base),
                     ld_acc8.base.eq(self.acc_base)]
        dma_sel = Signal(2)
        dma_read_mux(m, self.dma, [ld_uop.dma, ld_acc.dma, ld_acc8.dma], dma_sel)

        # uop and acc read ports: GEMM or ALU
        m.d.comb += [uop_rd.en.eq(1), acc_rd.en.eq(1)]
        for u in (gemm, alu):
            m.d.comb += [u.uop_rd.data.eq(uop_rd.data), u.acc_rd.data.eq(acc_rd.data)]
        m.d.comb += [
            uop_rd.addr.eq(Mux(unit == _ALU, alu.uop_rd.addr, gemm.uop_rd.addr)),
            acc_rd.addr.eq(Mux(unit == _ALU, alu.acc_rd.addr, gemm.acc_rd.addr)),
        ]
        # acc write port: the unit in charge
        acc8_lanes = []
        for i in range(lanes):
            byte = ld_acc8.wr.data[i * 8:(i + 1) * 8]
            acc8_lanes.append(Cat(byte, byte[7].replicate(24)))
        with m.Switch(unit):
            with m.Case(_GEMM):
                m.d.comb += [acc_wr.en.eq(gemm.acc_wr.en), acc_wr.addr.eq(gemm.acc_wr.addr),
                             acc_wr.data.eq(gemm.acc_wr.data)]
            with m.Case(_ALU):
                m.d.comb += [acc_wr.en.eq(alu.acc_wr.en), acc_wr.addr.eq(alu.acc_wr.addr),
                             acc_wr.data.eq(alu.acc_wr.data)]
            with m.Case(_LD_ACC):
                m.d.comb += [acc_wr.en.eq(ld_acc.wr.en), acc_wr.addr.eq(ld_acc.wr.addr),
                             acc_wr.data.eq(ld_acc.wr.data)]
            with m.Case(_LD_ACC8):
                m.d.comb += [acc_wr.en.eq(ld_acc8.wr.en), acc_wr.addr.eq(ld_acc8.wr.addr),
                             acc_wr.data.eq(Cat(*acc8_lanes))]
        # OUT mirror of every acc write
        m.d.comb += [
            self.out_wr.en.eq(acc_wr.en),
            self.out_wr.addr.eq(acc_wr.addr),
            self.out_wr.data.eq(Cat(*(acc_wr.data[i * 32:i * 32 + 8] for i in range(lanes)))),
        ]
        # counters
        with m.If(acc_wr.en):
            m.d.sync += self.acc_writes.eq(self.acc_writes + 1)
        with m.If(gemm.uop_fire):
            m.d.sync += self.gemm_uops.eq(self.gemm_uops + 1)
        with m.If(alu.uop_fire):
            m.d.sync += self.alu_uops.eq(self.alu_uops + 1)

        # instruction sequencing
        op = mem.opcode
        is_load = op == Opcode.LOAD
        mt = mem.memory_type
        alu_ok = ((alu_insn.alu_opcode == 0) | (alu_insn.alu_opcode == 1) | (alu_insn.alu_opcode == 2) |
                  (alu_insn.alu_opcode == 3) | ((alu_insn.alu_opcode == 4) & bool(cfg.ALU_MUL)))
        unit_done = gemm.done | alu.done | ld_uop.done | ld_acc.done | ld_acc8.done
        with m.FSM(name="compute_fsm"):
            with m.State("IDLE"):
                m.d.comb += self.insn.ready.eq(1)
                with m.If(self.insn.valid):
                    m.d.sync += word.eq(self.insn.payload)
                    m.next = "DECODE"
            with m.State("DECODE"):
                m.d.comb += self.busy.eq(1)
                ok = Signal()
                with m.Switch(op):
                    with m.Case(Opcode.LOAD):
                        m.d.comb += ok.eq((mt == MemId.UOP) | (mt == MemId.ACC) | (mt == MemId.ACC_8BIT))
                        m.d.sync += [unit.eq(Mux(mt == MemId.UOP, _LD_UOP, Mux(mt == MemId.ACC, _LD_ACC, _LD_ACC8))),
                                     dma_sel.eq(Mux(mt == MemId.UOP, 0, Mux(mt == MemId.ACC, 1, 2)))]
                    with m.Case(Opcode.GEMM):
                        m.d.comb += ok.eq(1)
                        m.d.sync += unit.eq(_GEMM)
                    with m.Case(Opcode.ALU):
                        m.d.comb += ok.eq(alu_ok)
                        m.d.sync += unit.eq(_ALU)
                    with m.Case(Opcode.FINISH):
                        m.d.comb += ok.eq(1)
                with m.If(ok):
                    m.next = "POP"
                with m.Else():
                    m.d.sync += self.error.eq(1)
                    m.next = "HALT"
            with m.State("POP"):
                m.d.comb += self.busy.eq(1)
                with m.If((mem.pop_prev & ~self.l2g.valid) | (mem.pop_next & ~self.s2g.valid)):
                    m.d.comb += self.stall.eq(1)
                with m.Else():
                    m.d.comb += [self.l2g.pop.eq(mem.pop_prev), self.s2g.pop.eq(mem.pop_next)]
                    with m.If(op == Opcode.FINISH):
                        m.d.comb += self.finish.eq(1)
                        m.next = "PUSH"
                    with m.Else():
                        m.d.comb += [
                            gemm.start.eq(unit == _GEMM), alu.start.eq(unit == _ALU),
                            ld_uop.start.eq(unit == _LD_UOP), ld_acc.start.eq(unit == _LD_ACC),
                            ld_acc8.start.eq(unit == _LD_ACC8),
                        ]
                        m.next = "RUN"
            with m.State("RUN"):
                m.d.comb += self.busy.eq(1)
                with m.If(unit_done):
                    m.next = "PUSH"
            with m.State("PUSH"):
                m.d.comb += [self.busy.eq(1), self.g2l.push.eq(mem.push_prev), self.g2s.push.eq(mem.push_next)]
                m.next = "IDLE"
            with m.State("HALT"):
                with m.If(self.clear):
                    m.d.sync += self.error.eq(0)
                    m.next = "IDLE"
        return m
