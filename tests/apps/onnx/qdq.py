"""Small float ONNX graphs of one supported operator, quantized with onnxruntime's quantize_static."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper


def _model(nodes, inits, in_shape, out_shape, extra_inputs=()):
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, in_shape)]
    inputs += [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in extra_inputs]
    g = helper.make_graph(nodes, "t", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
                          [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def single_op(op: str, rng, **kw):
    """(float model, input shape) with a convolution in front where the op needs a computed input."""
    c, h = kw.get("c", 8), kw.get("h", 9)
    shape = [1, c, h, h]
    w1 = {"w1": rng.normal(0, 0.3, (c, c, 3, 3)), "b1": rng.normal(0, 0.1, c)}
    pre = helper.make_node("Conv", ["x", "w1", "b1"], ["t"], pads=[1, 1, 1, 1])
    if op == "conv":
        k, s, p, o = kw.get("k", 3), kw.get("stride", 1), kw.get("pad", 1), kw.get("o", 20)
        g, d = kw.get("group", 1), kw.get("dilation", 1)
        ho = (h + 2 * p - d * (k - 1) - 1) // s + 1
        n = helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[p] * 4, strides=[s, s], kernel_shape=[k, k],
                             group=g, dilations=[d, d])
        return _model([n], {"w": rng.normal(0, 0.3, (o, c // g, k, k)), "b": rng.normal(0, 0.2, o)}, shape,
                      [1, o, ho, ho]), shape
    if op == "deconv":          # ConvTranspose: weight (C, O, k, k)
        k, s, p, o, op_ = kw.get("k", 4), kw.get("stride", 2), kw.get("pad", 1), kw.get("o", 12), kw.get("out_pad", 0)
        ho = (h - 1) * s - 2 * p + k + op_
        n = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], pads=[p] * 4, strides=[s, s], kernel_shape=[k, k],
                             output_padding=[op_, op_])
        return _model([n], {"w": rng.normal(0, 0.3, (c, o, k, k)), "b": rng.normal(0, 0.2, o)}, shape,
                      [1, o, ho, ho]), shape
    if op == "attention":       # scores = x x^T, softmax, context = scores x: two MatMuls of activations
        heads, seq, d = kw.get("heads", 2), kw.get("seq", 8), kw.get("d", 16)
        nodes = [helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 2, 1]),
                 helper.make_node("MatMul", ["x", "xt"], ["s"]),
                 helper.make_node("Softmax", ["s"], ["p"], axis=-1),
                 helper.make_node("MatMul", ["p", "x"], ["y"])]
        return _model(nodes, {}, [heads, seq, d], [heads, seq, d]), [heads, seq, d]
    if op == "conv_leaky":      # conv -> LeakyRelu (YOLO's activation): a pointwise table island after the conv
        n = helper.make_node("LeakyRelu", ["t"], ["y"], alpha=kw.get("alpha", 0.1))
        return _model([pre, n], w1, shape, shape), shape
    if op == "two_leaky":       # two convs, then their two LeakyRelus next to each other, then an add
        inits = {**w1, "w2": rng.normal(0, 0.3, (c, c, 3, 3)), "b2": rng.normal(0, 0.1, c)}
        nodes = [pre, helper.make_node("Conv", ["x", "w2", "b2"], ["u"], pads=[1, 1, 1, 1]),
                 helper.make_node("LeakyRelu", ["t"], ["ta"], alpha=0.1),
                 helper.make_node("LeakyRelu", ["u"], ["ua"], alpha=0.2),
                 helper.make_node("Add", ["ta", "ua"], ["y"])]
        return _model(nodes, inits, shape, shape), shape
    if op == "conv_relu":
        n = helper.make_node("Relu", ["t"], ["y"])
        return _model([pre, n], w1, shape, shape), shape
    if op in ("gemm", "matmul"):
        k, m = kw.get("k", 40), kw.get("m", 24)
        if op == "gemm":
            n = helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1)
            inits = {"w": rng.normal(0, 0.2, (m, k)), "b": rng.normal(0, 0.1, m)}
        else:
            n = helper.make_node("MatMul", ["x", "w"], ["y"])
            inits = {"w": rng.normal(0, 0.2, (k, m))}
        return _model([n], inits, [3, k], [3, m]), [3, k]
    if op == "linear3d":        # nn.Linear on (batch, seq, k) as PyTorch exports it: MatMul, then Add of the bias
        k, m, seq = kw.get("k", 40), kw.get("m", 24), kw.get("seq", 5)
        nodes = [helper.make_node("MatMul", ["x", "w"], ["t"]), helper.make_node("Add", ["t", "b"], ["y"])]
        return _model(nodes, {"w": rng.normal(0, 0.2, (k, m)), "b": rng.normal(0, 0.3, m)}, [2, seq, k],
                      [2, seq, m]), [2, seq, k]
    if op == "bn_concat":       # two convs, Concat, BatchNormalization (nothing to fold it into), ReLU, conv
        c2 = 2 * c
        inits = {**w1, "w2": rng.normal(0, 0.3, (c, c, 3, 3)), "b2": rng.normal(0, 0.1, c),
                 "g": rng.uniform(0.5, 1.5, c2) * np.where(np.arange(c2) % 5 == 0, -1, 1), "be": rng.normal(0, 0.1, c2),
                 "mu": rng.normal(0, 0.1, c2), "var": rng.uniform(0.5, 2, c2),
                 "w3": rng.normal(0, 0.3, (c, c2, 3, 3)), "b3": rng.normal(0, 0.1, c)}
        nodes = [pre, helper.make_node("Conv", ["x", "w2", "b2"], ["u"], pads=[1, 1, 1, 1]),
                 helper.make_node("Concat", ["t", "u"], ["cat"], axis=1),
                 helper.make_node("BatchNormalization", ["cat", "g", "be", "mu", "var"], ["n"]),
                 helper.make_node("Relu", ["n"], ["r"]),
                 helper.make_node("Conv", ["r", "w3", "b3"], ["y"], pads=[1, 1, 1, 1])]
        return _model(nodes, inits, shape, shape), shape
    if op == "mul_channels":    # conv -> Mul by a per-channel constant (1, C, 1, 1) -> conv
        inits = {**w1, "s": rng.uniform(-1.5, 1.5, (1, c, 1, 1)), "w2": rng.normal(0, 0.3, (c, c, 3, 3)),
                 "b2": rng.normal(0, 0.1, c)}
        nodes = [pre, helper.make_node("Mul", ["t", "s"], ["m"]),
                 helper.make_node("Conv", ["m", "w2", "b2"], ["y"], pads=[1, 1, 1, 1])]
        return _model(nodes, inits, shape, shape), shape
    if op == "sum":             # Sum of three tensors (two convs and the input), then a conv
        inits = {**w1, "w2": rng.normal(0, 0.3, (c, c, 3, 3)), "b2": rng.normal(0, 0.1, c),
                 "w3": rng.normal(0, 0.3, (c, c, 3, 3)), "b3": rng.normal(0, 0.1, c)}
        nodes = [pre, helper.make_node("Conv", ["x", "w2", "b2"], ["u"], pads=[1, 1, 1, 1]),
                 helper.make_node("Sum", ["t", "u", "x"], ["s"]),
                 helper.make_node("Conv", ["s", "w3", "b3"], ["y"], pads=[1, 1, 1, 1])]
        return _model(nodes, inits, shape, shape), shape
    if op == "add":
        n = helper.make_node("Add", ["t", "x"], ["y"])
        return _model([pre, n], w1, shape, shape), shape
    if op == "residual":        # conv -> conv -> add(second conv, first conv): a residual block
        inits = {**w1, "w2": rng.normal(0, 0.3, (c, c, 3, 3)), "b2": rng.normal(0, 0.1, c)}
        nodes = [pre, helper.make_node("Conv", ["t", "w2", "b2"], ["u"], pads=[1, 1, 1, 1]),
                 helper.make_node("Add", ["u", "t"], ["y"])]
        return _model(nodes, inits, shape, shape), shape
    if op == "relu":            # a ReLU that quantize_static cannot fold: its input has another consumer
        n = helper.make_node("Relu", ["t"], ["r"])
        a = helper.make_node("Add", ["r", "t"], ["y"])
        return _model([pre, n, a], w1, shape, shape), shape
    if op == "conv_bn":         # a float network as exported before folding: Conv -> BatchNormalization -> Relu
        bn = {"g": rng.uniform(0.5, 1.5, c), "be": rng.normal(0, 0.1, c), "mu": rng.normal(0, 0.1, c),
              "var": rng.uniform(0.5, 2, c)}
        nodes = [pre, helper.make_node("BatchNormalization", ["t", "g", "be", "mu", "var"], ["n"]),
                 helper.make_node("Relu", ["n"], ["y"])]
        return _model(nodes, {**w1, **bn}, shape, shape), shape
    if op == "float_relu":      # a ReLU on the float graph input stays in float
        n = helper.make_node("Relu", ["x"], ["y"])
        return _model([n], {}, shape, shape), shape
    if op == "maxpool":
        n = helper.make_node("MaxPool", ["t"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
        return _model([pre, n], w1, shape, [1, c, (h - 1) // 2 + 1, (h - 1) // 2 + 1]), shape
    if op == "gap":
        n = helper.make_node("GlobalAveragePool", ["t"], ["y"])
        return _model([pre, n], w1, shape, [1, c, 1, 1]), shape
    if op == "avgpool":         # count_include_pad: the padding (the zero point) counts in the average
        k, s, p = kw.get("k", 3), kw.get("stride", 2), kw.get("pad", 1)
        n = helper.make_node("AveragePool", ["t"], ["y"], kernel_shape=[k, k], strides=[s, s], pads=[p] * 4,
                             count_include_pad=kw.get("count_include_pad", 1))
        ho = (h + 2 * p - k) // s + 1
        return _model([pre, n], w1, shape, [1, c, ho, ho]), shape
    if op == "flatten":
        n = helper.make_node("Flatten", ["t"], ["y"], axis=1)
        return _model([pre, n], w1, shape, [1, c * h * h]), shape
    if op == "sigmoid":
        n = helper.make_node("Sigmoid", ["t"], ["y"])
        return _model([pre, n], w1, shape, shape), shape
    if op.startswith("between:"):     # conv -> an operator the accelerator does not run -> conv
        return _between(op.split(":", 1)[1], rng, c, h, w1, pre)
    raise ValueError(op)


def _between(kind, rng, c, h, w1, pre):
    shape = [1, c, h, h]
    nodes, inits = [pre], dict(w1)
    if kind == "Softmax":
        nodes.append(helper.make_node("Softmax", ["t"], ["u"], axis=1))
    elif kind == "Sigmoid":
        nodes.append(helper.make_node("Sigmoid", ["t"], ["u"]))
    elif kind == "LayerNormalization":
        inits.update(ln_s=rng.normal(1, 0.1, h), ln_b=rng.normal(0, 0.1, h))
        nodes.append(helper.make_node("LayerNormalization", ["t", "ln_s", "ln_b"], ["u"], axis=-1))
    elif kind == "Resize":
        inits.update(scales=[1.0, 1.0, 2.0, 2.0])
        nodes.append(helper.make_node("Resize", ["t", "", "scales"], ["u"], mode="nearest"))
    else:
        raise ValueError(kind)
    up = 2 if kind == "Resize" else 1
    inits.update(w2=rng.normal(0, 0.3, (12, c, 3, 3)), b2=rng.normal(0, 0.1, 12))
    nodes.append(helper.make_node("Conv", ["u", "w2", "b2"], ["y"], pads=[1, 1, 1, 1]))
    return _model(nodes, inits, shape, [1, 12, h * up, h * up]), shape


def quantized(op: str, seed: int = 0, calib: int = 8, **kw):
    """(QDQ model, input shape, rng for test inputs)."""
    rng = np.random.default_rng(seed)
    extra = kw.pop("extra_options", None)
    kwargs = {k: kw.pop(k) for k in ("activation_type", "per_channel", "quant_format") if k in kw}
    model, shape = single_op(op, rng, **kw)
    cal = rng.normal(0, 1, (calib, *shape[1:])) if shape[0] == 1 else rng.normal(0, 1, (calib, *shape))
    return quantize_with(model, cal.astype(np.float32), shape, extra, **kwargs), shape, rng


def quantize_with(model, cal, shape, extra=None, **kwargs):
    import os
    import tempfile

    import onnx
    from onnxruntime.quantization import CalibrationDataReader, quantize_static

    if shape[0] == 1:
        items = [{"x": cal[i:i + 1]} for i in range(len(cal))]
    else:
        items = [{"x": cal[i]} for i in range(len(cal))]

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter(items)

        def get_next(self):
            return next(self.it, None)

    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "f.onnx"), os.path.join(tmp, "q.onnx")
        onnx.save(model, src)
        quantize_static(src, dst, Reader(), extra_options=extra, **kwargs)
        return onnx.load(dst)


def dynamic(op: str, seed: int = 0, extra_options=None, **kw):
    """(model quantized by onnxruntime's quantize_dynamic, input shape, rng): MatMulInteger / ConvInteger."""
    import os
    import tempfile

    import onnx
    from onnxruntime.quantization import quantize_dynamic

    rng = np.random.default_rng(seed)
    model, shape = single_op(op, rng, **kw)
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "f.onnx"), os.path.join(tmp, "q.onnx")
        onnx.save(model, src)
        quantize_dynamic(src, dst, extra_options=extra_options)
        return onnx.load(dst), shape, rng


def with_custom_op(q):
    """A copy of ``between:Sigmoid`` with the Sigmoid replaced by onnxruntime's com.microsoft Gelu (a
    custom-domain operator that onnxruntime runs and no handler takes)."""
    import onnx

    m = onnx.ModelProto.FromString(q.SerializeToString())
    node = next(n for n in m.graph.node if n.op_type == "Sigmoid")
    node.op_type, node.domain = "Gelu", "com.microsoft"
    m.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return m


def with_zero_point(q, tensor: str, value: int):
    """A copy of QDQ model ``q`` with the zero point of ``tensor`` (the quantized tensor after its
    QuantizeLinear) set to ``value``: a zero point quantize_static would not choose, still a valid model."""
    import onnx

    m = onnx.ModelProto()
    m.CopyFrom(q)
    node = next(n for n in m.graph.node if n.op_type == "QuantizeLinear" and n.input[0] == tensor)
    init = next(t for t in m.graph.initializer if t.name == node.input[2])
    arr = numpy_helper.to_array(init).copy()
    arr[...] = value
    init.CopyFrom(numpy_helper.from_array(arr, init.name))
    return m
