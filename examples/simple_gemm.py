"""VTA's matrix_multiply tutorial: C = A . B^T for A (1, 256) and B (256, 256) int8, accumulated in int32
and cast to int8 (no shift, no clip); then the same product read back exactly as int32.

    .venv/bin/python examples/simple_gemm.py [--config small]                # on the golden model
    .venv/bin/python examples/simple_gemm.py [--config small] --target rtl   # the same function on the Verilated RTL
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import measured, parse, run_on, show

from sw import ops, runtime


def simple_gemm(seed: int) -> list:
    """The example's work on the current runtime (golden model, or the RTL inside cosim.run); its reports."""
    cfg = runtime.current().cfg
    rng = np.random.default_rng(seed)
    n, k, m = cfg.BATCH, 256, 256
    a = rng.integers(-128, 128, size=(n, k), dtype=np.int8)
    b = rng.integers(-128, 128, size=(m, k), dtype=np.int8)
    c, counters = ops.dense(a, b, shift=0, clip=False, return_counters=True)
    first = measured(f"matrix multiply {n}x{k} . {k}x{m} -> int8", np.array_equal(c, ops.gemm_ref(a, b).astype(np.int8)),
                     counters, n * k * m)
    c32, counters = ops.gemm(a, b, return_counters=True)
    return [first, measured(f"matrix multiply {n}x{k} . {k}x{m} -> exact int32",
                            np.array_equal(c32, ops.gemm_ref(a, b)), counters, n * k * m)]


def main(argv=None) -> int:
    args = parse(__doc__.splitlines()[0], argv)
    return show(run_on(args, simple_gemm, args.seed))


if __name__ == "__main__":
    sys.exit(main())
