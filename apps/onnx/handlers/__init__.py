"""Operator handlers: one module per ONNX operator (or QDQ pattern), in one registry.

A handler (:class:`~apps.onnx.handlers.base.Handler`) owns everything about its operator: how its QDQ
bracket is recognised on import (``match``), the integer preparation (``prepare``), the numpy
reference (``reference``), where it runs and why (``placement``), the lowering to the accelerator
(``lower``, through :mod:`sw.ops`) and its MAC count (``macs``). Adding an operator is adding one
module here. A node that no handler takes, or that its handler refuses (the reason is kept), runs
on the CPU in an :mod:`island <apps.onnx.handlers.island>`, as onnxruntime runs it.

=====================  ==============================  =============================================
module                 ONNX                            integer node (kind)
=====================  ==============================  =============================================
``quantize``           QuantizeLinear of a graph input  ``quantize`` (numpy, CPU)
``dequantize``         DequantizeLinear to an output    ``dequantize`` (numpy, CPU)
``conv``               Conv (any group count)           ``conv``: GEMMs and requantization on VTA
``batchnorm``          BatchNormalization (+ Relu),     ``batchnorm``, ``mul_channels``: a depthwise 1x1
                       Mul by a per-channel constant    conv on VTA
``deconv``             ConvTranspose (group 1)          ``deconv``: per output phase a conv on VTA
``dense``              Gemm, MatMul with a constant     ``dense``: on VTA (a MatMul's leading dimensions
                       weight                           as rows)
``matmul``             MatMul of two activations        ``matmul``: one GEMM per head on VTA
``add``                Add of two same-shape tensors,   ``add``, ``add_const``: the rescaled add on VTA's
                       or of one and a constant         ALU (the constant's codes broadcast)
``relu``               Relu                             ``relu`` (numpy, CPU)
``maxpool``            MaxPool (floor or ceil mode)           ``maxpool`` (numpy, CPU)
``avgpool``            GlobalAveragePool, AveragePool   ``gap``, ``avgpool``: window sums on VTA's ALU
``layout``             Reshape, Flatten, Transpose,     ``reshape``, ``flatten``, ``transpose``,
                       Squeeze, Unsqueeze, Identity     ``squeeze``, ``unsqueeze``, ``identity``: the int8
                       (constant shape / axes / perm)   codes moved (numpy, CPU), rescaled where the
                                                        output's quantization differs
``layout``             Slice, Gather, Pad, Split,       ``slice``, ``gather``, ``pad``, ``split``,
                       DepthToSpace, SpaceToDepth       ``depth_to_space``, ``space_to_depth``: the same
                       (constant starts, indices, ...)  (Pad: the padding is the code of its value)
``layout``             Concat                           ``concat``: each input rescaled to the output's
                                                        quantization (none where they agree)
``requantize``         a second QuantizeLinear          ``requantize`` (numpy, CPU)
``integer``            MatMulInteger, ConvInteger       ``matmul_integer``, ``conv_integer``: exact int32 on VTA
``island``             anything else                    ``island``: onnxruntime on the sub-graph
=====================  ==============================  =============================================
"""

from __future__ import annotations

from importlib import import_module

from .base import Handler, Unsupported
from .registry import HANDLERS, for_kind, for_op, register

__all__ = ["Handler", "Unsupported", "register", "for_op", "for_kind", "HANDLERS"]

for _m in ("quantize", "dequantize", "conv", "batchnorm", "deconv", "dense", "matmul", "add", "relu", "maxpool", "avgpool",
           "layout", "requantize", "integer", "island"):
    import_module(f"{__name__}.{_m}")
