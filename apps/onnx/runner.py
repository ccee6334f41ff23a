"""Run a prepared graph layer by layer: each layer where its handler places it (the accelerator through
:mod:`sw.ops`, or the CPU: numpy integers, or onnxruntime for an island), with a record of where it
ran, why, and what it cost.

:func:`run` is a module-level function, so ``cosim.run(runner.run, layers, inputs)`` runs the same
network on the RTL; :func:`run_batch` runs several inputs in one call (one simulator launch).
"""

from __future__ import annotations

import time

import numpy as np

from sw.cli import progress_bar

from .layers import Layer, bind

__all__ = ["run", "run_batch", "placement", "Record"]


def placement(lay: Layer, xs) -> tuple[str, str]:
    """('vta' | 'cpu', reason) for a layer given its inputs on the current config."""
    if lay.cpu_reason:
        return "cpu", lay.cpu_reason
    return lay.handler.placement(lay, xs)


class Record(dict):
    """One layer's row: name, kind, where, reason, in/out shapes, macs, counters, seconds."""


def run(layers: list[Layer], inputs: dict, virtual_threads: int = 2, progress: bool = False,
        force_cpu: bool = False) -> tuple[dict, list[Record]]:
    """Run the network; returns (tensors, records). Tensors are canonical int8 (float where the graph
    has float tensors); records, one per layer, say where it ran and its counters (cycles on the RTL)."""
    env = dict(inputs)
    records = []
    bar = progress_bar(len(layers), "layers") if progress else None
    for lay in layers:
        xs = [env[n] for n in lay.node.inputs]
        where, reason = placement(lay, xs)
        if force_cpu and where == "vta":
            where, reason = "cpu", "forced"
        t = time.perf_counter()
        counters = {}
        if where == "vta":
            y, counters = lay.handler.lower(lay, xs, virtual_threads)
            counters = dict(counters)
        else:
            y = lay.reference(*xs)
        dt = time.perf_counter() - t
        bind(env, lay, y)
        first = y[0] if isinstance(y, tuple) else y
        records.append(Record(name=lay.name, kind=lay.kind, where=where, reason=reason,
                              in_shape=tuple(np.shape(xs[0])) if xs else (), out_shape=tuple(np.shape(first)),
                              macs=int(lay.handler.macs(lay, xs, first)), counters=counters, seconds=dt))
        if bar is not None:
            bar.set_postfix_str(f"{lay.kind} {lay.name[:40]} on {where}", refresh=False)
            bar.update()
    if bar is not None:
        bar.close()
    return env, records


def run_batch(layers: list[Layer], batch: list[dict], virtual_threads: int = 2) -> list[tuple[dict, list[Record]]]:
    """:func:`run` for each input dict of ``batch``, one after the other."""
    return [run(layers, inputs, virtual_threads) for inputs in batch]
