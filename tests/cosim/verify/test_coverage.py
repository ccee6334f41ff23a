"""Code coverage files (cosim.verify.coverage): merging adds counts per point, the table and the lcov file follow."""
from cosim.verify import coverage


def _point(page, line, count, f="/x/vta_top.v"):
    return f"C '\x01t\x02line\x01page\x02{page}\x01f\x02{f}\x01l\x02{line}\x01h\x02TOP.vta_tb.dut' {count}\n"


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
    text = coverage.report(points, verilog)
    assert "| vta_top.load | 100.00 %" in text and "accelerator (all but the testbench)" in text


def test_uncovered_lines_map_to_the_amaranth_source(tmp_path):
    verilog = tmp_path / "vta_top.v"
    verilog.write_text("module a;\n(* src = \"hw/load.py:12\" *)\nx = 1;\ny = 2;\n")
    pts = [{"page": "v_line/vta_top.load", "f": str(verilog), "l": "4", "count": 0}]
    assert coverage.uncovered_sources(pts, verilog) == {"hw/load.py:12": ({4}, {"vta_top.load"})}


def test_known_unreachable_lines_are_explained_and_the_rest_are_holes(tmp_path, monkeypatch):
    monkeypatch.setattr(coverage, "KNOWN_UNREACHABLE", [(r"\.load$", r"hw/load\.py:12$", "no such state")])
    verilog = tmp_path / "vta_top.v"
    verilog.write_text("module a;\n(* src = \"hw/load.py:12\" *)\nx = 1;\n(* src = \"hw/alu.py:3\" *)\ny = 2;\n")
    pts = [{"page": "v_line/vta_top.load", "f": str(verilog), "l": "3", "count": 0},
           {"page": "v_line/vta_top.alu", "f": str(verilog), "l": "5", "count": 0}]
    assert coverage.explain("hw/load.py:12", {"vta_top.load"}) == "no such state"
    assert coverage.explain("hw/load.py:12", {"vta_top.alu"}) is None
    text = coverage.report(pts, verilog)
    assert "1 not explained:\n  hw/alu.py:3: vta_top.v lines [5]" in text
    assert ("explained (unreachable, or covered by a module test): 1:\n  hw/load.py:12: vta_top.v lines [3] in "
            "['vta_top.load']\n      why: no such state") in text


def test_conditions_map_to_the_source_of_their_assign_and_labels_name_the_case(tmp_path):
    verilog = tmp_path / "vta_top.v"
    verilog.write_text("module \\vta_top.q (clk);\n"
                       "  assign \\$2  = push & (* src = \"hw/queues.py:63\" *) \\$1 ;\n"
                       "  (* src = \"hw/queues.py:50\" *)\n"
                       "  always @* begin\n"
                       "    if (clear) begin\n"
                       "    end else if (\\$2 ) begin\n"
                       "    end\n"
                       "    casez (q_fsm_state)\n"
                       "      3'h2:\n"
                       "          x = 1;\n"
                       "    endcase\n"
                       "  end\n"
                       "endmodule\n")
    index = coverage._src_index(verilog)
    assert index[5] == "hw/queues.py:63 (if \\$2)"
    assert index[4] == "hw/queues.py:50 (near: if clear)"
    assert index[8] == "hw/queues.py:50 (case q_fsm_state = 3'h2)"
    assert coverage._with_source_text(index[5]).startswith("hw/queues.py:63 `with m.Elif(push & pop):` (if")


def test_instances_of_parameterized_testbench_modules_are_not_the_accelerator():
    assert coverage.is_testbench("vta_axi_handshake__W35_Cz1") and coverage.is_testbench("vta_tb")
    assert not coverage.is_testbench("vta_top.axi.read_route") and not coverage.is_testbench("vta_top")


def _toggle(module, signal, count):
    return {"page": f"v_toggle/{module}", "o": signal, "count": count}


def test_untoggled_signals_are_listed_with_their_bits(tmp_path):
    pts = [_toggle("vta_top.axi", f"addr[{b}]:{d}", int(b < 4)) for b in range(8) for d in ("0->1", "1->0")]
    pts += [_toggle("vta_top", "busy:0->1", 0), _toggle("vta_top", "busy:1->0", 5),
            _toggle("vta_axi_handshake__W3_Cz5", "cycle[9]:0->1", 0)]
    assert coverage.untoggled_signals(pts) == [("vta_top.axi", "addr", 8, 16, [4, 5, 6, 7]),
                                               ("vta_top", "busy", 1, 2, [])]
    verilog = tmp_path / "vta_top.v"
    verilog.write_text("module a;\n")
    text = coverage.report(pts, verilog)
    assert "Signals with bits never toggled: 2, 9 toggle points" in text
    assert "  vta_top.axi, addr: 8/16, bits 4-7" in text
    # no Verilog to explain them by and no rule for them: every untoggled point is a hole, listed by signal
    assert "by Amaranth-level reason (cosim/verify/toggles.py): 9 not explained:" in text
    assert "  vta_top.axi, addr: bits 4-7\n" in text and "  vta_top, busy: bits 0\n" in text


def test_untoggled_signals_are_named_without_escapes_and_sorted_by_shape():
    assert coverage.signal_name("dma___05Fcmd___05Fpayload__02ebeats") == "dma__cmd__payload.beats"
    assert coverage.signal_name("__024117") == "$117"
    counter = [_toggle("vta_top", f"cycles[{b}]:{d}", int(b < 5)) for b in range(8) for d in ("0->1", "1->0")]
    addr = [_toggle("vta_top", f"addr[{b}]:{d}", int(b >= 3)) for b in range(8) for d in ("0->1", "1->0")]
    mid = [_toggle("vta_top", f"x[{b}]:{d}", int(b != 4)) for b in range(8) for d in ("0->1", "1->0")]
    const = [_toggle("vta_top", f"y[{b}]:{d}", 0) for b in range(2) for d in ("0->1", "1->0")]
    rows = {r[1]: coverage.toggle_shape(r) for r in coverage.untoggled_signals(counter + addr + mid + const)}
    assert rows == {"cycles": "high", "addr": "low", "x": "other", "y": "constant"}
