"""Tile tuning on the RTL: time the planner's best candidates of every conv and dense problem of a network or
benchmark, and keep the fastest in the tuning log (:mod:`sw.ops.tuned`), which the planner then prefers.

    python -m apps.tune --workloads resnet18.C2 resnet18.C7 gemm_256      # operator benchmarks (sw.testing.workloads)
    python -m apps.tune --models resnet18 resnet50                         # networks: apps.resnet18, the zoo
    python -m apps.tune --onnx my_model.onnx --log build/my_tuning.json    # your own ONNX model

Each problem (operator, config, blocked shape, virtual threads, epilogue cost; recorded while the network or
benchmark runs on the golden model) gets its ``--top`` candidates by the planner's cycle model, each run once on
the RTL with random data and the first such layer's own epilogue; among those within ``--tolerance`` percent of
the fastest, the one with the fewest instructions replaces the model's choice when it saves at least
``--min-gain`` percent. A grouped (depthwise) convolution is timed as the batch of convolutions its plan sees
(the planner folds the block groups into the batch). Without
``--log`` the repository's log (``sw/ops/tuned.json``) is updated; ``VTA_TUNING_LOG=path`` makes the planner read
another one. Measured cycles depend on the co-simulation's DRAM (20 cycles latency, 8 bytes per cycle, as in
``make bench``), which the entries record.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from sw import runtime
from sw.config import load_config
from sw.ops import plan as _plan
from sw.ops import tuned
from sw.runtime import runners

from . import zoo

__all__ = ["problems_of_workloads", "problems_of_model", "candidates", "measure", "choose", "tune", "write_log", "main"]

MODELS = ("resnet18", *zoo.MODELS)       # apps.resnet18's network and the zoo's
DRAM = {"dram_latency": 20, "dram_bytes_per_cycle": 8}


def _key(problem, cfg) -> str:
    return tuned.problem_key(problem[0], cfg, *problem[1:])


def _unique(problems: list, cfg) -> list:
    """One problem per key (the first layer's epilogue stands for the others of the same cost)."""
    seen, out = set(), []
    for problem in problems:
        key = _key(problem, cfg)
        if key not in seen:
            seen.add(key)
            out.append(problem)
    return out


def problems_of_workloads(names, cfg, vt: int = 2) -> list:
    """The (op, shape, vt, epilogue) problems the benchmarks ``names`` of :mod:`sw.testing.workloads` plan."""
    from sw.testing import workloads

    table = workloads.workloads(vt)
    unknown = [n for n in names if n not in table]
    if unknown:
        raise ValueError(f"unknown workloads {unknown}; allowed: {', '.join(table)}")
    with runtime.use_target(cfg), tuned.recording() as found:
        for name in names:
            fn, args = table[name]
            fn(*args)
    return _unique([(op, shape, vt, epi) for op, _, shape, vt, epi in found], cfg)


def _model_and_inputs(name: str, cfg):
    from .onnx.model import Model

    if name == "resnet18":
        from . import resnet18

        _, q = resnet18.quantized_model(64, 224)
        return Model(q, cfg), {resnet18.INPUT: resnet18.calibration_images(1, 224, seed=1000)}
    if name in zoo.MODELS:
        return Model(zoo.quantized(name), cfg), zoo.inputs(name, 1)[0]
    model = Model(name, cfg)                     # a path
    rng = np.random.default_rng(0)
    return model, {n: rng.normal(0, 1, shape).astype(np.float32) for n, shape in dict(model.graph.inputs).items()}


def problems_of_model(name: str, cfg, vt: int = 2) -> list:
    """The problems a network (``resnet18``, a zoo model's name, or an ONNX file) plans on the golden model."""
    model, inputs = _model_and_inputs(name, cfg)
    with tuned.recording() as found:
        model.run(inputs, target="fsim", virtual_threads=vt, check=False)
    return _unique([(op, shape, vt, epi) for op, _, shape, vt, epi in found], cfg)


def candidates(problem, cfg, top: int) -> list:
    """The ``top`` plans of a problem by the planner's cycle model, as explicit tiles, and the log's present
    choice when it is another that still fits (so tuning again never gives up a faster logged choice)."""
    op, shape, vt, epi = problem
    if op == "dense":
        plans = _plan.dense_candidates(*shape, vt, epi, cfg)
    else:
        plans = _plan.conv2d_candidates(*shape, vt, epi, cfg, None)
    out = [plans.tiles(i) for i in range(min(top, len(plans)))]
    logged = tuned.lookup(op, cfg, shape, vt, epi)
    if logged is not None and logged not in out and logged in (plans.tiles(i) for i in range(len(plans))):
        out.append(logged)
    return out


def measure(problem, tiles, seed: int = 0) -> tuple:
    """(cycles, instructions) of one problem with explicit ``tiles`` on the current runtime (random operands;
    cycles None when the target counts none). Module-level: the ``rtl`` runner runs it on the RTL."""
    from sw.ops.conv2d import conv2d_packed
    from sw.ops.dense import dense_packed

    op, shape, vt, epi = problem
    cfg = runtime.current_config()
    B, I, O = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
    rng = np.random.default_rng(seed)
    queue = runtime.current()
    before = queue.insns_run

    def i8(*s):
        return rng.integers(-128, 128, size=s, dtype=np.int8)

    if op == "dense":
        nb, kb, mb = shape
        vectors = rng.integers(-1000, 1000, size=(epi.vectors, mb, B, O), dtype=np.int32) if epi.vectors else None
        _, counters = dense_packed(i8(nb, kb, B, I), i8(mb, kb, O, I), vectors, virtual_threads=vt, tiles=tiles,
                                   return_counters=True, epilogue=epi)
    else:
        nb, cb, ob, h, w, kh, kw, stride, pad = shape
        bg = tuned.block_groups(op)          # a grouped conv: nb images x bg block-groups of cb -> ob blocks
        nb, ob = nb // bg, ob * bg
        ho, wo = (h + 2 * pad - kh) // stride + 1, (w + 2 * pad - kw) // stride + 1
        vectors = rng.integers(-1000, 1000, size=(epi.vectors, ob, B, O), dtype=np.int32) if epi.vectors else None
        residual = i8(nb, ob, ho, wo, B, O) if epi.residual is not None else None
        _, counters = conv2d_packed(i8(nb, cb * bg, h, w, B, I), i8(ob, cb, kh, kw, O, I), vectors, stride, pad,
                                    virtual_threads=vt, tiles=tiles, return_counters=True, epilogue=epi,
                                    residual=residual, block_groups=bg)
    return (int(counters["cycles"]) if "cycles" in counters else None), queue.insns_run - before


def _describe(problem) -> str:
    op, shape, vt, epi = problem
    if op == "dense":
        return f"dense {shape[0]}x{shape[1]}x{shape[2]} blocks, {epi.passes} ALU passes"
    nb, cb, ob, h, w, kh, kw, stride, pad = shape
    bg = tuned.block_groups(op)
    return (f"conv {kh}x{kw}/{stride} {h}x{w}, {cb}->{ob} blocks" + (f" x{bg} groups" if bg > 1 else "")
            + (f" x{nb // bg}" if nb > bg else "")
            + f", {epi.passes} ALU passes" + (" + residual" if epi.residual is not None else ""))


def choose(timed: list, tolerance: float) -> tuple:
    """(cycles, instructions, tiles) of the fewest instructions among the candidates within ``tolerance`` percent
    of the fastest: every instruction also costs the host (the golden model executes it in Python, the runtime
    builds it), so a tiling that is a few cycles faster with many more instructions does not pay."""
    fastest = min(c for c, _, _ in timed)
    return min((t for t in timed if t[0] <= fastest * (1 + tolerance / 100)), key=lambda t: (t[1], t[0]))


def tune(problems, cfg, top: int = 30, min_gain: float = 0.5, tolerance: float = 1.0, out=None) -> list:
    """Time each problem's candidates on the RTL (one simulator launch per problem); returns one result per
    problem: {"problem", "model", "model_cycles", "model_insns", "best", "best_cycles", "best_insns",
    "candidates"}."""
    out = out or sys.stdout
    results = []
    for problem in problems:
        tiles = candidates(problem, cfg, top)
        t = time.perf_counter()
        runs = runners.run_batch("rtl", [(measure, (problem, tl), {}) for tl in tiles], cfg, **DRAM).values
        timed = [(c, n, tl) for (c, n), tl in zip(runs, tiles)]
        (model_cycles, model_insns, _), (cycles, insns, best) = timed[0], choose(timed, tolerance)
        keep = best != tiles[0] and cycles < model_cycles * (1 - min_gain / 100)
        if not keep:
            cycles, insns, best = timed[0]
        results.append({"problem": problem, "model": tiles[0], "model_cycles": model_cycles,
                        "model_insns": model_insns, "best": best, "best_cycles": cycles, "best_insns": insns,
                        "candidates": len(tiles)})
        print(f"{_describe(problem):<56} model {str(tiles[0]):<20} {model_cycles:>9,} {model_insns:>6,}  best "
              f"{str(best):<20} {cycles:>9,} {insns:>6,} ({(model_cycles - cycles) / model_cycles:+6.1%})"
              + ("" if keep else "  kept the model's") + f"  [{len(tiles)} in {time.perf_counter() - t:.0f} s]",
              file=out, flush=True)
    return results


def write_log(results, cfg, path: Path) -> int:
    """Merge the results into the log at ``path`` (replacing a problem's earlier entry); returns the number of
    entries. A problem whose best is the model's own choice is logged too: the planner then skips its search."""
    data = tuned.load(path)
    entries = {e["problem"]: e for e in data["entries"]}
    for r in results:
        key = _key(r["problem"], cfg)
        entries[key] = {"problem": key, "tiles": list(r["best"]), "cycles": r["best_cycles"],
                        "insns": r["best_insns"], "model_tiles": list(r["model"]),
                        "model_cycles": r["model_cycles"], "model_insns": r["model_insns"],
                        "candidates": r["candidates"], **DRAM}
    data["entries"] = sorted(entries.values(), key=lambda e: e["problem"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n")
    return len(data["entries"])


def prune_log(problems, cfg, path: Path) -> tuple[int, int]:
    """Drop the entries of config ``cfg`` whose problems are not among ``problems`` (entries an epilogue or a
    planner change left behind; other configs' entries stay); returns (kept, dropped)."""
    data = tuned.load(path)
    wanted = {_key(p, cfg) for p in problems}
    ours = f" {tuned.config_key(cfg)} "
    kept = [e for e in data["entries"] if ours not in e["problem"] or e["problem"] in wanted]
    dropped = len(data["entries"]) - len(kept)
    data["entries"] = kept
    path.write_text(json.dumps(data, indent=1) + "\n")
    return len(kept), dropped


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m apps.tune", description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default=None, help="VTA JSON config (default: configs/default.json)")
    parser.add_argument("--workloads", nargs="*", default=[], help="operator benchmarks of sw.testing.workloads ('all')")
    parser.add_argument("--models", nargs="*", default=[], choices=MODELS, help="networks to tune")
    parser.add_argument("--onnx", nargs="*", default=[], help="ONNX files (QDQ int8) to tune")
    parser.add_argument("--vt", type=int, default=2, help="virtual threads (default 2)")
    parser.add_argument("--top", type=int, default=30, help="candidates timed per problem (default 30)")
    parser.add_argument("--min-gain", type=float, default=0.5, help="percent a candidate must save (default 0.5)")
    parser.add_argument("--tolerance", type=float, default=1.0,
                        help="percent of cycles traded for fewer instructions (default 1.0)")
    parser.add_argument("--log", default=None, help=f"the log to update (default {tuned.LOG})")
    parser.add_argument("--dry-run", action="store_true", help="measure and print, write nothing")
    parser.add_argument("--new", action="store_true", help="tune only the problems the log has no entry for")
    parser.add_argument("--prune", action="store_true",
                        help="time nothing: drop the log's entries of this config that none of the given "
                             "workloads and models plan")
    args = parser.parse_args(argv)
    cfg = load_config(args.config)
    if args.top < 1:
        parser.error(f"--top = {args.top}; allowed: >= 1")
    names = args.workloads
    if names == ["all"]:
        from sw.testing import workloads

        names = list(workloads.workloads(args.vt))
    problems = problems_of_workloads(names, cfg, args.vt) if names else []
    for name in [*args.models, *args.onnx]:
        problems += problems_of_model(name, cfg, args.vt)
    problems = _unique(problems, cfg)
    if not problems:
        parser.error("nothing to tune: give --workloads, --models or --onnx")
    path = Path(args.log) if args.log else tuned.LOG
    if args.prune:
        kept, dropped = prune_log(problems, cfg, path)
        print(f"{path}: {dropped} entries dropped, {kept} kept ({len(problems)} problems planned)")
        return 0
    if args.new:
        logged = tuned.entries(path)
        problems = [p for p in problems if _key(p, cfg) not in logged]
        if not problems:
            print(f"config {cfg}: every problem is in {path}")
            return 0
    print(f"config {cfg}: {len(problems)} problems, {args.top} candidates each", flush=True)
    results = tune(problems, cfg, args.top, args.min_gain, args.tolerance)
    if not args.dry_run:
        n = write_log(results, cfg, path)
        print(f"wrote {path} ({n} entries)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
