"""One imported QDQ model: load, prepare, run on a target (golden model or RTL), check, compare.

    m = Model(path_or_modelproto, config)          # import + integer preparation
    out = m.run({"input": x}, target="fsim")        # or "rtl" (cosim.run), "cpu" (the reference)
    out.tensors, out.records, out.exact             # exact: equal to the numpy reference bit for bit
    m.fuse = False                                  # each residual add, table island as its own layer (default: fused)
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
from sw.runtime import runners

from . import graph as _graph
from . import layers as _layers
from . import ort as _ort
from . import runner as _runner

__all__ = ["Model", "RunResult", "Tensors", "TARGETS"]

TARGETS = ("fsim", "rtl", "cpu")     # the golden model, the RTL (cosim), onnxruntime's arithmetic on the host


def _check_target(target: str) -> None:
    """``target`` is "cpu" or a runner of :mod:`sw.runtime.runners` (fsim, rtl, board)."""
    if target != "cpu" and target not in runners.names():
        raise ValueError(f"target = {target!r}; allowed: cpu, {', '.join(runners.names())}")


class Tensors(dict):
    """A run's tensors by name. A tensor that a fusion kept on the accelerator (a conv's output that went
    straight into a residual add, the records' ``fused``) is not among them; asking for it by name
    computes it with the numpy reference from the tensors that were run."""

    def __init__(self, tensors: dict, producers: dict):
        super().__init__(tensors)
        self._producers = producers         # fused-away tensor -> its layer

    def __missing__(self, name):
        lay = self._producers.get(name)
        if lay is None:
            raise KeyError(name)
        value = lay.reference(*[self[i] for i in lay.node.inputs])
        self[name] = value
        return value


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
        self.fuse = True                # residual adds, pointwise tables in the producing conv's epilogue (runner.run)

    def reference(self, inputs: dict) -> dict:
        return _layers.reference(self.layers, inputs)

    def placement(self) -> list[dict]:
        """Where each node will run on this config and why, from the inferred shapes (before a run)."""
        rows = []
        fusable = _runner.residual_adds(self.layers, self.output_names) if self.fuse else {}
        tails = _runner.table_tails(self.layers, self.output_names) if self.fuse else {}
        fused_into = {}

        def zeros(name):
            s = self.graph.shapes.get(name)
            s = s and tuple(1 if d is None and k == 0 else d for k, d in enumerate(s))      # a dynamic batch: 1
            return np.zeros(s, np.int8) if s and all(isinstance(d, int) and d > 0 for d in s) else np.zeros(0)

        ready = set(self.input_names)
        with runtime.use_target(self.cfg):
            for lay in self.layers:
                xs = [zeros(i) for i in lay.node.inputs]
                where, why = _runner.placement(lay, xs)
                if where == "vta" and id(lay) in fusable:       # as the runner decides it
                    add, i = fusable[id(lay)]
                    other = add.node.inputs[1 - i]
                    if other in ready and lay.handler.residual_epilogue(lay, add, i, xs, zeros(other)) is not None:
                        fused_into[id(add)] = lay.name
                elif where == "vta" and id(lay) in tails and lay.handler.table_epilogue(lay, tails[id(lay)], xs):
                    fused_into[id(tails[id(lay)])] = lay.name
                if id(lay) in fused_into:
                    where, why = "vta", f"in the epilogue of conv {fused_into[id(lay)]}"
                ready.update(lay.node.outputs)
                rows.append({"name": lay.name, "kind": lay.kind, "where": where, "reason": why})
        return rows

    def run_batch(self, batch: list[dict], target: str = "fsim", virtual_threads: int = 2,
                  check: bool = True) -> list[RunResult]:
        """:meth:`run` for each input dict, one after the other, in one run of the target (one simulator launch on
        the RTL); ``seconds`` of each result is its own call's time."""
        _check_target(target)
        if target == "cpu":
            return [self.run(inputs, target, virtual_threads, check) for inputs in batch]
        calls = [(_runner.run, (self.layers, inputs, virtual_threads, False, False, self.fuse, self.output_names), {})
                 for inputs in batch]
        done = runners.run_batch(target, calls, self.cfg)
        return [self._result(inputs, tensors, records, check, dt, target)
                for inputs, (tensors, records), dt in zip(batch, done.values, done.timings.calls)]

    def _result(self, inputs, tensors, records, check, seconds, target) -> RunResult:
        fused = {t for r in records for t in r.get("fused", ())}
        exact = None
        if check:
            ref = self.reference(inputs)
            exact = all(k in fused or (k in tensors and np.array_equal(ref[k], tensors[k])) for k in ref)
        producers = {lay.node.output: lay for lay in self.layers if lay.node.output in fused}
        return RunResult(Tensors(tensors, producers), records, exact, seconds, target)

    def run(self, inputs: dict, target: str = "fsim", virtual_threads: int = 2, check: bool = True,
            progress: bool = False) -> RunResult:
        """Run on ``target``; with ``check`` compare every tensor with the numpy reference."""
        _check_target(target)
        t = time.perf_counter()
        if target == "cpu":
            tensors, records = _runner.run(self.layers, inputs, virtual_threads, progress, force_cpu=True)
        else:
            tensors, records = runners.run(target, _runner.run, self.layers, inputs, virtual_threads, progress, False,
                                           self.fuse, self.output_names, config=self.cfg)
        dt = time.perf_counter() - t
        return self._result(inputs, tensors, records, check, dt, target)

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
