"""Int8 ONNX models (QDQ form) on VTA: import, partition, numpy reference, run, per-layer report.

    python -m apps.onnx MODEL.onnx [--target fsim|rtl|cpu] [--config F] [--input F] [--csv F] [--png F]

    from apps.onnx import Model
    result = Model("model.onnx", "configs/default.json").run({"input": x}, target="rtl")
    result.tensors, result.exact, result.records   # every tensor, equal to the reference, per-layer rows

:class:`Model` is the entry point. Underneath, :func:`graph.load` reads the model into integer operators,
:func:`layers.prepare` fixes their integer parameters (docs/numerics.md), :func:`layers.reference` is the
bit-exact numpy definition, :func:`runner.run` runs conv / dense / residual add on the accelerator through
:mod:`sw.ops` and the rest on the CPU, :mod:`apps.onnx.ort` compares with onnxruntime, :mod:`apps.onnx.report`
prints the per-layer table.
"""

from .model import Model, RunResult

__all__ = ["Model", "RunResult"]
