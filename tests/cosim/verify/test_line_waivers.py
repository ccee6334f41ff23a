"""The line waivers (cosim.verify.line_waivers): every entry is well formed."""
import re

from cosim.verify import line_waivers


def test_every_waiver_has_patterns_and_a_reason():
    assert len(line_waivers.KNOWN_UNREACHABLE) == 8
    for module, key, why in line_waivers.KNOWN_UNREACHABLE:
        re.compile(module)
        re.compile(key)
        assert len(why) > 20, why
