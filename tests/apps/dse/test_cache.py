"""The cache of a sweep's results: keys by content (config values, sources, tools, inputs), atomic files."""
import json

import pytest

from apps.dse import cache
from apps.dse.cache import Store, source_digest, task_key
from sw.config import load_config


def test_a_key_follows_the_config_values_and_inputs_not_the_name():
    small = load_config("small")
    renamed = small.with_changes()
    object.__setattr__(renamed, "name", "other")
    assert task_key("rtl", small, network="n1") == task_key("rtl", renamed, network="n1")
    assert task_key("rtl", small, network="n1") != task_key("rtl", small, network="n2")
    assert task_key("rtl", small, network="n1") != task_key("rtl", small.with_changes(POST_UNIT=1), network="n1")
    assert task_key("synth", small, family="xc7") != task_key("synth", small, family="ecp5")
    assert task_key("synth", small, family="xc7").startswith("synth-")
    assert task_key("synth", small, family="xc7") != task_key("synth", small, family="xc7", unit="footprint")
    with pytest.raises(ValueError, match="kind = 'build'; allowed: rtl, synth, fmax"):
        task_key("build", small)


def test_the_source_digest_follows_the_files_of_its_kind(tmp_path, monkeypatch):
    (tmp_path / "hw").mkdir()
    (tmp_path / "hw" / "a.py").write_text("x = 1\n")
    (tmp_path / "hw" / "notes.txt").write_text("not a source\n")
    (tmp_path / "fpga").mkdir()
    (tmp_path / "fpga" / "resources.py").write_text("y = 1\n")
    monkeypatch.setattr(cache, "ROOT", tmp_path)
    monkeypatch.setattr(cache, "SOURCES", {"synth": ("hw", "fpga/resources.py"), "rtl": ("hw",)})
    digests = []
    for change in (None, ("hw/notes.txt", "edited\n"), ("fpga/resources.py", "y = 2\n"), ("hw/a.py", "x = 2\n")):
        if change:
            (tmp_path / change[0]).write_text(change[1])
        source_digest.cache_clear()
        digests.append((source_digest("synth"), source_digest("rtl")))
    source_digest.cache_clear()
    assert digests[1] == digests[0]                         # not a source file
    assert digests[2][0] != digests[1][0] and digests[2][1] == digests[1][1]    # only synth reads fpga/resources.py
    assert digests[3][0] != digests[2][0] and digests[3][1] != digests[2][1]


def test_the_store_keeps_one_file_per_key(tmp_path):
    store = Store(tmp_path / "c")
    assert store.get("rtl-x") is None
    store.put("rtl-x", {"cycles": 5})
    store.put("rtl-x", {"cycles": 6})
    assert store.get("rtl-x") == {"cycles": 6}
    assert json.loads((tmp_path / "c" / "rtl-x.json").read_text()) == {"cycles": 6}
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == ["rtl-x.json"]     # no temporary file left
