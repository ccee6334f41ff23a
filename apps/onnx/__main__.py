"""python -m apps.onnx MODEL.onnx: run an ONNX model on VTA (the accelerator taking what it can, the CPU
the rest) with its placement, the per-layer report and the agreement with onnxruntime.

An int8 model runs as it is: QDQ, QOperator or dynamically quantized. A float model is quantized first with
``--calibrate DATA.npy`` (onnxruntime's quantize_static; the QDQ file is written beside the model;
``--format qoperator`` for its QOperator form), or with ``--format dynamic`` (quantize_dynamic, no data).
``--input`` takes a .npy / .npz of one input or N of them; N inputs run one after the other (on the RTL in one
simulator launch) and top-1 is compared over all.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from sw.cli import command, run_as_main

from .calibrate import FORMATS, load_samples, quantize_file, split_samples
from .ir import OnnxImportError
from .model import TARGETS, Model
from .report import format_groups, format_table, rows, write_csv, write_png


def _inputs(model: Model, path, seed) -> list[dict]:
    shapes = dict(model.graph.inputs)
    if path:
        return split_samples(load_samples(path, shapes), shapes)
    rng = np.random.default_rng(seed)
    return [{n: rng.normal(0, 1, shape).astype(np.float32) for n, shape in shapes.items()}]


def report_run(model: Model, inputs, target, vt=2, csv_path=None, png_path=None, compare=True, out=None,
               title=""):
    """Print the placement, run, print the per-layer table, exactness and the onnxruntime agreement;
    returns (RunResult, report rows). ``inputs``: one input dict, or a list of them."""
    out = out or sys.stdout
    batch = inputs if isinstance(inputs, list) else [inputs]
    print("placement (before the run):", file=out)
    print(model.placement_table(model.placement()), file=out)
    if len(batch) == 1:
        results = [model.run(batch[0], target=target, virtual_threads=vt, progress=target != "rtl")]
    else:
        results = model.run_batch(batch, target=target, virtual_threads=vt)
    res = results[0]
    rr = rows(res.records, model.cfg)
    print(format_table(rr, model.cfg), file=out)
    if any(r["cycles"] for r in rr):
        print("cycles by layer kind:", file=out)
        print(format_groups(rr, model.cfg), file=out)
    exact = all(r.exact for r in results)
    print(f"wall time on {target}: {res.seconds:.2f} s per input ({len(batch)} input{'s' * (len(batch) > 1)}); "
          f"equal to the numpy int8 reference: {'PASS' if exact else 'FAIL'}", file=out)
    for path, write in ((csv_path, write_csv), (png_path, lambda r, p: write_png(r, p, title or target))):
        if path:
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
            write(rr, path)
            print(f"wrote {path}", file=out)
    if compare:
        _compare(model, batch, results, out)
    res.exact = exact
    return res, rr


def _compare(model: Model, batch, results, out):
    from . import ort

    sess = ort.session(model.onnx_model)
    total, same, n_out = ort.Agreement(), 0, 0
    diffs: dict[str, list] = {}
    for inputs, res in zip(batch, results):
        ag, theirs = model.compare_ort(inputs, sess)
        total.rows += ag.rows
        for name in model.output_names:
            ours, ref = np.asarray(res.tensors[name]), np.asarray(theirs[name])
            n = ours.shape[0] if ours.ndim > 1 else 1
            same += int(np.sum(np.argmax(ours.reshape(n, -1), 1) == np.argmax(ref.reshape(n, -1), 1)))
            n_out += n
            q = model.quantized_output(name)
            if q is not None:
                diffs.setdefault(name, []).append(np.abs(res.tensors[q].astype(np.int32) - theirs[q].astype(np.int32)))
    print("onnxruntime (graph optimizations off), each layer fed onnxruntime's own input: "
          f"{total.equal_fraction:.4%} of int8 outputs equal, worst layer {total.worst_layer_fraction:.4%}, "
          f"largest difference {total.max_diff} LSB", file=out)
    print(f"whole network vs onnxruntime: top-1 identical {same == n_out} ({same}/{n_out})", file=out)
    for name, ds in diffs.items():
        d = np.concatenate([x.ravel() for x in ds])
        print(f"  output {name}: int8 differences: " + ", ".join(f"{k} LSB {int((d == k).sum())}"
                                                                  for k in range(int(d.max()) + 1)), file=out)


@command(errors=(OnnxImportError,))
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help="an ONNX model: int8 (QDQ, QOperator, dynamic), or float with --calibrate / --format")
    parser.add_argument("--config", default=None)
    parser.add_argument("--target", default="fsim", choices=TARGETS)
    parser.add_argument("--vt", type=int, default=2, choices=(1, 2))
    parser.add_argument("--input", default=None,
                        help=".npy / .npz: one input or N of them (default: one input of seeded normal noise)")
    parser.add_argument("--calibrate", default=None, metavar="DATA",
                        help="quantize a float model first on these samples (.npy / .npz), written beside it")
    parser.add_argument("--per-channel", action="store_true", help="with --calibrate: per-channel weight scales")
    parser.add_argument("--format", default=None, choices=FORMATS,
                        help="quantize a float model first in this format: qdq (the default with --calibrate), "
                             "qoperator (QLinearConv, QGemm, ...: with --calibrate) or dynamic (quantize_dynamic: "
                             "no data)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--csv", default=None)
    parser.add_argument("--png", default=None)
    parser.add_argument("--no-ort", action="store_true", help="skip the onnxruntime comparison")
    args = parser.parse_args(argv)
    path = args.model
    if args.calibrate or args.format:
        fmt = args.format or "qdq"
        path = quantize_file(path, args.calibrate, args.per_channel, fmt)
        how = "quantize_dynamic" if fmt == "dynamic" else f"quantize_static ({'QDQ' if fmt == 'qdq' else 'QOperator'})"
        print(f"quantized with onnxruntime {how}{' (per-channel weights)' if args.per_channel else ''}: wrote {path}")
    elif args.per_channel:
        parser.error("--per-channel applies with --calibrate or --format")
    model = Model(path, args.config)
    res, _ = report_run(model, _inputs(model, args.input, args.seed), args.target, args.vt, args.csv, args.png,
                        not args.no_ort)
    return 0 if res.exact else 1


__all__ = ["main", "report_run"]

if __name__ == "__main__":
    run_as_main(__spec__)
