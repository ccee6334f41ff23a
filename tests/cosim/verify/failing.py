"""A failing program for the triage tests: a long random program that the injected fetch fault changes."""
from cosim.verify import regress, replay, triage

FAULT = "alu-max-imm-as-min"
LONG = 60          # operations of the long random program the fault is found in


def failing_entry(config="small"):
    """The first long random program (seed 1 of a batch from 0) that the fault changes on the golden model."""
    seeds = [0, 1]
    calls = [(triage.fuzz_probe, (s, LONG, None), {}) for s in seeds]
    gold = regress.run_golden(calls, config, dram_bytes=replay.DRAM_BYTES)
    dut = regress.run_golden([(triage.fuzz_probe, (s, LONG, FAULT), {}) for s in seeds], config,
                             dram_bytes=replay.DRAM_BYTES)
    assert triage.compare_probe("seed 0", gold[0], dut[0]) is None
    sig, _ = triage.compare_probe("seed 1", gold[1], dut[1])
    assert sig == ("mismatch", "data")
    return {"config": config, "seed": 1, "n_ops": LONG, "fault": FAULT,
            "program": replay.record(calls, config, index=1)}
