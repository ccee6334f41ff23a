"""Why bits never toggled (cosim.verify.toggles): a rule, a constant class or an operand explains a point."""
import pytest

from cosim.verify import sources, toggles

from .demo_verilog import VERILOG


def classes(tmp_path):
    path = tmp_path / "top.v"
    path.write_text(VERILOG)
    return path


def test_untoggled_points_are_explained_by_rule_class_or_operand(tmp_path):
    path = classes(tmp_path)
    rules = [("^top$", "^cnt$", "high", "a counter")]
    points = [("top", "$3", 9), ("top.child", "q", 1),            # tied to 0; a copy of a[1] (no rule)
              ("top", "cnt", 6), ("top", "cnt", 7),                 # the counter's top bits
              ("top", "$4", 7), ("top", "$4", 8),                   # cnt + 1 follows cnt, its carry cnt's top bit
              ("top", "$4", 3)]                                     # cnt[3] toggled: $4[3] is a hole
    explained, holes = toggles.explain_toggles(points, path, rules)
    assert explained[toggles.TIED + "0 in the Verilog (a constant, or a copy of one)"] == [("top", "$3", 9)]
    assert explained["a counter"] == [("top", "cnt", 6), ("top", "cnt", 7), ("top", "$4", 7), ("top", "$4", 8)]
    assert holes == [("top.child", "q", 1), ("top", "$4", 3)]


def test_a_multiplexer_or_process_is_explained_only_when_all_its_inputs_agree(tmp_path):
    path = classes(tmp_path)
    points = [("top", "$6", 0), ("top", "$6", 1), ("top", "$7", 0), ("top", "$7", 1),
              ("top", "$8", 1), ("top", "$8", 0), ("top", "$9", 0)]
    explained, holes = toggles.explain_toggles(points, path, [])
    # $6 = sel ? 1 : 2 moves both bits; $7 = sel ? 1 : 3 holds bit 0 at 1; $8 is 2 or 3 (bit 1 always 1)
    assert holes == [("top", "$6", 0), ("top", "$6", 1), ("top", "$7", 1), ("top", "$8", 0), ("top", "$9", 0)]
    assert sorted(p for v in explained.values() for p in v) == [("top", "$7", 0), ("top", "$8", 1)]


def test_rule_bit_specs_and_source_annotations(tmp_path):
    path = classes(tmp_path)
    (tmp_path / "hw").mkdir()          # $10 (copied to $5) comes from hw/demo.py:7 (its src attribute)
    (tmp_path / "hw" / "demo.py").write_text("\n" * 6 + "y = x + 1  # untoggled: demo-line\n")
    points = [("top", "cnt", 0), ("top", "cnt", 1), ("top", "cnt", 4), ("top", "cnt", 7), ("top", "$5", 2)]
    rules = [("", "^cnt$", "low", "low bits"), ("", "^cnt$", "bits 4", "bit four")]
    annotated = {"demo-line": ("^top$", "all", "from its source line")}
    explained, holes = toggles.explain_toggles(points, path, rules, annotated, tmp_path)
    assert explained == {"low bits": [("top", "cnt", 0), ("top", "cnt", 1)], "bit four": [("top", "cnt", 4)],
                         "from its source line": [("top", "$5", 2)]}
    assert holes == [("top", "cnt", 7)]                                # bit 7 alone: not the top run of a rule
    # the annotation applies in the modules of its key's pattern only
    explained, holes = toggles.explain_toggles(points, path, rules, {"demo-line": ("^other$", "all", "x")}, tmp_path)
    assert ("top", "$5", 2) in holes


def test_an_annotation_with_an_unknown_key_is_an_error(tmp_path):
    path = classes(tmp_path)
    (tmp_path / "hw").mkdir()
    (tmp_path / "hw" / "demo.py").write_text("\n" * 6 + "y = x + 1  # untoggled: no-such-key\n")
    with pytest.raises(sources.UnknownAnnotation, match=r"hw/demo\.py:7: .*'no-such-key'.*known keys: demo-line"):
        toggles.explain_toggles([("top", "$5", 2)], path, [], {"demo-line": ("", "all", "why")}, tmp_path)


def test_a_library_line_is_keyed_by_its_place_in_the_package(tmp_path, monkeypatch):
    path = tmp_path / "top.v"
    path.write_text(VERILOG.replace("hw/demo.py:7", ".venv/lib/python3.11/site-packages/amaranth/lib/x.py:9"))
    monkeypatch.setattr(toggles, "LIBRARY_LINES", {"amaranth/lib/x.py:9": ("lib-line",)})
    explained, holes = toggles.explain_toggles([("top", "$5", 2)], path, [], {"lib-line": ("", "all", "a library")},
                                               tmp_path)
    assert explained == {"a library": [("top", "$5", 2)]} and holes == []
