"""SqueezeNet 1.1 (Iandola et al. 2016, torchvision's ``squeezenet1_1``), float ONNX.

conv 3x3/2 to 64 + ReLU, max pool 3x3/2 (ceil mode), Fire modules (a 1x1 squeeze + ReLU, then 1x1 and
3x3 expands + ReLU, concatenated) (16, 64) x 2, max pool, (32, 128) x 2, max pool, (48, 192) x 2,
(64, 256) x 2; a 1x1 conv to the classes + ReLU, global average pool. ``width`` scales the channels.
"""

from __future__ import annotations

from .net import Net

INPUT, OUTPUT = "input", "logits"
FIRES = ((16, 64), (16, 64), "pool", (32, 128), (32, 128), "pool", (48, 192), (48, 192), (64, 256), (64, 256))


def build(width: float = 1.0, image: int = 224, classes: int = 1000, seed: int = 0):
    net = Net(f"squeezenet_w{width}_i{image}", seed)
    cin = int(64 * width)
    x = net.maxpool(net.conv(INPUT, 3, cin, 3, 2, 0, tag="features.0."), 3, 2, ceil=True)
    for f in FIRES:
        if f == "pool":
            x = net.maxpool(x, 3, 2, ceil=True)
            continue
        sq, ex = int(f[0] * width), int(f[1] * width)
        s = net.conv(x, cin, sq, 1, tag="fire.squeeze.")
        x = net.concat([net.conv(s, sq, ex, 1, tag="fire.expand1x1."), net.conv(s, sq, ex, 3, tag="fire.expand3x3.")])
        cin = 2 * ex
    x = net.flatten(net.gap(net.conv(x, cin, classes, 1, tag="classifier.")))
    net.output(x, OUTPUT)
    return net.model([(INPUT, ["N", 3, image, image])], [(OUTPUT, ["N", classes])])
