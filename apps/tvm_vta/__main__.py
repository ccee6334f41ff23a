"""python -m apps.tvm_vta MODEL.onnx: an int8 ONNX model compiled by TVM, its quantized layers on VTA.

Imports the model with TVM's ONNX front end, partitions it (the layers on VTA, TVM's CPU code for the rest, and
why), compiles it with ``tvm.compile``, exports the library (``--export``, else a temporary file), runs it on the
target (the golden model, the RTL inside ``cosim.run``, or a board) and checks it: every offloaded layer's int8
output against the ONNX importer's reference (of its own inputs, and of the whole model, ``apps.onnx``), and each
graph output's argmax against onnxruntime.
"""

from __future__ import annotations

import argparse

import numpy as np

from sw.cli import command, run_as_main

from ..onnx.calibrate import load_samples, split_samples
from ..onnx.handlers.base import Unsupported
from ..onnx.ir import OnnxImportError
from .flow import compare, compile_model


@command(errors=(OnnxImportError, Unsupported))
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m apps.tvm_vta", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help="an int8 ONNX model (QDQ, or QOperator: converted to QDQ)")
    parser.add_argument("--config", default=None, help="the accelerator's config (default: $VTA_CONFIG or default)")
    parser.add_argument("--target", default="fsim", choices=("fsim", "rtl", "board"))
    parser.add_argument("--input", default=None, help=".npy / .npz of one input (default: seeded normal noise)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--export", default=None, metavar="F.so", help="keep the exported library here")
    parser.add_argument("--no-ort", action="store_true", help="skip the onnxruntime comparison")
    args = parser.parse_args(argv)
    c = compile_model(args.model, args.config)
    print(c.partition.table())
    print(c.partition.summary())
    s = c.seconds
    print(f"from_onnx {s['import']:.2f} s, partition {s['partition']:.2f} s, tvm.compile {s['compile']:.2f} s")
    if args.input:
        inputs = split_samples(load_samples(args.input, c.shapes), c.shapes)[0]
    else:
        rng = np.random.default_rng(args.seed)
        inputs = {n: rng.normal(0, 1, shape).astype(np.float32) for n, shape in c.shapes.items()}
    if args.export:
        c.export(args.export)
        print(f"wrote {args.export}")
    run = c.run(inputs, args.target, check=True, keep_tensors=True, library=args.export)
    cycles = f", {run.cycles:,} accelerator cycles" if run.cycles else ""
    print(f"ran on {args.target} in {run.seconds:.2f} s{cycles}")
    row = compare(args.model, c, inputs, run, ort=not args.no_ort)
    n = row["offloaded"]
    print(f"offloaded layers equal to the importer's reference of their inputs: {row['exact']}/{n}; "
          f"equal to apps.onnx's reference of the whole model: {row['equal']}/{n}")
    for name, same in row.get("argmax", {}).items():
        print(f"output {name}: argmax {'identical to' if same else 'DIFFERS from'} onnxruntime's "
              f"(largest difference {row['max_diff'][name]:.4g})")
    return 0 if row["exact"] == n else 1


__all__ = ["main"]

if __name__ == "__main__":
    run_as_main(__spec__)
