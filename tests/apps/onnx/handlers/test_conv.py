"""apps.onnx.handlers.conv: the im2col path's bias folded into the GEMM (constant columns), exact on the
golden model, and the cases that keep the ALU's vector add."""
import numpy as np
import pytest

from apps.onnx.handlers.conv import _vector_in_gemm
from sw import ops
from sw.isa import AluOp
from tests.conftest import rand8

STEPS = ((AluOp.ADD, "v0"), (AluOp.MUL, 3406), (AluOp.ADD, 64), (AluOp.SHR, 7), (AluOp.MAX, "v1"),
         (AluOp.SHR, 5), (AluOp.MAX, -128), (AluOp.MIN, 127))


def test_the_vector_add_moves_into_the_gemm(on, rng):
    """A stem-like GEMM (K = 3 x 7 x 7 = 147 of 160 lanes): v0 in [-30000, 30000] becomes weights in
    the spare lanes against constant columns; the epilogue loses its two-cycle tensor add and renames v1
    to v0; the result is the one of the original epilogue, bit for bit."""
    on("default")
    cols, w = rand8(rng, (300, 147)), rand8(rng, (64, 147))
    vectors = np.stack([rng.integers(-30000, 30000, 64), rng.integers(-2000, 0, 64)]).astype(np.int32)
    vectors[0, :2] = (-30000, 30000)
    epi = ops.Epilogue(STEPS)
    cols2, w2, vec2, epi2 = _vector_in_gemm(cols, w, vectors, epi, 16)
    lanes = cols2.shape[1] - 147
    assert lanes == 3 and np.all(cols2[:, 147:] == [127, 127, 1])
    assert epi2.steps == ((AluOp.MUL, 3406), (AluOp.ADD, 64), (AluOp.SHR, 7), (AluOp.MAX, "v0"),
                          (AluOp.SHR, 5), (AluOp.MAX, -128), (AluOp.MIN, 127))
    np.testing.assert_array_equal(vec2, vectors[1:])
    np.testing.assert_array_equal(w2[:, 147:].astype(np.int64) @ [127, 127, 1], vectors[0])
    want = epi.reference(ops.gemm_ref(cols, w), vectors, 1)
    np.testing.assert_array_equal(ops.dense(cols2, w2, vec2, epilogue=epi2, virtual_threads=2), want)
    # a first step that is the only vector: no vectors left
    only = ops.Epilogue(STEPS[:4])
    _, _, none, epi3 = _vector_in_gemm(cols, w, vectors[:1], only, 16)
    assert none is None and epi3.vectors == 0


@pytest.mark.parametrize("case", ["no free lanes", "v0 too large", "v0 used again", "no vector add first"])
def test_cases_that_keep_the_alu_add(rng, case):
    k, steps, v0 = 147, STEPS, rng.integers(-3000, 3000, 64)
    if case == "no free lanes":
        k = 160
    elif case == "v0 too large":
        v0[0] = 13 * 127 * 127                    # 13 lanes of 127 and the 1: more than 160 - 147
    elif case == "v0 used again":
        steps = STEPS + ((AluOp.ADD, "v0"),)
    else:
        steps = STEPS[1:]
    cols, w = rand8(rng, (20, k)), rand8(rng, (64, k))
    vectors = np.stack([v0, v0]).astype(np.int32)
    epi = ops.Epilogue(steps)
    out = _vector_in_gemm(cols, w, vectors, epi, 16)
    assert out[0] is cols and out[1] is w and out[2] is vectors and out[3] is epi
