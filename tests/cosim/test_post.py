"""The post-processing unit on the RTL (configs with POST_UNIT): its fast shape runs a row per cycle, two with the
residual; random programs rich in POSTs (every kernel shape, parameter blocks of edge values) are bit-exact with the
golden model. (The reference programs post[...] run in test_cosim.py's regression, the refusal of POST on a config
without the unit in tests/cosim/verify/test_directed_suite.py.)"""
import pytest

import cosim
from cosim.verify import regress
from sw.testing import vta_tests as programs


@pytest.mark.parametrize("config", ["default", "batch2"])
def test_fast_shape_runs_a_row_per_cycle_and_two_with_the_residual(config):
    rows = 200
    runs = cosim.run_many([(programs.post_fast_busy, ("python", rows, use_imm), {}) for use_imm in (1, 0)],
                          config=config)
    more = [second["compute_busy"] - first["compute_busy"] for first, second in (r["counters"] for r in runs)]
    assert more[0] <= rows + rows // 32 and more[1] <= 2 * rows + rows // 16, more


def test_random_programs_rich_in_posts_bit_exact():
    problems = regress.fuzz(range(40_000, 40_040), "default", bias={"post": 1.0})
    assert problems == [], "\n".join(problems[:4])
