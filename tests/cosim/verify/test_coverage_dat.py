"""Coverage files (cosim.verify.coverage_dat): merging adds counts per point, the table and the lcov file follow;
untoggled signals are named without escapes and sorted by shape."""
from cosim.verify import coverage_dat as coverage
from cosim.verify import coverage_report


def _point(page, line, count, f="/x/vta_top.v"):
    return f"C '\x01t\x02line\x01page\x02{page}\x01f\x02{f}\x01l\x02{line}\x01h\x02TOP.vta_tb.dut' {count}\n"


def _toggle(module, signal, count):
    return {"page": f"v_toggle/{module}", "o": signal, "count": count}


def test_merge_table_and_lcov(tmp_path):
    a, b = tmp_path / "a.dat", tmp_path / "b.dat"
    a.write_text("# SystemC::Coverage-3\n" + _point("v_line/vta_top.load", 3, 0) + _point("v_line/vta_top.load", 4, 2)
                 + _point("v_toggle/vta_top.load", 3, 0) + _point("v_line/vta_tb", 9, 0, "/x/vta_tb.sv"))
    b.write_text("# SystemC::Coverage-3\n" + _point("v_line/vta_top.load", 3, 5) + _point("v_line/vta_top.load", 4, 0)
                 + _point("v_toggle/vta_top.load", 3, 0) + _point("v_line/vta_tb", 9, 0, "/x/vta_tb.sv"))
    merged = tmp_path / "m.dat"
    coverage.merge_dat([a, b], merged)
    points = coverage.parse_dat(merged)
    assert sorted((p["l"], p["count"]) for p in points if p["page"] == "v_line/vta_top.load") == [("3", 5), ("4", 2)]
    table = coverage.module_table(points)
    assert table["vta_top.load"] == {"line": (2, 2), "toggle": (0, 1)}
    assert table["vta_tb"]["line"] == (0, 1)
    verilog = tmp_path / "vta_top.v"
    verilog.write_text("module a;\n(* src = \"hw/load.py:12\" *)\nx\ny\n")
    info = tmp_path / "m.info"
    coverage.write_info(points, info, verilog)
    assert "DA:3,5\nDA:4,2\n" in info.read_text() and "LF:2\nLH:2\n" in info.read_text()
    text = coverage_report.report(points, verilog)
    assert "| vta_top.load | 100.00 %" in text and "accelerator (all but the testbench)" in text


def test_instances_of_parameterized_testbench_modules_are_not_the_accelerator():
    assert coverage.is_testbench("vta_axi_handshake__W35_Cz1") and coverage.is_testbench("vta_tb")
    assert not coverage.is_testbench("vta_top.axi.read_route") and not coverage.is_testbench("vta_top")


def test_untoggled_signals_are_named_without_escapes_and_sorted_by_shape():
    assert coverage.signal_name("dma___05Fcmd___05Fpayload__02ebeats") == "dma__cmd__payload.beats"
    assert coverage.signal_name("__024117") == "$117"
    counter = [_toggle("vta_top", f"cycles[{b}]:{d}", int(b < 5)) for b in range(8) for d in ("0->1", "1->0")]
    addr = [_toggle("vta_top", f"addr[{b}]:{d}", int(b >= 3)) for b in range(8) for d in ("0->1", "1->0")]
    mid = [_toggle("vta_top", f"x[{b}]:{d}", int(b != 4)) for b in range(8) for d in ("0->1", "1->0")]
    const = [_toggle("vta_top", f"y[{b}]:{d}", 0) for b in range(2) for d in ("0->1", "1->0")]
    rows = {r[1]: coverage.toggle_shape(r) for r in coverage.untoggled_signals(counter + addr + mid + const)}
    assert rows == {"cycles": "high", "addr": "low", "x": "other", "y": "constant"}
