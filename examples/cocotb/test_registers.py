"""Registers and a launch by hand: write an instruction stream into device memory, start it through the control
registers, watch the accelerator's ports while it runs, and read the result and the counters back.

    .venv/bin/python -m cosim.cocotb examples/cocotb/test_registers.py [--config configs/small.json]
"""

import cocotb
import numpy as np
from cocotb.triggers import RisingEdge, ValueChange

from cosim.cocotb import Testbench
from sw.isa import MemId, Opcode, isa_for


@cocotb.test()
async def test_registers_after_reset(dut):
    """The constant registers describe this build; the host-written ones read back what was written."""
    async with Testbench(dut) as tb:
        assert await tb.read_reg("status") == 0                  # not busy, nothing finished, no error
        assert (await tb.read_reg("version")) >> 24 != 0          # the implementation revision
        await tb.write_reg("insn_addr", 0x1230)
        assert await tb.read_reg("insn_addr") == 0x1230


def copy_program(tb: Testbench, rows: int, src: int, dst: int) -> np.ndarray:
    """LOAD ACC rows from byte ``src``, STORE them as OUT (their low 8 bits) to byte ``dst``, FINISH: the words."""
    cfg, isa = tb.cfg, isa_for(tb.cfg)
    acc_bytes, out_bytes = cfg.ACC_ELEM_BYTES, cfg.OUT_ELEM_BYTES
    insns = [
        # compute: load the accumulators, then tell the store module it may go
        dict(opcode=Opcode.LOAD, memory_type=MemId.ACC, sram_base=0, dram_base=src // acc_bytes, y_size=1,
             x_size=rows, x_stride=rows, push_next=1),
        # store: wait for compute, write the OUT rows, hand a token back
        dict(opcode=Opcode.STORE, memory_type=MemId.OUT, sram_base=0, dram_base=dst // out_bytes, y_size=1,
             x_size=rows, x_stride=rows, pop_prev=1, push_prev=1),
        # compute: wait for the store, then finish
        dict(opcode=Opcode.LOAD, memory_type=MemId.UOP, pop_next=1),
        dict(opcode=Opcode.FINISH),
    ]
    return isa.words_to_array(isa.encode(**f) for f in insns)


@cocotb.test()
async def test_launch_by_hand(dut):
    """A four-instruction stream launched with register writes; the store writes the truncated accumulators."""
    async with Testbench(dut) as tb:
        cfg = tb.cfg
        rows, src, dst, code = 4, 0x1000, 0x4000, 0x100
        lanes = cfg.BATCH * cfg.BLOCK_OUT
        acc = np.arange(rows * lanes, dtype=np.int32) * 77 - 1000
        tb.dram[src:src + acc.nbytes] = acc.view(np.uint8)
        program = copy_program(tb, rows, src, dst)
        tb.dram[code:code + program.size] = program

        ar_bursts = 0

        async def count_read_bursts():          # watch the AXI read address channel while the run lasts
            nonlocal ar_bursts
            while True:
                await RisingEdge(dut.clk)
                if dut.m_axi_arvalid.value and dut.m_axi_arready.value:
                    ar_bursts += 1

        watcher = cocotb.start_soon(count_read_bursts())
        await tb.write_reg("insn_count", program.size // isa_for(cfg).insn_bytes)
        await tb.write_reg("insn_addr", code)
        await tb.write_reg("control", 1)                        # start
        await ValueChange(dut.irq)                              # the accelerator raises irq when FINISH retires
        watcher.cancel()

        status = await tb.read_reg("status")
        assert status & 2, f"status {status:#x}: the finished bit is not set"
        assert not status & 4, f"status {status:#x}: an error is set\n{await tb.state()}"
        got = tb.dram[dst:dst + rows * lanes].view(np.int8)
        np.testing.assert_array_equal(got, acc.astype(np.int8))  # OUT = the low 8 bits of ACC
        assert ar_bursts >= 2                                   # the instructions and the accumulators
        counters = await tb.counters()
        assert counters["cycles"] > 0 and counters["insn_fetched"] == 4
        # inside the accelerator (every signal of the debug model is readable): the fetch module's own count
        assert dut.dut.fetch.insn_fetched.value == 4
        tb.dut._log.info("copy of %d rows: %d cycles, %d read bursts", rows, counters["cycles"], ar_bursts)


@cocotb.test()
async def test_launch_and_wait(dut):
    """The same stream through the testbench's launch: the counters of the run, or its error with the state."""
    async with Testbench(dut) as tb:
        rows, src, dst, code = 2, 0x2000, 0x6000, 0x200
        program = copy_program(tb, rows, src, dst)
        tb.dram[code:code + program.size] = program
        run = await tb.launch(code, program.size // isa_for(tb.cfg).insn_bytes)
        counters = await run.finished()
        assert counters["out_store_nbytes"] == rows * tb.cfg.BATCH * tb.cfg.BLOCK_OUT
