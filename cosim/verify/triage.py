"""Triage: random programs checked in batches, failures captured as replays and shrunk automatically.

``check_seeds(config, seeds)`` runs the random programs of ``seeds`` on the RTL (one simulator launch)
and on the golden model, and returns the count and, for every program that failed (RTL differs from
the golden model, watchdog, error bit, simulator crash), a replay: the program as instruction
stream, micro-ops and data image (:mod:`cosim.verify.replay`).

``minimize(program, evaluate)`` shrinks a failing program while it still fails the same way (same
:func:`signature`): delta debugging that turns instructions into NOPs, then removes dependency
tokens, then shrinks loop extents, micro-op ranges and transfer sizes. A variant is only compared
when it is a fair test: it runs on the golden model without error, is race-free (every pair of
accesses to the same SRAM or overlapping DRAM from different modules is ordered by tokens, and
FINISH comes after everything), obeys the micro-op hazard rule and reads no SRAM row that neither
the restore stream nor the program defined. Every round of candidates is one simulator launch.
"""

from __future__ import annotations

import os
import socket
import time

from sw import runtime
from sw.config import load_config
from sw.isa import Insn, MemId, Opcode
from sw.pipeline import elem_bytes

from . import faults, replay

__all__ = ["fuzz_probe", "check_seeds", "signature", "ordering_problem", "Evaluator", "rtl_dut", "golden_dut",
           "here_dut", "minimize", "minimize_replay", "minimize_here", "minimize_on_rtl"]

# stage -> flag -> (token queue, push?) (the queues join neighbouring modules)
_FLAGS = {1: {"pop_next": ("g2l", False), "push_next": ("l2g", True)},
          2: {"pop_prev": ("l2g", False), "pop_next": ("s2g", False), "push_prev": ("g2l", True),
              "push_next": ("g2s", True)},
          3: {"pop_prev": ("g2s", False), "push_prev": ("s2g", True)}}
TOKEN_FLAGS = ("pop_prev", "pop_next", "push_prev", "push_next")
ERROR_KINDS = {"WatchdogError": "watchdog", "RunTimeout": "timeout"}


# ---------------------------------------------------------------------- random programs in batches
def fuzz_probe(seed: int, n_ops: int = 24, fault: str | None = None, bias=None) -> dict:
    """One random program on the current target (with an injected fault), its error as a result; on the RTL
    also the cycles each memory channel waited (``stalls``, for the backpressure coverage)."""
    from ..sim import axi_monitor
    from . import differential

    q = runtime.current()
    if fault:
        q.target = faults.with_fault(q.target, fault)
    before = axi_monitor.stall_counts()
    try:
        out = differential.fuzz_check(seed, n_ops, bias)
    except Exception as err:  # noqa: BLE001 - an error is what the comparison reports
        out = {"seed": seed, "error": type(err).__name__, "message": str(err)}
    if before is not None:
        out["stalls"] = {k: v - before[k] for k, v in axi_monitor.stall_counts().items()}
    return out


def _compare_probe(label, gold, dut):
    """(signature, description) of a random program's two runs, or None when they agree."""
    from . import differential

    if "crash" in dut:
        return ("crash", "simulator"), f"{label}: the simulator crashed: {dut['crash'][-500:]}"
    if gold.get("error"):
        return ("golden-error", gold["error"]), f"{label}: the golden model raised {gold['error']}: {gold['message']}"

    if dut.get("error"):
        kind = ERROR_KINDS.get(dut["error"], "error")
        return (kind, dut["error"]), f"{label}: the RTL raised {dut['error']}: {dut['message'][:2000]}"
    found = differential.differences(label, gold, dut)
    if not found:
        return None
    data = gold["pages"] != dut["pages"] or not all((gold[k] == dut[k]).all() for k in ("out",) if k in gold)
    return ("mismatch", "data" if data else "counters"), "\n".join(found)


def check_seeds(config, seeds, n_ops: int = 24, fault: str | None = None, bias=None, **cosim_options) -> dict:
    """Random programs ``seeds`` on the RTL (one launch) and the golden model; counts, failures, and the
    functional coverage the golden model and the RTL's stall counters sampled (``coverage``, counts of
    :func:`cosim.verify.funcov.snapshot`: this shard's hits only). ``bias`` steers the generator (cosim.verify.funcov)."""
    import cosim

    from . import differential, funcov

    cfg = load_config(config)
    seeds = [int(s) for s in seeds]
    t0, cpu0 = time.time(), _cpu_seconds()
    axi = fault in faults.AXI_FAULTS
    calls = [(fuzz_probe, (s, n_ops, None if axi else fault, bias), {}) for s in seeds]
    if axi:
        # the programs run cleanly first (compared with the golden model as usual), then each again with an AXI error
        # injected (it must stop and name it), then a reference program that must still be right: after the errors,
        # the accelerator's SRAMs hold what no golden model has, so nothing is compared with it any more
        calls += [(faults.axi_error_run, (fault, s, n_ops, bias), {}) for s in seeds]
        calls.append((faults.works_after_errors, (), {}))
    try:
        dut = cosim.run_many(calls, config=cfg, **cosim_options)
    except cosim.CosimError as err:
        if len(seeds) == 1:
            dut = [{"crash": str(err)}]
        else:       # find the program that crashes the simulator: each half in its own launch
            half = len(seeds) // 2
            a = check_seeds(cfg, seeds[:half], n_ops, fault, bias, **cosim_options)
            b = check_seeds(cfg, seeds[half:], n_ops, fault, bias, **cosim_options)
            return {**a, "seeds": a["seeds"] + b["seeds"], "programs": a["programs"] + b["programs"],
                    "coverage": funcov.merge(a["coverage"], b["coverage"]),
                    "failures": a["failures"] + b["failures"], "launches": a["launches"] + b["launches"] + 1,
                    "seconds": time.time() - t0, "cpu_seconds": _cpu_seconds() - cpu0}
    failures = []
    if axi and len(dut) > len(seeds):
        for seed, d in zip(seeds, dut[len(seeds):]):
            if not d["ok"]:
                failures.append({"config": cfg.name, "seed": seed, "n_ops": n_ops, "fault": fault, "bias": bias,
                                 "batch": seeds, "program": None, "failure": {
                                     "signature": ["axi-error", d["injected"]],
                                     "description": f"random program seed {seed} [{cfg.name}]: with {d['injected']} "
                                                    f"injected, the RTL {d['got']}"}})
        if dut[-1]:
            failures.append({"config": cfg.name, "seed": seeds[-1], "n_ops": n_ops, "fault": fault, "bias": bias,
                             "batch": seeds, "program": None, "failure": {
                                 "signature": ["axi-error", "after"], "description": dut[-1]}})
        dut = dut[:len(seeds)]
    golden_calls = [(fuzz_probe, (s, n_ops, None, bias), {}) for s in seeds]
    funcov.define(cfg)
    before = funcov.snapshot()
    gold = differential.run_golden(golden_calls, cfg, dram_bytes=replay.DRAM_BYTES)
    for d in dut:
        if d.get("stalls"):
            funcov.sample_backpressure(cfg, d["stalls"])
    coverage = funcov.delta(funcov.snapshot(), before)
    for i, (seed, g, d) in enumerate(zip(seeds, gold, dut)):
        found = _compare_probe(f"random program seed {seed} [{cfg.name}]", g, d)
        if found is None:
            continue
        sig, text = found
        entry = {"config": cfg.name, "seed": seed, "n_ops": n_ops, "fault": fault, "bias": bias, "batch": seeds,
                 "failure": {"signature": list(sig), "description": text}}
        try:
            entry["program"] = replay.record(golden_calls, cfg, index=i)
        except Exception as err:  # noqa: BLE001 - the failure is still reported, without a replay
            entry["program"] = None
            entry["failure"]["description"] += f"\n(no replay: {type(err).__name__}: {err})"
        failures.append(entry)
    return {"config": cfg.name, "seeds": seeds, "programs": len(seeds), "failures": failures, "launches": 1,
            "coverage": coverage,
            "seconds": time.time() - t0, "cpu_seconds": _cpu_seconds() - cpu0,
            "worker": f"{socket.gethostname()}:{os.getpid()}"}


def _cpu_seconds() -> float:
    """CPU time of this process, its finished children and its live descendants (the simulator server and its
    jobs keep running between launches), for rates per core."""
    import resource

    import psutil
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    total = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
    for child in psutil.Process().children(recursive=True):
        try:
            t = child.cpu_times()      # with the children it reaped (the simulator server's finished jobs)
            total += t.user + t.system + t.children_user + t.children_system
        except psutil.Error:
            pass                        # ended meanwhile: counted with the finished children once reaped
    return total


# ---------------------------------------------------------------------- fair variants
def _stage(f) -> int:
    return Insn(f["kind"], f).stage


def _is_nop(f) -> bool:
    return f["kind"] == "mem" and f["x_size"] == 0


def _accesses(cfg, f):
    """(resource, writes?, lo, hi) of one instruction; SRAMs as a whole, DRAM as a byte range."""
    op = f["opcode"]
    if f["kind"] == "mem":
        if f["x_size"] == 0:
            return []
        mem = f["memory_type"]
        eb = elem_bytes(cfg, mem)
        lo = f["dram_base"] * eb
        hi = (f["dram_base"] + (f["y_size"] - 1) * f["x_stride"] + f["x_size"]) * eb
        if op == Opcode.STORE:
            return [("dram", True, lo, hi), ("acc", False, 0, 1)]
        sram = {MemId.INP: "inp", MemId.WGT: "wgt", MemId.UOP: "uop"}.get(mem, "acc")
        return [("dram", False, lo, hi), (sram, True, 0, 1)]
    if op == Opcode.FINISH:
        return []
    if op == Opcode.GEMM:
        return [("inp", False, 0, 1), ("wgt", False, 0, 1), ("acc", True, 0, 1), ("uop", False, 0, 1)]
    return [("acc", True, 0, 1), ("uop", False, 0, 1)]


def ordering_problem(cfg, insns) -> str | None:
    """Why a stream is not a fair test (unbalanced or cyclic tokens, a race, FINISH too early), or None."""
    n = len(insns)
    stages = [_stage(f) for f in insns]
    preds = [[] for _ in range(n)]
    last = {}
    pushes, pops = {}, {}
    for i, (f, s) in enumerate(zip(insns, stages)):
        if s in last:
            preds[i].append(last[s])
        last[s] = i
        for flag, (queue, push) in _FLAGS[s].items():
            if f[flag]:
                (pushes if push else pops).setdefault(queue, []).append(i)
    for queue in set(pushes) | set(pops):
        a, b = pushes.get(queue, []), pops.get(queue, [])
        if len(a) != len(b):
            return f"token queue {queue}: {len(a)} pushes, {len(b)} pops"
        for p, c in zip(a, b):
            preds[c].append(p)
    # ancestors of every instruction (bit sets), in a topological order
    anc = [0] * n
    waiting = [len(p) for p in preds]
    succ = [[] for _ in range(n)]
    for c, ps in enumerate(preds):
        for p in ps:
            succ[p].append(c)
    ready = [i for i in range(n) if waiting[i] == 0]
    done = 0
    while ready:
        i = ready.pop()
        done += 1
        for p in preds[i]:
            anc[i] |= anc[p] | (1 << p)
        for c in succ[i]:
            waiting[c] -= 1
            if waiting[c] == 0:
                ready.append(c)
    if done < n:
        return "the tokens form a cycle (deadlock)"
    finish = [i for i, f in enumerate(insns) if f["kind"] != "mem" and f["opcode"] == Opcode.FINISH]
    if finish != [n - 1]:
        return "the stream must end with its only FINISH"
    acc = [(i, a) for i, f in enumerate(insns) for a in _accesses(cfg, f)]
    for x in range(len(acc)):
        i, (res, w1, lo1, hi1) = acc[x]
        for y in range(x + 1, len(acc)):
            j, (res2, w2, lo2, hi2) = acc[y]
            if i == j or stages[i] == stages[j] or res != res2 or not (w1 or w2) or hi1 <= lo2 or hi2 <= lo1:
                continue
            if not ((anc[j] >> i) & 1 or (anc[i] >> j) & 1):
                return f"instructions {i} and {j} race on {res}"
    if anc[n - 1] != (1 << (n - 1)) - 1:
        return "FINISH can run before every other instruction is done"
    return None


def signature(gold: dict, dut: dict):
    """How a replayed program failed on the device under test: a tuple, or None when it passed."""
    if "crash" in dut:
        return ("crash", "simulator")
    if dut.get("error"):
        return (ERROR_KINDS.get(dut["error"], "error"), dut["error"])
    if gold["pages"] != dut["pages"]:
        return ("mismatch", "data")
    if gold["counters"] != dut["counters"]:
        return ("mismatch", "counters")
    return None


class Evaluator:
    """Signatures of program variants: None (passes), "unfit" (not a fair test) or a failure tuple.

    ``dut(programs)`` runs programs on the device under test (one launch) and returns their
    :func:`replay.replay_program` results (or ``{"crash": text}``).
    """

    def __init__(self, config, dut):
        self.cfg = load_config(config)
        self.dut = dut
        self.launches = 0
        self.variants = 0

    def golden(self, program):
        problem = ordering_problem(self.cfg, program["insns"])
        if problem:
            return None
        device = replay.Tracker(self.cfg)
        with runtime.use_target(device):
            out = replay.replay_program(program)
        if out.get("error") or device.hazard or any(u.any() for u in device.undefined.values()):
            return None
        return out

    def __call__(self, programs) -> list:
        gold = [self.golden(p) for p in programs]
        fair = [i for i, g in enumerate(gold) if g is not None]
        sigs = ["unfit"] * len(programs)
        if fair:
            results = self.dut([programs[i] for i in fair])
            self.launches += 1
            self.variants += len(fair)
            for i, r in zip(fair, results):
                sigs[i] = signature(gold[i], r)
        return sigs


def rtl_dut(config, fault=None, **cosim_options):
    """Programs on the RTL in one launch (each alone when the simulator crashes)."""
    import cosim

    def run(programs):
        calls = [(replay.replay_program, (p, fault), {}) for p in programs]
        try:
            return cosim.run_many(calls, config=config, **cosim_options)
        except cosim.CosimError as err:
            if len(programs) == 1:
                return [{"crash": str(err)}]
            return [r for p in programs for r in run([p])]
    return run


def golden_dut(config, fault=None):
    """Programs on a fresh golden model each, with the fault injected (to test triage without RTL)."""
    cfg = load_config(config)

    def run(programs):
        out = []
        for p in programs:
            with runtime.use_target(replay.Tracker(cfg)):
                out.append(replay.replay_program(p, fault))
        return out
    return run


# ---------------------------------------------------------------------- the minimizer
def _nop(f):
    """The instruction as a NOP of its module that keeps its dependency flags."""
    stage = _stage(f)
    mem = {1: MemId.INP, 2: MemId.UOP}.get(stage, MemId.UOP)
    out = {"kind": "mem", **{k: 0 for k in f if k != "kind"}}
    if f["kind"] != "mem":
        out = {"kind": "mem", "opcode": int(Opcode.LOAD), "memory_type": int(mem), "sram_base": 0, "dram_base": 0,
               "y_size": 0, "x_size": 0, "x_stride": 0, "y_pad_0": 0, "y_pad_1": 0, "x_pad_0": 0, "x_pad_1": 0}
    else:
        out["opcode"], out["memory_type"] = f["opcode"], f["memory_type"]
    for flag in TOKEN_FLAGS:
        out[flag] = f[flag]
    return out


def _tidy(insns):
    """Without the NOPs that move no token."""
    return [f for f in insns if not (_is_nop(f) and not any(f[k] for k in TOKEN_FLAGS))]


def _with(program, insns):
    return dict(program, insns=insns)


def _ddmin(items, make, evaluate, wanted, log):
    """Delta debugging: the smallest subset of ``items`` whose ``make(subset)`` still fails ``wanted``."""
    n = 2
    while len(items) >= 2:
        size = -(-len(items) // n)
        chunks = [items[k:k + size] for k in range(0, len(items), size)]
        candidates = [[x for x in items if x not in set(c)] for c in chunks]
        sigs = evaluate([make(c) for c in candidates])
        hit = next((k for k, s in enumerate(sigs) if s == wanted), None)
        if hit is not None:
            items = candidates[hit]
            n = max(n - 1, 2)
            log(f"  {len(items)} left")
            continue
        if n >= len(items):
            break
        n = min(2 * n, len(items))
    if len(items) == 1 and evaluate([make([])])[0] == wanted:
        items = []
    return items


def _shrinks(f):
    """Smaller versions of one instruction: loop extents, micro-op ranges, transfer sizes, padding."""
    out = []

    def put(**changes):
        g = dict(f, **changes)
        if g != f and g not in out:
            out.append(g)
    if f["kind"] in ("gemm", "alu") and f["opcode"] != Opcode.FINISH:
        for k in ("iter_out", "iter_in"):
            if f[k] > 1:
                put(**{k: 1})
                put(**{k: f[k] // 2})
        b, e = f["uop_bgn"], f["uop_end"]
        if e - b > 1:
            put(uop_end=b + 1)
            put(uop_end=b + (e - b) // 2)
            put(uop_end=e - 1)
            put(uop_bgn=e - 1)
            put(uop_bgn=b + 1)
    elif f["kind"] == "mem" and f["x_size"]:
        for k in ("y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1"):
            if f[k]:
                put(**{k: 0})
        for k in ("x_size", "y_size"):
            if f[k] > 1:
                put(**{k: 1})
                put(**{k: f[k] // 2})
                put(**{k: f[k] - 1})
    return out


def minimize(program, evaluate, wanted=None, log=print, max_rounds=60) -> dict:
    """The smallest variant of ``program`` that still fails as ``wanted`` (its own failure by default)."""
    if wanted is None:
        wanted = evaluate([program])[0]
        if wanted in (None, "unfit"):
            raise ValueError(f"the program does not fail on the device under test (result: {wanted})")
    wanted = tuple(wanted)
    before = replay.program_size(program)
    for _ in range(3):
        size = replay.program_size(program)
        insns = program["insns"]
        # 1. instructions -> NOPs that keep their tokens
        real = [i for i, f in enumerate(insns) if not _is_nop(f) and i != len(insns) - 1]
        log(f"minimize: {len(real)} instructions that do work")
        def nops(ks, program=program, insns=insns, real=real):
            return _with(program, _tidy([f if (i in ks or i not in real) else _nop(f) for i, f in enumerate(insns)]))
        keep = _ddmin(real, nops, evaluate, wanted, log)
        keep = set(keep)
        program = _with(program, _tidy([f if (i in keep or i not in real) else _nop(f) for i, f in enumerate(insns)]))
        # 2. dependency tokens, a push and its pop together
        insns = program["insns"]
        edges = _token_edges(insns)
        log(f"minimize: {len(edges)} tokens")

        def drop(kept, insns=insns, edges=edges, program=program):
            out = [dict(f) for f in insns]
            for e in edges:
                if e not in kept:
                    (p, pf), (c, cf) = e
                    out[p][pf] = 0
                    out[c][cf] = 0
            return _with(program, _tidy(out))
        kept = _ddmin(edges, drop, evaluate, wanted, log)
        program = drop(kept)
        # 3. loop extents, micro-op ranges, sizes
        for _ in range(max_rounds):
            insns = program["insns"]
            cands = [_with(program, insns[:i] + [g] + insns[i + 1:]) for i, f in enumerate(insns) for g in _shrinks(f)]
            cands += [_with(program, v) for v in _folds(insns)]
            if not cands:
                break
            sigs = evaluate(cands)
            hits = [c for c, s in zip(cands, sigs) if s == wanted]
            if not hits:
                break
            program = hits[0]
            if len(hits) > 1:
                merged = _merge(insns, [h["insns"] for h in hits])
                if merged is not None and evaluate([_with(program, merged)])[0] == wanted:
                    program = _with(program, merged)
            log(f"minimize: shrunk to {replay.program_size(program)}")
        if replay.program_size(program) == size:
            break
    program = dict(program)
    program["minimized"] = {"before": before, "after": replay.program_size(program), "signature": list(wanted)}
    return program


def _folds(insns):
    """Streams with one token-only NOP gone: its pushes moved to the instruction of its module before it,
    its pops to the one after (the same order, one instruction less)."""
    out = []
    for i, f in enumerate(insns):
        if not _is_nop(f):
            continue
        same = [j for j, g in enumerate(insns) if j != i and _stage(g) == _stage(f)]
        before = [j for j in same if j < i]
        after = [j for j in same if j > i]
        g = [dict(x) for x in insns]
        ok = True
        for flag in TOKEN_FLAGS:
            if not f[flag]:
                continue
            to = (before[-1] if before else None) if flag.startswith("push") else (after[0] if after else None)
            if to is None or g[to][flag]:
                ok = False
                break
            g[to][flag] = 1
        if ok:
            out.append(g[:i] + g[i + 1:])
    return out


def _merge(base, variants):
    """The stream with every single-instruction change of ``variants`` applied (the first per instruction)."""
    out = list(base)
    touched = set()
    for v in variants:
        diff = [i for i, (a, b) in enumerate(zip(base, v)) if a != b]
        if len(diff) != 1 or diff[0] in touched:
            continue
        out[diff[0]] = v[diff[0]]
        touched.add(diff[0])
    return out if touched else None


def _token_edges(insns):
    """Each token as ((pushing instruction, flag), (popping instruction, flag)), matched in FIFO order."""
    pushes, pops = {}, {}
    for i, f in enumerate(insns):
        for flag, (queue, push) in _FLAGS[_stage(f)].items():
            if f[flag]:
                (pushes if push else pops).setdefault(queue, []).append((i, flag))
    return [e for q in sorted(pushes) for e in zip(pushes[q], pops.get(q, []))]


def here_dut(fault=None):
    """Programs on the current target, one after the other (inside a simulation: no launch at all)."""
    q = runtime.current()

    def run(programs):
        out = []
        for p in programs:
            previous = runtime.set_current(q)
            try:
                out.append(replay.replay_program(p, fault))
            finally:
                runtime.set_current(previous)
        return out
    return run


def minimize_here(entry: dict) -> dict:
    """:func:`minimize_replay` on the current target: ``cosim.run(minimize_here, entry)`` minimizes on the
    RTL in one simulator launch (the golden side runs in the same process)."""
    return minimize_replay(entry, dut=here_dut(entry.get("fault")), log=lambda text: None)


def minimize_on_rtl(entry: dict, log=print, **cosim_options) -> dict:
    """Minimize a failure on the RTL: in one launch, or one launch per round when the simulator crashes."""
    import cosim

    try:
        return cosim.run(minimize_here, entry, config=replay.config_of(entry["program"]), **cosim_options)
    except cosim.CosimError:
        log("minimize: the simulator crashed; again with one launch per round")
        return minimize_replay(entry, log=log, **cosim_options)


def minimize_replay(entry: dict, dut=None, log=print, **cosim_options) -> dict:
    """A failure entry of :func:`check_seeds` with its program minimized on the RTL, one launch per
    round (or on ``dut``)."""
    cfg = replay.config_of(entry["program"])
    dut = dut or rtl_dut(cfg, entry.get("fault"), **cosim_options)
    evaluate = Evaluator(cfg, dut)
    t0 = time.time()
    first = evaluate([entry["program"]])[0]
    out = dict(entry)
    if first in (None, "unfit"):
        out["minimized"] = {"reproduced": False, "result": first}
        return out
    program = minimize(entry["program"], evaluate, first, log=log)
    stats = program.pop("minimized")
    out["program"] = program
    out["minimized"] = {**stats, "reproduced": True, "launches": evaluate.launches, "variants": evaluate.variants,
                        "seconds": round(time.time() - t0, 1)}
    return out
