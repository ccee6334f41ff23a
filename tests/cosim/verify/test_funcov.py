"""Functional coverage (cosim.verify.funcov): streams are sampled as they launch, holes are named, steering fills them."""
import numpy as np
import pytest

from cosim.verify import funcov, regress
from sw.fsim import FsimDevice
from sw.isa import POST_PARAM_ROWS, AluOp, Opcode


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


def test_random_programs_hit_every_post_bin():
    regress.run_golden([(regress.fuzz_check, (s, 24), {}) for s in range(25)], "default")
    assert [name for name in funcov.holes() if name.startswith("vta.post.")] == []
    regress.run_golden([(regress.fuzz_check, (0, 8), {})], "small")
    assert not any(name.startswith("vta.post.") for name in funcov.snapshot())      # no POST_UNIT, no POST items
    assert funcov.steer(0.5, counts={"vta.post.imm": {"first": 0, "inside": 3, "last": 1}}) == {"post": 0.5}


def _post_hits(device, **fields):
    """The POST bins that sampling one POST instruction (micro-op 0, ``fields``) on ``device`` adds."""
    f = dict(opcode=Opcode.ALU, reset=0, uop_bgn=0, uop_end=1, iter_out=1, iter_in=4, dst_factor_out=0, dst_factor_in=1,
             src_factor_out=0, src_factor_in=1, alu_opcode=int(AluOp.POST), use_imm=0, imm=0) | fields
    funcov.define(device.cfg)
    before = funcov.snapshot()
    funcov.sample_post(device, f)
    return {name[len("vta.post."):]: {b for b, n in bins.items() if n}
            for name, bins in funcov.delta(funcov.snapshot(), before).items() if name.startswith("vta.post.")}


def test_post_sample_names_the_shape_and_each_stage_event():
    """One POST on hand-made rows: a fast kernel with the residual; MAX 0 clips -5, SHR -1 (a left shift) wraps
    2^30, the residual (its MUL the identity, its ADD -5) wraps 2^31 - 6 + 28 at its add, the last MIN 100 clips
    499. Then irregular ones: two micro-ops, the second's residual row the first's destination, with the
    parameter rows at the top of imm's range; one micro-op whose destinations run over the parameter rows."""
    dev = FsimDevice("default", dram_bytes=1 << 20)
    top = dev.cfg.ACC_DEPTH - POST_PARAM_ROWS
    params = [0, 0, 2**31 - 1, 2, 0, 0, 1, 0, -1, 1, 0, 3, -2**31, 100, 1, -5]
    dev.acc[0:POST_PARAM_ROWS] = np.array(params, np.int64).astype(np.int32)[:, None]
    dev.acc[100:104] = np.array([-5, 2**29, 7, 1000], np.int32)[:, None]
    dev.acc[200:204] = np.array([0, 0, 2**31 - 1, 0], np.int32)[:, None]
    dev.uop[0:2] = [dev.isa.encode_uop(100, 200), dev.isa.encode_uop(101, 100)]
    got = _post_hits(dev)
    assert got == {"kernel": {("residual", "fast")}, "irregular": set(), "imm": {"first"},
                   "stage": {(1, "MAX", "clips"), (8, "SHR", "wraps"), ("residual", "ADD", "wraps"), (13, "MIN", "clips")},
                   "shift": {(5, "0"), (8, "<0"), (11, "1-15")},
                   "residual_step": {(0, "MUL", "identity"), (1, "ADD", "other")}}
    dev.acc[top:] = dev.acc[0:POST_PARAM_ROWS]
    got = _post_hits(dev, uop_bgn=0, uop_end=2, iter_in=1, imm=top, dst_factor_in=0, src_factor_in=0)
    assert got["kernel"] == {("residual", "irregular")} and got["imm"] == {"last"}
    assert got["irregular"] == {"several micro-ops", "residual over destinations"}
    got = _post_hits(dev, iter_in=20, imm=110, use_imm=1)
    assert got["kernel"] == {("none", "irregular")} and got["irregular"] == {"parameters over destinations"}
    assert not got["residual_step"]                   # without the residual its steps' rows are not used


def test_random_programs_hit_every_depthwise_bin():
    regress.run_golden([(regress.fuzz_check, (s, 24), {}) for s in range(25)], "default")
    assert [name for name in funcov.holes() if name.startswith("vta.depthwise.")] == []
    snap = funcov.snapshot()
    assert all(snap["vta.compute.loops"][b] for b in snap["vta.compute.loops"] if b[0] == "DEPTHWISE")
    assert snap["vta.insn.opcode_mem"][("DEPTHWISE", "-")] > 0
    regress.run_golden([(regress.fuzz_check, (0, 8), {})], "small")
    snap = funcov.snapshot()                                 # no DEPTHWISE on small: no DEPTHWISE items or bins
    assert not any(name.startswith("vta.depthwise.") for name in snap)
    assert not any(b[0] == "DEPTHWISE" for name in ("vta.compute.loops", "vta.insn.opcode_mem") for b in snap[name])
    assert funcov.steer(0.5, counts={"vta.depthwise.dst": {"distinct": 0, "again next": 1, "again later": 2}}) \
        == {"depthwise": 0.5}
    assert funcov.steer(0.5, counts={"vta.compute.loops": {("DEPTHWISE", "1", ">1", "1"): 0}}) == {"depthwise": 0.5}
    assert funcov.steer(0.5, counts={"vta.gemm.reset": {0: 1, 1: 0}}) == {}


def _depthwise_hits(device, uops, **fields):
    """The DEPTHWISE bins that sampling one DEPTHWISE of micro-ops ``uops`` [(dst, src, wgt)] (``fields`` over one
    execution of each) on ``device`` adds."""
    f = dict(opcode=Opcode.DEPTHWISE, reset=0, uop_bgn=0, uop_end=len(uops), iter_out=1, iter_in=1, dst_factor_out=0,
             dst_factor_in=0, src_factor_out=0, src_factor_in=0, wgt_factor_out=0, wgt_factor_in=0) | fields
    device.uop[:len(uops)] = [device.isa.encode_uop(*u) for u in uops]
    funcov.define(device.cfg)
    before = funcov.snapshot()
    funcov.sample_depthwise(device, f)
    return {name[len("vta.depthwise."):]: {b for b, n in bins.items() if n}
            for name, bins in funcov.delta(funcov.snapshot(), before).items()
            if name.startswith("vta.depthwise.") and any(bins.values())}


def test_depthwise_sample_names_the_window_crossings_and_rewritten_rows():
    """BLOCK_IN = 16 on default: 3 micro-ops x 2 x 2 = 12 executions leave a zero slot (partial), the last window
    holds rows of all four iterations and crosses both loops' boundaries; 3 x 6 = 18 executions fill the window (the
    last one spans all six iterations); 18 micro-ops x 3: a full window spans two iterations; 20 micro-ops once: one;
    rows written again by the very next execution or a later one; a reset samples only its rows."""
    dev = FsimDevice("default", dram_bytes=1 << 20)
    got = _depthwise_hits(dev, [(0, 1, 0), (1, 2, 0), (2, 3, 0)], iter_out=2, iter_in=2, dst_factor_in=3,
                          dst_factor_out=6)
    assert got == {"reset": {0}, "window": {("partial", "3+")}, "crosses": {"both"}, "dst": {"distinct"}}
    got = _depthwise_hits(dev, [(0, 1, 0), (0, 2, 0), (1, 3, 0)], iter_in=6, dst_factor_in=2)
    assert got == {"reset": {0}, "window": {("full", "3+")}, "crosses": {"iter_in"}, "dst": {"again next"}}
    got = _depthwise_hits(dev, [(5, i, 0) for i in range(16)] + [(6, 0, 0), (5, 0, 0)], iter_out=3)
    assert got["window"] == {("full", "2")} and got["crosses"] == {"iter_out"}
    assert got["dst"] == {"again next", "again later"}
    got = _depthwise_hits(dev, [(i, i, 0) for i in range(20)])
    assert got["window"] == {("full", "1")} and got["crosses"] == {"none"} and got["dst"] == {"distinct"}
    got = _depthwise_hits(dev, [(0, 0, 0), (1, 0, 0)], reset=1, iter_in=2)
    assert got == {"reset": {1}, "dst": {"again later"}}                     # no window: the rows are set to 0
    assert _depthwise_hits(dev, [(0, 0, 0)], iter_out=0) == {}                 # nothing runs
