"""An int8 digit classifier end to end: scikit-learn's bundled digits, trained in numpy, run on VTA.

    python -m apps.digits [--net mlp|cnn] [--rtl N]     # train, quantize, print accuracies (and RTL cycles)
"""

from __future__ import annotations

import argparse

import numpy as np

from sw.cli import command, run_as_main
from sw.runtime import runners

from .data import load_data, quantize_input
from .inference import accuracy, predict, reference, run
from .quantization import describe
from .trained import model
from .training import NETS

__all__ = ["main"]


@command
def main(argv=None) -> int:
    import time

    parser = argparse.ArgumentParser(prog="python -m apps.digits", description=__doc__.splitlines()[0])
    parser.add_argument("--net", choices=NETS + ("all",), default="all")
    parser.add_argument("--rtl", type=int, default=0, metavar="N",
                        help="also classify N test images on the RTL (co-simulation) and print cycles per image")
    args = parser.parse_args(argv)
    _, _, x_test, y_test = load_data()
    x_q = quantize_input(x_test)
    for name in NETS if args.net == "all" else (args.net,):
        t = time.perf_counter()
        m = model(name)
        print(f"{name}: {describe(m.qnet)}; trained in {time.perf_counter() - t:.1f} s")
        logits, c = run(m.qnet, x_q)
        same = np.array_equal(logits, reference(m.qnet, x_q))
        print(f"  test accuracy: float {m.float_accuracy:.2%}, int8 {m.int8_accuracy:.2%}; "
              f"golden model equal to the reference on {len(x_q)} images: {same}")
        if args.rtl:
            n = args.rtl
            out, c = runners.run("rtl", run, m.qnet, x_q[:n])
            ok = np.array_equal(out, reference(m.qnet, x_q[:n]))
            print(f"  RTL on {n} images: accuracy {accuracy(predict(out), y_test[:n]):.2%}, equal to the "
                  f"reference: {ok}, {c['cycles'] / n:.0f} cycles per image")
    return 0


if __name__ == "__main__":
    run_as_main(__spec__)
