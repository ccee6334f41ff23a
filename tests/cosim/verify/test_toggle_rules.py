"""The toggle rule table (cosim.verify.toggle_rules): every entry is well formed."""
import re

from cosim.verify import toggle_rules


def test_every_rule_has_patterns_a_bit_spec_and_a_reason():
    specs = re.compile(r"^(all|high|low|from \d+|below \d+|bits \d+(,\d+)*)$")
    assert len(toggle_rules.TOGGLE_RULES) == 66
    for module, signal, bits, why in toggle_rules.TOGGLE_RULES:
        re.compile(module)
        re.compile(signal)
        assert specs.match(bits), bits
        assert len(why) > 20, why
