"""The default demo (``make sim``): VTA's get-started vector add and a blocked GEMM, checked against numpy.

    python -m apps.demo [--config configs/default.json] [--target rtl|fsim] [--demo default|digits|digits-onnx|resnet18|zoo]
                        [--images N] [--width 64 --image 224]

``resnet18``: the QDQ ResNet-18 of apps.resnet18 (built and quantized in code) on one generated image, with
the per-layer report (also build/resnet18_<target>.csv and .png) and the onnxruntime comparison;
``digits-onnx``: the digits MLP and CNN through ONNX (apps.digits_onnx), test-split accuracies;
``zoo``: the model zoo (apps.zoo: ResNet-50, MobileNetV2, YOLOv3-tiny, DCGAN, SqueezeNet, GoogLeNet, ShuffleNet V2,
DenseNet-121, a BERT encoder, per-channel ResNet-18), one row per model, per-model reports in build/zoo/.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from sw.cli import command, run_as_main
from sw.config import load_config
from sw.runtime import runners
from sw.testing import vta_tests as programs

DEMOS = (
    ("vector add (get-started, 1x64 blocks)", programs.vector_add, {}),
    ("blocked GEMM (8x8 blocks x 8 reduction blocks, 2 virtual threads)", programs.gemm,
     {"virtual_threads": 2, "rows": 8, "cols": 8, "blocks": 8}),
)


def _timed_calls(target_name, calls, cfg) -> list:
    """``(result, seconds)`` per call: the time of the call itself, without the model build or simulator start."""
    done = runners.run_batch(target_name, calls, cfg)
    return list(zip(done.values, done.timings.calls))


DRAM_BYTES = ("inp_load_nbytes", "wgt_load_nbytes", "acc_load_nbytes", "uop_load_nbytes", "out_store_nbytes")


def summary(c: dict, cfg) -> list:
    """The lines that matter of a run's counters: cycles, MACs, MAC utilization, DRAM bytes, busy shares, a reading."""
    macs = c["gemm_counter"] * cfg.MACS_PER_CYCLE
    moved = sum(c[k] for k in DRAM_BYTES)
    bus = cfg.BUS_WIDTH // 8
    if not c.get("cycles"):            # the golden model counts work, not time
        return [f"MACs {macs:,}; DRAM bytes moved {moved:,}; GEMM micro-ops {c['gemm_counter']:,}, ALU micro-ops "
                f"{c['alu_counter']:,} (cycles are counted on the RTL only: --target rtl)"]
    cycles = c["cycles"]
    util = macs / (cycles * cfg.MACS_PER_CYCLE)
    busy = ", ".join(f"{m} {c[f'{m}_busy'] / cycles:.0%}" for m in ("load", "compute", "store") if f"{m}_busy" in c)
    lines = [f"cycles {cycles:,}; " + (f"MACs {macs:,}; MAC utilization {util:.1%}" if macs else "no GEMM")
             + f"; DRAM bytes moved {moved:,}",
             f"busy share of the cycles: {busy}"]
    if not macs:
        lines.append(f"reading: no GEMM, so MAC utilization does not apply; the run is its {moved:,} bytes of DRAM "
                     f"traffic (at least {moved // bus:,} cycles at {bus} bytes per cycle) and "
                     f"{c['alu_counter']:,} ALU micro-ops")
    else:
        lines.append(f"reading: {c['gemm_counter']:,} GEMM cycles of work against at least {moved // bus:,} cycles "
                     f"of DRAM traffic and a launch's fixed cost: a tiny run loads each tile once and is memory-bound; "
                     f"large layers reuse their tiles and reach 95 % or more "
                     f"(docs/performance.md: 95.1 % on a 256x256x256 GEMM)")
    return lines


def run_demos(cfg, target_name: str, out=None) -> bool:
    """Run the demos on the golden model ("fsim") or on the RTL ("rtl"); print and check each."""
    out = out or sys.stdout
    ok_all = True
    print(f"config {cfg}; target {target_name}", file=out)
    calls = [(fn, ("python",), kwargs) for _, fn, kwargs in DEMOS]
    for (title, _, _), (res, seconds) in zip(DEMOS, _timed_calls(target_name, calls, cfg)):
        ok = res["result"].shape == res["expected"].shape and np.array_equal(res["result"], res["expected"])
        ok_all &= ok
        print(f"  {title}: {'PASS' if ok else 'FAIL'} (equal to numpy: {ok}); ran in {seconds:.2f} s", file=out)
        for line in summary(res["counters"], cfg):
            print(f"    {line}", file=out)
    return ok_all


def run_digits(cfg, target_name: str, images: int = 360, out=None) -> bool:
    """Classify ``images`` test digits with the int8 MLP and CNN (apps.digits); print accuracy and cycles."""
    out = out or sys.stdout
    from . import digits

    _, _, x_test, y_test = digits.load_data()
    x_q, y = digits.quantize_input(x_test[:images]), y_test[:images]
    print(f"config {cfg}; target {target_name}; {len(x_q)} test digits per network", file=out)
    models = [digits.model(name) for name in digits.NETS]
    calls = [(digits.run, (m.qnet, x_q), {}) for m in models]
    ok_all = True
    for m, ((logits, c), seconds) in zip(models, _timed_calls(target_name, calls, cfg)):
        ok = np.array_equal(logits, digits.reference(m.qnet, x_q))
        ok_all &= ok
        acc = digits.accuracy(digits.predict(logits), y)
        print(f"  {m.name}: {digits.describe(m.qnet)}", file=out)
        print(f"    accuracy {acc:.2%} on these {len(x_q)} (whole test set: float {m.float_accuracy:.2%}, "
              f"int8 {m.int8_accuracy:.2%}); equal to the int8 reference: {'PASS' if ok else 'FAIL'}; ran in "
              f"{seconds:.1f} s", file=out)
        if c.get("cycles"):
            print(f"    cycles per image {c['cycles'] / len(x_q):.0f} (batch of {len(x_q)}; GEMM uops "
                  f"{c['gemm_counter']}, ALU uops {c['alu_counter']})", file=out)
    return ok_all


def run_resnet18(cfg, target_name: str, width: int = 64, image: int = 224, out=None, markdown=None) -> bool:
    """ResNet-18 (QDQ, quantize_static) on one generated image: per-layer report, onnxruntime check;
    ``markdown``: a file whose ``bench-resnet18`` markers get the totals and the cycles by layer kind."""
    out = out or sys.stdout
    from . import resnet18
    from .onnx.__main__ import report_run
    from .onnx.model import Model

    t = time.perf_counter()
    _, q = resnet18.quantized_model(width, image)
    model = Model(q, cfg)
    print(f"config {cfg}; target {target_name}; ResNet-18 width {width}, image {image}x{image}: built and "
          f"quantized (quantize_static, 8 generated calibration images) in {time.perf_counter() - t:.1f} s",
          file=out)
    x = resnet18.calibration_images(1, image, seed=1000)
    tag = f"resnet18_{target_name}" + ("" if (width, image) == (64, 224) else f"_w{width}_i{image}")
    res, rr = report_run(model, {resnet18.INPUT: x}, target_name, 2, f"build/{tag}.csv", f"build/{tag}.png",
                         out=out, title=f"ResNet-18 on {target_name}")
    if markdown:
        from sw.tables import write_markdown

        from .onnx.report import format_groups, totals

        t = totals(rr, model.cfg)
        head = (f"ResNet-18 (width {width}, {image}x{image}) on {target_name}, config {cfg.name}: "
                + (f"{t['cycles']:,} cycles, {t['macs'] / (t['cycles'] * cfg.BATCH * cfg.BLOCK_IN * cfg.BLOCK_OUT):.1%} "
                   f"of the MAC peak over the whole network; " if t["cycles"] else "")
                + f"{res.seconds:.2f} s wall; equal to the reference: {'yes' if res.exact else 'NO'}\n\n")
        write_markdown(markdown, head + format_groups(rr, model.cfg, markdown=True), "bench-resnet18")
    return bool(res.exact)


def run_digits_onnx(cfg, target_name: str, images: int = 360, out=None) -> bool:
    """The digits MLP and CNN exported to ONNX, quantized with quantize_static, on the target."""
    out = out or sys.stdout
    from . import digits, digits_onnx

    print(f"config {cfg}; target {target_name}; {images} test digits per network", file=out)
    ok = True
    for net in digits.NETS:
        r = digits_onnx.evaluate(net, target_name, images, cfg)
        print("  " + digits_onnx.describe(r), file=out)
        ok &= bool(r["exact"])
    return ok


@command
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=None, help="config JSON (default: $VTA_CONFIG or configs/default.json)")
    parser.add_argument("--target", default="rtl", choices=["rtl", "fsim"],
                        help="rtl = the Verilated accelerator (default), fsim = the numpy golden model")
    parser.add_argument("--demo", default="default", choices=["default", "digits", "digits-onnx", "resnet18", "zoo"],
                        help="default = vector add and GEMM; digits = int8 digit classifiers (apps.digits); "
                             "digits-onnx = the same through ONNX; resnet18 = a whole QDQ ResNet-18; zoo = the "
                             "model zoo (apps.zoo)")
    parser.add_argument("--width", type=int, default=64, help="resnet18: base channels (64 = torchvision)")
    parser.add_argument("--image", type=int, default=224, help="resnet18: image size (224 = ImageNet)")
    parser.add_argument("--reduced", action="store_true", help="zoo: the reduced model sizes of the tests")
    parser.add_argument("--markdown", default=None,
                        help="resnet18: also write the totals and the cycles by layer kind into this file's "
                             "bench-resnet18 markers")
    parser.add_argument("--images", type=int, default=360,
                        help="test images per network for --demo digits (default: the whole test split, 360)")
    args = parser.parse_args(argv)
    cfg = load_config(args.config)
    if args.target == "rtl":
        print("Running on the RTL: the Verilator model of the Amaranth design (built once per config and cached)",
              flush=True)
    if args.demo == "digits":
        ok = run_digits(cfg, args.target, args.images)
    elif args.demo == "digits-onnx":
        ok = run_digits_onnx(cfg, args.target, args.images)
    elif args.demo == "resnet18":
        ok = run_resnet18(cfg, args.target, args.width, args.image, markdown=args.markdown)
    elif args.demo == "zoo":
        from .zoo.__main__ import main as zoo_main

        ok = zoo_main(["--target", args.target] + (["--config", args.config] if args.config else [])
                      + (["--reduced"] if args.reduced else [])) == 0
    else:
        ok = run_demos(cfg, args.target)
    print("ALL PASS" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    run_as_main(__spec__)
