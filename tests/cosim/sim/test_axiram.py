"""cocotbext-axi's AxiRam as the accelerator's memory (cosim.sim.axiram): random pauses and read latency on every
channel, results bit-exact with the golden model (device memory compared page by page), AXI checker on."""
import pytest

from cosim.model import variants
from cosim.verify import regress

# a few small programs on the small config: loads with padding, GEMM, ALU, stores (make fuzz MEM=cocotbext: all)
SUBSET = ["vector_add", "padded_load[all]", "gemm[default]", "alu[shr_tensor]"]


def test_reference_programs_with_axiram():
    assert regress.compare(SUBSET, "small", mem="cocotbext", mem_seed=1) == []


def test_random_programs_with_axiram():
    assert regress.fuzz([7, 8], "small", n_ops=12, mem="cocotbext", mem_seed=2) == []


def test_unknown_memory_is_refused():
    with pytest.raises(ValueError, match=r"mem must be one of \('dpi', 'cocotbext'\).*'ddr'"):
        variants.tag("ddr")
