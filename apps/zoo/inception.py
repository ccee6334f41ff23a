"""GoogLeNet / Inception v1 (Szegedy et al. 2015, torchvision's ``googlenet`` without its auxiliary heads),
float ONNX.

conv 7x7/2 to 64, max pool 3x3/2 (ceil mode), conv 1x1 64, conv 3x3 192, max pool; Inception modules (a 1x1
branch; 1x1 then 3x3; 1x1 then 3x3 (torchvision's for the 5x5); max pool 3x3/1 then 1x1; concatenated)
3a, 3b, max pool, 4a-4e, max pool, 5a, 5b; global average pool, fully connected. Every conv is followed by
its batch norm (folded) and ReLU. ``width`` scales the channels.
"""

from __future__ import annotations

from .net import Net

INPUT, OUTPUT = "input", "logits"
# (1x1, 3x3 reduce, 3x3, "5x5" reduce, "5x5", pool projection) per module; "pool" between the stages
MODULES = ((64, 96, 128, 16, 32, 32), (128, 128, 192, 32, 96, 64), "pool",
           (192, 96, 208, 16, 48, 64), (160, 112, 224, 24, 64, 64), (128, 128, 256, 24, 64, 64),
           (112, 144, 288, 32, 64, 64), (256, 160, 320, 32, 128, 128), "pool",
           (256, 160, 320, 32, 128, 128), (384, 192, 384, 48, 128, 128))


def build(width: float = 1.0, image: int = 224, classes: int = 1000, seed: int = 0):
    net = Net(f"inception_w{width}_i{image}", seed)

    def w(c):
        return max(4, int(c * width))

    x = net.maxpool(net.conv(INPUT, 3, w(64), 7, 2, 3, tag="conv1."), 3, 2, ceil=True)
    x = net.conv(x, w(64), w(64), 1, tag="conv2.")
    x = net.maxpool(net.conv(x, w(64), w(192), 3, tag="conv3."), 3, 2, ceil=True)
    cin = w(192)
    for m in MODULES:
        if m == "pool":
            x = net.maxpool(x, 3, 2, ceil=True)
            continue
        c1, r3, c3, r5, c5, cp = (w(c) for c in m)
        b1 = net.conv(x, cin, c1, 1, tag="inception.b1.")
        b2 = net.conv(net.conv(x, cin, r3, 1, tag="inception.b2."), r3, c3, 3, tag="inception.b2.")
        b3 = net.conv(net.conv(x, cin, r5, 1, tag="inception.b3."), r5, c5, 3, tag="inception.b3.")
        b4 = net.conv(net.maxpool(x, 3, 1, (1, 1, 1, 1), ceil=True), cin, cp, 1, tag="inception.b4.")
        x = net.concat([b1, b2, b3, b4])
        cin = c1 + c3 + c5 + cp
    x = net.flatten(net.gap(x))
    net.output(net.dense(x, cin, classes), OUTPUT)
    return net.model([(INPUT, ["N", 3, image, image])], [(OUTPUT, ["N", classes])])
