"""Tables (sw.tables): aligned text, Markdown, and a table written between the markers of a document."""

from sw.tables import Column, format_table, write_markdown

ROWS = [{"layer": "conv1", "macs": 118013952, "util": 0.595, "where": "vta"},
        {"layer": "fc", "macs": 512000, "util": float("nan"), "where": "cpu"}]
COLUMNS = [("layer", "layer"), Column("macs", "MACs", ",d"), Column("util", "utilization", ".1%"), "where"]


def test_text_table_aligns_numbers_right_and_text_left():
    assert format_table(ROWS, COLUMNS).splitlines() == [
        "layer         MACs  utilization  where",
        "conv1  118,013,952        59.5%  vta",
        "fc         512,000          n/a  cpu"]


def test_markdown_table():
    assert format_table(ROWS, COLUMNS, markdown=True).splitlines() == [
        "| layer | MACs | utilization | where |", "|---|---:|---:|---|",
        "| conv1 | 118,013,952 | 59.5% | vta |", "| fc | 512,000 | n/a | cpu |"]


def test_write_markdown_between_markers(tmp_path):
    doc = tmp_path / "fpga.md"
    doc.write_text("# title\n\n<!-- fpga-report -->\nold\n<!-- /fpga-report -->\n\ntail\n")
    write_markdown(doc, "| new |\n", "fpga-report")
    assert doc.read_text() == "# title\n\n<!-- fpga-report -->\n| new |\n<!-- /fpga-report -->\n\ntail\n"
    write_markdown(doc, "| newer |\n", "fpga-report")
    assert "| newer |" in doc.read_text() and "| new |\n" not in doc.read_text()
    write_markdown(doc, "| other |", "bench")
    assert doc.read_text().endswith("<!-- bench -->\n| other |\n<!-- /bench -->\n")
