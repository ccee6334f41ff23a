"""Differential regression: the same calls on the golden model and on the RTL, compared byte for byte
(the checks themselves: :mod:`cosim.verify.differential`).

``compare(names, config)`` and ``fuzz(seeds, config)`` return a list of mismatch descriptions
(empty = bit-exact). ``python -m cosim.verify.regress --fuzz N`` is ``make fuzz``: shards of random programs on
a local Dask cluster over this machine's cores (``--scheduler tcp://host:8786``: a running cluster;
``--serial``: one after the other in this process, for debugging), in rounds whose later shards are
steered toward the functional-coverage holes of the coverage merged so far (:mod:`cosim.verify.cluster`,
:mod:`cosim.verify.funcov`); failures saved as replay files and minimized (:mod:`cosim.verify.triage`); at the end the
merged functional coverage and the bins never hit. ``--replay FILE [--waves]`` re-runs a replay.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sw.cli import choose, command, run_as_main
from sw.config import Config, load_config
from sw.runtime.runners import Call

from ..junit import testcase, write_junit
from . import funcov
from .differential import differences, fuzz_check, program_check, program_names, run_golden


def compare(names: Sequence[str], config: Config | str | None, **cosim_options: Any) -> list:
    import cosim
    calls: list[Call] = [(program_check, (name,), {}) for name in names]
    rtl = cosim.run_many(calls, config=config, **cosim_options)
    gold = run_golden(calls, config)
    return [d for name, g, r in zip(names, gold, rtl) for d in differences(f"{name} [{config}]", g, r)]


def fuzz(seeds: Sequence[int], config: Config | str | None, n_ops: int = 24, bias: dict[str, float] | None = None,
         **cosim_options: Any) -> list:
    import cosim
    calls: list[Call] = [(fuzz_check, (seed, n_ops, bias), {}) for seed in seeds]
    rtl = cosim.run_many(calls, config=config, **cosim_options)
    gold = run_golden(calls, config)
    return [d for seed, g, r in zip(seeds, gold, rtl) for d in differences(f"random program seed {seed} [{config}]", g, r)]


@command
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="differential tests: golden model against RTL")
    parser.add_argument("--fuzz", type=int, default=0, help="number of random programs (per config)")
    parser.add_argument("--start", type=int, default=0, help="first seed")
    parser.add_argument("--ops", type=int, default=24, help="operations per random program")
    parser.add_argument("--config", action="append", default=None, help="a config (repeat for several)")
    parser.add_argument("--batch", type=int, default=100, help="programs per simulator launch (a shard)")
    parser.add_argument("--mem", default="dpi", choices=("dpi", "cocotbext"),
                        help="the accelerator's memory: the DPI DRAM, or cocotbext-axi's AxiRam with random pauses")
    # random testing at scale (cosim.verify.cluster, cosim.verify.triage)
    parser.add_argument("--scheduler", default="local",
                        help="'local' (default: a Dask cluster over this machine's cores), a scheduler address "
                             "tcp://host:8786, or 'none' (= --serial)")
    parser.add_argument("--serial", action="store_true", help="run the shards one after the other in this process")
    parser.add_argument("--workers", type=int, default=None, help="workers of the local cluster (default: cores)")
    parser.add_argument("--round", type=int, default=None,
                        help="shards per steering round (default: the cluster's worker threads; 1 with --serial)")
    parser.add_argument("--fault", default=None,
                        help="inject a fault of cosim.verify.injected.FAULTS into the RTL side, or an AXI error response "
                             "(axi-read, axi-write, axi-errors: each program first runs with the memory answering "
                             "SLVERR/DECERR on a beat drawn from its seed and must stop naming it, then runs cleanly)")
    parser.add_argument("--minimize", type=int, default=3, help="failures to minimize (0: none)")
    parser.add_argument("--out", default="build/replays", help="directory for replay files")
    parser.add_argument("--replay", default=None, help="re-run a replay file on the golden model and the RTL")
    parser.add_argument("--waves", action="store_true", help="with --replay: write an FST waveform")
    parser.add_argument("--junit", default=None,
                        help="also write the results as JUnit XML here (a test case per reference program, or per "
                             "shard of random programs), for CI systems")
    args = parser.parse_args(argv)
    if args.fault is not None:
        from .injected import AXI_FAULTS, FAULTS
        choose("--fault", args.fault, sorted(FAULTS) + sorted(AXI_FAULTS))
    if args.replay:
        return replay_main(args.replay, args.waves)
    configs = args.config or [None]
    mem_options = {"mem": args.mem} if args.mem != "dpi" else {}        # cosim/sim/axiram.py
    if not args.fuzz:
        failures, suites = 0, []
        for config in configs:
            cfg = load_config(config)
            programs = program_names(cfg)
            found = compare(programs, cfg, **mem_options)
            failures += len(found)
            for f in found:
                print(f)
            print(f"{'FAIL' if found else 'PASS'}: config {cfg.name}")
            suites.append((f"reference.{cfg.name}", [_case(name, cfg.name, [f for f in found if f.startswith(f"{name} [")])
                                                      for name in programs]))
        if args.junit:
            write_junit(args.junit, suites, name="regress")
        return 1 if failures else 0
    from . import cluster
    scheduler = None if args.serial or args.scheduler in ("", "none") else args.scheduler
    summary = cluster.fuzz(args.start, args.fuzz, configs, args.ops, args.batch, scheduler=scheduler,
                           workers=args.workers, fault=args.fault, minimize=args.minimize, out_dir=args.out,
                           cosim_options=mem_options, steer=True, round_shards=args.round)
    for f in summary["failures"]:
        print(f["failure"]["description"])
        if f.get("replay_file"):
            print(f"replay: python -m cosim.verify.regress --replay {f['replay_file']} --waves")
    for name, counts in sorted(summary["coverage"].items()):
        print(f"config {name}: " + funcov.report(counts))
    rate = summary["programs"] / max(summary["seconds"], 1e-9)
    print(f"{summary['programs']} programs in {summary['shards']} shards ({summary['rounds']} rounds of "
          f"{summary['round_shards']}) on {len(summary['workers'])} worker(s), {summary['seconds']:.1f} s "
          f"({rate:.2f} programs/s), {len(summary['failures'])} failing")
    if args.junit:
        by_config: dict[str, list] = {}
        for r in summary["results"].values():
            by_config.setdefault(r["config"], []).append(testcase(
                f"shard {r['id']} ({r['programs']} programs)", f"fuzz.{r['config']}", r["seconds"],
                f"{len(r['failures'])} failing programs" if r["failures"] else None,
                "\n".join(fail["failure"]["description"] for fail in r["failures"])))
        write_junit(args.junit, [(f"fuzz.{name}", cases) for name, cases in sorted(by_config.items())], name="fuzz")
    names = ", ".join(load_config(c).name for c in configs)
    print(f"{'FAIL' if summary['failures'] else 'PASS'}: config {names}")
    return 1 if summary["failures"] else 0


def _case(name: str, config: str, found: list) -> Any:
    return testcase(name, f"reference.{config}", failure=f"{len(found)} differences" if found else None,
                    details="\n".join(found))


def replay_main(path: str | Path, waves: bool = False) -> int:
    """Re-run a replay file: the golden model and the RTL (with waves), and say whether it still fails."""
    import cosim

    from . import evaluate, replay

    body = replay.load(path)
    program = body["program"]
    cfg = replay.config_of(program)
    print(f"{path}: config {cfg.name}, seed {body.get('seed')}, fault {body.get('fault')}, "
          f"{replay.program_size(program)}")
    print(replay.listing(program))
    gold = evaluate.Evaluator(cfg, None).golden(program)
    if gold is None:
        print("the program is not a fair test on the golden model (error, race, hazard or undefined read)")
        return 2
    dut = cosim.run(replay.replay_program, program, body.get("fault"), config=cfg, waves=waves)
    sig = evaluate.signature(gold, dut)
    expected = (body.get("minimized") or {}).get("signature") or body.get("failure", {}).get("signature")
    print(f"result: {'passes (golden model and RTL agree)' if sig is None else f'fails: {list(sig)}'}"
          + (f"; recorded failure: {list(expected)}" if expected else ""))
    if dut.get("error"):
        print(f"the RTL raised {dut['error']}: {dut['message']}")
    return 0 if sig is None else 1


if __name__ == "__main__":
    run_as_main(__spec__)
