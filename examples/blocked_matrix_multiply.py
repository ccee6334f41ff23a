"""VTA's matrix_multiply_opt tutorial: (1, 1024) . (1024, 1024)^T int8 in blocks of 256 input and 256
output channels, then >> 8, clip to [0, 127], int8; with 1 and with 2 virtual threads.

    .venv/bin/python examples/blocked_matrix_multiply.py [--config configs/default.json]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import parse, report, target  # noqa: E402

from sw import ops  # noqa: E402


def main(argv=None) -> int:
    args = parse(__doc__.splitlines()[0], argv)
    ok = True
    with target(args.config) as q:
        cfg = q.cfg
        rng = np.random.default_rng(args.seed)
        n, k, m = cfg.BATCH, 1024, 1024
        data = rng.integers(-128, 128, size=(n, k), dtype=np.int8)
        weight = rng.integers(-128, 128, size=(m, k), dtype=np.int8)
        expected = ops.dense_ref(data, weight)
        for vt in (1, 2):
            y, counters = ops.dense(data, weight, virtual_threads=vt, tiles="blocks256", return_counters=True)
            good = bool(np.array_equal(y, expected))
            ok &= good
            report(f"blocked matrix multiply {n}x{k} . {k}x{m}, blocks of 256 channels, virtual_threads={vt}, "
                   f"on {cfg}", good, counters, n * k * m, cfg)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
