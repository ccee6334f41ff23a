"""DEPTHWISE on the RTL (configs with DEPTHWISE): its directed edges (cosim.verify.directed.depthwise_window: extreme
values in every window slot, windows across loop boundaries, overwrite against the GEMMs around it, reset, rows
rewritten by the next execution) match the reference on all 32 bits, and random programs rich in DEPTHWISEs are
bit-exact with the golden model; one simulator launch. (The reference program depthwise runs in test_cosim.py's
regression, the refusal of opcode 5 on a config without it in tests/cosim/verify/test_directed_suite.py.)"""
import numpy as np

import cosim
from cosim.verify import directed
from cosim.verify.differential import differences, fuzz_check, run_golden

SEEDS = range(50_000, 50_030)


def test_depthwise_edges_and_random_programs_rich_in_depthwise_bit_exact():
    fuzz = [(fuzz_check, (seed, 24, {"depthwise": 1.0}), {}) for seed in SEEDS]
    # (the edges last: the random programs find the SRAMs as the golden model's run of them does)
    *rtl, edges = cosim.run_many(fuzz + [(directed.depthwise_window, (), {})], config="default")
    assert edges["error"] is None, edges["message"]
    assert edges["counters"]["gemm_counter"] == 104
    np.testing.assert_array_equal(edges["result"], edges["expected"])
    gold = run_golden(fuzz, "default")
    assert sum(g["listing"].count("DEPTHW") for g in gold) > 100
    problems = [d for seed, g, r in zip(SEEDS, gold, rtl) for d in differences(f"seed {seed}", g, r)]
    assert problems == [], "\n".join(problems[:4])
