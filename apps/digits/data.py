"""The digits data: scikit-learn's bundled 8x8 images, a fixed train/test split, and the int8 network input.

The data is ``sklearn.datasets.load_digits`` (1797 8x8 images, pixel values 0-16, shipped with
scikit-learn, no download). A fixed permutation (seed :data:`SPLIT_SEED`) holds out :data:`N_TEST` test
images. The network input is ``x_q = 7 * pixel`` (int8 in [0, 112], exact: the float model sees
``pixel / 16``).
"""

from __future__ import annotations

from functools import cache

import numpy as np

__all__ = ["splits", "load_data", "quantize_input", "SPLIT_SEED", "N_TEST", "INPUT_SCALE"]

SPLIT_SEED = 0
N_TEST = 360
INPUT_SCALE = 7          # x_q = 7 * pixel: the float input pixel / 16 is x_q / 112


@cache
def splits():
    """(x_train, y_train, x_test, y_test), read-only and shared: raw pixels (n, 64) int64 in 0..16 and
    labels 0..9 (:func:`load_data` returns copies)."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x = d.data.astype(np.int64)                     # (1797, 64), values 0..16
    y = d.target.astype(np.int64)
    perm = np.random.default_rng(SPLIT_SEED).permutation(len(y))
    test, train = perm[:N_TEST], perm[N_TEST:]
    for a in (x, y):
        a.setflags(write=False)
    return x[train], y[train], x[test], y[test]


def load_data():
    """(x_train, y_train, x_test, y_test): raw pixels (n, 64) int64 in 0..16 and labels 0..9."""
    return tuple(a.copy() for a in splits())


def quantize_input(pixels) -> np.ndarray:
    """Raw pixels (n, 64) in 0..16 -> int8 network input (n, 64) = 7 * pixel."""
    p = np.asarray(pixels)
    if p.min(initial=0) < 0 or p.max(initial=0) > 16:
        raise ValueError("digit pixels must lie in 0..16")
    return (p * INPUT_SCALE).astype(np.int8)
