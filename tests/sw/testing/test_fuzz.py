"""The random program generator makes valid, reproducible programs (checked on the golden model)."""
import numpy as np
import pytest

from sw import runtime
from sw.testing import fuzz
from tests.conftest import make_queue


@pytest.mark.parametrize("config", ["default", "small", "batch2"])
def test_random_programs_are_valid_and_reproducible(config):
    outs = []
    for _attempt in range(2):
        q = make_queue(config)
        prev = runtime.set_current(q)
        try:
            outs.append([fuzz.random_program(seed) for seed in range(25)])
        finally:
            runtime.set_current(prev)
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a["out"], b["out"])
        assert a["counters"] == b["counters"] and a["listing"] == b["listing"]
    # the programs exercise every kind of work
    total = {k: sum(r["counters"][k] for r in outs[0]) for k in outs[0][0]["counters"]}
    assert all(v > 0 for v in total.values()), total
    assert any(np.any(r["out"]) for r in outs[0])


def test_random_program_through_ffi():
    q = make_queue("default")
    prev = runtime.set_current(q)
    try:
        a = fuzz.random_program(7, api_kind="ffi")
    finally:
        runtime.set_current(prev)
    q = make_queue("default")
    prev = runtime.set_current(q)
    try:
        b = fuzz.random_program(7)
    finally:
        runtime.set_current(prev)
    np.testing.assert_array_equal(a["out"], b["out"])


def test_bias_steers_without_changing_unbiased_programs(on):
    on("small")
    plain = fuzz.random_program(3)
    on("small")                                   # a fresh runtime each: the same addresses
    assert fuzz.random_program(3, bias={})["listing"] == plain["listing"]
    on("small")
    steered = fuzz.random_program(3, bias={"pad": 1.0, "long_store": 1.0})
    assert steered["listing"] != plain["listing"]
    assert "pad" in steered["listing"]


@pytest.mark.parametrize("bias, message", [({"wide": 0.5}, "bias 'wide'"), ({"pad": 1.5}, "bias 'pad' = 1.5")])
def test_bias_is_checked(on, bias, message):
    on("small")
    with pytest.raises(ValueError, match=message):
        fuzz.random_program(0, bias=bias)
