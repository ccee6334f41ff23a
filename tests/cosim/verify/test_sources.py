"""Source lines by file and number (cosim.verify.sources)."""
from cosim.verify import sources


def test_a_line_is_stripped_and_a_missing_one_is_none():
    first = (sources.ROOT / "hw" / "queues.py").read_text().splitlines()[0].strip()
    assert sources.source_line("hw/queues.py", 1) == first
    assert sources.source_line("hw/queues.py", 0) is None
    assert sources.source_line("hw/no_such_file.py", 1) is None
