"""A small builder of float ONNX graphs with seeded weights of realistic statistics, for the zoo.

Every layer is written the way an exporter in eval mode writes it: batch norm folded into the
convolution before it (weights and bias), activations as their own nodes (Relu, Clip for ReLU6,
LeakyRelu, Erf for GELU). Convolution weights are He-normal (std sqrt(2 / fan_in)) times a gain,
biases small; ``gain`` < 1 on the last convolution of a residual branch keeps the sums steady.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Net"]


class Net:
    """Nodes and initializers of one graph; each method adds a layer and returns its output name."""

    def __init__(self, name: str, seed: int = 0):
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.nodes: list = []
        self.inits: list = []
        self._count = 0

    def _name(self, tag: str) -> str:
        self._count += 1
        return f"{tag}{self._count}"

    def const(self, name: str, value, dtype=np.float32) -> str:
        from onnx import numpy_helper

        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype), name))
        return name

    def node(self, op: str, inputs: list[str], tag: str | None = None, **attrs) -> str:
        from onnx import helper

        n = self._name(tag or op.lower())
        self.nodes.append(helper.make_node(op, inputs, [n], name=n, **attrs))
        return n

    # --- layers -------------------------------------------------------------------------------
    def conv(self, x: str, cin: int, cout: int, k: int, stride: int = 1, pad: int | None = None, groups: int = 1,
             act: str | None = "relu", gain: float = 1.0, tag: str = "conv") -> str:
        """Conv (batch norm folded) then ``act``: 'relu', 'relu6', 'leaky' (0.1) or None."""
        pad = (k - 1) // 2 if pad is None else pad
        n = self._name(tag)
        fan_in = cin // groups * k * k
        w = self.rng.normal(0.0, np.sqrt(2.0 / fan_in), (cout, cin // groups, k, k)) * gain
        b = self.rng.normal(0.0, 0.05, cout)
        y = self.node("Conv", [x, self.const(n + ".weight", w), self.const(n + ".bias", b)], n,
                      kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4, group=groups)
        return self.act(y, act)

    def conv_transpose(self, x: str, cin: int, cout: int, k: int, stride: int, pad: int, act: str | None = "relu",
                       tag: str = "deconv") -> str:
        """ConvTranspose (weight (cin, cout, k, k), batch norm folded) then ``act`` ('tanh' too)."""
        n = self._name(tag)
        fan_in = cin * k * k / (stride * stride)
        w = self.rng.normal(0.0, np.sqrt(2.0 / fan_in), (cin, cout, k, k))
        b = self.rng.normal(0.0, 0.05, cout)
        y = self.node("ConvTranspose", [x, self.const(n + ".weight", w), self.const(n + ".bias", b)], n,
                      kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4)
        return self.act(y, act)

    def act(self, x: str, act: str | None) -> str:
        if act is None:
            return x
        if act == "relu":
            return self.node("Relu", [x])
        if act == "relu6":
            lo, hi = self._name("clip.min"), self._name("clip.max")
            return self.node("Clip", [x, self.const(lo, 0.0), self.const(hi, 6.0)], "relu6")
        if act == "leaky":
            return self.node("LeakyRelu", [x], alpha=0.1)
        if act == "tanh":
            return self.node("Tanh", [x])
        if act == "gelu":       # the Erf form exporters write: x * 0.5 * (1 + erf(x / sqrt 2))
            e = self.node("Erf", [self.node("Div", [x, self.const(self._name("sqrt2."), np.sqrt(2.0))])])
            one = self.node("Add", [e, self.const(self._name("one."), 1.0)])
            return self.node("Mul", [self.node("Mul", [x, one]), self.const(self._name("half."), 0.5)], "gelu")
        raise ValueError(f"act = {act!r}")

    def add(self, a: str, b: str, act: str | None = None) -> str:
        return self.act(self.node("Add", [a, b]), act)

    def maxpool(self, x: str, k: int, stride: int, pads=(0, 0, 0, 0), ceil: bool = False) -> str:
        """MaxPool; ``ceil``: ceil_mode (torchvision's SqueezeNet and GoogLeNet)."""
        return self.node("MaxPool", [x], kernel_shape=[k, k], strides=[stride, stride], pads=list(pads),
                         **({"ceil_mode": 1} if ceil else {}))

    def avgpool(self, x: str, k: int, stride: int) -> str:
        return self.node("AveragePool", [x], kernel_shape=[k, k], strides=[stride, stride])

    def batchnorm(self, x: str, c: int, act: str | None = "relu") -> str:
        """BatchNormalization with seeded statistics (one that no convolution precedes, so nothing folds it),
        then ``act``."""
        n = self._name("bn")
        params = [self.const(f"{n}.{k}", v) for k, v in (
            ("weight", self.rng.uniform(0.8, 1.2, c)), ("bias", self.rng.normal(0.0, 0.1, c)),
            ("running_mean", self.rng.normal(0.0, 0.1, c)), ("running_var", self.rng.uniform(0.5, 1.5, c)))]
        return self.act(self.node("BatchNormalization", [x] + params, n), act)

    def split(self, x: str, sizes: list[int], axis: int = 1) -> list[str]:
        """Split into parts of ``sizes`` along ``axis`` (PyTorch's ``chunk`` as opset 17 writes it)."""
        from onnx import helper

        n = self._name("split")
        outs = [f"{n}.{i}" for i in range(len(sizes))]
        self.nodes.append(helper.make_node("Split", [x, self.const(n + ".sizes", sizes, np.int64)], outs, name=n,
                                           axis=axis))
        return outs

    def channel_shuffle(self, x: str, groups: int, c: int, h: int, w: int) -> str:
        """ShuffleNet's channel shuffle as PyTorch exports it: Reshape (N, g, c / g, h, w), Transpose (0, 2, 1, 3,
        4), Reshape (N, c, h, w)."""
        y = self.reshape(x, [0, groups, c // groups, h, w])
        return self.reshape(self.transpose(y, (0, 2, 1, 3, 4)), [0, c, h, w])

    def gap(self, x: str) -> str:
        return self.node("GlobalAveragePool", [x], "avgpool")

    def flatten(self, x: str) -> str:
        return self.node("Flatten", [x], axis=1)

    def dense(self, x: str, cin: int, cout: int, act: str | None = None, gain: float = 1.0, tag: str = "fc") -> str:
        """Gemm with a (cout, cin) weight, transB = 1 (a Linear layer of a 2-D input)."""
        n = self._name(tag)
        w = self.rng.normal(0.0, gain / np.sqrt(cin), (cout, cin))
        b = self.rng.normal(0.0, 0.02, cout)
        y = self.node("Gemm", [x, self.const(n + ".weight", w), self.const(n + ".bias", b)], n, transB=1)
        return self.act(y, act)

    def linear(self, x: str, cin: int, cout: int, act: str | None = None, gain: float = 1.0, tag: str = "fc") -> str:
        """``nn.Linear`` on an input of any rank as PyTorch exports it: MatMul by the (cin, cout) transposed
        weight, then Add of the bias."""
        n = self._name(tag)
        w = self.rng.normal(0.0, gain / np.sqrt(cin), (cin, cout))
        b = self.rng.normal(0.0, 0.02, cout)
        y = self.node("MatMul", [x, self.const(n + ".weight", w)], n + ".matmul")
        return self.act(self.node("Add", [y, self.const(n + ".bias", b)], n), act)

    def resize2x(self, x: str) -> str:
        return self.node("Resize", [x, "", self.const(self._name("scales."), [1.0, 1.0, 2.0, 2.0])], mode="nearest")

    def concat(self, xs: list[str], axis: int = 1) -> str:
        return self.node("Concat", xs, axis=axis)

    def reshape(self, x: str, shape) -> str:
        return self.node("Reshape", [x, self.const(self._name("shape."), shape, np.int64)])

    def transpose(self, x: str, perm) -> str:
        return self.node("Transpose", [x], perm=list(perm))

    def layernorm(self, x: str, width: int) -> str:
        g = self.const(self._name("ln.scale."), self.rng.normal(1.0, 0.05, width))
        b = self.const(self._name("ln.bias."), self.rng.normal(0.0, 0.05, width))
        return self.node("LayerNormalization", [x, g, b], "layernorm", axis=-1)

    # --- the model ----------------------------------------------------------------------------
    def output(self, x: str, name: str) -> str:
        """Give the tensor ``x`` (produced by the last node that writes it, read by none) the name ``name``."""
        node = next(n for n in reversed(self.nodes) if x in n.output)
        node.output[list(node.output).index(x)] = name
        return name

    def model(self, inputs: list[tuple[str, list]], outputs: list[tuple[str, list]]):
        """The checked ``onnx.ModelProto`` (opset 17) with these graph inputs and outputs."""
        import onnx
        from onnx import TensorProto, helper

        graph = helper.make_graph(
            self.nodes, self.name,
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs], self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="openvta")
        model.ir_version = 8
        onnx.checker.check_model(model)
        return model
