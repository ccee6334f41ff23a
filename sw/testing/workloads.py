"""Benchmark workloads of the operators: VTA's GEMM and dense tests, the ResNet-18 conv layers and MobileNetV2's
depthwise layers.

Each workload is a module-level function and its arguments, ready for the golden model, ``cosim.run``
or the benchmarks (``sw.testing.fsim_speed``, ``cosim.perf.operators``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import cast

import numpy as np

from sw.isa import AluOp
from sw.ops import Epilogue, conv2d, conv2d_nchw, conv2d_ref, dense, dense_ref
from sw.ops.base import config

# ResNet-18 layers of VTA's conv2d benchmark (docs/architecture.md): H, W, Cin, Cout, k, pad, stride
RESNET18 = {
    "C2": (56, 56, 64, 64, 3, 1, 1),
    "C3": (56, 56, 64, 128, 3, 1, 2),
    "C4": (56, 56, 64, 128, 1, 0, 2),
    "C5": (28, 28, 128, 128, 3, 1, 1),
    "C6": (28, 28, 128, 256, 3, 1, 2),
    "C7": (28, 28, 128, 256, 1, 0, 2),
    "C8": (14, 14, 256, 256, 3, 1, 1),
    "C9": (14, 14, 256, 512, 3, 1, 2),
    "C10": (14, 14, 256, 512, 1, 0, 2),
    "C11": (7, 7, 512, 512, 3, 1, 1),
}


def _rand(rng, shape, lo=-128, hi=128, dtype=np.int8):
    return rng.integers(lo, hi, size=shape, dtype=dtype)


def run_dense_workload(n: int, k: int, m: int, virtual_threads: int = 1, bias: bool = False,
                       tiles: Sequence[int] | str | None = None, seed: int = 0) -> dict:
    """Random int8 dense (N, K) x (M, K) with VTA's requantization; returns counters, MACs and the check."""
    rng = np.random.default_rng(seed)
    x, wt = _rand(rng, (n, k)), _rand(rng, (m, k))
    b = _rand(rng, (m,), -(1 << 14), 1 << 14, np.int32) if bias else None
    y, counters = dense(x, wt, b, virtual_threads=virtual_threads, tiles=tiles, return_counters=True)
    ok = bool(np.array_equal(y, dense_ref(x, wt, b)))
    return {"ok": ok, "macs": n * k * m, "counters": counters}


RESIDUAL_EPILOGUE = Epilogue(((AluOp.SHR, 8), (AluOp.ADD, "v0"), (AluOp.ADD, "r"), (AluOp.MIN, 127), (AluOp.MAX, 0)),
                             residual=((AluOp.ADD, -3), (AluOp.SHR, 1)))
"""VTA's requantization with a residual added before the clip (no MUL: every config runs it)."""


def run_conv2d_workload(name: str | None = None, batch: int | None = None, h: int | None = None, w: int | None = None,
                        cin: int | None = None, cout: int | None = None, k: int | None = None, pad: int | None = None,
                        stride: int | None = None, virtual_threads: int = 1, bias: bool = True,
                        tiles: Sequence[int] | None = None, seed: int = 0, residual: bool = False) -> dict:
    """Random conv2d layer (a RESNET18 name, or explicit sizes) with bias; returns counters, MACs, check.
    ``residual``: a random int8 residual added in the epilogue (:data:`RESIDUAL_EPILOGUE`)."""
    sizes = RESNET18[name] if name is not None else (h, w, cin, cout, k, pad, stride)
    # cast: explicit sizes are all given (the caller names a layer or gives them)
    h, w, cin, cout, k, pad, stride = cast("tuple[int, int, int, int, int, int, int]", sizes)
    batch = batch or config().BATCH
    rng = np.random.default_rng(seed)
    x, wt = _rand(rng, (batch, cin, h, w)), _rand(rng, (cout, cin, k, k))
    b = _rand(rng, (cout,), -(1 << 14), 1 << 14, np.int32) if bias or residual else None
    if residual:
        ho, wo = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
        r = _rand(rng, (batch, cout, ho, wo))
        y, counters = conv2d(x, wt, b, stride, pad, virtual_threads=virtual_threads, tiles=tiles, return_counters=True,
                             epilogue=RESIDUAL_EPILOGUE, residual=r)
        assert b is not None            # made with the residual
        expected = RESIDUAL_EPILOGUE.reference(conv2d_nchw(x, wt, stride, pad), b[None], 1, r)
    else:
        y, counters = conv2d(x, wt, b, stride, pad, virtual_threads=virtual_threads, tiles=tiles, return_counters=True)
        expected = conv2d_ref(x, wt, b, stride, pad)
    ok = bool(np.array_equal(y, expected))
    ho, wo = y.shape[2:]
    return {"ok": ok, "macs": batch * cout * ho * wo * cin * k * k, "counters": counters}


def run_resnet18_layer(name: str, virtual_threads: int = 1, seed: int = 0) -> dict:
    """One ResNet-18 layer of :data:`RESNET18` with bias, batch = BATCH (see :func:`run_conv2d_workload`)."""
    return run_conv2d_workload(name, virtual_threads=virtual_threads, seed=seed)


# MobileNetV2's depthwise 3x3 layers (padding 1), each distinct shape once: H (= W), channels, stride
MOBILENETV2_DW = {
    "dw112": (112, 32, 1), "dw112s2": (112, 96, 2), "dw56": (56, 144, 1), "dw56s2": (56, 144, 2),
    "dw28": (28, 192, 1), "dw28s2": (28, 192, 2), "dw14": (14, 384, 1), "dw14c576": (14, 576, 1),
    "dw14s2": (14, 576, 2), "dw7": (7, 960, 1),
}


def run_depthwise_workload(name: str, virtual_threads: int = 1, seed: int = 0) -> dict:
    """A MobileNetV2 depthwise 3x3 layer (a :data:`MOBILENETV2_DW` name) with bias and VTA's requantization, as
    ``ops.conv2d(groups=C)`` runs it on the config (the DEPTHWISE mode where the planner takes it); returns
    counters, MACs and the check."""
    h, c, stride = MOBILENETV2_DW[name]
    rng = np.random.default_rng(seed)
    x, wt = _rand(rng, (1, c, h, h)), _rand(rng, (c, 1, 3, 3))
    b = _rand(rng, (c,), -(1 << 14), 1 << 14, np.int32)
    y, counters = conv2d(x, wt, b, stride, 1, virtual_threads=virtual_threads, return_counters=True, groups=c)
    want = np.clip((conv2d_nchw(x, wt, stride, 1, groups=c).astype(np.int64) >> 8) + b[None, :, None, None], 0, 127)
    return {"ok": bool(np.array_equal(y, want.astype(np.int8))), "macs": int(y.size) * 9, "counters": counters}


def workloads(virtual_threads: int = 2) -> dict[str, tuple[Callable, tuple]]:
    """Benchmark workloads: name -> (module-level function, positional args), ready for
    ``fn(*args)`` on the current runtime or ``cosim.run(fn, *args)`` on the RTL. Each call returns
    ``{"ok", "macs", "counters"}``; MAC utilisation = macs / (cycles * BATCH*BLOCK_IN*BLOCK_OUT) on a
    target that counts cycles (the golden model counts GEMM micro-ops but no cycles)."""
    vt = virtual_threads
    out: dict[str, tuple[Callable, tuple]] = {
        "matrix_multiply_opt": (run_dense_workload, (1, 1024, 1024, vt, False, "blocks256")),
        "gemm_256": (run_dense_workload, (256, 256, 256, vt)),
        "dense_128": (run_dense_workload, (128, 128, 128, vt)),
        "dense_16x512x1008": (run_dense_workload, (16, 512, 1008, vt)),
    }
    for name in RESNET18:
        out[f"resnet18.{name}"] = (run_resnet18_layer, (name, vt))
    for name in MOBILENETV2_DW:
        out[f"mobilenetv2.{name}"] = (run_depthwise_workload, (name, vt))
    return out
