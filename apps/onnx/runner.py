"""Run a prepared graph layer by layer: each layer where its handler places it (the accelerator through
:mod:`sw.ops`, or the CPU: numpy integers, or onnxruntime for an island), with a record of where it
ran, why, and what it cost.

:func:`run` is a module-level function, so a runner of :mod:`sw.runtime.runners` runs the same network on the
golden model, the RTL or a board (several inputs as several calls of one run).
"""

from __future__ import annotations

import time
from collections import Counter

import numpy as np

from sw.cli import progress_bar

from .layers import Layer, bind

__all__ = ["run", "placement", "residual_adds", "table_tails", "Record"]


def placement(lay: Layer, xs) -> tuple[str, str]:
    """('vta' | 'cpu', reason) for a layer given its inputs on the current config."""
    if lay.cpu_reason:
        return "cpu", lay.cpu_reason
    return lay.handler.placement(lay, xs)


class Record(dict):
    """One layer's row: name, kind, where, reason, in/out shapes, macs, counters, seconds, ops (an island's
    ONNX operators)."""


def _fusable(layers: list[Layer], keep, reader_of: dict) -> dict:
    """id(conv layer) -> ``reader_of[its output]`` for each conv whose output has that one reader and is not in
    ``keep`` (graph outputs)."""
    readers = Counter(t for lay in layers for t in lay.node.inputs)
    return {id(lay): reader_of[lay.node.output] for lay in layers
            if lay.kind == "conv" and lay.node.output in reader_of and readers[lay.node.output] == 1
            and lay.node.output not in keep}


def residual_adds(layers: list[Layer], keep=()) -> dict[int, tuple[Layer, int]]:
    """Residual adds that may be fused into the conv producing one of their inputs: id(conv layer) ->
    (add layer, the input the conv's output is). The conv's output must have no other reader and not
    be in ``keep`` (graph outputs). Whether a fusion happens is decided when the conv runs: the add's
    other input must already exist (so an add is fused into the later of its producers) and the conv
    must be able to take it (:meth:`apps.onnx.handlers.conv.Conv.residual_epilogue`)."""
    return _fusable(layers, keep, {t: (lay, i) for lay in layers if lay.kind == "add"
                                   for i, t in enumerate(lay.node.inputs)})


def table_tails(layers: list[Layer], keep=()) -> dict[int, Layer]:
    """Pointwise table islands (a LeakyRelu, ...: one int8 tensor in and out, :mod:`~apps.onnx.handlers.island`)
    that may run in the epilogue of the conv producing their input: id(conv layer) -> island, under the same
    conditions as :func:`residual_adds`; whether the fusion happens is decided when the conv runs
    (:meth:`apps.onnx.handlers.conv.Conv.table_epilogue`: the table must be ALU steps, and hide behind the GEMMs)."""
    return _fusable(layers, keep, {lay.node.inputs[0]: lay for lay in layers if lay.kind == "island"
                                   and isinstance(lay.params.get("table"), np.ndarray) and len(lay.node.inputs) == 1})


def fusion_record(lay: Layer, fused: Layer) -> tuple[str, str]:
    """(kind, reason) of the record of conv ``lay`` with ``fused`` (a residual add or a table island) in its
    epilogue."""
    if fused.kind == "add":
        return "conv+add", f"the add {fused.name} in the conv's epilogue"
    return "conv+pointwise", f"{fused.name} ({', '.join(fused.params['island'].ops)}) in the conv's epilogue"


def run(layers: list[Layer], inputs: dict, virtual_threads: int = 2, progress: bool = False,
        force_cpu: bool = False, fuse: bool = True, keep=()) -> tuple[dict, list[Record]]:
    """Run the network; returns (tensors, records). Tensors are canonical int8 (float where the graph
    has float tensors); records, one per layer, say where it ran and its counters (cycles on the RTL).

    With ``fuse``, a residual add runs in the epilogue of the conv that produces one of its inputs
    (:func:`residual_adds`; ``keep``: tensors that must stay in ``tensors``), and so does a pointwise table
    island after a conv (:func:`table_tails`): one record for both (kind ``conv+add`` or ``conv+pointwise``,
    its ``fused`` key naming the conv's output, which then never leaves the accelerator and is not among the
    tensors)."""
    env = dict(inputs)
    records = []
    fusable = residual_adds(layers, keep) if fuse and not force_cpu else {}
    tails = table_tails(layers, keep) if fuse and not force_cpu else {}
    done = set()
    bar = progress_bar(len(layers), "layers") if progress else None
    for lay in layers:
        if id(lay) in done:
            if bar is not None:
                bar.update()
            continue
        xs = [env[n] for n in lay.node.inputs]
        where, reason = placement(lay, xs)
        if force_cpu and where == "vta":
            where, reason = "cpu", "forced"
        t = time.perf_counter()
        counters = {}
        fused = None
        if where == "vta" and id(lay) in fusable:
            add, i = fusable[id(lay)]
            other = env.get(add.node.inputs[1 - i])
            fusion = None if other is None else lay.handler.residual_epilogue(lay, add, i, xs, other)
            if fusion is not None:
                fused = add
                y, counters = lay.handler.lower(lay, xs, virtual_threads, fused=(*fusion, other))
                counters = dict(counters)
        if fused is None and where == "vta" and id(lay) in tails:
            fusion = lay.handler.table_epilogue(lay, tails[id(lay)], xs)
            if fusion is not None:
                fused = tails[id(lay)]
                y, counters = lay.handler.lower(lay, xs, virtual_threads, fused=(*fusion, None))
                counters = dict(counters)
        if fused is None and where == "vta":
            y, counters = lay.handler.lower(lay, xs, virtual_threads)
            counters = dict(counters)
        elif fused is None:
            y = lay.reference(*xs)
        dt = time.perf_counter() - t
        first = y[0] if isinstance(y, tuple) else y
        macs = int(lay.handler.macs(lay, xs, first))
        if fused is not None:
            done.add(id(fused))
            bind(env, fused, y)
            kind, why = fusion_record(lay, fused)
            records.append(Record(name=f"{lay.name} + {fused.name}", kind=kind, where=where, reason=why,
                                  in_shape=tuple(xs[0].shape),
                                  out_shape=tuple(np.shape(y)), macs=macs, counters=counters, seconds=dt,
                                  fused=[lay.node.output]))
        else:
            bind(env, lay, y)
            records.append(Record(name=lay.name, kind=lay.kind, where=where, reason=reason,
                                  in_shape=tuple(np.shape(xs[0])) if xs else (), out_shape=tuple(np.shape(first)),
                                  macs=macs, counters=counters, seconds=dt,
                                  ops=" ".join(lay.params["island"].ops) if lay.kind == "island" else lay.kind))
        if bar is not None:
            bar.set_postfix_str(f"{lay.kind} {lay.name[:40]} on {where}", refresh=False)
            bar.update()
    if bar is not None:
        bar.close()
    return env, records

