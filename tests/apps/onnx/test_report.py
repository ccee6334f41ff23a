"""The per-layer report: rows, totals, CSV and PNG."""

import csv

import pytest

from apps.onnx import report
from sw.config import load_config

RECORDS = [
    {"name": "conv1", "kind": "conv", "where": "vta", "out_shape": (1, 64, 112, 112), "macs": 256 * 1000,
     "counters": {"cycles": 2000, "inp_load_nbytes": 4000, "wgt_load_nbytes": 1000, "out_store_nbytes": 1000},
     "seconds": 0.5},
    {"name": "pool", "kind": "maxpool", "where": "cpu", "out_shape": (1, 64, 56, 56), "macs": 0, "counters": {},
     "seconds": 0.01},
    {"name": "fc", "kind": "dense", "where": "vta", "out_shape": (1, 1000), "macs": 512000,
     "counters": {"cycles": 64000, "wgt_load_nbytes": 512000}, "seconds": 0.1},
    {"name": "softmax", "kind": "island", "where": "cpu", "out_shape": (1, 1000), "macs": 0, "counters": {},
     "seconds": 0.002},
    {"name": "head", "kind": "island", "where": "cpu", "out_shape": (1, 10), "macs": 256000, "counters": {},
     "seconds": 0.003},
]


def test_rows_and_totals():
    cfg = load_config("default")
    rows = report.rows(RECORDS, cfg)
    assert rows[0]["utilization"] == pytest.approx(256 * 1000 / (2000 * 256))
    # bound = max(1000 cycles of MACs, 6000 bytes / 8) = 1000; fraction of 2000 cycles
    assert rows[0]["roofline_fraction"] == pytest.approx(0.5)
    assert rows[0]["dram_bytes"] == 6000 and rows[0]["shape"] == "1x64x112x112"
    assert rows[1]["cycles"] == 0 and rows[1]["utilization"] != rows[1]["utilization"]   # NaN: no cycles
    t = report.totals(rows, cfg)
    assert t["cycles"] == 66000 and t["vta_layers"] == 2
    assert t["inferences_per_s_100MHz"] == pytest.approx(1e8 / 66000)
    assert t["conv_utilization"] == pytest.approx(0.5)
    assert t["macs"] == 1024000 and t["vta_macs"] == 768000 and t["mac_share"] == pytest.approx(0.75)
    text = report.format_table(rows, cfg)
    assert "cycles 66,000" in text and "conv1" in text and "softmax" in text
    assert "(2 on VTA, 2 CPU islands)" in text and "of which 75.0% on the accelerator" in text
    # the bounds: conv1 1000 cycles of MACs, fc 64,000 of DRAM (512,000 bytes / 8)
    assert t["bound_cycles"] == pytest.approx(65000) and "sum to 65,000 cycles: 98.5% of the run" in text
    # a requantization of more ALU micro-ops than GEMM cycles: the ALU bounds the layer
    alu = report.rows([dict(RECORDS[0], counters=dict(RECORDS[0]["counters"], alu_counter=1600))], cfg)[0]
    assert alu["roofline_fraction"] == pytest.approx(0.8) and alu["bound_cycles"] == 1600
    assert alu["alu_cycles"] == 1600 and rows[0]["alu_cycles"] == 0


def test_post_instructions_bound_the_alu_by_their_cycles():
    """POST instructions count their rows (at one a cycle, two with the residual) and each its fixed cost in place of
    their micro-ops: 100 other micro-ops and 1,500 rows of POST in 10 instructions (1,500 + 10 x 45 cycles)."""
    cfg = load_config("default")
    c = dict(RECORDS[0]["counters"], alu_counter=1600, post_insns=10, post_uops=1500, post_cycles=1950)
    row = report.rows([dict(RECORDS[0], counters=c)], cfg)[0]
    assert row["alu_cycles"] == 100 + 1950 == report.alu_cycles(c)
    assert row["bound_cycles"] == 2050 and row["roofline_fraction"] == pytest.approx(2050 / 2000)
    t = report.totals([row], cfg)
    assert t["alu_cycles"] == 2050 and "ALU bound 2,050 cycles" in report.format_table([row], cfg)


def test_golden_rows_say_cycles_are_not_counted():
    cfg = load_config("default")
    recs = [dict(r, counters={k: v for k, v in r["counters"].items() if k != "cycles"}) for r in RECORDS]
    assert "not counted on the golden model" in report.format_table(report.rows(recs, cfg), cfg)


def test_csv_and_png(tmp_path):
    cfg = load_config("default")
    rows = report.rows(RECORDS, cfg)
    report.write_csv(rows, tmp_path / "r.csv")
    with open(tmp_path / "r.csv") as f:
        got = list(csv.DictReader(f))
    assert [g["layer"] for g in got] == ["conv1", "pool", "fc", "softmax", "head"] and got[2]["cycles"] == "64000"
    report.write_png(rows, tmp_path / "r.png", "t")
    assert (tmp_path / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _conv(name, cin, cout, k, hw, cycles, groups=1):
    macs = cout * hw * hw * cin // groups * k * k
    return {"name": name, "kind": "conv", "where": "vta", "in_shape": (1, cin, hw, hw), "out_shape": (1, cout, hw, hw),
            "macs": macs, "counters": {"cycles": cycles}, "seconds": 0.0}


def test_cycles_by_layer_kind():
    cfg = load_config("default")
    recs = [_conv("stem", 3, 64, 7, 112, 700), _conv("a", 64, 64, 3, 56, 500), _conv("b", 64, 64, 3, 56, 500),
            _conv("c", 64, 128, 1, 28, 100), _conv("dw", 96, 96, 3, 56, 300, groups=96),
            _conv("g", 32, 32, 3, 8, 10, groups=16), RECORDS[1], RECORDS[2]]
    rows = report.rows(recs, cfg)
    assert [r["group"] for r in rows] == ["stem", "conv 3x3", "conv 3x3", "conv 1x1", "depthwise", "grouped conv",
                                          "maxpool", "dense"]
    groups = {g["group"]: g for g in report.by_group(rows)}
    assert groups["conv 3x3"]["layers"] == 2 and groups["conv 3x3"]["cycles"] == 1000
    assert report.by_group(rows)[0]["group"] == "dense"                      # most cycles first
    text = report.format_groups(rows, cfg)
    assert "conv 3x3" in text and "maxpool" not in text                      # CPU layers have no cycles
