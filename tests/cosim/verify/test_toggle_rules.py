"""The toggle reasons (cosim.verify.toggle_rules): every entry is well formed, and the ``# untoggled:`` annotations
in hw/ and the annotated reasons match one to one."""
import re
from importlib.metadata import version

from cosim.verify import sources, toggle_rules

SPECS = re.compile(r"^(all|high|low|from \d+|below \d+|bits \d+(,\d+)*)$")


def hw_annotations(kind):
    """{key: [file:line]} of the annotations of ``kind`` in hw/."""
    out = {}
    for path in sorted((sources.ROOT / "hw").rglob("*.py")):
        rel = str(path.relative_to(sources.ROOT))
        for line, kinds in sources.file_annotations(rel).items():
            for key in kinds.get(kind, ()):
                out.setdefault(key, []).append(f"{rel}:{line}")
    return out


def test_every_rule_has_patterns_a_bit_spec_and_a_reason():
    assert len(toggle_rules.TOGGLE_RULES) == 37
    for module, signal, bits, why in toggle_rules.TOGGLE_RULES:
        re.compile(module)
        re.compile(signal)
        assert not signal.lstrip("^").startswith("src:"), signal      # rules by signal name only
        assert SPECS.match(bits), bits
        assert len(why) > 20, why


def test_every_annotated_reason_has_a_module_pattern_a_bit_spec_and_a_reason():
    for key, (module, bits, why) in toggle_rules.ANNOTATED.items():
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", key), key
        re.compile(module)
        assert SPECS.match(bits), (key, bits)
        assert len(why) > 20, (key, why)


def test_every_untoggled_annotation_in_hw_names_a_known_key_and_every_key_is_used():
    used = hw_annotations("untoggled")
    unknown = {k: v for k, v in used.items() if k not in toggle_rules.ANNOTATED}
    assert not unknown, f"unknown '# untoggled:' keys: {unknown}"
    library = {k for keys in toggle_rules.LIBRARY_LINES.values() for k in keys}
    assert library <= set(toggle_rules.ANNOTATED)
    assert set(toggle_rules.ANNOTATED) == set(used) | library


def test_library_lines_are_for_the_installed_amaranth():
    # LIBRARY_LINES names lines of this version's files: a new version needs them checked again
    assert version("amaranth") == toggle_rules.AMARANTH_VERSION
    for where, keys in toggle_rules.LIBRARY_LINES.items():
        assert re.fullmatch(r"amaranth/[\w/]+\.py:\d+", where) and keys, where
