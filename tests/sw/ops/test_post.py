"""sw.ops.post: the steps one pass of the post-processing unit takes, the fewest passes for a list of steps, when a
pass pays, the residual's own steps, the parameter rows."""
import numpy as np
import pytest

from sw.config import load_config
from sw.fsim.alu import alu_op, post_op
from sw.isa import POST_PARAM_ROWS, POST_RESIDUAL_STAGE, POST_RESIDUAL_STEPS, POST_STAGES, AluOp
from sw.ops import post
from sw.ops.kernels import ALU_INSN_CYCLES, POST_INSN_CYCLES

ADD, SHR, MIN, MAX, MUL = AluOp.ADD, AluOp.SHR, AluOp.MIN, AluOp.MAX, AluOp.MUL

# ResNet-18's conv + add epilogue with per-channel weight scales (the zoo's, compacted): one pass, 'r' at stage 10
FUSED = ((MAX, "v0"), (MIN, "v1"), (MUL, "v2"), (ADD, "v3"), (SHR, 6), (MUL, "v4"), (ADD, "v5"), (SHR, 23),
         (MUL, "v6"), (ADD, "r"), (SHR, 21), (MAX, -128), (MIN, 127))


def test_stages_place_each_step_at_its_earliest_stage():
    assert post.stages(FUSED) == (1, 2, 3, 4, 5, 6, 7, 8, 9, POST_RESIDUAL_STAGE, 11, 12, 13)
    assert post.stages(()) == ()
    assert post.stages(((SHR, 8), (ADD, "v0"), (MAX, 0), (MIN, 127))) == (5, 7, 12, 13)
    assert post.stages(((MUL, 3),) * 3) == (3, 6, 9) and post.stages(((MUL, 3),) * 4) is None
    assert post.stages(((MIN, 1), (MIN, 2))) == (2, 13) and post.stages(((MIN, 1),) * 3) is None
    # the residual after stage 10's own ADD (an ADD there may come first), never before an earlier stage
    assert post.stages(((ADD, 5), (ADD, 6), (ADD, 7), (ADD, 8), (ADD, "r"))) == (0, 4, 7, 10, POST_RESIDUAL_STAGE)
    assert post.stages(((ADD, "r"), (ADD, 1))) is None and post.stages(((SHR, 1), (MAX, 0), (ADD, "r"))) is None
    assert post.stages(((MAX, "r"),)) is None                       # the unit adds the residual, nothing else
    assert post.stages(((AluOp.POST, 0),)) is None


def test_one_pass_is_its_steps_on_the_alu(rng):
    """The unit's chain with the steps' operands at their stages and identities elsewhere: the steps' int32 values."""
    steps = ((ADD, 77), (MAX, -5000), (MUL, -300), (ADD, 12345), (SHR, 3), (MUL, 7), (SHR, 2), (ADD, "r"),
             (MAX, -128), (MIN, 127))
    x = rng.integers(-(1 << 31), 1 << 31, (64, 16), dtype=np.int64).astype(np.int32)
    r = rng.integers(-128, 128, (64, 16)).astype(np.int32)
    want = x
    for op, v in steps:
        want = alu_op(op, want, r if v == "r" else v)
    p = post.params(steps, post.stages(steps), None, 1, (1, 16))[0]
    np.testing.assert_array_equal(post_op(x, p, r), want)
    assert [int(p[k, 0, 0]) for k in range(POST_PARAM_ROWS)] == [
        77, -5000, post.IDENTITY[MIN], -300, 12345, 3, 7, 0, 2, 1, 0, 0, -128, 127, 1, 0]


def test_the_residuals_steps_ride_in_the_pass_that_adds_it(rng):
    """A full-width MUL anywhere, the residual's MUL and ADD in the last two rows: the steps' int32 values."""
    steps = ((MUL, (1 << 31) - 1), (ADD, 12345), (SHR, 3), (MUL, -(1 << 20) - 7), (ADD, "r"), (SHR, 9))
    residual = ((MUL, 65539), (ADD, -(1 << 30)))
    x = rng.integers(-(1 << 31), 1 << 31, (64, 16), dtype=np.int64).astype(np.int32)
    r = rng.integers(-128, 128, (64, 16)).astype(np.int32)
    want_r = alu_op(ADD, alu_op(MUL, r, 65539), -(1 << 30))
    want = x
    for op, v in steps:
        want = alu_op(op, want, want_r if v == "r" else v)
    p = post.params(steps, post.stages(steps), None, 1, (1, 16), residual, post.residual_stages(residual))[0]
    np.testing.assert_array_equal(post_op(x, p, r), want)
    assert [int(p[k, 0, 0]) for k in range(len(POST_STAGES), POST_PARAM_ROWS)] == [65539, -(1 << 30)]
    # the residual's steps: an in-order part of POST_RESIDUAL_STEPS (MUL, ADD), immediates or vectors
    assert POST_RESIDUAL_STEPS == (MUL, ADD) and POST_PARAM_ROWS == len(POST_STAGES) + 2
    assert post.residual_stages(residual) == (0, 1) and post.residual_stages(((ADD, "v0"),)) == (1,)
    assert post.residual_stages(((MUL, "v3"),)) == (0,) and post.residual_stages(()) == ()
    assert post.residual_stages(((ADD, -3), (MUL, 5))) is None and post.residual_stages(((MUL, 2),) * 2) is None
    assert post.residual_stages(((SHR, 1),)) is None and post.residual_stages(((ADD, "r"),)) is None


def test_segments_are_the_fewest_passes():
    assert post.segments(FUSED) == ((0, 13),)
    # VTA's requantization with its clip in VTA's order (MIN then MAX): MAX needs a pass of its own
    vta = ((SHR, 8), (ADD, "v0"), (MIN, 127), (MAX, 0))
    assert post.segments(vta) == ((0, 3), (3, 4))
    # three multiplies of a two-multiply requantization and a rescale: a second pass from the third MUL chain on
    steps = ((ADD, "v0"), (MUL, 100), (ADD, 1), (SHR, 7), (MUL, 9), (ADD, 1), (SHR, 8), (MUL, 3), (MUL, 5),
             (ADD, -3), (SHR, 2), (MAX, -128), (MIN, 127))
    assert post.segments(steps) == ((0, 8), (8, 13))
    assert len(post.segments(steps)) == 2 and post.stages(steps) is None
    assert post.segments(()) == ()


def test_what_the_unit_cannot_take_stays_on_the_alu():
    # the branch, a tensor operand other than the residual's ADD; a MUL by any vector or immediate fits a MUL stage
    steps = ((ADD, "v0"), (SHR, 4), (MUL, "v1"), (ADD, 5), (SHR, 3), (MAX, -128), (MIN, 127))
    assert post.segments(steps) == ((0, 7),)
    assert post.eligible((MUL, "v1")) and post.eligible((MUL, -32768)) and post.eligible((MUL, "r")) is False
    assert not post.eligible((MAX, "b")) and not post.eligible((MAX, "r")) and post.eligible((ADD, "r"))
    leaky = ((ADD, "v0"), (SHR, 6), (MUL, 10), (MAX, "b"), (ADD, 4), (SHR, 3), (MAX, -128), (MIN, 127))
    assert post.segments(leaky) == ((0, 3), (4, 8))
    # a branch copies the values before its step: no pass across it (one may start there)
    assert post.segments(leaky, breaks={2}) == ((0, 2), (2, 3), (4, 8))
    assert post.segments(((MAX, "r"), (ADD, 1))) == ((1, 2),)


def test_a_pass_pays_where_its_instructions_cost_less_than_the_alus():
    two = ((ADD, "v0"), (SHR, 4))
    # per channel block: a POST instruction (POST_INSN_CYCLES) and a cycle per row against two ALU passes
    assert POST_INSN_CYCLES == POST_PARAM_ROWS + 22 == 38
    assert post.pays(two, 49, 4) and not post.pays(two, 1, 16)       # a 7x7 conv tile; dense at batch 1
    assert 4 * (POST_INSN_CYCLES + 49) < 2 * (ALU_INSN_CYCLES + 4 * 49)
    # without a vector: one instruction for every row
    assert post.pays(((SHR, 4), (MAX, 0)), 1, 16)
    # one step never pays: a POST instruction costs more than an ALU one
    assert not post.pays(((ADD, "v0"),), 10 ** 6, 1) and not post.pays(((ADD, "r"),), 10 ** 6, 1)
    assert post.pays(((MUL, 3), (ADD, "r")), 100, 1)
    # the residual's steps a pass takes count as ALU steps it saves (and a vector among them: one per block)
    res = ((MUL, "v0"), (ADD, "v1"))
    assert not post.pays(((ADD, "r"),), 100, 1) and post.pays(((ADD, "r"),), 100, 1, residual=res)
    assert 38 + 2 * 100 < 3 * 32 + 2 * 100 + 2 * 100 and not post.pays(((ADD, "r"),), 1, 16, residual=res)
    # and the load of each block of parameter rows: 16 rows of 64 bytes over a 64-bit bus on the default config
    assert post.load_cycles(load_config("default")) == 16 * 64 / 8
    assert not post.pays(two, 49, 4, load=128) and post.pays(two, 196, 4, load=128)


def test_params_one_block_per_channel_block_with_vectors():
    steps = ((MAX, "v1"), (MUL, "v0"), (ADD, 9), (SHR, 2))
    at = post.stages(steps)
    v = np.arange(2 * 3 * 2 * 4, dtype=np.int32).reshape(2, 3, 2, 4)        # (V, blocks, BATCH, BLOCK_OUT)
    p = post.params(steps, at, v, 3, (2, 4))
    assert p.shape == (3, POST_PARAM_ROWS, 2, 4) and p.dtype == np.int32
    np.testing.assert_array_equal(p[:, 1], v[1])
    np.testing.assert_array_equal(p[:, 3], v[0])
    assert np.all(p[:, 4] == 9) and np.all(p[:, 5] == 2)
    for k in (0, 2, 6, 7, 8, 9, 10, 11, 12, 13):
        assert np.all(p[:, k] == post.IDENTITY[POST_STAGES[k]])
    assert np.all(p[:, 14] == 1) and np.all(p[:, 15] == 0)                  # the residual's identities
    # the residual's ADD by a vector: its row per channel block
    p = post.params(steps, at, v, 3, (2, 4), ((ADD, "v1"),), (1,))
    np.testing.assert_array_equal(p[:, 15], v[1])
    assert np.all(p[:, 14] == 1)
    with pytest.raises(ValueError, match=r"a POST pass uses vector v1: expected vectors \(V > 1, 3, 2, 4\)"):
        post.params(steps, at, v[:1], 3, (2, 4))


def test_template_text_marks_the_residual():
    assert post.template() == "ADD MAX MIN MUL ADD SHR MUL ADD SHR MUL ADD +r SHR MAX MIN"
