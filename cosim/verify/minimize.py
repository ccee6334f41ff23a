"""The minimizer: a failing program shrunk while it still fails the same way (the same
:func:`cosim.verify.evaluate.signature`).

Delta debugging turns instructions into NOPs that keep their tokens, then removes dependency tokens, then shrinks
loop extents, micro-op ranges and transfer sizes. A variant is only compared when it is a fair test
(:class:`cosim.verify.evaluate.Evaluator`); every round of candidates is one simulator launch.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from sw.isa import MemId, Opcode

from . import replay
from .evaluate import Dut, Evaluator, here_dut, rtl_dut
from .fair import TOKEN_FLAGS, is_nop, stage, token_edges

__all__ = ["as_nop", "minimize", "minimize_here", "minimize_on_rtl", "minimize_replay"]


def as_nop(f: dict) -> dict:
    """The instruction as a NOP of its module that keeps its dependency flags."""
    module = stage(f)
    mem = {1: MemId.INP, 2: MemId.UOP}.get(module, MemId.UOP)
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
    return [f for f in insns if not (is_nop(f) and not any(f[k] for k in TOKEN_FLAGS))]


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


def minimize(program: dict, evaluate: Callable[[Sequence[dict]], list], wanted: tuple | None = None,
             log: Callable[[str], object] = print, max_rounds: int = 60) -> dict:
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
        real = [i for i, f in enumerate(insns) if not is_nop(f) and i != len(insns) - 1]
        log(f"minimize: {len(real)} instructions that do work")
        def nops(ks, program=program, insns=insns, real=real):
            return _with(program, _tidy([f if (i in ks or i not in real) else as_nop(f) for i, f in enumerate(insns)]))
        keep = _ddmin(real, nops, evaluate, wanted, log)
        keep = set(keep)
        program = _with(program, _tidy([f if (i in keep or i not in real) else as_nop(f) for i, f in enumerate(insns)]))
        # 2. dependency tokens, a push and its pop together
        insns = program["insns"]
        edges = token_edges(insns)
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
        if not is_nop(f):
            continue
        same = [j for j, g in enumerate(insns) if j != i and stage(g) == stage(f)]
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



def minimize_here(entry: dict) -> dict:
    """:func:`minimize_replay` on the current target: ``cosim.run(minimize_here, entry)`` minimizes on the
    RTL in one simulator launch (the golden side runs in the same process)."""
    return minimize_replay(entry, dut=here_dut(entry.get("fault")), log=lambda text: None)


def minimize_on_rtl(entry: dict, log: Callable[[str], object] = print, **cosim_options: Any) -> dict:
    """Minimize a failure on the RTL: in one launch, or one launch per round when the simulator crashes."""
    import cosim

    try:
        return cosim.run(minimize_here, entry, config=replay.config_of(entry["program"]), **cosim_options)
    except cosim.CosimError:
        log("minimize: the simulator crashed; again with one launch per round")
        return minimize_replay(entry, log=log, **cosim_options)


def minimize_replay(entry: dict, dut: Dut | None = None, log: Callable[[str], object] = print, **cosim_options: Any) -> dict:
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
