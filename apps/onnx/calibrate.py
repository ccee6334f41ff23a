"""Float models: quantize with onnxruntime's ``quantize_static`` (QDQ) on calibration inputs.

``python -m apps.onnx model.onnx --calibrate data.npy [--per-channel]`` writes ``model.qdq.onnx`` beside
the float model and runs that. Calibration data: a ``.npy`` holding N samples of the model's (single)
input, or a ``.npz`` with one such array per input name; each sample is fed with the model's batch
dimension (a model with batch 1 gets N calls of one sample).
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

import numpy as np

from .ir import OnnxImportError
from .proto import read_model

__all__ = ["is_float_model", "input_shapes", "load_samples", "split_samples", "quantize_model", "quantize_file",
           "FORMATS", "DYNAMIC_OPS"]


DYNAMIC_OPS = ("DynamicQuantizeLinear", "MatMulInteger", "ConvInteger")        # what quantize_dynamic writes


def is_float_model(model) -> bool:
    """True when nothing in the model is quantized yet: no QDQ bracket, no QOperator node, no dynamic
    quantization (DynamicQuantizeLinear, MatMulInteger, ConvInteger)."""
    from .qoperator import QOPERATOR

    quantized = {"QuantizeLinear", "DequantizeLinear", *DYNAMIC_OPS, *QOPERATOR}
    return not any(n.op_type in quantized for n in model.graph.node)


def input_shapes(model) -> dict[str, tuple]:
    """Graph inputs that are not initializers -> shapes (unknown dims as 1)."""
    inits = {t.name for t in model.graph.initializer}
    return {i.name: tuple(d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else 1
                          for d in i.type.tensor_type.shape.dim)
            for i in model.graph.input if i.name not in inits}


def load_samples(path, shapes: dict[str, tuple]) -> dict[str, np.ndarray]:
    """A ``.npy`` (the single input) or ``.npz`` (one array per input name; a single unnamed array is
    the single input) -> {input name: float32 array}."""
    path = Path(path)
    try:
        data = np.load(path)
    except (OSError, ValueError) as e:
        raise OnnxImportError(f"{path}: not a readable .npy / .npz file ({e})") from None
    names = list(shapes)
    if isinstance(data, np.ndarray):
        if len(names) != 1:
            raise OnnxImportError(f"{path}: one array for a model with inputs {names}; give a .npz with one array "
                                  f"per input name")
        return {names[0]: data.astype(np.float32)}
    arrays = dict(data.items())
    if len(arrays) == 1 and len(names) == 1 and names[0] not in arrays:
        return {names[0]: next(iter(arrays.values())).astype(np.float32)}
    missing = [n for n in names if n not in arrays]
    if missing:
        raise OnnxImportError(f"{path}: no array for inputs {missing} (it has {sorted(arrays)})")
    return {n: arrays[n].astype(np.float32) for n in names}


def split_samples(arrays: dict[str, np.ndarray], shapes: dict[str, tuple]) -> list[dict[str, np.ndarray]]:
    """Arrays holding one input each (exactly the input's shape) or N of them along a leading axis
    (N x the input's shape, or N along the batch axis of a batch-1 input) -> N input dicts."""
    counts, per = {}, {}
    for name, a in arrays.items():
        shape = shapes[name]
        if a.shape == shape or (a.ndim == len(shape) and a.shape[1:] == shape[1:] and shape[0] == 1):
            n = 1 if a.shape == shape else a.shape[0]
            per[name] = [a[i:i + 1] for i in range(n)] if n > 1 or shape[0] == 1 else [a]
        elif a.ndim == len(shape) + 1 and a.shape[1:] == shape:
            per[name] = list(a)
        else:
            raise OnnxImportError(f"input {name!r}: an array of shape {a.shape} for an input of shape {shape}; give "
                                  f"{shape} or N x {shape}")
        counts[name] = len(per[name])
    if len(set(counts.values())) > 1:
        raise OnnxImportError(f"inputs hold different numbers of samples: {counts}")
    n = next(iter(counts.values()))
    return [{name: per[name][i] for name in arrays} for i in range(n)]


FORMATS = ("qdq", "qoperator", "dynamic")


def quantize_model(model, samples: list[dict[str, np.ndarray]] | None, per_channel: bool = False,
                   fmt: str = "qdq"):
    """onnxruntime's recommended pre-processing (``quant_pre_process``: shape inference, and its basic
    graph optimizations, which fold BatchNormalization into the convolution before it), then its quantizer
    with its defaults, per-channel weight scales when asked; returns the quantized ``onnx.ModelProto``.

    ``fmt``: 'qdq' (``quantize_static``, QDQ, QInt8 activations and weights, MinMax, calibrated on
    ``samples``), 'qoperator' (``quantize_static`` with ``QuantFormat.QOperator``: QLinearConv, QGemm, ...;
    its default QUInt8 activations), or 'dynamic' (``quantize_dynamic``: DynamicQuantizeLinear and
    MatMulInteger / ConvInteger; no samples)."""
    import onnx
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    if fmt not in FORMATS:
        raise ValueError(f"fmt = {fmt!r}; allowed: {', '.join(FORMATS)}")
    if fmt != "dynamic" and not samples:
        raise ValueError(f"fmt = {fmt!r} calibrates on samples: give at least one")

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.items = iter(samples)

        def get_next(self):
            return next(self.items, None)

    logging.getLogger().setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory(prefix="openvta-q-") as tmp:
        src, pre, dst = (os.path.join(tmp, f) for f in ("float.onnx", "pre.onnx", "q.onnx"))
        onnx.save(model, src)
        quant_pre_process(src, pre, skip_symbolic_shape=True)
        if fmt == "dynamic":
            quantize_dynamic(pre, dst, per_channel=per_channel)
        else:
            quantize_static(pre, dst, Reader(), per_channel=per_channel,
                            quant_format=QuantFormat.QDQ if fmt == "qdq" else QuantFormat.QOperator,
                            **({} if fmt == "qdq" else {"activation_type": QuantType.QUInt8}))
        return onnx.load(dst)


SUFFIX = {"qdq": ".qdq", "qoperator": ".qop", "dynamic": ".dyn"}


def quantize_file(path, data_path=None, per_channel: bool = False, fmt: str = "qdq") -> Path:
    """Quantize the float model at ``path`` in format ``fmt`` (:func:`quantize_model`; 'qdq' and 'qoperator'
    calibrate on the samples in ``data_path``, 'dynamic' needs none); writes and returns ``<stem>.qdq.onnx``
    (``.qop.onnx``, ``.dyn.onnx``; ``-pc`` before ``.onnx`` with per-channel scales) beside it."""
    import onnx

    if fmt not in FORMATS:
        raise OnnxImportError(f"format {fmt!r}; allowed: {', '.join(FORMATS)}")
    model = read_model(path)
    if not is_float_model(model):
        raise OnnxImportError(f"{path} is already quantized (it has QDQ, QOperator or dynamically quantized nodes); "
                              f"run it without --calibrate / --format")
    samples = None
    if fmt != "dynamic":
        if data_path is None:
            raise OnnxImportError(f"format {fmt!r} calibrates on samples of the input: give --calibrate DATA.npy")
        shapes = input_shapes(model)
        samples = split_samples(load_samples(data_path, shapes), shapes)
    q = quantize_model(model, samples, per_channel, fmt)
    out = Path(path).with_suffix(SUFFIX[fmt] + ("-pc" if per_channel else "") + ".onnx")
    onnx.save(q, out)
    return out
