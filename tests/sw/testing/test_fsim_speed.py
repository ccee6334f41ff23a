"""The golden-model benchmark (``make bench``): the work it reports is the work it ran."""

import csv

from sw.config import load_config
from sw.testing import fsim_speed as bench


def test_gemm_stream_counts_every_micro_op():
    cfg = load_config("small")
    name, rows, k, o = bench.gemm_shapes(cfg)[0]
    row = bench.bench_gemm(cfg, name, rows, k, o, repeats=1, per_stream=3)
    assert row["work"] == f"3 GEMMs, {3 * rows * k * o} uops"
    assert round(row["rate"] * row["seconds"]) == 3 * rows * k * o * cfg.MACS_PER_CYCLE


def test_main_writes_one_csv_row_per_benchmark(tmp_path, capsys):
    out = tmp_path / "bench.csv"
    assert bench.main(["--config", "small", "--csv", str(out)]) == 0
    rows = list(csv.DictReader(out.open()))
    names = [r["benchmark"] for r in rows]
    assert names == [f"fsim GEMM {s[0]}" for s in bench.gemm_shapes(load_config("small"))] + [
        "fsim ALU ADD tensor", "runtime load_2d calls"]
    assert f"wrote {out}" in capsys.readouterr().out
