"""VTA's matrix_multiply tutorial: C = A . B^T for A (1, 256) and B (256, 256) int8, accumulated in int32
and cast to int8 (no shift, no clip); then the same product read back exactly as int32.

    .venv/bin/python examples/simple_gemm.py [--config configs/small.json]
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
    with target(args.config) as q:
        cfg = q.cfg
        rng = np.random.default_rng(args.seed)
        n, k, m = cfg.BATCH, 256, 256
        a = rng.integers(-128, 128, size=(n, k), dtype=np.int8)
        b = rng.integers(-128, 128, size=(m, k), dtype=np.int8)
        c, counters = ops.dense(a, b, shift=0, clip=False, return_counters=True)
        ok1 = bool(np.array_equal(c, ops.gemm_ref(a, b).astype(np.int8)))
        report(f"matrix multiply {n}x{k} . {k}x{m} -> int8 on {cfg}", ok1, counters, n * k * m, cfg)
        c32, counters = ops.gemm(a, b, return_counters=True)
        ok2 = bool(np.array_equal(c32, ops.gemm_ref(a, b)))
        report(f"matrix multiply {n}x{k} . {k}x{m} -> exact int32", ok2, counters, n * k * m, cfg)
    return 0 if ok1 and ok2 else 1


if __name__ == "__main__":
    sys.exit(main())
