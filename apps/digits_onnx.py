"""The digits MLP and CNN (apps.digits) through the ONNX path: export, quantize_static, run on VTA.

    python -m apps.digits_onnx [--target fsim|rtl] [--images N]

:func:`export` writes a trained float network (``apps.digits.train``) as an ONNX model with the
``onnx`` helper API (MLP: Gemm, Relu, Gemm; CNN: Conv 3x3 pad 1, Relu, Flatten, Gemm; input
``pixel / 16``); :func:`quantized` quantizes it with onnxruntime's ``quantize_static`` (its
defaults, QDQ) calibrated on the training split; :func:`evaluate` runs the test split through
:class:`apps.onnx.model.Model` and reports float, onnxruntime-int8 and VTA-int8 accuracy.
"""

from __future__ import annotations

import argparse
from functools import cache

import numpy as np

from sw.cli import command, run_as_main

from . import digits
from .resnet18 import _calibrate

__all__ = ["export", "inputs", "quantized", "evaluate", "describe", "INPUT"]

INPUT = "pixels"


def export(net: str, params: dict):
    """The float network as an ``onnx.ModelProto``: input 'pixels' (N, 64) for the MLP, (N, 1, 8, 8)
    for the CNN, values pixel / 16; output 'logits' (N, 10)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    def init(name, a):
        return numpy_helper.from_array(np.asarray(a, np.float32), name)

    inits = [init(k, v) for k, v in params.items()]
    if net == "mlp":
        nodes = [helper.make_node("Gemm", [INPUT, "w1", "b1"], ["h"], name="dense1", transB=1),
                 helper.make_node("Relu", ["h"], ["h_relu"], name="relu1"),
                 helper.make_node("Gemm", ["h_relu", "w2", "b2"], ["logits"], name="readout", transB=1)]
        shape = ["N", 64]
    elif net == "cnn":
        c = params["w1"].shape[0]
        inits[0] = init("w1", params["w1"].reshape(c, 1, 3, 3))
        nodes = [helper.make_node("Conv", [INPUT, "w1", "b1"], ["h"], name="conv1", pads=[1, 1, 1, 1],
                                  kernel_shape=[3, 3]),
                 helper.make_node("Relu", ["h"], ["h_relu"], name="relu1"),
                 helper.make_node("Flatten", ["h_relu"], ["flat"], name="flatten", axis=1),
                 helper.make_node("Gemm", ["flat", "w2", "b2"], ["logits"], name="readout", transB=1)]
        shape = ["N", 1, 8, 8]
    else:
        raise ValueError(f"net = {net!r}; allowed: {', '.join(digits.NETS)}")
    g = helper.make_graph(nodes, f"digits_{net}", [helper.make_tensor_value_info(INPUT, TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="openvta")
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def inputs(net: str, pixels) -> np.ndarray:
    """Raw pixels (n, 64) in 0..16 -> the float model input."""
    x = (np.asarray(pixels, np.float64) / 16.0).astype(np.float32)
    return x if net == "mlp" else x.reshape(-1, 1, 8, 8)


@cache
def _quantized(net):
    m = digits.model(net)
    f = export(net, m.params)
    x_train = digits.load_data()[0]
    q = _calibrate(f, inputs(net, x_train), INPUT, batch=64)
    return f.SerializeToString(), q.SerializeToString()


def quantized(net: str):
    """(float, QDQ) ONNX models of a digits network, calibrated on the training split."""
    import onnx

    f, q = _quantized(net)
    return onnx.ModelProto.FromString(f), onnx.ModelProto.FromString(q)


def evaluate(net: str, target: str = "fsim", images: int | None = None, config=None) -> dict:
    """Accuracies on the test split (or its first ``images``): float (onnxruntime), int8 onnxruntime,
    int8 on ``target``; exactness against the numpy reference; onnxruntime agreement."""
    from .onnx import ort
    from .onnx.model import Model

    f, q = quantized(net)
    _, _, x_test, y_test = digits.load_data()
    if images:
        x_test, y_test = x_test[:images], y_test[:images]
    x = inputs(net, x_test)
    model = Model(q, config)
    res = model.run({INPUT: x}, target=target)
    ag, theirs = model.compare_ort({INPUT: x})
    fl = ort.session(f, all_tensors=False).run(["logits"], {INPUT: x})[0]
    return {"net": net, "images": len(y_test), "target": target, "exact": res.exact,
            "float_accuracy": float((fl.argmax(1) == y_test).mean()),
            "ort_int8_accuracy": float((theirs["logits"].argmax(1) == y_test).mean()),
            "vta_int8_accuracy": float((res.tensors["logits"].argmax(1) == y_test).mean()),
            "top1_equal_ort": float((theirs["logits"].argmax(1) == res.tensors["logits"].argmax(1)).mean()),
            "layer_equal": ag.equal_fraction, "layer_max_diff": ag.max_diff, "seconds": res.seconds,
            "records": res.records, "cfg": model.cfg}


@command
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="fsim", choices=("fsim", "rtl", "cpu"))
    parser.add_argument("--images", type=int, default=None)
    parser.add_argument("--config", default=None)
    args = parser.parse_args(argv)
    ok = True
    for net in digits.NETS:
        r = evaluate(net, args.target, args.images, args.config)
        ok &= bool(r["exact"])
        print(describe(r))
    return 0 if ok else 1


def describe(r: dict) -> str:
    """One line of an :func:`evaluate` result."""
    cyc = sum(rec["counters"].get("cycles", 0) for rec in r["records"])
    return (f"{r['net']}: {r['images']} test digits on {r['target']}: float {r['float_accuracy']:.2%}, "
            f"int8 onnxruntime {r['ort_int8_accuracy']:.2%}, int8 VTA {r['vta_int8_accuracy']:.2%}; "
            f"equal to the numpy reference: {'PASS' if r['exact'] else 'FAIL'}; top-1 equal to onnxruntime "
            f"{r['top1_equal_ort']:.2%}; layers vs onnxruntime {r['layer_equal']:.4%} equal, max "
            f"{r['layer_max_diff']} LSB" + (f"; {cyc / r['images']:.0f} cycles per image" if cyc else ""))


if __name__ == "__main__":
    run_as_main(__spec__)
