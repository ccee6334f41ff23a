"""cocotbext-axi's AxiRam as the accelerator's memory (cosim.sim.axiram): random pauses and read latency on every
channel, results bit-exact with the golden model (device memory compared page by page), AXI checker on."""
import numpy as np
import pytest

import cosim
from cosim.model import variants
from cosim.verify import faults, regress
from sw.testing import vta_tests as programs

# a few small programs on the small config: loads with padding, GEMM, ALU, stores (make fuzz MEM=cocotbext: all)
SUBSET = ["vector_add", "padded_load[all]", "gemm[default]", "alu[shr_tensor]"]


def test_reference_programs_with_axiram():
    assert regress.compare(SUBSET, "small", mem="cocotbext", mem_seed=1) == []


def test_random_programs_with_axiram():
    assert regress.fuzz([7, 8], "small", n_ops=12, mem="cocotbext", mem_seed=2) == []


def inject_decerr():
    from sw import runtime
    try:
        runtime.current().target.inject_axi_error("read", 0, "DECERR")
    except ValueError as err:
        return str(err)


def test_axiram_answers_injected_slverr_only_and_the_next_run_works():
    read, write, decerr, after = cosim.run_many(
        [(faults.axi_error, ("read", 6), {}), (faults.axi_error, ("write", 1), {}), (inject_decerr, (), {}),
         (programs.vector_add, ("python",), {})], config="small", mem="cocotbext", mem_seed=3)
    assert read["error"] == "AxiResponseError" and "SLVERR on the read channel for the load module" in read["message"]
    assert write["error"] == "AxiResponseError" and "SLVERR on the write channel for the store module" in write["message"]
    assert (write["buffer"][8:16] == 0xAA).all()         # the failing write beat was not made
    assert decerr == "response = 'DECERR'; allowed with mem='cocotbext': SLVERR"
    np.testing.assert_array_equal(after["result"], after["expected"])


def test_unknown_memory_is_refused():
    with pytest.raises(ValueError, match=r"mem must be one of \('dpi', 'cocotbext'\).*'ddr'"):
        variants.tag("ddr")
