"""sw.runtime.uopkernel: a recorded kernel's loops become the instruction's loop fields (GEMM outside, ALU inside)."""
import pytest

from sw.config import load_config
from sw.pipeline import VTAError
from sw.runtime import uopkernel


def test_single_loop_is_outer_for_gemm_and_inner_for_alu():
    k = uopkernel.UopKernel(load_config("default"))
    k.loops, k.mode = [(4, 1, 2, 3)], 0
    assert k.loop_fields() == dict(iter_out=4, iter_in=1, dst_factor_out=1, dst_factor_in=0, src_factor_out=2,
                                   src_factor_in=0, wgt_factor_out=3, wgt_factor_in=0)
    k.mode = 1
    assert k.loop_fields() == dict(iter_out=1, iter_in=4, dst_factor_out=0, dst_factor_in=1, src_factor_out=0,
                                   src_factor_in=2)


def test_recording_functions_outside_a_kernel_say_where_to_call_them():
    for call in (lambda: uopkernel.uop_loop_begin(1, 0, 0, 0), uopkernel.uop_loop_end,
                 lambda: uopkernel.uop_push(0, 0, 0, 0, 0, 0, 0, 0)):
        with pytest.raises(VTAError, match="no micro-kernel is being recorded; call it from the kernel passed to "
                                           "push_gemm_op or push_alu_op"):
            call()
