"""VTA's get-started tutorial: C = A + B on the tensor ALU for two int32 (1, 64, BATCH, BLOCK_OUT)
tensors, stored as int8 (the low 8 bits).

    .venv/bin/python examples/get_started_vector_add.py [--config small]                # on the golden model
    .venv/bin/python examples/get_started_vector_add.py [--config small] --target rtl   # the same on the RTL
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import measured, parse, run_on, show

from sw import ops, runtime


def vector_add(seed: int) -> list:
    """The example's work on the current runtime (golden model, or the RTL inside cosim.run); its reports."""
    cfg = runtime.current().cfg
    rng = np.random.default_rng(seed)
    shape = (64, cfg.BATCH, cfg.BLOCK_OUT)        # m = 64 blocks of (BATCH, BLOCK_OUT) lanes
    a = rng.integers(-128, 128, size=shape, dtype=np.int32)
    b = rng.integers(-128, 128, size=shape, dtype=np.int32)
    c, counters = ops.vadd(a, b, return_counters=True)
    return [measured(f"vector add of {a.size} int32 lanes", np.array_equal(c, ops.vadd_ref(a, b)), counters)]


def main(argv=None) -> int:
    args = parse(__doc__.splitlines()[0], argv)
    return show(run_on(args, vector_add, args.seed))


if __name__ == "__main__":
    sys.exit(main())
