"""Whether a program variant is a fair test: its dependency tokens balance and order every pair of accesses to the
same SRAM or overlapping DRAM from different modules, and FINISH comes after everything (:func:`ordering_problem`).
"""

from __future__ import annotations

from collections.abc import Sequence

from sw.config import Config
from sw.isa import Insn, MemId, Opcode
from sw.pipeline import elem_bytes

__all__ = ["FLAGS", "TOKEN_FLAGS", "stage", "is_nop", "accesses", "ordering_problem", "token_edges"]

# stage -> flag -> (token queue, push?) (the queues join neighbouring modules)
FLAGS = {1: {"pop_next": ("g2l", False), "push_next": ("l2g", True)},
          2: {"pop_prev": ("l2g", False), "pop_next": ("s2g", False), "push_prev": ("g2l", True),
              "push_next": ("g2s", True)},
          3: {"pop_prev": ("g2s", False), "push_prev": ("s2g", True)}}
TOKEN_FLAGS = ("pop_prev", "pop_next", "push_prev", "push_next")


def stage(f: dict) -> int:
    return Insn(f["kind"], f).stage


def is_nop(f: dict) -> bool:
    return f["kind"] == "mem" and f["x_size"] == 0


def accesses(cfg: Config, f: dict) -> list[tuple[str, bool, int, int]]:
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
    if op in (Opcode.GEMM, Opcode.DEPTHWISE):
        return [("inp", False, 0, 1), ("wgt", False, 0, 1), ("acc", True, 0, 1), ("uop", False, 0, 1)]
    return [("acc", True, 0, 1), ("uop", False, 0, 1)]


def ordering_problem(cfg: Config, insns: Sequence[dict]) -> str | None:
    """Why a stream is not a fair test (unbalanced or cyclic tokens, a race, FINISH too early), or None."""
    n = len(insns)
    stages = [stage(f) for f in insns]
    preds: list[list[int]] = [[] for _ in range(n)]
    last: dict[int, int] = {}
    pushes: dict[str, list[int]] = {}
    pops: dict[str, list[int]] = {}
    for i, (f, s) in enumerate(zip(insns, stages)):
        if s in last:
            preds[i].append(last[s])
        last[s] = i
        for flag, (queue, push) in FLAGS[s].items():
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
    succ: list[list[int]] = [[] for _ in range(n)]
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
    acc = [(i, a) for i, f in enumerate(insns) for a in accesses(cfg, f)]
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



def token_edges(insns: Sequence[dict]) -> list[tuple[tuple[int, str], tuple[int, str]]]:
    """Each token as ((pushing instruction, flag), (popping instruction, flag)), matched in FIFO order."""
    pushes: dict[str, list[tuple[int, str]]] = {}
    pops: dict[str, list[tuple[int, str]]] = {}
    for i, f in enumerate(insns):
        for flag, (queue, push) in FLAGS[stage(f)].items():
            if f[flag]:
                (pushes if push else pops).setdefault(queue, []).append((i, flag))
    return [e for q in sorted(pushes) for e in zip(pushes[q], pops.get(q, []))]
