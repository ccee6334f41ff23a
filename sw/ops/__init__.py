"""Operators on the accelerator: element-wise ALU ops, GEMM / dense and conv2d, with numpy references.

Every operator drives the runtime API (:mod:`sw.runtime`) of the current runtime, so the same call
runs on the golden model or, inside ``cosim.run``, on the RTL. An operator:

1. packs its operands into VTA's blocked layouts (docs/architecture.md), zero-padding shapes that are not
   multiples of the blocks, and copies them into device buffers;
2. chooses on-chip tiles from the config's SRAM depths (:func:`plan_dense`, :func:`plan_conv2d`,
   the element-wise tiler) and builds, per tile, its loads, micro-kernels and stores;
3. runs the tiles through the scheduler (:mod:`sw.ops.schedule`), which places the dependency tokens (RAW l2g and g2s,
   WAR g2l and s2g) so that with ``virtual_threads=2`` the tiles alternate between two halves of the
   inp/wgt/acc SRAMs: the loads of step t+1 overlap the GEMMs of step t, the requantization (ALU)
   of one tile runs beside the GEMMs of the next (the compute module overlaps a GEMM and an ALU
   instruction in different acc halves), the ALU zeroes the accumulators of the tile after, and
   the store of one tile overlaps the compute of the next; conv2d may give each thread two acc
   regions (``ConvPlan.slots``) so a tile's store has longer before its region is reused; with 1
   virtual thread the modules hand over strictly;
4. reads the result back, crops the padding and returns it.

Micro-kernels are closures made once per distinct shape and SRAM base (memoised factories), so the
runtime's JIT cache (keyed by the callable object and the key) records each one once and reuses it
for every tile. GEMM kernels keep at least three distinct accumulator rows between repeated writes,
so they obey VTA's micro-op hazard rule across loop iterations too (this hardware does not need it,
docs/architecture.md §2.10; the operators keep it so their streams also suit VTA's pipelines).

Operators (all take ``virtual_threads=1|2`` and ``return_counters=False``):

=================================================  ==============================================
``vadd(a, b)``, ``relu(a)``, ``add_bias(a, bias)``  int32 (n, BATCH, BLOCK_OUT) or (r, c, BATCH,
``requantize(a, shift=8, bias=None, clip=True)``    BLOCK_OUT) -> int8 of the same shape
``dense(data, weight, bias=None, shift=8,           int8 (N, K), (M, K), int32 (M,) -> int8 (N, M)
clip=True, tiles=None, epilogue=None)``
``gemm(data, weight, tiles=None)``                  int8 (N, K), (M, K) -> exact int32 (N, M)
``conv2d(data, weight, bias=None, stride=1,         int8 (N, C, H, W), (O, C, kh, kw), int32 (O,)
padding=0, shift=8, clip=True, tiles=None,          -> int8 (N, O, Ho, Wo)
epilogue=None)``
``dense_packed``, ``conv2d_packed``                 the same on already packed operands
``add_rescaled(a, b, a_alu, b_alu, alu)``           int8 a, b of one shape -> int8: ALU steps on
                                                    each, a + b, ALU steps (a residual add)
``sum_rescaled(operands, operand_alu, alu)``        the same for two or more operands (Sum)
``pool2d(x, kernel, stride=1, padding=0,            int8 (N, C, H, W) -> int8 (N, C, Ho, Wo): the
pad_value=0, mode="max", epilogue=None,             max or sum of each window on the ALU, then
vectors=None)``                                     the epilogue (an average's requantization)
=================================================  ==============================================

``conv2d``/``dense`` (and the packed forms) finish each tile with an :class:`Epilogue`
(:mod:`sw.ops.epilogue`): by default VTA's (``shift`` / ``bias`` / ``clip``); ``epilogue=`` takes any
other, an ``Epilogue`` or its ALU steps ``(AluOp, immediate | "vI")``, with ``bias`` then holding its
per-channel vectors (V, channels): fixed-point requantization with a multiplier, zero points and
int8/uint8 saturation, or the exact int32 accumulators (``Epilogue.exact_int32()``, what ``gemm``
uses), or a few low bytes of them. On a config with the post-processing unit (``POST_UNIT`` = 1) the steps
run as passes of its fixed chain where they pay (ALU opcode POST, :meth:`Epilogue.lowered`), the same values.

Tiling: dense steps are (tn batch blocks, tk reduction blocks, tm output blocks); conv2d steps are
(tm output-channel blocks, th output rows, tw output columns, tc input-channel blocks, with the
input halo and the zero padding done by the LOAD). Each output tile keeps its accumulators in one
acc half and loops over reduction steps (each a load of inp+wgt into one inp/wgt half and a GEMM);
then the ALU requantizes and STORE writes it. The sizes are the cheapest under a small cycle model
(:mod:`sw.ops.plan`) among those that fit the per-thread SRAM capacities (depth / virtual_threads),
the micro-op budget and the hazard rule; ``tiles=`` overrides them. A layer for which no tile fits
raises :class:`TileError` (a ValueError) naming the SRAM, what it needs and what it has.

The package, one module per concern: :mod:`~sw.ops.layout` (packing), :mod:`~sw.ops.reference`
(numpy references), :mod:`~sw.ops.kernels` (micro-kernels and the typed actions that queue them),
:mod:`~sw.ops.plan` (tiling plans), :mod:`~sw.ops.schedule` (the tile scheduler),
:mod:`~sw.ops.elementwise`, :mod:`~sw.ops.dense`, :mod:`~sw.ops.conv2d` and :mod:`~sw.ops.pool` (the operators),
:mod:`~sw.ops.epilogue` (ALU epilogues), :mod:`~sw.ops.post` (their passes of the post-processing unit),
:mod:`~sw.ops.compact` (shorter equivalent ALU steps). The
benchmark workloads built on them are in :mod:`sw.testing.workloads`.
"""

from __future__ import annotations

from sw.ops import base as _base
from sw.ops.base import TileError
from sw.ops.compact import compact, with_operands
from sw.ops.conv2d import conv2d, conv2d_packed
from sw.ops.dense import dense, dense_packed, gemm, spare_lanes
from sw.ops.depthwise import depthwise_choice
from sw.ops.elementwise import add_bias, add_rescaled, relu, requantize, sum_rescaled, vadd
from sw.ops.epilogue import Epilogue
from sw.ops.layout import (
    block_groups,
    pack_bias,
    pack_conv_data,
    pack_conv_output,
    pack_conv_weight,
    pack_dense_data,
    pack_dense_weight,
    unpack_conv_output,
    unpack_dense_output,
)
from sw.ops.plan import ConvPlan, DensePlan, plan_conv2d, plan_dense
from sw.ops.pool import pool2d, pool2d_ref
from sw.ops.reference import add_bias_ref, conv2d_nchw, conv2d_ref, dense_ref, gemm_ref, relu_ref, requantize_ref, vadd_ref

__all__ = [
    # operators
    "vadd", "relu", "add_bias", "requantize", "add_rescaled", "sum_rescaled", "dense", "gemm", "dense_packed", "conv2d",
    "conv2d_packed", "pool2d",
    # numpy references
    "vadd_ref", "relu_ref", "add_bias_ref", "requantize_ref", "gemm_ref", "dense_ref", "conv2d_nchw", "pool2d_ref",
    "conv2d_ref",
    # layouts
    "pack_dense_data", "pack_dense_weight", "unpack_dense_output", "pack_conv_data", "pack_conv_weight",
    "unpack_conv_output", "pack_conv_output", "pack_bias", "block_groups", "depthwise_choice",
    # planning
    "plan_dense", "plan_conv2d", "spare_lanes", "DensePlan", "ConvPlan", "last_counters", "TileError",
    # epilogues
    "Epilogue", "compact", "with_operands",
]


def __getattr__(name):
    if name == "last_counters":     # the summed counters of the most recent operator call
        return _base.last_counters
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
