"""VTA's matrix_multiply_opt tutorial: (1, 1024) . (1024, 1024)^T int8 in blocks of 256 input and 256
output channels, then >> 8, clip to [0, 127], int8; with 1 and with 2 virtual threads.

    .venv/bin/python examples/blocked_matrix_multiply.py [--config default]                # on the golden model
    .venv/bin/python examples/blocked_matrix_multiply.py [--config default] --target rtl   # the same on the RTL
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import measured, parse, run_on, show

from sw import ops, runtime


def blocked_matrix_multiply(seed: int) -> list:
    """The example's work on the current runtime (golden model, or the RTL inside cosim.run); its reports."""
    cfg = runtime.current().cfg
    rng = np.random.default_rng(seed)
    n, k, m = cfg.BATCH, 1024, 1024
    data = rng.integers(-128, 128, size=(n, k), dtype=np.int8)
    weight = rng.integers(-128, 128, size=(m, k), dtype=np.int8)
    expected = ops.dense_ref(data, weight)
    reports = []
    for vt in (1, 2):
        y, counters = ops.dense(data, weight, virtual_threads=vt, tiles="blocks256", return_counters=True)
        reports.append(measured(f"blocked matrix multiply {n}x{k} . {k}x{m}, blocks of 256 channels, "
                                f"virtual_threads={vt}", np.array_equal(y, expected), counters, n * k * m))
    return reports


def main(argv=None) -> int:
    args = parse(__doc__.splitlines()[0], argv)
    return show(run_on(args, blocked_matrix_multiply, args.seed))


if __name__ == "__main__":
    sys.exit(main())
