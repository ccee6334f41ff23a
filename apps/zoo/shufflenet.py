"""ShuffleNet V2 1.0x (Ma et al. 2018, torchvision's ``shufflenet_v2_x1_0``), float ONNX.

conv 3x3/2 to 24 + ReLU, max pool 3x3/2; three stages of 4, 8 and 4 units to 116, 232 and 464 channels;
conv 1x1 to 1024 + ReLU, global average pool, fully connected. A unit of stride 2 runs two branches on the
whole input (3x3 depthwise /2, 1x1 + ReLU; and 1x1 + ReLU, 3x3 depthwise /2, 1x1 + ReLU); a unit of stride 1
splits the channels in halves (Split, PyTorch's ``chunk``) and runs the second branch on one. The halves are
concatenated and shuffled: Reshape to (N, 2, C / 2, H, W), Transpose, Reshape back. ``width`` scales the
stages' channels.
"""

from __future__ import annotations

from .net import Net

INPUT, OUTPUT = "input", "logits"
STAGES = ((4, 116), (8, 232), (4, 464))


def build(width: float = 1.0, image: int = 224, classes: int = 1000, seed: int = 0):
    net = Net(f"shufflenetv2_w{width}_i{image}", seed)
    cin = 24
    x = net.maxpool(net.conv(INPUT, 3, cin, 3, 2, tag="conv1."), 3, 2, (1, 1, 1, 1))
    h = (image + 1) // 2
    h = (h + 1) // 2
    for repeats, c in STAGES:
        c = max(8, int(c * width)) // 2 * 2
        half = c // 2
        for i in range(repeats):
            tag = f"stage.{i}."
            if i == 0:
                left = net.conv(x, cin, cin, 3, 2, groups=cin, act=None, tag=tag + "branch1.")
                left = net.conv(left, cin, half, 1, tag=tag + "branch1.")
                right, rin = x, cin
                h = (h + 1) // 2
            else:
                left, right = net.split(x, [half, half])
                rin = half
            right = net.conv(right, rin, half, 1, tag=tag + "branch2.")
            right = net.conv(right, half, half, 3, 2 if i == 0 else 1, groups=half, act=None, tag=tag + "branch2.")
            right = net.conv(right, half, half, 1, tag=tag + "branch2.")
            x = net.channel_shuffle(net.concat([left, right]), 2, c, h, h)
            cin = c
    x = net.conv(x, cin, 1024, 1, tag="conv5.")
    x = net.flatten(net.gap(x))
    net.output(net.dense(x, 1024, classes), OUTPUT)
    return net.model([(INPUT, ["N", 3, image, image])], [(OUTPUT, ["N", classes])])
