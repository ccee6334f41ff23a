"""VTA's convolution_opt tutorial layer (ResNet-18 C8): 14x14, 256 -> 256 channels, 3x3, padding 1,
stride 1, with bias, >> 8, clip [0, 127], int8; with 1 and with 2 virtual threads.

    .venv/bin/python examples/conv2d.py [--config default] [--layer C8]                # on the golden model
    .venv/bin/python examples/conv2d.py [--config default] [--layer C8] --target rtl   # the same on the RTL
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import measured, parser, run_on, show

from sw import ops, runtime
from sw.testing import workloads


def conv2d(layer: str, seed: int) -> list:
    """The example's work on the current runtime (golden model, or the RTL inside cosim.run); its reports."""
    h, w, cin, cout, k, pad, stride = workloads.RESNET18[layer]
    cfg = runtime.current().cfg
    rng = np.random.default_rng(seed)
    batch = cfg.BATCH
    data = rng.integers(-128, 128, size=(batch, cin, h, w), dtype=np.int8)
    weight = rng.integers(-128, 128, size=(cout, cin, k, k), dtype=np.int8)
    bias = rng.integers(-(1 << 14), 1 << 14, size=(cout,), dtype=np.int32)
    expected = ops.conv2d_ref(data, weight, bias, stride, pad)
    reports = []
    for vt in (1, 2):
        y, counters = ops.conv2d(data, weight, bias, stride, pad, virtual_threads=vt, return_counters=True)
        ho, wo = y.shape[2:]
        reports.append(measured(f"conv2d ResNet-18 {layer} ({h}x{w}, {cin}->{cout}, {k}x{k}, pad {pad}, stride "
                                f"{stride}), virtual_threads={vt}", np.array_equal(y, expected), counters,
                                batch * cout * ho * wo * cin * k * k))
    return reports


def main(argv=None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--layer", default="C8", choices=list(workloads.RESNET18))
    args = p.parse_args(argv)
    return show(run_on(args, conv2d, args.layer, args.seed))


if __name__ == "__main__":
    sys.exit(main())
