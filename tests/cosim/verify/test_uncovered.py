"""Uncovered lines (cosim.verify.uncovered): mapped to the Amaranth source, explained by a waiver or listed as holes."""
import pytest

from cosim.verify import coverage_report, sources, uncovered


def test_uncovered_lines_map_to_the_amaranth_source(tmp_path):
    verilog = tmp_path / "vta_top.v"
    verilog.write_text("module a;\n(* src = \"hw/load.py:12\" *)\nx = 1;\ny = 2;\n")
    pts = [{"page": "v_line/vta_top.load", "f": str(verilog), "l": "4", "count": 0}]
    assert uncovered.uncovered_sources(pts, verilog) == {"hw/load.py:12": ({4}, {"vta_top.load"})}


def test_known_unreachable_lines_are_explained_and_the_rest_are_holes(tmp_path, monkeypatch):
    monkeypatch.setattr(uncovered, "KNOWN_UNREACHABLE", [(r"\.load$", r"hw/load\.py:12$", "no such state")])
    verilog = tmp_path / "vta_top.v"
    verilog.write_text("module a;\n(* src = \"hw/load.py:12\" *)\nx = 1;\n(* src = \"hw/alu.py:3\" *)\ny = 2;\n")
    pts = [{"page": "v_line/vta_top.load", "f": str(verilog), "l": "3", "count": 0},
           {"page": "v_line/vta_top.alu", "f": str(verilog), "l": "5", "count": 0}]
    assert uncovered.explain("hw/load.py:12", {"vta_top.load"}) == "no such state"
    assert uncovered.explain("hw/load.py:12", {"vta_top.alu"}) is None
    text = coverage_report.report(pts, verilog)
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
    index = uncovered.src_index(verilog)
    assert index[5] == "hw/queues.py:63 (if \\$2)"
    assert index[4] == "hw/queues.py:50 (near: if clear)"
    assert index[8] == "hw/queues.py:50 (case q_fsm_state = 3'h2)"
    assert uncovered.with_source_text(index[5]).startswith("hw/queues.py:63 `with m.Elif(push & pop):` (if")


def test_an_if_whose_condition_comes_from_an_annotated_line_takes_its_waiver(tmp_path):
    (tmp_path / "hw").mkdir()
    (tmp_path / "hw" / "q.py").write_text("\n" * 62 + "with m.Elif(push & pop):  # unreachable: both\n")
    annotated = {"both": (r"^vta_top\.tokens_", "pushed and popped at once")}
    key = "hw/q.py:63 `with m.Elif(push & pop):` (if \\$2)"
    assert uncovered.explain(key, {"vta_top.tokens_a"}, [], annotated, tmp_path) == "pushed and popped at once"
    assert uncovered.explain(key, {"vta_top.tokens_a", "vta_top.x"}, [], annotated, tmp_path) is None
    # only the condition's own line: not a statement that merely follows the annotated line's src attribute
    assert uncovered.explain("hw/q.py:63", {"vta_top.tokens_a"}, [], annotated, tmp_path) is None
    assert uncovered.explain("hw/q.py:63 (near: if \\$2)", {"vta_top.tokens_a"}, [], annotated, tmp_path) is None
    with pytest.raises(sources.UnknownAnnotation, match=r"hw/q\.py:63: .*'both'.*known keys: other"):
        uncovered.explain(key, {"vta_top.tokens_a"}, [], {"other": ("", "x")}, tmp_path)


def test_the_real_token_queue_condition_is_waived_by_its_annotation():
    line = next(n for n, kinds in sources.file_annotations("hw/queues.py").items() if "unreachable" in kinds)
    key = uncovered.with_source_text(f"hw/queues.py:{line} (if \\$2)")
    assert key == f"hw/queues.py:{line} `with m.Elif(push & pop):` (if \\$2)"
    assert uncovered.explain(key, {"vta_top.tokens_g2l$343"}).startswith("reachable, not unreachable")
