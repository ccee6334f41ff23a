"""An AXI error response and the recovery: the memory answers SLVERR on one beat, the accelerator stops with an
error that names the channel, the module and the instruction, and the next program runs correctly.

    .venv/bin/python -m cosim.cocotb examples/cocotb/test_axi_error.py [--config configs/small.json]
"""

import cocotb
import numpy as np

from cosim.cocotb import AxiResponseError, Testbench
from sw import ops, runtime


def vector_add(seed: int) -> dict:
    """int32 a + b on the accelerator's ALU (the current runtime), with the numpy result beside it."""
    cfg = runtime.current().cfg
    rng = np.random.default_rng(seed)
    a, b = (rng.integers(-1000, 1000, size=(8, cfg.BATCH, cfg.BLOCK_OUT), dtype=np.int32) for _ in range(2))
    return {"got": ops.vadd(a, b), "want": (a + b).astype(np.int8)}


@cocotb.test()
async def test_read_error_then_recovery(dut):
    async with Testbench(dut) as tb:
        tb.inject_axi_error("read", beat=0, response="SLVERR")       # the first read beat: the instruction fetch
        try:
            await tb.run(vector_add, 1)
        except AxiResponseError as err:
            assert (err.channel, err.client, err.response) == ("read", "fetch", "SLVERR"), err
            assert err.registers["status"] >> 8 & 0xF == 5          # the status when it stopped: AXI_ERROR
            tb.dut._log.info("stopped as expected: %s", str(err).splitlines()[0])
        else:
            raise AssertionError("the run finished although its first read beat answered SLVERR")
        assert await tb.read_reg("status") == 0       # the stopped accelerator was reset as the run ended

        out = await tb.run(vector_add, 2)                             # the next run is clean
        np.testing.assert_array_equal(out["got"], out["want"])


@cocotb.test()
async def test_write_error_names_the_store(dut):
    async with Testbench(dut) as tb:
        tb.inject_axi_error("write", beat=0, response="DECERR" if tb.mem == "dpi" else "SLVERR")
        try:
            await tb.run(vector_add, 3)
        except AxiResponseError as err:
            assert (err.channel, err.client) == ("write", "store"), err
        else:
            raise AssertionError("the run finished although its first write beat failed")
        out = await tb.run(vector_add, 4)
        np.testing.assert_array_equal(out["got"], out["want"])
