"""Failure signatures and devices under test (cosim.verify.evaluate)."""
from cosim.verify import evaluate


def test_signature_names_how_a_run_failed():
    gold = {"pages": ["a", "b"], "counters": {"x": 1}}
    assert evaluate.signature(gold, {"pages": ["a", "b"], "counters": {"x": 1}}) is None
    assert evaluate.signature(gold, {"pages": ["a", "c"], "counters": {"x": 1}}) == ("mismatch", "data")
    assert evaluate.signature(gold, {"pages": ["a", "b"], "counters": {"x": 2}}) == ("mismatch", "counters")
    assert evaluate.signature(gold, {"error": "WatchdogError", "message": ""}) == ("watchdog", "WatchdogError")
    assert evaluate.signature(gold, {"error": "VTAError", "message": ""}) == ("error", "VTAError")
    assert evaluate.signature(gold, {"crash": "log"}) == ("crash", "simulator")
