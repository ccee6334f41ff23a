"""The float networks and their training: deterministic, float64 numpy, mini-batch Adam written here.

* ``mlp``: 64 -> dense 64 + ReLU -> dense 10
* ``cnn``: 1x8x8 -> conv 3x3, 16 channels, pad 1 + ReLU -> flatten 1024 -> dense 10
"""

from __future__ import annotations

import numpy as np

from .data import splits

__all__ = ["NETS", "float_forward", "train"]

NETS = ("mlp", "cnn")


def _im2col(x):
    """(n, 64) images -> (n, 64 positions, 9) 3x3 patches with zero padding 1 (row-major ky, kx)."""
    img = np.zeros((x.shape[0], 10, 10))
    img[:, 1:9, 1:9] = x.reshape(-1, 8, 8)
    cols = [img[:, ky:ky + 8, kx:kx + 8].reshape(-1, 64) for ky in range(3) for kx in range(3)]
    return np.stack(cols, axis=-1)


def _hidden(net, params, x):
    """Float pre-activations of the hidden layer, as (n, features) in the network's flatten order."""
    if net == "mlp":
        return x @ params["w1"].T + params["b1"]
    z = _im2col(x) @ params["w1"].reshape(params["w1"].shape[0], 9).T + params["b1"]   # (n, 64, C)
    return z.transpose(0, 2, 1).reshape(x.shape[0], -1)                               # (n, C*64)


def float_forward(net, params, x):
    """Float logits for float inputs x = pixel / 16, shape (n, 64). Also returns the hidden activations."""
    h = np.maximum(_hidden(net, params, x), 0.0)
    return h @ params["w2"].T + params["b2"], h


def _init(net, rng, hidden):
    if net == "mlp":
        w1 = rng.normal(0, np.sqrt(2 / 64), (hidden, 64))
        nh = hidden
    elif net == "cnn":
        w1 = rng.normal(0, np.sqrt(2 / 9), (hidden, 1, 3, 3))
        nh = hidden * 64
    else:
        raise ValueError(f"unknown network {net!r}; choose one of {NETS}")
    return {"w1": w1, "b1": np.zeros(hidden), "w2": rng.normal(0, np.sqrt(1 / nh), (10, nh)), "b2": np.zeros(10)}


def _grads(net, params, x, cols, y):
    """Softmax cross-entropy gradients for a mini-batch (cols: the im2col patches for the cnn)."""
    n = x.shape[0]
    logits, h = float_forward(net, params, x)
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    p[np.arange(n), y] -= 1.0
    d = p / n                                                   # dL/dlogits
    g = {"w2": d.T @ h, "b2": d.sum(axis=0)}
    dh = (d @ params["w2"]) * (h > 0)
    if net == "mlp":
        g["w1"], g["b1"] = dh.T @ x, dh.sum(axis=0)
    else:
        c = params["w1"].shape[0]
        dz = dh.reshape(n, c, 64)                               # (n, C, positions)
        g["w1"] = np.einsum("ncp,npk->ck", dz, cols).reshape(params["w1"].shape)
        g["b1"] = dz.sum(axis=(0, 2))
    return g


def train(net="mlp", seed=0, hidden=None, epochs=None, lr=3e-3, batch=32, weight_decay=1e-4):
    """Train the float network on the training split; deterministic for a given seed.

    Mini-batch Adam (beta 0.9 / 0.999) on softmax cross-entropy with a small L2 penalty, float64.
    """
    hidden = hidden or (64 if net == "mlp" else 16)
    epochs = epochs or (40 if net == "mlp" else 30)
    x_raw, y, _, _ = splits()
    x = x_raw / 16.0
    rng = np.random.default_rng(seed)
    params = _init(net, rng, hidden)
    cols_all = _im2col(x) if net == "cnn" else None
    m = {k: np.zeros_like(v) for k, v in params.items()}
    v = {k: np.zeros_like(v) for k, v in params.items()}
    t = 0
    for _ in range(epochs):
        order = rng.permutation(len(y))
        for i in range(0, len(y), batch):
            idx = order[i:i + batch]
            g = _grads(net, params, x[idx], None if cols_all is None else cols_all[idx], y[idx])
            t += 1
            for k in params:
                gk = g[k] + weight_decay * params[k]
                m[k] = 0.9 * m[k] + 0.1 * gk
                v[k] = 0.999 * v[k] + 0.001 * gk * gk
                params[k] = params[k] - lr * (m[k] / (1 - 0.9 ** t)) / (np.sqrt(v[k] / (1 - 0.999 ** t)) + 1e-8)
    return params
