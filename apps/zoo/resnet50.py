"""ResNet-50 (torchvision's architecture: Bottleneck blocks [3, 4, 6, 3], expansion 4), float ONNX.

conv1 7x7/2 + ReLU, max pool 3x3/2, four stages of Bottlenecks (1x1 reduce, 3x3 with the stage's
stride, 1x1 expand with gain 0.5, a 1x1 projection on the first block of each stage, residual Add +
ReLU), global average pool, fully connected. ``width`` 64 and ``image`` 224 are torchvision's.
"""

from __future__ import annotations

from .net import Net

INPUT, OUTPUT = "input", "logits"


def build(width: int = 64, image: int = 224, classes: int = 1000, seed: int = 0):
    net = Net(f"resnet50_w{width}_i{image}", seed)
    x = net.conv(INPUT, 3, width, 7, 2, 3, tag="conv1.")
    x = net.maxpool(x, 3, 2, (1, 1, 1, 1))
    cin = width
    for stage, (blocks, mult) in enumerate(((3, 1), (4, 2), (6, 4), (3, 8)), start=1):
        mid, cout = width * mult, width * mult * 4
        for i in range(blocks):
            stride = 2 if i == 0 and stage > 1 else 1
            tag = f"layer{stage}.{i}."
            y = net.conv(x, cin, mid, 1, tag=tag + "conv")
            y = net.conv(y, mid, mid, 3, stride, tag=tag + "conv")
            y = net.conv(y, mid, cout, 1, act=None, gain=0.5, tag=tag + "conv")
            skip = x if i else net.conv(x, cin, cout, 1, stride, act=None, tag=tag + "downsample")
            x = net.add(y, skip, "relu")
            cin = cout
    x = net.flatten(net.gap(x))
    net.output(net.dense(x, cin, classes), OUTPUT)
    return net.model([(INPUT, ["N", 3, image, image])], [(OUTPUT, ["N", classes])])
