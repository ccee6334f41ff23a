"""MobileNetV2 (width 1.0, the architecture of Sandler et al. 2018 / torchvision), float ONNX.

Stem conv 3x3/2 to 32 + ReLU6; inverted residual blocks (t, c, n, s) = (1, 16, 1, 1), (6, 24, 2, 2),
(6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1): a 1x1 expansion by t +
ReLU6, a 3x3 depthwise conv (group = channels) + ReLU6, a linear 1x1 projection, a residual Add when
stride 1 and the widths agree; a 1x1 conv to 1280 + ReLU6, global average pool, fully connected.
ReLU6 is Clip(0, 6), which quantize_static folds into the output range of the conv before it.
"""

from __future__ import annotations

from .net import Net

INPUT, OUTPUT = "input", "logits"
SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
            (6, 320, 1, 1))


def _width(c: float) -> int:
    """Channels rounded to a multiple of 8 (torchvision's _make_divisible)."""
    v = max(8, int(c + 4) // 8 * 8)
    return v + 8 if v < 0.9 * c else v


def build(alpha: float = 1.0, image: int = 224, classes: int = 1000, seed: int = 0):
    net = Net(f"mobilenetv2_a{alpha}_i{image}", seed)
    cin = _width(32 * alpha)
    x = net.conv(INPUT, 3, cin, 3, 2, act="relu6", tag="stem.")
    for t, c, n, s in SETTINGS:
        cout = _width(c * alpha)
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = cin * t
            y = x if t == 1 else net.conv(x, cin, hidden, 1, act="relu6", tag="expand.")
            y = net.conv(y, hidden, hidden, 3, stride, groups=hidden, act="relu6", tag="dw.")
            y = net.conv(y, hidden, cout, 1, act=None, gain=0.5, tag="project.")
            x = net.add(y, x) if stride == 1 and cin == cout else y
            cin = cout
    last = max(1280, _width(1280 * alpha))
    x = net.conv(x, cin, last, 1, act="relu6", tag="head.")
    x = net.flatten(net.gap(x))
    net.output(net.dense(x, last, classes), OUTPUT)
    return net.model([(INPUT, ["N", 3, image, image])], [(OUTPUT, ["N", classes])])
