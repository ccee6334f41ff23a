"""Operator benchmarks on the RTL (cosim.perf.operators): the roofline arithmetic, the table and CSV, and a
subset of the operators run on the RTL with 1 and 2 virtual threads, equal to the numpy references."""
import csv
import io
import math

import numpy as np
import pytest

from cosim.perf import operators as wl
from cosim.perf import timeline
from sw.cli import progress_bar
from sw.config import load_config
from sw.testing import workloads

# name -> vt -> (fn, positional args); every call compares its result with numpy (np.array_equal)
SMALL = {
    "dense_16x64x64": {vt: (workloads.run_dense_workload, (16, 64, 64, vt)) for vt in (1, 2)},
    "dense_20x72x40_bias": {vt: (workloads.run_dense_workload, (20, 72, 40, vt, True)) for vt in (1, 2)},
    "conv_8x8x16x16_k3": {vt: (workloads.run_conv2d_workload, (None, None, 8, 8, 16, 16, 3, 1, 1, vt)) for vt in (1, 2)},
    # (a residual added in the epilogue: LOAD ACC_8BIT beside the GEMMs of the other acc bank)
    "conv_8x8x16x24_k3_residual": {vt: (workloads.run_conv2d_workload,
                                        (None, None, 8, 8, 16, 24, 3, 1, 1, vt, True, None, 0, True)) for vt in (1, 2)},
}
DEFAULT = {
    "conv_9x9x32x48_k3_s2": {vt: (workloads.run_conv2d_workload, (None, None, 9, 9, 32, 48, 3, 1, 2, vt)) for vt in (1, 2)},
    # (vt=2: the first step in parts of output blocks, a tile started at the bias by MIN; see tests/sw/ops/test_schedule.py)
    "conv_10x10x64x96_k3": {vt: (workloads.run_conv2d_workload, (None, None, 10, 10, 64, 96, 3, 1, 1, vt))
                            for vt in (1, 2)},
    # (vt=2: ALU-bound with a residual: each tile's residual loads amid the tile before's requantization, the
    # ALU beside them)
    "conv_28x28x16x64_k1_residual": {vt: (workloads.run_conv2d_workload,
                                          (None, None, 28, 28, 16, 64, 1, 0, 1, vt, True, None, 0, True))
                                     for vt in (1, 2)},
    # (vt=2: the first step in parts of rows, tiles started at the bias, the last tile finished in parts)
    "dense_192x256x96_bias": {vt: (workloads.run_dense_workload, (192, 256, 96, vt, True)) for vt in (1, 2)},
    "conv_14x14x64x48_k3_residual": {vt: (workloads.run_conv2d_workload,
                                          (None, None, 14, 14, 64, 48, 3, 1, 1, vt, True, None, 0, True))
                                     for vt in (1, 2)},
}


# ---------------------------------------------------------------------- arithmetic on made-up counters
def test_roofline_memory_bound():
    cfg = load_config("default")                      # 256 MACs per cycle
    counters = {"cycles": 4000, "inp_load_nbytes": 4000, "wgt_load_nbytes": 8000, "acc_load_nbytes": 0,
                "uop_load_nbytes": 800, "out_store_nbytes": 3200, "gemm_counter": 1000}
    r = wl.roofline(256 * 1000, counters, cfg, dram_bytes_per_cycle=8)
    assert r["bytes"] == 16000
    assert r["compute_cycles"] == 1000 and r["memory_cycles"] == 2000
    assert r["bound_cycles"] == 2000 and r["bound_by"] == "memory"
    assert r["bound_fraction"] == 0.5 and r["utilization"] == 0.25
    # twice the bandwidth halves the memory time; then compute and memory tie
    r = wl.roofline(256 * 1000, counters, cfg, dram_bytes_per_cycle=16)
    assert r["memory_cycles"] == 1000 and r["bound_cycles"] == 1000 and r["bound_fraction"] == 0.25


def test_roofline_compute_bound_and_small_config():
    cfg = load_config("small")                        # 64 MACs per cycle
    counters = {"cycles": 1250, "inp_load_nbytes": 80, "out_store_nbytes": 80}
    r = wl.roofline(64 * 1000, counters, cfg)
    assert r["bytes"] == 160 and r["memory_cycles"] == 20
    assert r["bound_by"] == "compute" and r["bound_cycles"] == 1000
    # more ALU micro-ops than GEMM cycles: the tensor ALU bounds it
    ra = wl.roofline(64 * 1000, dict(counters, alu_counter=1100), cfg)
    assert ra["bound_by"] == "alu" and ra["bound_cycles"] == 1100 and ra["alu_cycles"] == 1100
    assert r["bound_fraction"] == r["utilization"] == 0.8
    assert math.isnan(wl.roofline(1, {"cycles": 0}, cfg)["utilization"])


def test_make_row_summary_and_verdicts():
    cfg = load_config("default")
    c = {"cycles": 1000, "inp_load_nbytes": 800, "gemm_counter": 900, "alu_counter": 10,
         "load_busy": 300, "load_stall": 100, "compute_busy": 1000, "compute_stall": 50, "store_busy": 20}
    row = wl.make_row("gemm_256", 2, {"result": {"ok": True, "macs": 256 * 900, "counters": c}, "wall": 0.5}, cfg)
    assert row["utilization"] == 0.9 and row["cycles"] == 1000 and row["bytes"] == 800 and row["ok"]
    assert row["load_active"] == 0.2 and row["compute_active"] == 0.95 and row["store_active"] == 0.02
    rows = [row, {**row, "vt": 1, "utilization": 0.5}]
    for i, name in enumerate(wl.CONV_LAYERS):
        rows.append({**row, "workload": name, "vt": 2, "utilization": 0.7 + 0.02 * i})
    bad = wl.make_row("resnet18.C2", 1, {"error": "VTAError: boom", "wall": 0.1}, cfg)
    rows.append(bad)
    assert not bad["ok"] and math.isnan(bad["utilization"])
    s = wl.summary(rows)
    assert s["gemm_256_vt2"] == 0.9 and s["gemm_256_vt1"] == 0.5
    assert s["resnet_mean_vt2"] == pytest.approx(0.79) and s["resnet_layers_vt2"] == 10
    assert s["resnet_layers_vt1"] == 1 and math.isnan(s["resnet_mean_vt1"])
    text = wl.format_summary(rows)
    assert "vt=2:  79.0%  [target >= 95% MISSED by 16.0 points]" in text
    assert "weakest of them, vt=2: C2  70.0%  [target >= 90% MISSED by 20.0 points]" in text
    assert "vt=2:  90.0%  [target >= 97% MISSED by 7.0 points]" in text and "GEMM MAC utilization, vt=1:  50.0%\n" in text
    assert "target >= 97% met (+0.5 points)" in wl.format_summary([{**row, "utilization": 0.975}])
    assert "70% to 88%" in text and "NOT equal to numpy: resnet18.C2 vt=1" in text
    table = wl.format_table(rows)
    assert "ERROR" in table and "VTAError: boom" in table and "20/95/2" in table


def test_progress_goes_to_a_terminal_only():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    for stream, shown in ((io.StringIO(), False), (Terminal(), True)):
        bar = progress_bar(4, "workloads", file=stream)
        wl._advance(bar, 1, ["a", "b", "c", "d"])
        bar.close()
        assert ("1/4" in stream.getvalue() and "next: b" in stream.getvalue()) == shown, stream.getvalue()


# ---------------------------------------------------------------------- on the RTL
@pytest.fixture(scope="module")
def small_run():
    return wl.measure(config="small", workloads=SMALL, progress=False, return_traces=True)


@pytest.fixture(scope="module")
def default_run():
    return wl.measure(config="default", workloads=DEFAULT, progress=False)


def test_small_config_operators_equal_numpy_on_the_rtl(small_run):
    rows, _ = small_run
    assert [(r["workload"], r["vt"]) for r in rows] == [(n, vt) for vt in (1, 2) for n in SMALL]
    for r in rows:
        assert "error" not in r, r.get("error")
        assert r["ok"], f"{r['workload']} vt={r['vt']} differs from numpy on the RTL"
        assert r["cycles"] > 0 and r["bytes"] > 0 and r["gemm_counter"] > 0
        assert 0 < r["utilization"] <= 1 and r["bound_fraction"] > 0
        assert r["cycles"] >= 0.5 * r["bound_cycles"]        # read and write channels are separate
    macs = {r["workload"]: r["macs"] for r in rows}
    assert macs["dense_16x64x64"] == 16 * 64 * 64 and macs["conv_8x8x16x16_k3"] == 16 * 8 * 8 * 16 * 9


def test_default_config_conv_equals_numpy_on_the_rtl(default_run):
    assert [(r["workload"], r["vt"], r["ok"]) for r in default_run] == [
        (n, vt, True) for vt in (1, 2) for n in DEFAULT]
    assert default_run[0]["macs"] == 48 * 5 * 5 * 32 * 9


def test_trace_of_each_call_matches_its_counters(small_run):
    rows, traces = small_run
    for r, trace in zip(rows, traces):
        assert trace is not None and len(trace)
        lo, hi = timeline.trace_span(trace)
        assert r["cycles"] - 100 <= hi - lo <= r["cycles"]     # the first transition comes after the launch
        busy = timeline.busy_cycles(timeline.intervals(trace))
        for m, name in enumerate(timeline.MODULES[1:4], start=1):    # (one synchronize each: at most a cycle apart)
            assert abs(busy[m] - round(r[f"{name}_active"] * r["cycles"])) <= 1, (r["workload"], r["vt"], name)
        # the GEMM and ALU lanes: a unit runs at least a cycle per micro-op it executes
        assert busy[4] >= r["gemm_counter"] > 0 and busy[5] >= r["alu_counter"] > 0


def test_table_and_csv(small_run, tmp_path):
    rows, _ = small_run
    text = wl.format_table(rows)
    assert text.count("\n") == len(rows) and "dense_16x64x64" in text and "DIFF" not in text
    path = wl.write_csv(rows, tmp_path / "sub" / "bench.csv")
    with open(path) as fh:
        back = list(csv.DictReader(fh))
    assert len(back) == len(rows) and list(back[0])[:len(wl.COLUMNS)] == list(wl.COLUMNS)
    for r, b in zip(rows, back):
        assert int(b["cycles"]) == r["cycles"] and int(b["macs"]) == r["macs"] and b["ok"] == "True"
        assert float(b["utilization"]) == pytest.approx(r["utilization"])


def test_command_line_writes_table_csv_and_markdown(tmp_path, capsys):
    path, doc = tmp_path / "w.csv", tmp_path / "performance.md"
    doc.write_text("# Performance\n\n<!-- bench-workloads -->\nold\n<!-- /bench-workloads -->\n")
    assert wl.main(["--config", "small", "--only", "dense_128", "--vt", "2", "--csv", str(path),
                    "--markdown", str(doc)]) == 0
    out, err = capsys.readouterr()
    assert "dense_128" in out and "all results equal numpy" in out and "VTA's published figure" in out
    assert "1/1" not in err              # no progress bar off a terminal
    assert "| dense_128 | 2 | 2,097,152 |" in doc.read_text() and "old" not in doc.read_text()
    with open(path) as fh:
        row, = csv.DictReader(fh)
    assert row["workload"] == "dense_128" and row["vt"] == "2" and int(row["macs"]) == 128 ** 3
    assert np.isclose(float(row["utilization"]), int(row["macs"]) / (int(row["cycles"]) * 64))
