"""ResNet-18 (torchvision's architecture) as an ONNX model built in code, quantized with onnxruntime.

    python -m apps.resnet18 [--width 64] [--image 224] [-o build/resnet18_qdq.onnx]
    python -m apps.resnet18 --compare 8      # onnxruntime vs the int8 reference on 8 generated images

Nothing is downloaded. :func:`build` writes the float graph with the ``onnx`` helper API: conv1 7x7/2
(pad 3) + ReLU, max pool 3x3/2 (pad 1), four stages of two BasicBlocks (3x3 convs, a 1x1/2
projection on the first block of stages 2-4, residual Add + ReLU), global average pool, flatten,
fully connected to 1000 classes. Batch norm is folded into the convolutions' weights and biases
(what an exporter in eval mode writes). The weights are deterministic (seeded) with He-normal
statistics (std sqrt(2 / fan_in)); the last conv of each block is scaled by 0.5 so the residual
sums keep a steady range. ``width`` (64 in torchvision) and ``image`` (224) make reduced variants for
quick tests.

:func:`calibration_images` generates smooth pseudo-natural images in code (low-frequency noise,
normalized like ImageNet inputs); :func:`quantize` runs ``onnxruntime.quantization.quantize_static``
with its defaults (QDQ, per-tensor, int8 activations and weights, MinMax calibration) on them.
"""

from __future__ import annotations

import argparse
import os
import sys
from functools import cache

import numpy as np

from sw.cli import command, run_as_main

__all__ = ["build", "calibration_images", "quantize", "quantized_model", "INPUT"]

INPUT = "input"


def build(width: int = 64, image: int = 224, classes: int = 1000, seed: int = 0):
    """The float ResNet-18 as an ``onnx.ModelProto`` (input 'input' (N, 3, image, image))."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    count = [0]

    def name(prefix):
        count[0] += 1
        return f"{prefix}{count[0]}"

    def conv(x, cin, cout, k, stride, pad, scale=1.0, relu=True, tag="conv"):
        n = name(tag)
        w = rng.normal(0.0, np.sqrt(2.0 / (cin * k * k)), (cout, cin, k, k)) * scale
        b = rng.normal(0.0, 0.05, cout)
        inits.extend([numpy_helper.from_array(w.astype(np.float32), n + ".weight"),
                      numpy_helper.from_array(b.astype(np.float32), n + ".bias")])
        nodes.append(helper.make_node("Conv", [x, n + ".weight", n + ".bias"], [n], name=n,
                                      kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4))
        if not relu:
            return n
        nodes.append(helper.make_node("Relu", [n], [n + ".relu"], name=n + ".relu"))
        return n + ".relu"

    def block(x, cin, cout, stride, tag):
        y = conv(x, cin, cout, 3, stride, 1, tag=tag + ".conv")
        y = conv(y, cout, cout, 3, 1, 1, scale=0.5, relu=False, tag=tag + ".conv")
        skip = x if stride == 1 and cin == cout else conv(x, cin, cout, 1, stride, 0, relu=False,
                                                          tag=tag + ".downsample")
        a = name(tag + ".add")
        nodes.append(helper.make_node("Add", [y, skip], [a], name=a))
        nodes.append(helper.make_node("Relu", [a], [a + ".relu"], name=a + ".relu"))
        return a + ".relu"

    x = conv(INPUT, 3, width, 7, 2, 3, tag="conv1.")
    nodes.append(helper.make_node("MaxPool", [x], ["maxpool"], name="maxpool", kernel_shape=[3, 3],
                                  strides=[2, 2], pads=[1, 1, 1, 1]))
    x, cin = "maxpool", width
    for stage, mult in enumerate((1, 2, 4, 8), start=1):
        cout = width * mult
        x = block(x, cin, cout, 1 if stage == 1 else 2, f"layer{stage}.0")
        x = block(x, cout, cout, 1, f"layer{stage}.1")
        cin = cout
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["avgpool"], name="avgpool"))
    nodes.append(helper.make_node("Flatten", ["avgpool"], ["flatten"], name="flatten", axis=1))
    fw = rng.normal(0.0, 1.0 / np.sqrt(cin), (classes, cin))
    fb = rng.normal(0.0, 0.01, classes)
    inits.extend([numpy_helper.from_array(fw.astype(np.float32), "fc.weight"),
                  numpy_helper.from_array(fb.astype(np.float32), "fc.bias")])
    nodes.append(helper.make_node("Gemm", ["flatten", "fc.weight", "fc.bias"], ["logits"], name="fc", transB=1))
    graph = helper.make_graph(
        nodes, f"resnet18_w{width}_i{image}",
        [helper.make_tensor_value_info(INPUT, TensorProto.FLOAT, ["N", 3, image, image])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", classes])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="openvta")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def calibration_images(n: int, image: int = 224, seed: int = 1) -> np.ndarray:
    """n smooth pseudo-natural images (n, 3, image, image) float32, normalized like ImageNet inputs:
    bilinear upsampling of coarse noise at two scales plus a little pixel noise."""
    rng = np.random.default_rng(seed)
    out = np.empty((n, 3, image, image), np.float32)
    grid = np.linspace(0, 1, image)
    for i in range(n):
        img = np.zeros((3, image, image))
        for cells, amp in ((4, 1.0), (16, 0.5)):
            coarse = rng.normal(0, amp, (3, cells + 1, cells + 1))
            pos = grid * cells
            i0 = np.minimum(pos.astype(int), cells - 1)
            f = pos - i0
            rows = coarse[:, i0] * (1 - f)[None, :, None] + coarse[:, i0 + 1] * f[None, :, None]
            img += rows[:, :, i0] * (1 - f)[None, None, :] + rows[:, :, i0 + 1] * f[None, None, :]
        img += rng.normal(0, 0.1, img.shape)
        out[i] = img / img.std()
    return out


def quantize(model, calibration: np.ndarray, input_name: str = INPUT, per_channel: bool = False):
    """quantize_static with its defaults (QDQ, QInt8 activations and weights, MinMax; per-tensor weight
    scales, or per output channel) on the given calibration inputs, one image at a time; returns the QDQ
    ``onnx.ModelProto``."""
    return _calibrate(model, calibration, input_name, batch=1, per_channel=per_channel)


def _calibrate(model, calibration: np.ndarray, input_name: str, batch: int = 1, per_channel: bool = False):
    from .onnx.calibrate import quantize_model

    return quantize_model(model, [{input_name: calibration[i:i + batch]} for i in range(0, len(calibration), batch)],
                          per_channel)


@cache
def _quantized(width, image, calib, seed, per_channel):
    model = build(width, image, seed=seed)
    q = quantize(model, calibration_images(calib, image), per_channel=per_channel)
    return model.SerializeToString(), q.SerializeToString()


def quantized_model(width: int = 64, image: int = 224, calib: int = 8, seed: int = 0, per_channel: bool = False):
    """(float model, QDQ model) of a ResNet-18 variant, built and quantized once per process."""
    import onnx

    f, q = _quantized(width, image, calib, seed, per_channel)
    return onnx.ModelProto.FromString(f), onnx.ModelProto.FromString(q)


def compare(q, n: int, image: int, out=None) -> int:
    """Per-layer agreement (each layer fed onnxruntime's input), top-1 and the final int8 differences
    of the whole network, onnxruntime vs the int8 reference, over n generated images."""
    from .onnx import ort
    from .onnx.model import Model

    out = out or sys.stdout
    m = Model(q)
    sess = ort.session(q)
    total = ort.Agreement()
    same_top1, diffs = 0, []
    q_out = m.quantized_output("logits")
    for i in range(n):
        x = calibration_images(1, image, seed=1000 + i)
        ag, theirs = m.compare_ort({INPUT: x}, sess)
        total.rows += ag.rows
        ours = m.reference({INPUT: x})
        same_top1 += int(np.argmax(ours["logits"]) == np.argmax(theirs["logits"]))
        diffs.append(np.abs(ours[q_out].astype(np.int32) - theirs[q_out].astype(np.int32)).ravel())
        print(f"  image {i}: layers {ag.equal_fraction:.4%} equal (worst {ag.worst_layer_fraction:.4%}), "
              f"max {ag.max_diff} LSB; top-1 ours {np.argmax(ours['logits'])} onnxruntime "
              f"{np.argmax(theirs['logits'])}", file=out, flush=True)
    d = np.concatenate(diffs)
    print(f"{n} images: per-layer int8 outputs equal {total.equal_fraction:.4%} (worst layer-image "
          f"{total.worst_layer_fraction:.4%}), largest difference {total.max_diff} LSB; top-1 identical "
          f"{same_top1}/{n}; final int8 logits |ours - onnxruntime|: "
          + ", ".join(f"{k}: {(d == k).mean():.2%}" for k in range(int(d.max()) + 1)), file=out)
    return 0 if same_top1 == n and total.max_diff <= 1 else 1


@command
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--image", type=int, default=224)
    parser.add_argument("--calib", type=int, default=8, help="calibration images (default 8)")
    parser.add_argument("-o", "--output", default="build/resnet18_qdq.onnx")
    parser.add_argument("--compare", type=int, default=0, metavar="N",
                        help="compare onnxruntime with the numpy int8 reference (which the golden model and "
                             "the RTL equal bit for bit) on N generated images (seeds 1000...)")
    args = parser.parse_args(argv)
    import onnx

    _, q = quantized_model(args.width, args.image, args.calib)
    if args.compare:
        return compare(q, args.compare, args.image)
    os.makedirs(os.path.dirname(args.output) or ".", exist_ok=True)
    onnx.save(q, args.output)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    run_as_main(__spec__)
