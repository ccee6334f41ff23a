"""The line waivers (cosim.verify.line_waivers): every entry is well formed, and the ``# unreachable:`` annotations
in hw/ and the annotated waivers match one to one."""
import re

from cosim.verify import line_waivers

from .test_toggle_rules import hw_annotations


def test_every_waiver_has_patterns_and_a_reason():
    assert len(line_waivers.KNOWN_UNREACHABLE) == 6
    for module, key, why in line_waivers.KNOWN_UNREACHABLE:
        re.compile(module)
        re.compile(key)
        assert not re.search(r"hw/|\.py", key), key        # Verilog names, not the Amaranth source
        assert len(why) > 20, why
    for key, (module, why) in line_waivers.ANNOTATED.items():
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", key), key
        re.compile(module)
        assert len(why) > 20, (key, why)


def test_every_unreachable_annotation_in_hw_names_a_known_key_and_every_key_is_used():
    used = hw_annotations("unreachable")
    assert not {k: v for k, v in used.items() if k not in line_waivers.ANNOTATED}
    assert set(line_waivers.ANNOTATED) == set(used)
