"""The random program generator makes valid, reproducible programs (checked on the golden model)."""
import re

import numpy as np
import pytest

from sw import runtime
from sw.isa import POST_PARAM_ROWS
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
    # the programs exercise every kind of work, POST where the config builds it: with and without the residual, on
    # kernels of one micro-op and of several, with its parameter rows at both ends of imm's range and in between
    total = {k: sum(r["counters"][k] for r in outs[0]) for k in outs[0][0]["counters"]}
    assert all(v > 0 for v in total.values()), total
    assert any(np.any(r["out"]) for r in outs[0])
    # DEPTHWISE where the config builds it: with and without reset, of one micro-op and of several
    dws = [ln for r in outs[0] for ln in r["listing"].splitlines() if "DEPTHW" in ln]
    if not q.cfg.DEPTHWISE:
        assert dws == []
    else:
        assert {("reset" in ln, _uops(ln) > 1) for ln in dws} == {(False, False), (False, True), (True, False),
                                                                    (True, True)}
    posts = [ln for r in outs[0] for ln in r["listing"].splitlines() if "ALU    POST" in ln]
    if not q.cfg.POST_UNIT:
        assert posts == []
        return
    top = q.cfg.ACC_DEPTH - POST_PARAM_ROWS
    kinds = {("residual" in ln, _uops(ln) > 1, {"0": "first", str(top): "last"}.get(_params(ln), "inside"))
             for ln in posts}
    assert {(res, several) for res, several, _ in kinds} == {(False, False), (False, True), (True, False), (True, True)}
    assert {where for *_, where in kinds} == {"first", "last", "inside"}


def _uops(line):
    """The number of micro-ops of a disassembled ALU instruction."""
    bgn, end = re.search(r"uop\[(\d+):(\d+)\]", line).groups()
    return int(end) - int(bgn)


def _params(line):
    """The first parameter row of a disassembled POST."""
    return re.search(r"params=acc\[(\d+):", line).group(1)


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


def test_post_bias_steers_toward_posts_where_the_unit_is_built(on):
    counts = {}
    for config, bias in (("default", {}), ("default", {"post": 1.0}), ("small", {"post": 1.0})):
        on(config)
        counts[config, bool(bias)] = fuzz.random_program(5, bias=bias)["listing"].count("ALU    POST")
    assert counts["default", True] > counts["default", False] > 0 and counts["small", True] == 0


def test_depthwise_bias_steers_toward_depthwise_where_it_is_built(on):
    counts = {}
    for config, bias in (("default", {}), ("default", {"depthwise": 1.0}), ("small", {"depthwise": 1.0})):
        on(config)
        counts[config, bool(bias)] = fuzz.random_program(5, bias=bias)["listing"].count("DEPTHW")
    assert counts["default", True] > counts["default", False] > 0 and counts["small", True] == 0


def test_depthwise_kernels_rewrite_rows_and_span_loop_iterations(on):
    """The DEPTHWISE kernels of a few default programs: some write one row with every micro-op, some run more
    executions than BLOCK_IN (a full window), some fewer, under two loops."""
    q = on("default")
    lines = [ln for seed in range(6) for ln in fuzz.random_program(seed, bias={"depthwise": 1.0})["listing"].splitlines()
             if "DEPTHW" in ln]
    execs = [_uops(ln) * int(re.search(r"out=(\d+)", ln).group(1)) * int(re.search(r" in=(\d+)", ln).group(1))
             for ln in lines]
    assert min(execs) < q.cfg.BLOCK_IN <= max(execs)
    assert any(int(re.search(r"out=(\d+)", ln).group(1)) > 1 and int(re.search(r" in=(\d+)", ln).group(1)) > 1
               for ln in lines)


@pytest.mark.parametrize("bias, message", [({"wide": 0.5}, "bias 'wide'"), ({"pad": 1.5}, "bias 'pad' = 1.5")])
def test_bias_is_checked(on, bias, message):
    on("small")
    with pytest.raises(ValueError, match=message):
        fuzz.random_program(0, bias=bias)
