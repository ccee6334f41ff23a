"""The model zoo: the networks VTA and Gemmini ran, built in code, quantized with onnxruntime, run on VTA.

    python -m apps.zoo [--target rtl|fsim] [--models resnet50 mobilenetv2 ...] [--reduced]
    make sim DEMO=zoo [TARGET=fsim]

Every model is written with the ``onnx`` helper API (:mod:`apps.zoo.net`: seeded weights with
He-normal statistics, batch norm folded), its inputs are generated in code (pseudo-natural images,
noise vectors, normalized embeddings), and onnxruntime's ``quantize_static`` (QDQ, int8, MinMax) is
calibrated on them; nothing is downloaded. ``fmt`` picks the other formats users bring: 'qoperator'
(``quantize_static`` with QLinearConv, QGemm, ...) and 'dynamic' (``quantize_dynamic``). Each model has its
full size (the published architecture) and a reduced one (fewer channels, a smaller image or sequence) for the tests.

=================  =====================================================================================
``resnet18-pc``     ResNet-18 (:mod:`apps.resnet18`) with per-channel weight scales
``resnet50``        ResNet-50, 224x224 (:mod:`apps.zoo.resnet50`)
``mobilenetv2``     MobileNetV2 width 1.0, 224x224: depthwise convolutions, ReLU6 (:mod:`apps.zoo.mobilenetv2`)
``yolov3-tiny``     a YOLOv3-tiny-style detector, 416x416, two heads (:mod:`apps.zoo.yolo`)
``dcgan``           the DCGAN generator, 100-d noise to 64x64x3 (:mod:`apps.zoo.dcgan`)
``squeezenet``      SqueezeNet 1.1, 224x224: Fire modules (Concat), ceil-mode max pools (:mod:`apps.zoo.squeezenet`)
``inception``       GoogLeNet (Inception v1), 224x224: four-branch modules (:mod:`apps.zoo.inception`)
``shufflenet``      ShuffleNet V2 1.0x, 224x224: Split, depthwise convs, channel shuffles (:mod:`apps.zoo.shufflenet`)
``densenet121``     DenseNet-121, 224x224: Concat and BatchNormalization before each conv (:mod:`apps.zoo.densenet`)
``bert``            a 2-layer BERT-style encoder, hidden 128, sequence 32, as PyTorch exports it (:mod:`apps.zoo.bert`)
=================  =====================================================================================
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

import numpy as np

from ..onnx.calibrate import FORMATS

__all__ = ["MODELS", "Entry", "quantized", "inputs", "evaluate"]


@dataclass(frozen=True)
class Entry:
    name: str
    module: str                     # apps.zoo.<module> (or apps.resnet18) with build() and INPUT
    full: dict
    reduced: dict
    data: str                       # 'image', 'noise' or 'embeddings'
    per_channel: bool = False
    argmax: bool = True             # outputs compared by argmax (classes, detections); else value by value
    about: str = field(default="", compare=False)
    formats: tuple = FORMATS        # the formats onnxruntime's quantizers quantize it in


MODELS = {e.name: e for e in (
    Entry("resnet18-pc", "apps.resnet18", {"width": 64, "image": 224}, {"width": 8, "image": 32, "classes": 10},
          "image", True, about="ResNet-18, per-channel weight scales"),
    Entry("resnet50", "apps.zoo.resnet50", {"width": 64, "image": 224}, {"width": 8, "image": 32, "classes": 10},
          "image", about="ResNet-50"),
    Entry("mobilenetv2", "apps.zoo.mobilenetv2", {"alpha": 1.0, "image": 224},
          {"alpha": 0.25, "image": 32, "classes": 10}, "image", about="MobileNetV2 1.0"),
    Entry("yolov3-tiny", "apps.zoo.yolo", {"width": 16, "image": 416}, {"width": 4, "image": 64}, "image",
          about="YOLOv3-tiny-style detector"),
    Entry("dcgan", "apps.zoo.dcgan", {"ngf": 64}, {"ngf": 8}, "noise", argmax=False, about="DCGAN generator",
          formats=("qdq",)),          # (onnxruntime's QOperator and dynamic quantizers leave ConvTranspose float)
    Entry("squeezenet", "apps.zoo.squeezenet", {"width": 1.0, "image": 224}, {"width": 0.25, "image": 32, "classes": 10},
          "image", about="SqueezeNet 1.1"),
    Entry("inception", "apps.zoo.inception", {"width": 1.0, "image": 224},
          {"width": 0.125, "image": 32, "classes": 10}, "image", about="GoogLeNet (Inception v1)"),
    Entry("shufflenet", "apps.zoo.shufflenet", {"width": 1.0, "image": 224},
          {"width": 0.25, "image": 32, "classes": 10}, "image", about="ShuffleNet V2 1.0x"),
    Entry("densenet121", "apps.zoo.densenet", {"growth": 32, "width": 64, "image": 224},
          {"growth": 8, "width": 16, "image": 32, "classes": 10, "blocks": (2, 3, 4, 2)}, "image",
          about="DenseNet-121"),
    Entry("bert", "apps.zoo.bert", {"hidden": 128, "seq": 32, "layers": 2, "heads": 2},
          {"hidden": 32, "seq": 8, "layers": 2, "heads": 2}, "embeddings", argmax=False, about="BERT-style encoder"),
)}


def _module(entry: Entry):
    from importlib import import_module

    return import_module(entry.module)


def _size(entry: Entry, reduced: bool) -> dict:
    return entry.reduced if reduced else entry.full


def inputs(name: str, n: int, reduced: bool = False, seed: int = 1000) -> list[dict]:
    """``n`` generated float inputs of a zoo model (each a {graph input: array} dict)."""
    from ..resnet18 import calibration_images

    entry = MODELS[name]
    mod = _module(entry)
    kw = _size(entry, reduced)
    if entry.data == "image":
        xs = calibration_images(n, kw["image"], seed)
        return [{mod.INPUT: xs[i:i + 1]} for i in range(n)]
    rng = np.random.default_rng(seed)
    if entry.data == "noise":
        return [{mod.INPUT: rng.normal(0, 1, (1, 100, 1, 1)).astype(np.float32)} for _ in range(n)]
    out = []
    for _ in range(n):              # embeddings: smooth along the sequence, normalized per token
        e = np.cumsum(rng.normal(0, 1, (kw["seq"], kw["hidden"])), axis=0) * 0.3 + rng.normal(0, 1, kw["hidden"])
        e = (e - e.mean(1, keepdims=True)) / e.std(1, keepdims=True)
        out.append({mod.INPUT: e[None].astype(np.float32)})          # (1, seq, hidden)
    return out


@cache
def _quantized(name: str, reduced: bool, calib: int, fmt: str) -> bytes:
    from ..onnx.calibrate import quantize_model

    entry = MODELS[name]
    model = _module(entry).build(**_size(entry, reduced))
    samples = None if fmt == "dynamic" else inputs(name, calib, reduced, seed=1)
    return quantize_model(model, samples, entry.per_channel, fmt).SerializeToString()


def quantized(name: str, reduced: bool = False, calib: int = 8, fmt: str = "qdq"):
    """The quantized ``onnx.ModelProto`` of a zoo model (built and quantized once per process) in format
    ``fmt`` (:data:`apps.onnx.calibrate.FORMATS`: 'qdq', 'qoperator', 'dynamic')."""
    import onnx

    return onnx.ModelProto.FromString(_quantized(name, reduced, calib, fmt))


def evaluate(name: str, target: str = "fsim", config=None, reduced: bool = False, n_inputs: int = 1,
             report_dir: str | None = None, compare: bool = True, fmt: str = "qdq") -> dict:
    """Run a zoo model quantized in format ``fmt`` on ``n_inputs`` generated inputs: one row of the zoo table
    (MACs, share on the accelerator, CPU islands, cycles, utilization, wall time, exactness, agreement with
    onnxruntime)."""
    from ..onnx import ort
    from ..onnx.model import Model
    from ..onnx.report import rows, totals, write_csv, write_png

    entry = MODELS[name]
    if fmt not in entry.formats:
        raise ValueError(f"{name} in format {fmt!r}: onnxruntime quantizes it as {', '.join(entry.formats)}")
    m = Model(quantized(name, reduced, fmt=fmt), config)
    batch = inputs(name, n_inputs, reduced)
    results = m.run_batch(batch, target=target) if n_inputs > 1 else [m.run(batch[0], target=target)]
    wall = sum(r.seconds for r in results) / n_inputs        # the runs (not the check against the reference)
    rr = rows(results[0].records, m.cfg)
    tot = totals(rr, m.cfg)
    peak = m.cfg.BATCH * m.cfg.BLOCK_IN * m.cfg.BLOCK_OUT
    vta = [r for r in rr if r["where"] == "vta"]
    vta_cycles = sum(r["cycles"] for r in vta)
    row = {"model": name, "format": fmt, "macs": tot["macs"], "mac_share": tot["mac_share"], "cycles": tot["cycles"],
           "utilization": sum(r["macs"] for r in vta) / (vta_cycles * peak) if vta_cycles else float("nan"),
           "seconds": wall, "exact": all(r.exact for r in results), "vta_layers": tot["vta_layers"],
           "islands": tot["islands"], "island_ops": sorted({op for r in rr if r["kind"] == "island"
                                                            for op in r["ops"].split()}),
           "equal": float("nan"), "worst": float("nan"), "max_lsb": -1,
           "outputs": "-"}
    if compare:
        sess = ort.session(m.onnx_model)
        total = ort.Agreement()
        same = n = 0
        diffs = []
        for inp, res in zip(batch, results):
            ag, theirs = m.compare_ort(inp, sess)
            total.rows += ag.rows
            for out in m.graph.outputs:
                q = m.quantized_output(out)
                if entry.argmax:
                    same += int(np.argmax(res.tensors[out]) == np.argmax(theirs[out]))
                    n += 1
                elif q is not None:         # int8 outputs: LSBs apart
                    diffs.append(np.abs(res.tensors[q].astype(np.int32) - theirs[q].astype(np.int32)).ravel())
                else:                       # a float output (a CPU island's): how far apart
                    diffs.append(np.abs(res.tensors[out].astype(np.float64) - theirs[out].astype(np.float64)).ravel())
        if diffs:
            d = np.concatenate(diffs)
            far = f"{int(d.max())} LSB" if d.dtype.kind == "i" else f"{d.max():.3g}"
            outputs = f"{(d == 0).mean():.2%} equal, max {far}"
        else:
            outputs = f"argmax {same}/{n}"
        row.update(equal=total.equal_fraction, worst=total.worst_layer_fraction, max_lsb=total.max_diff,
                   outputs=outputs)
    if report_dir:
        import os

        os.makedirs(report_dir, exist_ok=True)
        stem = os.path.join(report_dir, f"{name}{'_reduced' if reduced else ''}{'' if fmt == 'qdq' else '_' + fmt}"
                                        f"_{target}")
        write_csv(rr, stem + ".csv")
        write_png(rr, stem + ".png", f"{name} on {target}")
        row["report"] = stem + ".csv"
    return row
