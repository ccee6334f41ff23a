"""An int8 ONNX model through TVM: import, partition, ``tvm.compile``, export, run on a target, compare.

    c = compile_model("model.onnx", config)         # from_onnx -> partition -> tvm.compile (llvm)
    c.partition.table(), c.partition.mac_share      # the layers on VTA and on TVM's CPU code, and why
    c.export("model.so")                             # export_library: a fresh process runs it (runtime.run_library)
    r = c.run({"input": x}, target="fsim")          # or "rtl" (cosim.run), "board"
    r.outputs, r.trace, r.cycles                     # graph outputs, each offloaded call, accelerator cycles
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass, field

import numpy as np

from sw.config import Config, load_config
from sw.runtime import runners

from ..onnx.graph import read_model
from ..onnx.qoperator import is_qoperator, to_qdq
from . import runtime as vta_runtime
from .patterns import Partition, partition

__all__ = ["compile_model", "Compiled", "TvmRun", "input_shapes", "compare"]


def input_shapes(model, shapes: dict | None = None) -> dict[str, tuple]:
    """The static shape of each graph input: ``shapes`` where given, else the model's with a dynamic dimension 1."""
    inits = {t.name for t in model.graph.initializer}
    out = {}
    for i in model.graph.input:
        if i.name in inits:
            continue
        dims = tuple(d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else 1
                     for d in i.type.tensor_type.shape.dim)
        out[i.name] = tuple((shapes or {}).get(i.name, dims))
    return out


@dataclass
class TvmRun:
    """One run of a compiled model: ``outputs`` by graph output name, ``trace`` of the offloaded calls
    (:func:`apps.tvm_vta.runtime.tracing`), wall ``seconds`` of the run on the target."""
    outputs: dict
    trace: list
    seconds: float
    target: str

    @property
    def records(self) -> list:
        return [r for t in self.trace for r in t["records"]]

    @property
    def cycles(self) -> int:
        return sum(int(r["counters"].get("cycles", 0) or 0) for r in self.records)

    @property
    def exact(self) -> bool | None:
        """Every offloaded call's output equal to the importer's reference of its inputs (None: not checked)."""
        flags = [t["exact"] for t in self.trace if "exact" in t]
        return all(flags) if flags else None


@dataclass
class Compiled:
    """A model compiled by TVM with its quantized layers on the accelerator of ``config``."""
    executable: object
    partition: Partition
    input_names: list
    output_names: list
    shapes: dict
    config: Config
    seconds: dict = field(default_factory=dict)       # import, partition, compile (tvm.compile)

    def export(self, path: str | os.PathLike) -> str:
        """``export_library`` to ``path`` (a .so); :func:`apps.tvm_vta.runtime.run_library` runs it."""
        path = os.fspath(path)
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self.executable.export_library(path)
        return path

    def run(self, inputs: dict, target: str = "fsim", check: bool = False, keep_tensors: bool = False,
            library: str | None = None) -> TvmRun:
        """Run on ``target`` (a runner of :mod:`sw.runtime.runners`: fsim, rtl, board) from the exported library
        (``library``, or a temporary export), as a deployment runs it; ``check`` / ``keep_tensors`` as
        :func:`apps.tvm_vta.runtime.tracing`."""
        missing = [n for n in self.input_names if n not in inputs]
        if missing:
            raise ValueError(f"inputs: missing {missing}; the model's inputs are {self.input_names}")
        args = [np.asarray(inputs[n], np.float32).reshape(self.shapes[n]) for n in self.input_names]
        with tempfile.TemporaryDirectory() as tmp:
            path = library or self.export(os.path.join(tmp, "model.so"))
            batch = runners.run_batch(target, [(vta_runtime.run_library, (path, args, check, keep_tensors), {})],
                                      self.config)
        outputs, trace = batch.values[0]
        return TvmRun(dict(zip(self.output_names, outputs)), trace, batch.timings.calls[0], target)


def compile_model(model, config: Config | str | None = None, shapes: dict | None = None,
                  target: str = "llvm") -> Compiled:
    """``from_onnx`` (static input shapes: :func:`input_shapes`), :func:`~apps.tvm_vta.patterns.partition` for
    ``config``, ``tvm.compile`` for ``target``. ``model``: a path or an ``onnx.ModelProto`` (QDQ; a QOperator model
    is converted to QDQ first, as ``apps.onnx`` does)."""
    import tvm
    from tvm.relax.frontend.onnx import from_onnx

    cfg = load_config(config)
    m = read_model(model)
    if is_qoperator(m):
        m = to_qdq(m)
    dims = input_shapes(m, shapes)
    t0 = time.perf_counter()
    mod = from_onnx(m, shape_dict={k: list(v) for k, v in dims.items()})
    t1 = time.perf_counter()
    part = partition(mod, cfg, m)
    t2 = time.perf_counter()
    ex = tvm.compile(part.mod, target=target)
    t3 = time.perf_counter()
    return Compiled(ex, part, list(dims), [o.name for o in m.graph.output], dims, cfg,
                    {"import": t1 - t0, "partition": t2 - t1, "compile": t3 - t2})


def compare(model, compiled: Compiled, inputs: dict, run: TvmRun, ort: bool = True) -> dict:
    """A run checked against ``apps.onnx`` and onnxruntime (``run`` made with ``check`` and ``keep_tensors``):
    ``exact`` offloaded calls whose output equals the importer's reference of their inputs, ``equal`` those equal
    to ``apps.onnx``'s reference of the whole model at that tensor, of ``offloaded``; ``argmax``: per graph output,
    whether its argmax equals onnxruntime's (with ``ort``), and ``max_diff`` the largest difference from it."""
    from ..onnx.model import Model

    m = read_model(model)
    ref = Model(m, compiled.config).reference({k: np.asarray(v, np.float32) for k, v in inputs.items()})
    row = {"offloaded": len(run.trace), "exact": sum(bool(t.get("exact")) for t in run.trace),
           "equal": sum(t["tensor"] in ref and np.array_equal(t["output"], ref[t["tensor"]]) for t in run.trace)}
    if ort:
        import onnxruntime

        sess = onnxruntime.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        theirs = dict(zip([o.name for o in sess.get_outputs()],
                          sess.run(None, {k: np.asarray(v, np.float32).reshape(compiled.shapes[k])
                                          for k, v in inputs.items()})))
        row["argmax"] = {k: bool(np.argmax(v) == np.argmax(theirs[k])) for k, v in run.outputs.items()}
        row["max_diff"] = {k: float(np.max(np.abs(v.astype(np.float64) - theirs[k].astype(np.float64))))
                           for k, v in run.outputs.items()}
    return row
