"""VTA's convolution_opt tutorial layer (ResNet-18 C8): 14x14, 256 -> 256 channels, 3x3, padding 1,
stride 1, with bias, >> 8, clip [0, 127], int8; with 1 and with 2 virtual threads.

    .venv/bin/python examples/conv2d.py [--config configs/default.json] [--layer C8]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import report, target  # noqa: E402

from sw import ops, workloads  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=None)
    parser.add_argument("--layer", default="C8", choices=list(workloads.RESNET18))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    h, w, cin, cout, k, pad, stride = workloads.RESNET18[args.layer]
    ok = True
    with target(args.config) as q:
        cfg = q.cfg
        rng = np.random.default_rng(args.seed)
        batch = cfg.BATCH
        data = rng.integers(-128, 128, size=(batch, cin, h, w), dtype=np.int8)
        weight = rng.integers(-128, 128, size=(cout, cin, k, k), dtype=np.int8)
        bias = rng.integers(-(1 << 14), 1 << 14, size=(cout,), dtype=np.int32)
        expected = ops.conv2d_ref(data, weight, bias, stride, pad)
        for vt in (1, 2):
            y, counters = ops.conv2d(data, weight, bias, stride, pad, virtual_threads=vt, return_counters=True)
            good = bool(np.array_equal(y, expected))
            ok &= good
            ho, wo = y.shape[2:]
            report(f"conv2d ResNet-18 {args.layer} ({h}x{w}, {cin}->{cout}, {k}x{k}, pad {pad}, stride {stride}), "
                   f"virtual_threads={vt}, on {cfg}", good, counters, batch * cout * ho * wo * cin * k * k, cfg)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
