"""Source lines by file and number, and the coverage annotations in their comments (cosim.verify.sources)."""
import pytest

from cosim.verify import sources


def test_a_line_is_stripped_and_a_missing_one_is_none():
    first = (sources.ROOT / "hw" / "queues.py").read_text().splitlines()[0].strip()
    assert sources.source_line("hw/queues.py", 1) == first
    assert sources.source_line("hw/queues.py", 0) is None
    assert sources.source_line("hw/no_such_file.py", 1) is None


DEMO = '''x = a + 1  # untoggled: counter
y = b  # a plain comment
z = c - 1  # untoggled: one, two; unreachable: never  # noqa: E501
s = "# untoggled: in-a-string"
w = d  # untoggled: mystery
'''


def test_annotations_are_read_from_comments_in_their_order(tmp_path):
    (tmp_path / "hw").mkdir()
    (tmp_path / "hw" / "demo.py").write_text(DEMO)
    assert sources.file_annotations("hw/demo.py", tmp_path) == {
        1: {"untoggled": ("counter",)}, 3: {"untoggled": ("one", "two"), "unreachable": ("never",)},
        5: {"untoggled": ("mystery",)}}
    known = {"counter", "one", "two", "never"}
    assert sources.annotated_keys("hw/demo.py:3", "untoggled", known, tmp_path) == ("one", "two")
    assert sources.annotated_keys("hw/demo.py:3", "unreachable", known, tmp_path) == ("never",)
    assert sources.annotated_keys("hw/demo.py:2", "untoggled", known, tmp_path) == ()
    assert sources.annotated_keys("hw/demo.py:4", "untoggled", known, tmp_path) == ()      # a string, no comment
    assert sources.annotated_keys(".venv/lib/site-packages/x.py:1", "untoggled", known, tmp_path) == ()
    assert sources.annotated_keys(None, "untoggled", known, tmp_path) == ()


def test_an_unknown_key_is_an_error_naming_the_line_and_the_known_keys(tmp_path):
    (tmp_path / "hw").mkdir()
    (tmp_path / "hw" / "demo.py").write_text(DEMO)
    with pytest.raises(sources.UnknownAnnotation, match=r"hw/demo\.py:5: .*'mystery'.*known keys: counter, never"):
        sources.annotated_keys("hw/demo.py:5", "untoggled", {"counter", "never"}, tmp_path)


def test_source_code_leaves_out_the_comment():
    line = next(n for n, kinds in sources.file_annotations("hw/queues.py").items() if "untoggled" in kinds)
    assert "#" in sources.source_line("hw/queues.py", line)
    assert sources.source_code("hw/queues.py", line) == sources.source_line("hw/queues.py", line).split("  #")[0]
