"""DenseNet-121 (Huang et al. 2017, torchvision's ``densenet121``), float ONNX.

conv 7x7/2 to 64 + ReLU, max pool 3x3/2; dense blocks of 6, 12, 24 and 16 layers with growth rate 32, each
layer BatchNormalization + ReLU, conv 1x1 to 4 x 32 (its batch norm folded) + ReLU, conv 3x3 to 32, its
output concatenated to the block's features; between the blocks a transition: BatchNormalization + ReLU,
conv 1x1 halving the channels, average pool 2x2/2; a last BatchNormalization + ReLU, global average pool,
fully connected. The batch norms before a conv follow a Concat, so nothing folds them: they stay
BatchNormalization nodes in the quantized model. ``growth`` and ``width`` (the stem's channels) scale it.
"""

from __future__ import annotations

from .net import Net

INPUT, OUTPUT = "input", "logits"
BLOCKS = (6, 12, 24, 16)


def build(growth: int = 32, width: int = 64, image: int = 224, classes: int = 1000, blocks=BLOCKS, seed: int = 0):
    net = Net(f"densenet_g{growth}_w{width}_i{image}", seed)
    x = net.maxpool(net.conv(INPUT, 3, width, 7, 2, 3, tag="features.conv0."), 3, 2, (1, 1, 1, 1))
    c = width
    for b, layers in enumerate(blocks):
        for i in range(layers):
            tag = f"denseblock{b + 1}.layer{i + 1}."
            y = net.conv(net.batchnorm(x, c), c, 4 * growth, 1, tag=tag + "conv1.")
            y = net.conv(y, 4 * growth, growth, 3, act=None, tag=tag + "conv2.")
            x = net.concat([x, y])
            c += growth
        if b < len(blocks) - 1:
            x = net.avgpool(net.conv(net.batchnorm(x, c), c, c // 2, 1, act=None, tag=f"transition{b + 1}."), 2, 2)
            c //= 2
    x = net.flatten(net.gap(net.batchnorm(x, c)))
    net.output(net.dense(x, c, classes), OUTPUT)
    return net.model([(INPUT, ["N", 3, image, image])], [(OUTPUT, ["N", classes])])
