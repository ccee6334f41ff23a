"""VTA's get-started tutorial: C = A + B on the tensor ALU for two int32 (1, 64, BATCH, BLOCK_OUT)
tensors, stored as int8 (the low 8 bits).

    .venv/bin/python examples/get_started_vector_add.py [--config configs/small.json]
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
        shape = (64, cfg.BATCH, cfg.BLOCK_OUT)        # m = 64 blocks of (BATCH, BLOCK_OUT) lanes
        a = rng.integers(-128, 128, size=shape, dtype=np.int32)
        b = rng.integers(-128, 128, size=shape, dtype=np.int32)
        c, counters = ops.vadd(a, b, return_counters=True)
        ok = bool(np.array_equal(c, ops.vadd_ref(a, b)))
        report(f"vector add of {a.size} int32 lanes on {cfg}", ok, counters)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
