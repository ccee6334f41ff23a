"""A YOLOv3-tiny-style detector (the layer list of darknet's yolov3-tiny.cfg), float ONNX.

Backbone: conv 3x3 + LeakyRelu(0.1) to 16, 32, 64, 128, 256 channels, each followed by a 2x2/2 max
pool, conv 512 and a 2x2 max pool with stride 1 (padded right and bottom), conv 1024; head 1: conv
1x1 256, conv 3x3 512, conv 1x1 to 3 * (5 + classes) (linear); head 2: conv 1x1 128 of the 256-channel
branch, nearest 2x Resize, Concat with the backbone's 256-channel map, conv 3x3 256, conv 1x1 to
3 * (5 + classes). The two heads are the outputs (the box decoding is post-processing).
"""

from __future__ import annotations

from .net import Net

INPUT, OUTPUTS = "input", ("head1", "head2")


def build(width: int = 16, image: int = 416, classes: int = 80, seed: int = 0):
    net = Net(f"yolov3tiny_w{width}_i{image}", seed)
    x, cin = INPUT, 3
    route = None
    for i, mult in enumerate((1, 2, 4, 8, 16, 32)):
        cout = width * mult
        x = net.conv(x, cin, cout, 3, act="leaky", tag=f"backbone{i}.")
        if mult == 16:
            route = x                       # the 256-channel map at 1/16 of the image
        x = net.maxpool(x, 2, 2) if mult < 32 else net.maxpool(x, 2, 1, (0, 0, 1, 1))
        cin = cout
    x = net.conv(x, cin, width * 64, 3, act="leaky", tag="backbone6.")
    branch = net.conv(x, width * 64, width * 16, 1, act="leaky", tag="head1.")
    y = net.conv(branch, width * 16, width * 32, 3, act="leaky", tag="head1.")
    out = 3 * (5 + classes)
    net.output(net.conv(y, width * 32, out, 1, act=None, tag="head1.out"), OUTPUTS[0])
    u = net.conv(branch, width * 16, width * 8, 1, act="leaky", tag="head2.")
    u = net.concat([net.resize2x(u), route])
    u = net.conv(u, width * 8 + width * 16, width * 16, 3, act="leaky", tag="head2.")
    net.output(net.conv(u, width * 16, out, 1, act=None, tag="head2.out"), OUTPUTS[1])
    s1, s2 = image // 32, image // 16
    return net.model([(INPUT, ["N", 3, image, image])], [(OUTPUTS[0], ["N", out, s1, s1]), (OUTPUTS[1], ["N", out, s2, s2])])
