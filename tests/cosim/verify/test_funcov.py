"""Functional coverage (cosim.verify.funcov): streams are sampled as they launch, holes are named, steering fills them."""
import pytest

from cosim.verify import funcov, regress


def _hits(item):
    from cocotb_coverage.coverage import coverage_db
    return dict(coverage_db[item].detailed_coverage)


def test_each_launched_stream_is_sampled():
    regress.run_golden([(regress.program_check, ("gemm[default]",), {})], "default")
    before = _hits("vta.insn.opcode_mem")
    regress.run_golden([(regress.program_check, ("gemm[default]",), {})], "default")
    after = _hits("vta.insn.opcode_mem")
    assert after[("FINISH", "-")] == before[("FINISH", "-")] + 1          # one stream, one FINISH
    assert after[("GEMM", "-")] > before[("GEMM", "-")]
    assert after[("LOAD", "WGT")] > before[("LOAD", "WGT")]


def test_steering_hits_the_holes_it_names():
    regress.run_golden([(regress.fuzz_check, (0, 12), {})], "default")
    bins = [("INP", side, "4+") for side in ("y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1")]
    before = _hits("vta.load.pad")
    regress.run_golden([(regress.fuzz_check, (s, 24, {"pad": 1.0}), {}) for s in range(4)], "default")
    after = _hits("vta.load.pad")
    assert any(after[b] > before[b] for b in bins)


def test_report_lists_items_and_holes():
    regress.run_golden([(regress.fuzz_check, (1, 8), {})], "small")
    text = funcov.report()
    assert "vta.deps.flags" in text and "total" in text and "bins never hit:" in text
    hit, total = funcov.bins_total()
    assert 0 < hit <= total
    assert all(v == pytest.approx(0.6) or v == pytest.approx(0.2) for v in funcov.steer(0.6).values())  # big_kernel: a third


def test_hub_steering_makes_every_compute_flag_combination():
    regress.run_golden([(regress.fuzz_check, (0, 8), {})], "default")
    before = _hits("vta.deps.flags")
    regress.run_golden([(regress.fuzz_check, (s, 24, {"hub": 1.0}), {}) for s in range(6)], "default")
    after = _hits("vta.deps.flags")
    assert all(after[b] > before[b] for b in after if b[0] == "compute" and sum(b[1]) >= 3)


def test_steered_programs_are_bit_exact_on_the_rtl():
    bias = {"pad": 1.0, "reuse": 0.5, "long_store": 0.5, "hub": 0.5, "big_kernel": 0.3}
    assert regress.fuzz([11, 12], "small", n_ops=16, bias=bias) == []


def _counts():
    return {"vta.load.pad": {("INP", "y_pad_0", "1"): 2, ("INP", "y_pad_0", "4+"): 0},
            "vta.axi.backpressure": {("read", "AR"): 1, ("write", "W"): 0}}


def test_coverage_counts_subtract_merge_and_name_their_holes():
    a, b = _counts(), _counts()
    b["vta.load.pad"][("INP", "y_pad_0", "4+")] = 3
    assert funcov.delta(b, a) == {"vta.load.pad": {("INP", "y_pad_0", "1"): 0, ("INP", "y_pad_0", "4+"): 3},
                                  "vta.axi.backpressure": {("read", "AR"): 0, ("write", "W"): 0}}
    merged = funcov.merge({}, a)
    assert funcov.holes(merged) == {"vta.load.pad": [("INP", "y_pad_0", "4+")], "vta.axi.backpressure": [("write", "W")]}
    assert funcov.bins_total(merged) == (2, 4)
    assert funcov.steer(0.5, counts=merged) == {"pad": 0.5} and funcov.wants_stalls(merged)
    funcov.merge(merged, funcov.delta(b, a))
    assert merged["vta.load.pad"] == {("INP", "y_pad_0", "1"): 2, ("INP", "y_pad_0", "4+"): 3}
    assert funcov.steer(counts=merged) == {}
    text = funcov.report(merged)
    assert "vta.load.pad                    2 /    2  100.00 %" in text
    assert "total                           3 /    4   75.00 %" in text
    assert "bins never hit:\n  vta.axi.backpressure: ('write', 'W')" in text
    assert funcov.report({}) == "functional coverage: nothing sampled"


def test_backpressure_bins_are_the_channels_that_waited():
    from sw.config import load_config
    cfg = load_config("small")
    funcov.define(cfg)
    before = funcov.snapshot()
    funcov.sample_backpressure(cfg, {"AR": 3, "R_paused": 0, "R_held": 0, "AW": 0, "W": 7, "B_held": 0})
    got = funcov.delta(funcov.snapshot(), before)["vta.axi.backpressure"]
    assert got == {("read", "AR"): 1, ("read", "R_paused"): 0, ("read", "R_held"): 0, ("write", "AW"): 0,
                   ("write", "W"): 1}
