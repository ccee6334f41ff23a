"""An int8 digit classifier end to end: scikit-learn's bundled digits, trained in numpy, run on VTA.

    python -m apps.digits [--net mlp|cnn] [--rtl N]     # train, quantize, print accuracies (and RTL cycles)

The data is ``sklearn.datasets.load_digits`` (1797 8x8 images, pixel values 0-16, shipped with
scikit-learn, no download). A fixed permutation (seed :data:`SPLIT_SEED`) holds out 360 test images.

Two networks, trained deterministically in float64 numpy (fixed seed, mini-batch Adam written here):

* ``mlp``: 64 -> dense 64 + ReLU -> dense 10
* ``cnn``: 1x8x8 -> conv 3x3, 16 channels, pad 1 + ReLU -> flatten 1024 -> dense 10

Post-training quantization to VTA's arithmetic (the definition is :func:`reference`):

* input: ``x_q = 7 * pixel`` (int8 in [0, 112], exact: the float model sees ``pixel / 16``);
* hidden layers (dense or conv2d): int8 weights, int32 accumulation, ``>> shift``, ``+ bias``
  (int32, in output units), clip to [0, 127], int8 -- exactly :func:`sw.ops.dense` /
  :func:`sw.ops.conv2d`. The activation scale comes from the largest training-set activation; the
  shift is the largest power of two for which the weights still fit in [-127, 127], and the weight
  scale absorbs the power of two, so the output scale is exactly the calibrated one. The bias takes
  half an output unit more to cancel the floor of the arithmetic shift on average;
* the readout (last dense layer): exact int32 logits, ``W_q . h + b`` with the bias in accumulator
  units, computed by :func:`sw.ops.gemm` (which stores all four bytes of each accumulator) and
  one int32 addition on the host; the prediction is the argmax (first index on ties).

:func:`run` executes a quantized network through :mod:`sw.ops` on the current runtime target (the
golden model by default; ``cosim.run(digits.run, net, x_q)`` runs the same function on the RTL) and
returns the logits and the summed counters, whose ``cycles`` (on the RTL) give cycles per image.
Nothing is cached on disk; :func:`model` memoises trained networks in the process only.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from functools import cache

import numpy as np

from sw import ops
from sw.cli import command, run_as_main

__all__ = ["load_data", "train", "quantize", "quantize_input", "float_forward", "reference", "run",
           "predict", "accuracy", "model", "add_counters", "describe", "Layer", "QuantNet", "Model", "NETS", "INPUT_SCALE",
           "SPLIT_SEED", "N_TEST"]

SPLIT_SEED = 0
N_TEST = 360
INPUT_SCALE = 7          # x_q = 7 * pixel: the float input pixel / 16 is x_q / 112
NETS = ("mlp", "cnn")


# ---------------------------------------------------------------------- data
@cache
def _digits():
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
    return tuple(a.copy() for a in _digits())


def quantize_input(pixels) -> np.ndarray:
    """Raw pixels (n, 64) in 0..16 -> int8 network input (n, 64) = 7 * pixel."""
    p = np.asarray(pixels)
    if p.min(initial=0) < 0 or p.max(initial=0) > 16:
        raise ValueError("digit pixels must lie in 0..16")
    return (p * INPUT_SCALE).astype(np.int8)


# ---------------------------------------------------------------------- float model and training
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
    x_raw, y, _, _ = _digits()
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


# ---------------------------------------------------------------------- quantized network
@dataclass(frozen=True)
class Layer:
    """One quantized layer.

    kind ``"dense"``: weight (M, K) int8, bias (M,) int32 -> ops.dense(x, weight, bias, shift), int8.
    kind ``"conv2d"``: weight (O, C, kh, kw) int8, bias (O,) int32, padding -> ops.conv2d, int8.
    kind ``"readout"``: weight (M, K) int8, bias (M,) int32 in accumulator units -> int32 logits
    ``ops.gemm(x, weight) + bias``. A 4-D input is flattened (N, C*H*W) before a dense/readout.
    """
    kind: str
    weight: np.ndarray
    bias: np.ndarray
    shift: int = 0
    padding: int = 0


@dataclass(frozen=True)
class QuantNet:
    """A quantized network: ``layers`` applied in order to int8 input of ``input_shape`` per image."""
    name: str
    input_shape: tuple
    layers: tuple


def _fit_shift(w, s_in, s_out, what):
    """(shift, weight scale): the largest shift with |W| * s_out * 2^shift / s_in <= 127."""
    wmax = float(np.abs(w).max())
    shift = int(np.floor(np.log2(127.0 / wmax * s_in / s_out)))
    if shift < 0:
        raise ValueError(f"{what}: weights too large for an int8 layer at this activation scale")
    return shift, s_out * 2.0 ** shift / s_in


def quantize(net, params) -> QuantNet:
    """Post-training quantization (see the module docstring), calibrated on the training split."""
    x_raw = _digits()[0]
    s_in = 112.0                                     # int8 units per unit of pixel / 16
    _, h = float_forward(net, params, x_raw / 16.0)
    s_h = 127.0 / float(h.max())                     # hidden int8 units per float unit
    shift, s_w = _fit_shift(params["w1"], s_in, s_h, "hidden layer")
    w1 = np.clip(np.round(params["w1"] * s_w), -127, 127).astype(np.int8)
    b1 = np.round(params["b1"] * s_h + 0.5).astype(np.int32)
    if net == "mlp":
        first = Layer("dense", w1, b1, shift)
        shape = (64,)
    else:
        first = Layer("conv2d", w1, b1, shift, padding=1)
        shape = (1, 8, 8)
    s_w2 = 127.0 / float(np.abs(params["w2"]).max())
    w2 = np.clip(np.round(params["w2"] * s_w2), -127, 127).astype(np.int8)
    b2 = np.round(params["b2"] * s_w2 * s_h).astype(np.int32)
    return QuantNet(net, shape, (first, Layer("readout", w2, b2)))


def _as_input(net: QuantNet, x_q):
    x_q = np.asarray(x_q)
    if x_q.dtype != np.int8:
        raise TypeError(f"network input must be int8 (use quantize_input); got {x_q.dtype}")
    return x_q.reshape((x_q.shape[0],) + tuple(net.input_shape))


def _readout_bias(acc, bias):
    out = acc.astype(np.int64) + bias.astype(np.int64)[None]
    if out.min(initial=0) < -2**31 or out.max(initial=0) >= 2**31:   # pragma: no cover - guarded by scales
        raise OverflowError("readout logits overflow int32")
    return out.astype(np.int32)


def reference(net: QuantNet, x_q) -> np.ndarray:
    """The bit-exact definition of the int8 network in numpy: int32 logits (n, 10)."""
    x = _as_input(net, x_q)
    for layer in net.layers:
        if layer.kind == "conv2d":
            x = ops.conv2d_ref(x, layer.weight, layer.bias, 1, layer.padding, layer.shift, True)
            continue
        x = x.reshape(x.shape[0], -1)
        if layer.kind == "dense":
            x = ops.dense_ref(x, layer.weight, layer.bias, layer.shift, True)
        else:
            x = _readout_bias(ops.gemm_ref(x, layer.weight), layer.bias)
    return x


def run(net: QuantNet, x_q, virtual_threads=2):
    """Run the network through :mod:`sw.ops` on the current runtime: (int32 logits (n, 10), counters).

    Module-level so that ``cosim.run(run, net, x_q)`` runs it on the RTL. The counters of every layer
    are summed (``cycles`` / n is the cost per image on the RTL).
    """
    x = _as_input(net, x_q)
    total: dict = {}
    for layer in net.layers:
        if layer.kind == "conv2d":
            x, c = ops.conv2d(x, layer.weight, layer.bias, 1, layer.padding, layer.shift, True,
                              virtual_threads=virtual_threads, return_counters=True)
        else:
            x = np.ascontiguousarray(x.reshape(x.shape[0], -1))
            if layer.kind == "dense":
                x, c = ops.dense(x, layer.weight, layer.bias, layer.shift, True,
                                 virtual_threads=virtual_threads, return_counters=True)
            else:
                acc, c = ops.gemm(x, layer.weight, virtual_threads=virtual_threads, return_counters=True)
                x = _readout_bias(acc, layer.bias)
        add_counters(total, c)
    return x, total


def add_counters(total: dict, counters: dict) -> dict:
    """Add the integer counters of one operator call into ``total`` (in place); return it."""
    for k, v in dict(counters).items():
        if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
            total[str(k)] = total.get(str(k), 0) + int(v)
    return total


def predict(logits) -> np.ndarray:
    return np.argmax(np.asarray(logits), axis=1)


def accuracy(pred, labels) -> float:
    return float(np.mean(np.asarray(pred) == np.asarray(labels)))


@dataclass(frozen=True)
class Model:
    """A trained network: float parameters, its quantized form and the test accuracies."""
    name: str
    params: dict
    qnet: QuantNet
    float_accuracy: float
    int8_accuracy: float


@cache
def model(net="mlp", seed=0) -> Model:
    """Train (deterministically) and quantize ``net``; memoised in this process."""
    params = train(net, seed)
    qnet = quantize(net, params)
    _, _, x_test, y_test = _digits()
    logits, _ = float_forward(net, params, x_test / 16.0)
    acc_f = accuracy(predict(logits), y_test)
    acc_q = accuracy(predict(reference(qnet, quantize_input(x_test))), y_test)
    return Model(net, params, qnet, acc_f, acc_q)


def describe(net: QuantNet) -> str:
    parts = []
    for layer in net.layers:
        w = layer.weight.shape
        if layer.kind == "conv2d":
            parts.append(f"conv2d {w[1]}->{w[0]} {w[2]}x{w[3]} pad {layer.padding} >>{layer.shift} clip")
        elif layer.kind == "dense":
            parts.append(f"dense {w[1]}->{w[0]} >>{layer.shift} clip")
        else:
            parts.append(f"readout {w[1]}->{w[0]} int32")
    return " | ".join(parts)


@command
def main(argv=None) -> int:
    import time

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--net", choices=NETS + ("all",), default="all")
    parser.add_argument("--rtl", type=int, default=0, metavar="N",
                        help="also classify N test images on the RTL (co-simulation) and print cycles per image")
    args = parser.parse_args(argv)
    _, _, x_test, y_test = load_data()
    x_q = quantize_input(x_test)
    for name in NETS if args.net == "all" else (args.net,):
        t = time.perf_counter()
        m = model(name)
        print(f"{name}: {describe(m.qnet)}; trained in {time.perf_counter() - t:.1f} s")
        logits, c = run(m.qnet, x_q)
        same = np.array_equal(logits, reference(m.qnet, x_q))
        print(f"  test accuracy: float {m.float_accuracy:.2%}, int8 {m.int8_accuracy:.2%}; "
              f"golden model equal to the reference on {len(x_q)} images: {same}")
        if args.rtl:
            import cosim

            n = args.rtl
            out, c = cosim.run(run, m.qnet, x_q[:n])
            ok = np.array_equal(out, reference(m.qnet, x_q[:n]))
            print(f"  RTL on {n} images: accuracy {accuracy(predict(out), y_test[:n]):.2%}, equal to the "
                  f"reference: {ok}, {c['cycles'] / n:.0f} cycles per image")
    return 0


if __name__ == "__main__":
    run_as_main(__spec__)
