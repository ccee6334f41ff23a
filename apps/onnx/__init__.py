"""Int8 ONNX models (QDQ form) on VTA: import, partition, numpy reference, run, per-layer report.

    python -m apps.onnx MODEL.onnx [--target fsim|rtl] [--csv F] [--png F]

:func:`graph.load` reads the model into integer operators, :func:`layers.prepare` fixes their
integer parameters (docs/numerics.md), :func:`layers.reference` is the bit-exact numpy definition,
:func:`runner.run` runs conv / dense / residual add on the accelerator through :mod:`sw.ops` and the
rest on the CPU, :mod:`apps.onnx.ort` compares with onnxruntime, :mod:`apps.onnx.report` prints the
per-layer table.
"""
