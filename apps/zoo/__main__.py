"""python -m apps.zoo: the zoo table, one row per model (see apps.zoo)."""

from __future__ import annotations

import argparse

from sw.cli import command, progress_bar, run_as_main
from sw.tables import Column, format_table, write_markdown

from ..onnx.calibrate import FORMATS
from . import MODELS, evaluate

COLUMNS = (Column("model", "model"), Column("format", "format"), Column("macs", "M MAC", lambda v: f"{v / 1e6:,.1f}"),
           Column("mac_share", "on VTA", ".1%"), Column("islands", "CPU islands", "d"),
           Column("cycles", "cycles", lambda v: f"{v:,}" if v else "-"),
           Column("utilization", "MAC util", lambda v: "-" if v != v else f"{v:.1%}"),
           Column("seconds", "wall s", ".2f"), Column("exact", "= reference", lambda v: "yes" if v else "NO"),
           Column("equal", "layers = ORT", lambda v: "-" if v != v else f"{v:.3%}"),
           Column("max_lsb", "max LSB", lambda v: "-" if v < 0 else str(v)),
           Column("outputs", "outputs vs ORT"))


@command
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--target", default="rtl", choices=("fsim", "rtl"))
    parser.add_argument("--config", default=None)
    parser.add_argument("--reduced", action="store_true", help="the reduced sizes (as in the tests)")
    parser.add_argument("--formats", nargs="+", default=["qdq"], choices=FORMATS,
                        help="quantized by onnxruntime as QDQ, QOperator, or dynamically (default qdq; a model "
                             "that onnxruntime does not quantize in a format is left out of it)")
    parser.add_argument("--inputs", type=int, default=1, help="generated inputs per model (default 1)")
    parser.add_argument("--no-ort", action="store_true", help="skip the onnxruntime comparison")
    parser.add_argument("--reports", default="build/zoo", help="per-model CSV and PNG reports here")
    parser.add_argument("--markdown", default=None, help="also write the table into this file, between its markers")
    parser.add_argument("--marker", default="bench-zoo",
                        help="the markers' name: <!-- NAME --> ... <!-- /NAME --> (default bench-zoo)")
    args = parser.parse_args(argv)
    rows = []
    runs = [(name, fmt) for name in args.models for fmt in args.formats if fmt in MODELS[name].formats]
    with progress_bar(len(runs), "zoo") as bar:
        for name, fmt in runs:
            bar.set_postfix_str(f"{name} {fmt}")
            rows.append(evaluate(name, args.target, args.config, args.reduced, args.inputs, args.reports,
                                 not args.no_ort, fmt))
            bar.update()
    table = format_table(rows, COLUMNS, markdown=bool(args.markdown))
    print(f"zoo on {args.target}{' (reduced sizes)' if args.reduced else ''}, {args.inputs} input(s) per model; "
          f"per-model reports in {args.reports}/")
    print(table)
    if args.markdown:
        write_markdown(args.markdown, table, args.marker)
    ok = all(r["exact"] for r in rows) and all(r["max_lsb"] <= 1 for r in rows)
    return 0 if ok else 1


if __name__ == "__main__":
    run_as_main(__spec__)
