"""What a sweep measures of a network on the RTL of a config (the ``rtl`` results; its source is part of their key)."""

from __future__ import annotations

import hashlib

from sw.config import Config

__all__ = ["run_network"]


def run_network(cfg: Config, onnx_path: str, input_path: str) -> dict:
    """One network on the RTL of ``cfg``, as ``python -m apps.onnx ONNX --config C --target rtl --input INPUT`` runs
    it (two virtual threads, the first input of the file): total accelerator ``cycles`` (the sum of the layers'
    counters, :func:`apps.onnx.report.totals`), ``exact`` (every tensor equal to the numpy reference), the layers'
    roofline bound, MACs, DRAM bytes, wall seconds and a digest of the output tensors."""
    import numpy as np

    from ..onnx.calibrate import load_samples, split_samples
    from ..onnx.model import Model
    from ..onnx.report import rows, totals

    model = Model(onnx_path, cfg)
    shapes = dict(model.graph.inputs)
    inputs = split_samples(load_samples(input_path, shapes), shapes)[0]
    res = model.run(inputs, target="rtl")
    t = totals(rows(res.records, cfg), cfg)
    h = hashlib.sha256()
    for name in model.output_names:
        h.update(name.encode() + np.ascontiguousarray(res.tensors[name]).tobytes())
    return {"cycles": int(t["cycles"]), "exact": bool(res.exact), "bound_cycles": float(t["bound_cycles"]),
            "macs": int(t["macs"]), "vta_macs": int(t["vta_macs"]), "layers": int(t["layers"]),
            "vta_layers": int(t["vta_layers"]), "dram_bytes": int(t["dram_bytes"]), "seconds": round(res.seconds, 2),
            "outputs": h.hexdigest()[:16]}
