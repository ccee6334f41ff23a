"""One imported QDQ model: load, prepare, run on a target (golden model or RTL), check, compare.

    m = Model(path_or_modelproto, config)          # import + integer preparation
    out = m.run({"input": x}, target="fsim")        # or "rtl" (cosim.run), "cpu" (the reference)
    out.tensors, out.records, out.exact             # exact: equal to the numpy reference bit for bit
    m.compare_ort(inputs)                           # Agreement with onnxruntime, layer by layer
    m.placement()                                   # where each node will run, and why (before a run)
    m.run_batch([inputs, ...], target="rtl")        # several inputs, one simulator launch
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import numpy as np
import onnx

from sw import runtime
from sw.config import Config, load_config

from . import graph as _graph
from . import layers as _layers
from . import ort as _ort
from . import runner as _runner

__all__ = ["Model", "RunResult", "TARGETS"]

TARGETS = ("fsim", "rtl", "cpu")


@dataclass
class RunResult:
    tensors: dict
    records: list
    exact: bool | None          # equal to the numpy reference (None when not checked)
    seconds: float
    target: str


class Model:
    """An imported int8 QDQ ONNX model prepared for ``config`` (default: $VTA_CONFIG or default)."""

    def __init__(self, model: str | os.PathLike | onnx.ModelProto, config: str | Config | None = None):
        self.cfg = load_config(config)
        self.onnx_model = model
        self.graph = _graph.load(model)
        self.layers = _layers.prepare(self.graph, alu_mul=bool(self.cfg.ALU_MUL))
        self.input_names = list(self.graph.inputs)
        self.output_names = list(self.graph.outputs)

    def reference(self, inputs: dict) -> dict:
        return _layers.reference(self.layers, inputs)

    def placement(self) -> list[dict]:
        """Where each node will run on this config and why, from the inferred shapes (before a run)."""
        rows = []
        with runtime.use_target(self.cfg):
            for lay in self.layers:
                shapes = [self.graph.shapes.get(i) for i in lay.node.inputs]
                xs = [np.zeros(s, np.int8) if s and all(isinstance(d, int) and d > 0 for d in s) else np.zeros(0)
                      for s in shapes]
                where, why = _runner.placement(lay, xs)
                rows.append({"name": lay.name, "kind": lay.kind, "where": where, "reason": why})
        return rows

    def run_batch(self, batch: list[dict], target: str = "fsim", virtual_threads: int = 2,
                  check: bool = True) -> list[RunResult]:
        """:meth:`run` for each input dict, one after the other (on the RTL in one simulator launch)."""
        if target != "rtl":
            return [self.run(inputs, target, virtual_threads, check) for inputs in batch]
        import cosim

        t = time.perf_counter()
        outs = cosim.run(_runner.run_batch, self.layers, batch, virtual_threads, config=self.cfg)
        dt = (time.perf_counter() - t) / max(1, len(batch))
        return [RunResult(tensors, records, self._exact(inputs, tensors) if check else None, dt, target)
                for inputs, (tensors, records) in zip(batch, outs)]

    def _exact(self, inputs, tensors) -> bool:
        ref = self.reference(inputs)
        return all(np.array_equal(ref[k], tensors[k]) for k in ref)

    def run(self, inputs: dict, target: str = "fsim", virtual_threads: int = 2, check: bool = True,
            progress: bool = False) -> RunResult:
        """Run on ``target``; with ``check`` compare every tensor with the numpy reference."""
        if target not in TARGETS:
            raise ValueError(f"target = {target!r}; allowed: {', '.join(TARGETS)}")
        t = time.perf_counter()
        if target == "rtl":
            import cosim

            tensors, records = cosim.run(_runner.run, self.layers, inputs, virtual_threads, False,
                                         config=self.cfg)
        elif target == "fsim":
            with runtime.use_target(self.cfg):
                tensors, records = _runner.run(self.layers, inputs, virtual_threads, progress)
        else:
            tensors, records = _runner.run(self.layers, inputs, virtual_threads, progress, force_cpu=True)
        dt = time.perf_counter() - t
        return RunResult(tensors, records, self._exact(inputs, tensors) if check else None, dt, target)

    def compare_ort(self, inputs: dict, session=None):
        """Agreement of every layer with onnxruntime (fed onnxruntime's own inputs) and onnxruntime's
        tensors; returns (Agreement, ort_tensors)."""
        sess = session or _ort.session(self.onnx_model)
        theirs = _ort.run_all(sess, inputs, self.graph)
        return _ort.layer_agreement(self.layers, theirs, inputs), theirs

    def quantized_output(self, name: str) -> str | None:
        """The int8 tensor that the float graph output ``name`` dequantizes (None if it is computed in
        float, by a CPU island)."""
        return next((lay.node.inputs[0] for lay in self.layers if lay.kind == "dequantize" and lay.node.output == name),
                    None)

    def placement_table(self, records: list) -> str:
        """Node, kind, where, why: of a plan (:meth:`placement`) or a run's records."""
        from sw.tables import format_table

        return format_table(records, [("name", "node"), ("kind", "kind"), ("where", "runs on"), ("reason", "why")])
