"""Differential regression: the same calls on the golden model and on the RTL, compared byte for byte.

Each check function runs one program through the runtime on whatever target is current and returns
its results plus a digest of every 4 KiB page of the first ``CHECK_BYTES`` of device memory (where
the runtime allocates: inputs, outputs, micro-ops and the instruction stream). The golden side runs
the same sequence of calls on one :class:`~sw.fsim.FsimDevice`, with a fresh runtime per call like
the RTL side, so both allocate the same addresses and keep SRAM state across calls the same way.

``compare(names, config)`` and ``fuzz(seeds, config)`` return a list of mismatch descriptions
(empty = bit-exact). ``python -m cosim.regress --fuzz N`` is ``make fuzz``: shards of random programs
(:mod:`cosim.cluster`, on a Dask cluster with ``--scheduler``), failures saved as replay files and
minimized (:mod:`cosim.triage`); ``--replay FILE [--waves]`` re-runs one.
"""

from __future__ import annotations

import argparse
import hashlib
import sys

import numpy as np

from sw import fuzz as fuzz_mod
from sw import programs, runtime
from sw.config import load_config
from sw.fsim import COUNTER_NAMES, FsimDevice

from . import funcov

CHECK_BYTES = 4 << 20
PAGE = 4096


def _pages(dram) -> list:
    view = np.asarray(dram[:CHECK_BYTES]).reshape(-1, PAGE)
    return [hashlib.blake2b(row.tobytes(), digest_size=8).hexdigest() for row in view]


def program_names(cfg) -> list:
    """The reference programs a config runs (MUL ones only where MUL is built; elsewhere it is rejected)."""
    return [n for n in programs.PROGRAMS if cfg.ALU_MUL or not n.startswith("alu[mul")]


def program_check(name: str) -> dict:
    fn, kwargs = programs.PROGRAMS[name]
    out = fn("python", **kwargs)
    out["pages"] = _pages(runtime.current().dram)
    return out


def fuzz_check(seed: int, n_ops: int = 24, bias=None) -> dict:
    out = fuzz_mod.random_program(seed, n_ops, bias=bias)
    out["pages"] = _pages(runtime.current().dram)
    return out


def run_golden(calls, config, dram_bytes=64 << 20):
    """The calls on one golden-model device, a fresh runtime each (as cosim.entry does on the RTL)."""
    device = funcov.sampled(FsimDevice(load_config(config), dram_bytes=dram_bytes))   # functional coverage
    results = []
    for fn, args, kwargs in calls:
        q = runtime.CommandQueue(device)
        prev = runtime.set_current(q)
        try:
            results.append(fn(*args, **kwargs))
        finally:
            runtime.set_current(prev)
    return results


def differences(label: str, gold: dict, rtl: dict) -> list:
    """Why two results of the same call differ ([] when they are equal)."""
    out = []
    for key in ("result", "out"):
        if key in gold and not np.array_equal(gold[key], rtl[key]):
            bad = np.flatnonzero(np.asarray(gold[key]).reshape(-1) != np.asarray(rtl[key]).reshape(-1))
            out.append(f"{label}: {key} differs in {bad.size} elements, first at flat index {bad[0]}")
    if "expected" in rtl and not np.array_equal(rtl["result"], rtl["expected"]):
        out.append(f"{label}: the RTL result is not the numpy reference")
    for name in COUNTER_NAMES:
        if name in gold.get("counters", {}) and gold["counters"][name] != rtl["counters"].get(name):
            out.append(f"{label}: counter {name} golden {gold['counters'][name]} != rtl {rtl['counters'].get(name)}")
    pages = [i for i, (a, b) in enumerate(zip(gold["pages"], rtl["pages"])) if a != b]
    if pages:
        out.append(f"{label}: device memory differs in {len(pages)} pages, first at {pages[0] * PAGE:#x}")
    if out and "listing" in gold:
        out.append(f"{label}: the program was\n{gold['listing']}")
    return out


def compare(names, config, **cosim_options) -> list:
    import cosim
    calls = [(program_check, (name,), {}) for name in names]
    rtl = cosim.run_many(calls, config=config, **cosim_options)
    gold = run_golden(calls, config)
    return [d for name, g, r in zip(names, gold, rtl) for d in differences(f"{name} [{config}]", g, r)]


def fuzz(seeds, config, n_ops=24, bias=None, **cosim_options) -> list:
    import cosim
    calls = [(fuzz_check, (seed, n_ops, bias), {}) for seed in seeds]
    rtl = cosim.run_many(calls, config=config, **cosim_options)
    gold = run_golden(calls, config)
    return [d for seed, g, r in zip(seeds, gold, rtl) for d in differences(f"random program seed {seed} [{config}]", g, r)]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="differential tests: golden model against RTL")
    parser.add_argument("--fuzz", type=int, default=0, help="number of random programs (per config)")
    parser.add_argument("--start", type=int, default=0, help="first seed")
    parser.add_argument("--ops", type=int, default=24, help="operations per random program")
    parser.add_argument("--config", action="append", default=None, help="a config (repeat for several)")
    parser.add_argument("--batch", type=int, default=200, help="programs per simulator launch (a shard)")
    parser.add_argument("--mem", default="dpi", choices=("dpi", "cocotbext"),
                        help="the accelerator's memory: the DPI DRAM, or cocotbext-axi's AxiRam with random pauses")
    # random testing at scale (cosim.cluster, cosim.triage)
    parser.add_argument("--scheduler", default=None,
                        help="'local' (a Dask cluster over this machine's cores) or a scheduler address "
                             "tcp://host:8786; without it the batches run in this process, steered toward the "
                             "functional-coverage holes (cosim.funcov)")
    parser.add_argument("--workers", type=int, default=None, help="workers of the local cluster (default: cores)")
    parser.add_argument("--fault", default=None, help="inject a fault of cosim.faults.FAULTS into the RTL side")
    parser.add_argument("--minimize", type=int, default=3, help="failures to minimize (0: none)")
    parser.add_argument("--out", default="build/replays", help="directory for replay files")
    parser.add_argument("--replay", default=None, help="re-run a replay file on the golden model and the RTL")
    parser.add_argument("--waves", action="store_true", help="with --replay: write an FST waveform")
    args = parser.parse_args(argv)
    if args.replay:
        return replay_main(args.replay, args.waves)
    configs = args.config or [None]
    mem_options = {"mem": args.mem} if args.mem != "dpi" else {}        # cosim/axiram.py
    if args.fuzz and (args.scheduler or args.fault):
        from . import cluster
        summary = cluster.fuzz(args.start, args.fuzz, configs, args.ops, args.batch, scheduler=args.scheduler,
                               workers=args.workers, fault=args.fault, minimize=args.minimize, out_dir=args.out)
        for f in summary["failures"]:
            print(f["failure"]["description"])
            if f.get("replay_file"):
                print(f"replay: python -m cosim.regress --replay {f['replay_file']} --waves")
        rate = summary["programs"] / max(summary["seconds"], 1e-9)
        print(f"{summary['programs']} programs in {summary['shards']} shards on {len(summary['workers'])} "
              f"worker(s), {summary['seconds']:.1f} s ({rate:.2f} programs/s), {len(summary['failures'])} failing")
        names = ", ".join(load_config(c).name for c in configs)
        print(f"{'FAIL' if summary['failures'] else 'PASS'}: config {names}")
        return 1 if summary["failures"] else 0
    failures = []
    for config in configs:
        cfg = load_config(config)
        found = []
        if args.fuzz:
            for first in range(args.start, args.start + args.fuzz, args.batch):
                seeds = list(range(first, min(first + args.batch, args.start + args.fuzz)))
                bias = funcov.steer() if first > args.start else None    # later batches steered toward the holes
                batch = fuzz(seeds, cfg, args.ops, bias, **mem_options, **({"mem_seed": first} if mem_options else {}))
                found += batch
                print(f"seeds {seeds[0]}-{seeds[-1]}{f' (steered: {bias})' if bias else ''}: "
                      f"{'OK' if not batch else f'{len(batch)} mismatches'}", flush=True)
            print(funcov.report())
        else:
            found = compare(program_names(cfg), cfg, **mem_options)
        failures += found
        for f in found:
            print(f)
        print(f"{'FAIL' if found else 'PASS'}: config {cfg.name}")
    return 1 if failures else 0


def replay_main(path, waves=False) -> int:
    """Re-run a replay file: the golden model and the RTL (with waves), and say whether it still fails."""
    import cosim
    from . import replay, triage

    body = replay.load(path)
    program = body["program"]
    cfg = replay.config_of(program)
    print(f"{path}: config {cfg.name}, seed {body.get('seed')}, fault {body.get('fault')}, "
          f"{replay.program_size(program)}")
    print(replay.listing(program))
    gold = triage.Evaluator(cfg, None).golden(program)
    if gold is None:
        print("the program is not a fair test on the golden model (error, race, hazard or undefined read)")
        return 2
    dut = cosim.run(replay.replay_program, program, body.get("fault"), config=cfg, waves=waves)
    sig = triage.signature(gold, dut)
    expected = (body.get("minimized") or {}).get("signature") or body.get("failure", {}).get("signature")
    print(f"result: {'passes (golden model and RTL agree)' if sig is None else f'fails: {list(sig)}'}"
          + (f"; recorded failure: {list(expected)}" if expected else ""))
    if dut.get("error"):
        print(f"the RTL raised {dut['error']}: {dut['message']}")
    return 0 if sig is None else 1


if __name__ == "__main__":
    # run the importable module's main, so that the functions sent to the simulator have a module name
    from cosim.regress import main as _main
    sys.exit(_main())
