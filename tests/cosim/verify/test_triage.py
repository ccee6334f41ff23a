"""Triage (cosim.verify.triage): random programs checked in batches, with their coverage and injected AXI errors."""
from cosim.verify import triage


def test_a_shard_returns_its_coverage_with_the_backpressure_of_dram_pauses():
    out = triage.check_seeds("small", [6], 12, bias={"pad": 1.0}, dram_stall=(7 << 8) | 128)
    assert out["failures"] == [] and out["programs"] == 1
    pressure = out["coverage"]["vta.axi.backpressure"]
    assert all(pressure[b] == 1 for b in (("read", "AR"), ("read", "R_paused"), ("write", "AW"), ("write", "W")))
    assert out["coverage"]["vta.insn.opcode_mem"][("STORE", "OUT")] == 7
    assert out["coverage"]["vta.insn.opcode_mem"][("FINISH", "-")] >= 1        # this shard's golden streams


def test_random_programs_stop_on_injected_axi_errors_and_the_accelerator_works_after():
    # the programs run cleanly (compared with the golden model), then each with SLVERR/DECERR on a read or write beat
    # drawn from its seed (each must stop and name them), then a vector addition must still be right
    result = triage.check_seeds("small", [0, 1, 2, 3, 4, 5], n_ops=12, fault="axi-errors")
    assert result["failures"] == [], result["failures"][0]["failure"]["description"]
