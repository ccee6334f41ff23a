"""The DCGAN generator (Radford et al. 2016, PyTorch's DCGAN example: nz 100, ngf 64, 64x64x3), float ONNX.

Noise (N, 100, 1, 1) -> ConvTranspose 4x4 to 8 ngf channels (4x4) -> ConvTranspose 4x4/2 (pad 1) to
4 ngf (8x8), 2 ngf (16x16), ngf (32x32), each with batch norm (folded) and ReLU -> ConvTranspose 4x4/2
to 3 channels (64x64) and Tanh.
"""

from __future__ import annotations

from .net import Net

INPUT, OUTPUT = "noise", "image"


def build(ngf: int = 64, nz: int = 100, seed: int = 0):
    net = Net(f"dcgan_g{ngf}", seed)
    x = net.conv_transpose(INPUT, nz, ngf * 8, 4, 1, 0, tag="deconv1.")
    cin = ngf * 8
    for i, mult in enumerate((4, 2, 1), start=2):
        x = net.conv_transpose(x, cin, ngf * mult, 4, 2, 1, tag=f"deconv{i}.")
        cin = ngf * mult
    net.output(net.conv_transpose(x, cin, 3, 4, 2, 1, act="tanh", tag="deconv5."), OUTPUT)
    return net.model([(INPUT, ["N", nz, 1, 1])], [(OUTPUT, ["N", 3, 64, 64])])
