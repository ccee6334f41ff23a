"""A sweep's report: the rows per point, network and board, the Pareto fronts, the best config, the files."""
import csv
import math

import pytest

from apps.dse import report

ULX3S = {"board": "ulx3s", "label": "LFE5U-85F (ULX3S)", "family": "ecp5", "clock_mhz": 100.0}
ZCU = {"board": "zcu104", "label": "xczu7ev (ZCU104)", "family": "xcup", "clock_mhz": 100.0}


def synth(lut, dsp, ok_ecp5=True, ok_xcup=True):
    return {"ecp5": {"counts": {"FF": lut // 2, "DSP": dsp}, "LUT": lut, "BRAM": 10,
                     "devices": {ULX3S["label"]: {"fits": ok_ecp5, "use": {"LUT": lut / 83640, "FF": 0.1,
                                                                            "DSP": dsp / 156, "BRAM": 0.05}}}},
            "xcup": {"counts": {"FF": lut // 2, "DSP": dsp}, "LUT": lut, "BRAM": 10,
                     "devices": {ZCU["label"]: {"fits": ok_xcup, "use": {"LUT": 0.1, "FF": 0.1, "DSP": 0.1,
                                                                          "BRAM": 0.1, "URAM": 0.0}}}}}


def point(name, cycles, lut, dsp, ok_ecp5=True, rtl_error=None):
    rtl = {"error": rtl_error} if rtl_error else {"cycles": cycles, "exact": True, "seconds": 1.0, "vta_layers": 3,
                                                  "layers": 4}
    return {"name": name, "values": {"POST_UNIT": int(name[-1])}, "config": {}, "rtl": {"net": rtl},
            "synth": synth(lut, dsp, ok_ecp5), "fmax": {}}


RESULTS = {"sweep": "t", "params": ["POST_UNIT"], "unit": None, "fmax": False,
           "networks": [{"name": "net"}], "boards": [ULX3S, ZCU],
           "points": [point("a0", 1000, 100, 10), point("b1", 600, 300, 20), point("c0", 800, 200, 40),
                      point("d1", 900, 400, 5), point("e1", 400, 900, 200, ok_ecp5=False),
                      point("f0", None, 50, 1, rtl_error="timed out after 9 s")],
           "stats": {"computed": 11, "cached": 1, "failed": 1, "wall_seconds": 12.0, "workers": ["w:1"]}}


def test_rows_pareto_and_best():
    rows = report.rows(RESULTS)
    assert len(rows) == 6 * 2
    a = rows[0]
    assert (a["point"], a["board"], a["cycles"], a["LUT"], a["DSP"], a["fits"]) == ("a0", "ulx3s", 1000, 100, 10, True)
    assert a["inferences_per_s"] == pytest.approx(1e5) and a["POST_UNIT"] == 0 and a["error"] == ""
    e = next(r for r in rows if r["point"] == "e1" and r["board"] == "ulx3s")
    assert e["fits"] is False and e["over"] == "DSP"
    f = next(r for r in rows if r["point"] == "f0" and r["board"] == "ulx3s")
    assert f["cycles"] is None and f["error"] == "rtl: timed out after 9 s" and f["inferences_per_s"] is None
    ulx = [r for r in rows if r["board"] == "ulx3s" and r["fits"] and r["cycles"]]
    assert [r["point"] for r in report.pareto(ulx, "LUT")] == ["a0", "c0", "b1"]       # d1 beaten by b1
    assert [r["point"] for r in report.pareto(ulx, "DSP")] == ["d1", "b1"]                # a0, c0 beaten
    best = report.best(rows)
    assert best[("net", "ulx3s")]["point"] == "b1"               # e1 is faster but does not fit the ULX3S
    assert best[("net", "zcu104")]["point"] == "e1"
    assert report.failures(RESULTS) == [("f0", "rtl", "net", "timed out after 9 s")]


def test_best_breaks_ties_by_luts_and_says_when_nothing_fits():
    res = dict(RESULTS, points=[point("a0", 500, 300, 1), point("b0", 500, 200, 1), point("c0", 400, 10, 1, False)])
    res["boards"] = [ULX3S]
    assert report.best(report.rows(res))[("net", "ulx3s")]["point"] == "b0"
    none = dict(res, points=[point("c0", 400, 10, 1, False)])
    assert report.best(report.rows(none)) == {("net", "ulx3s"): None}
    assert "| net | ulx3s | (none fits) |" in report.summary(none)


def test_the_files(tmp_path):
    written = report.write(RESULTS, tmp_path / "r", tmp_path / "png", tmp_path / "doc.md")
    with open(written["csv"]) as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0])[:4] == ["point", "POST_UNIT", "network", "board"] and len(rows) == 12
    assert rows[0]["cycles"] == "1000" and rows[0]["fits"] == "True" and rows[0]["vta_layers"] == "3"
    assert sorted(p.name for p in (tmp_path / "png").iterdir()) == ["t-net-ulx3s.png", "t-net-zcu104.png"]
    assert all(p.stat().st_size > 10000 for p in (tmp_path / "png").iterdir())
    doc = (tmp_path / "doc.md").read_text()
    assert doc.startswith("<!-- dse-t -->") and doc.rstrip().endswith("<!-- /dse-t -->")
    assert "| net | ulx3s | `b1` | 1 | 600 | 166666.67 at 100 MHz | 300 (0%) | 20 (13%) |" in doc
    assert "- `f0` rtl net: timed out after 9 s" in doc and "![net on ulx3s](png/t-net-ulx3s.png)" in doc
    assert "| `f0` | 0 | FAILED |" in doc
    assert "| `e1` | 1 | 400 (3/4) | 900 / 450 / 200 / 10 | 900 / 450 / 200 / 10 | zcu104 |" in doc
    assert not math.isnan(float(rows[0]["inferences_per_s"]))
