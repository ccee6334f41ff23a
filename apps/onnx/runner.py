"""Run a prepared graph: conv / dense / residual add on the accelerator through :mod:`sw.ops`, the rest
on the CPU, layer by layer, with a record of where each node ran and what it cost.

The partition (:func:`placement`): a layer runs on VTA when its kind is offloadable (conv2d, dense,
add of two tensors of one shape) and the config can do its requantization (ALU MUL); everything else
(quantize / dequantize of the graph's float inputs and outputs, max pool, global average pool,
flatten, ReLU that is not folded into a requantization) runs in numpy on the CPU, with exactly the
reference's integers. :func:`run` is a module-level function, so ``cosim.run(runner.run, layers,
inputs)`` runs the same network on the RTL.
"""

from __future__ import annotations

import time

import numpy as np

from sw import ops
from sw.cli import progress_bar
from sw.isa import AluOp
from sw.runtime import current_config

from .layers import Layer, _prepare_gap

__all__ = ["run", "placement", "Record"]


def placement(lay: Layer, xs) -> tuple[str, str]:
    """('vta' | 'cpu', reason) for a layer given its inputs."""
    if lay.kind not in ("conv", "dense", "add"):
        return "cpu", f"{lay.kind} runs on the CPU"
    if lay.cpu_reason:
        return "cpu", lay.cpu_reason
    if lay.kind == "add" and xs[0].shape != xs[1].shape:
        return "cpu", "add with broadcasting"
    if lay.kind == "conv" and _im2col_pays(lay):
        return "vta", "im2col on the host (few input channels), GEMM on VTA"
    return "vta", ""


def _im2col_pays(lay: Layer) -> bool:
    """A conv with fewer input channels than a block (an RGB stem) wastes most of each GEMM block;
    as a GEMM over its im2col matrix (K = C*kh*kw) it fills the blocks."""
    cfg = current_config()
    c, kh, kw = lay.params["weight"].shape[1:]
    block = cfg.BLOCK_IN
    direct = c / (-(-c // block) * block)
    k = c * kh * kw
    return direct < 0.5 and k / (-(-k // block) * block) > 2 * direct


def _im2col(x, kh, kw, stride):
    """(N, C, H, W) already padded -> (N*Ho*Wo, C*kh*kw), rows in (n, oh, ow) order, columns (c, ky, kx)."""
    n, c, h, w = x.shape
    sh, sw = stride
    ho, wo = (h - kh) // sh + 1, (w - kw) // sw + 1
    cols = np.empty((n, ho, wo, c, kh, kw), x.dtype)
    for ky in range(kh):
        for kx in range(kw):
            cols[:, :, :, :, ky, kx] = x[:, :, ky:ky + sh * (ho - 1) + 1:sh, kx:kx + sw * (wo - 1) + 1:sw].transpose(
                0, 2, 3, 1)
    return cols.reshape(n * ho * wo, c * kh * kw), (n, ho, wo)


def _run_vta(lay: Layer, xs, vt):
    p = lay.params
    if lay.kind == "conv" and _im2col_pays(lay):
        o, c, kh, kw = p["weight"].shape
        cols, (n, ho, wo) = _im2col(lay.pad_input(xs[0]), kh, kw, p["strides"])
        y, counters = ops.dense(cols, p["weight"].reshape(o, -1), p["vectors"], epilogue=lay.epilogue,
                                virtual_threads=vt, return_counters=True)
        return np.ascontiguousarray(y.reshape(n, ho, wo, o).transpose(0, 3, 1, 2)), counters
    if lay.kind == "conv":
        x = xs[0]
        t, l, b, r = p["pads"]
        kh, kw = p["weight"].shape[2:]
        if lay.inp[0].zero_point == 0 and t == l == b == r and t < min(kh, kw):
            pad = t                               # zero padding is the zero point: the LOADs pad
        else:
            x, pad = lay.pad_input(x), 0          # pad with the zero point on the host
        return ops.conv2d(x, p["weight"], p["vectors"], stride=int(p["strides"][0]), padding=pad,
                          epilogue=lay.epilogue, virtual_threads=vt, return_counters=True)
    if lay.kind == "dense":
        x = xs[0].reshape(xs[0].shape[0], -1)
        return ops.dense(x, p["weight"], p["vectors"], epilogue=lay.epilogue, virtual_threads=vt,
                         return_counters=True)
    pre = [[(AluOp.ADD, -q.zero_point), (AluOp.MUL, m1), (AluOp.MUL, m2)]
           for q, (m1, m2) in zip(lay.inp, p["factors"])]
    pre = [[s for s in st if not (s[0] == AluOp.MUL and s[1] == 1) and not (s[0] == AluOp.ADD and s[1] == 0)]
           for st in pre]
    return ops.add_rescaled(xs[0], xs[1], pre[0], pre[1], lay.steps, virtual_threads=vt,
                            return_counters=True)


class Record(dict):
    """One layer's row: name, kind, where, reason, in/out shapes, macs, counters, seconds."""


def run(layers: list[Layer], inputs: dict, virtual_threads: int = 2, progress: bool = False,
        force_cpu: bool = False):
    """Run the network; returns (tensors, records). Tensors are canonical int8 (float for graph
    outputs); records, one per layer, say where it ran and its counters (cycles on the RTL)."""
    env = dict(inputs)
    records = []
    bar = progress_bar(len(layers), "layers") if progress else None
    for lay in layers:
        xs = [env[n] for n in lay.node.inputs]
        if lay.kind == "gap" and lay.params.get("hw") != xs[0].shape[2] * xs[0].shape[3]:
            _prepare_gap(lay, xs[0].shape[2] * xs[0].shape[3])
        where, reason = placement(lay, xs)
        if force_cpu:
            where, reason = "cpu", "forced"
        t = time.perf_counter()
        counters = {}
        if where == "vta":
            y, counters = _run_vta(lay, xs, virtual_threads)
            counters = dict(counters)
        else:
            y = lay.reference(*xs)
        dt = time.perf_counter() - t
        env[lay.node.output] = y
        macs = 0
        if lay.kind == "conv":
            macs = int(np.prod(y.shape)) * lay.macs_per_item // lay.params["weight"].shape[0]
        elif lay.kind == "dense":
            macs = y.shape[0] * lay.params["weight"].size
        records.append(Record(name=lay.name, kind=lay.kind, where=where, reason=reason,
                              in_shape=tuple(xs[0].shape) if xs else (), out_shape=tuple(np.shape(y)),
                              macs=int(macs), counters=counters, seconds=dt))
        if bar is not None:
            bar.set_postfix_str(f"{lay.kind} {lay.name[:40]} on {where}", refresh=False)
            bar.update()
    if bar is not None:
        bar.close()
    return env, records
