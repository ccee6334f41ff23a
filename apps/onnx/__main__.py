"""python -m apps.onnx MODEL.onnx: run a user's int8 QDQ model on VTA with the per-layer report."""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from sw.cli import command, run_as_main

from .graph import OnnxImportError
from .model import TARGETS, Model
from .report import format_table, rows, write_csv, write_png


def _inputs(model: Model, path, seed):
    if path:
        x = np.load(path)
        return {model.input_names[0]: x.astype(np.float32)}
    rng = np.random.default_rng(seed)
    return {n: rng.normal(0, 1, shape).astype(np.float32) for n, shape in model.graph.inputs.items()}


def report_run(model: Model, inputs, target, vt=2, csv_path=None, png_path=None, compare=True, out=None,
               title=""):
    """Run, print placement, the per-layer table, exactness and the onnxruntime agreement; returns
    (RunResult, report rows)."""
    out = out or sys.stdout
    res = model.run(inputs, target=target, virtual_threads=vt, progress=target != "rtl")
    print(model.placement_table(res.records), file=out)
    rr = rows(res.records, model.cfg)
    print(format_table(rr, model.cfg), file=out)
    print(f"wall time on {target}: {res.seconds:.2f} s; equal to the numpy int8 reference: "
          f"{'PASS' if res.exact else 'FAIL'}", file=out)
    if csv_path:
        os.makedirs(os.path.dirname(csv_path) or ".", exist_ok=True)
        write_csv(rr, csv_path)
        print(f"wrote {csv_path}", file=out)
    if png_path:
        os.makedirs(os.path.dirname(png_path) or ".", exist_ok=True)
        write_png(rr, png_path, title or f"{target}")
        print(f"wrote {png_path}", file=out)
    if compare:
        ag, theirs = model.compare_ort(inputs)
        print("onnxruntime (graph optimizations off), each layer fed onnxruntime's own input: "
              f"{ag.equal_fraction:.4%} of int8 outputs equal, worst layer {ag.worst_layer_fraction:.4%}, "
              f"largest difference {ag.max_diff} LSB", file=out)
        for name in model.output_names:
            q_name = next(l.node.inputs[0] for l in model.layers if l.node.output == name)
            d = np.abs(res.tensors[q_name].astype(np.int32) - theirs[q_name].astype(np.int32))
            same_top1 = bool(np.array_equal(np.argmax(res.tensors[name].reshape(len(d), -1), 1),
                                            np.argmax(theirs[name].reshape(len(d), -1), 1)))
            print(f"  output {name}: whole network vs onnxruntime: top-1 identical {same_top1}; int8 "
                  f"differences: " + ", ".join(f"{k} LSB {int((d == k).sum())}" for k in range(int(d.max()) + 1)),
                  file=out)
    return res, rr


@command(errors=(OnnxImportError,))
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("model", help="an int8 ONNX model in QDQ form (onnxruntime quantize_static)")
    parser.add_argument("--config", default=None)
    parser.add_argument("--target", default="fsim", choices=TARGETS)
    parser.add_argument("--vt", type=int, default=2, choices=(1, 2))
    parser.add_argument("--input", default=None, help=".npy float input (default: seeded normal noise)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--csv", default=None)
    parser.add_argument("--png", default=None)
    parser.add_argument("--no-ort", action="store_true", help="skip the onnxruntime comparison")
    args = parser.parse_args(argv)
    model = Model(args.model, args.config)
    res, _ = report_run(model, _inputs(model, args.input, args.seed), args.target, args.vt, args.csv, args.png,
                        not args.no_ort)
    return 0 if res.exact else 1


if __name__ == "__main__":
    run_as_main(__spec__)
