"""What every target agrees on before and around execution: instruction checks and token scheduling.

:func:`check_insn` is the static validity check of one instruction (docs/architecture.md §2: unknown memory
types, reserved dependency flags, SRAM ranges, padding rules). :func:`schedule` runs a stream on the
three in-order cores (load, compute, store) with the four token queues of docs/architecture.md §2.3, calling
an ``execute`` callback per instruction; with no callback it is the runtime's deadlock check.
Both the golden model and the runtime use them, so they report the same errors in the same words.
:func:`check_int` is the argument check every API entry point uses. Every subclass of
:class:`VTAError`, wherever it is defined (the RTL target defines its own), is announced to the
hooks of :func:`on_error_class`; the runtime uses that to register them with tvm-ffi.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable, Sequence
from functools import cache

from sw.config import Config
from sw.isa import (
    STAGE_COMPUTE,
    STAGE_LOAD,
    STAGE_NAMES,
    STAGE_STORE,
    TOKEN_QUEUE_DEPTH,
    AluOp,
    Insn,
    MemId,
    Opcode,
    alu_opcode_error,
    opcode_error,
    post_imm_error,
)

__all__ = ["VTAError", "InsnError", "DeadlockError", "check_insn", "schedule", "force_serial", "TOKEN_QUEUES",
           "elem_bytes", "sram_depth", "check_int", "on_error_class", "error_classes", "format_stream"]

_ERROR_CLASSES: list[type] = []
_ERROR_HOOKS: list = []
_ERROR_LOCK = threading.Lock()


class VTAError(RuntimeError):
    """Base of the errors raised by the runtime and the simulators.

    Defining a subclass announces it to every hook given to :func:`on_error_class`. ``registers``: for a run that
    stopped on the hardware, its register values by name as read when it stopped (None otherwise).
    """

    registers: dict[str, int] | None = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        with _ERROR_LOCK:
            _ERROR_CLASSES.append(cls)
            hooks = list(_ERROR_HOOKS)
        for hook in hooks:
            hook(cls)


def error_classes() -> list[type]:
    """:class:`VTAError` and every subclass defined so far, in definition order."""
    with _ERROR_LOCK:
        return [VTAError, *_ERROR_CLASSES]


def on_error_class(hook: Callable[[type[VTAError]], object]) -> None:
    """Call ``hook(cls)`` for :class:`VTAError`, each subclass defined so far, and each one defined later."""
    with _ERROR_LOCK:
        _ERROR_HOOKS.append(hook)
        known = [VTAError, *_ERROR_CLASSES]
    for cls in known:
        hook(cls)


def check_int(what: str, name: str, value: object, lo: int | None = 0, hi: int | None = None,
              exc: type[Exception] | None = None) -> int:
    """``value`` as a Python int, or ``exc`` (default :class:`VTAError`) naming ``what``'s argument ``name``.

    Python and numpy integers are accepted; bool, float, str, None and everything else are errors,
    as is a value outside ``[lo, hi]`` (either bound may be None). A non-integer (or a negative one
    where ``lo = 0``) "must be a non-negative integer", or "must be an integer" with the range;
    an integer out of range gets "``name = value``; allowed range [lo, hi]".
    """
    ok = not isinstance(value, bool) and type(value).__name__ != "bool_"
    if ok:
        try:
            v = operator.index(value)  # type: ignore[arg-type]  # any object: a non-integer raises TypeError
        except TypeError:
            ok = False
    if ok and (lo is None or v >= lo) and (hi is None or v <= hi):
        return v
    span = f"allowed range [{'...' if lo is None else lo}, {'...' if hi is None else hi}]"
    if ok and not (lo == 0 and v < 0):
        msg = f"{what}: {name} = {v}; {span}"
    elif lo == 0:
        msg = f"{what}: {name} = {value!r} must be a non-negative integer" + (f" ({span})" if hi is not None else "")
    else:
        msg = f"{what}: {name} = {value!r} must be an integer; {span}"
    raise (exc or VTAError)(msg)


class InsnError(VTAError, ValueError):
    """An instruction is not valid for this configuration."""


class DeadlockError(VTAError):
    """No core can make progress: the message names what each core waits for and every token count."""

    def __init__(self, message: str, state: dict | None = None) -> None:
        super().__init__(message)
        self.state = state or {}


# Token queues (docs/architecture.md §2.3): name -> (producer stage, consumer stage)
TOKEN_QUEUES = {
    "l2g": (STAGE_LOAD, STAGE_COMPUTE),
    "g2l": (STAGE_COMPUTE, STAGE_LOAD),
    "g2s": (STAGE_COMPUTE, STAGE_STORE),
    "s2g": (STAGE_STORE, STAGE_COMPUTE),
}
# stage -> flag -> token queue it acts on (None = reserved, must be 0)
_FLAG_QUEUES: dict[int, dict[str, str | None]] = {
    STAGE_LOAD: {"pop_prev": None, "pop_next": "g2l", "push_prev": None, "push_next": "l2g"},
    STAGE_COMPUTE: {"pop_prev": "l2g", "pop_next": "s2g", "push_prev": "g2l", "push_next": "g2s"},
    STAGE_STORE: {"pop_prev": "g2s", "pop_next": None, "push_prev": "s2g", "push_next": None},
}


@cache
def elem_bytes(cfg, mem: int) -> int:
    """Bytes of one element of a memory type in DRAM (ACC_8BIT: the int8 lanes of one acc element)."""
    sizes: dict[int, int] = {
        MemId.UOP: cfg.UOP_ELEM_BYTES, MemId.WGT: cfg.WGT_ELEM_BYTES, MemId.INP: cfg.INP_ELEM_BYTES,
        MemId.ACC: cfg.ACC_ELEM_BYTES, MemId.OUT: cfg.OUT_ELEM_BYTES,
        MemId.ACC_8BIT: cfg.ACC_ELEM_BYTES // (cfg.ACC_WIDTH // 8),
    }
    return sizes[mem]


@cache
def sram_depth(cfg, mem: int) -> int:
    depths: dict[int, int] = {
        MemId.UOP: cfg.UOP_DEPTH, MemId.WGT: cfg.WGT_DEPTH, MemId.INP: cfg.INP_DEPTH,
        MemId.ACC: cfg.ACC_DEPTH, MemId.OUT: cfg.OUT_DEPTH, MemId.ACC_8BIT: cfg.ACC_DEPTH,
    }
    return depths[mem]


def _mem_name(mem):
    try:
        return MemId(mem).name
    except ValueError:
        return str(mem)


_MEM_IDS = frozenset(int(m) for m in MemId)


def check_insn(cfg: Config, insn: Insn, dram_size: int | None = None, where: str = "instruction") -> None:
    """Raise :class:`InsnError` if ``insn`` is not valid for ``cfg`` (docs/architecture.md §2).

    ``dram_size`` (bytes) also bounds the DRAM range a LOAD or STORE touches.
    """
    f = insn.f
    op = f["opcode"]
    problem = opcode_error(cfg, op) if op == Opcode.DEPTHWISE else None
    if problem:
        raise InsnError(f"{where}: {problem}")
    stage = insn.stage
    for flag, queue in _FLAG_QUEUES[stage].items():
        if queue is None and f[flag]:
            raise InsnError(f"{where}: dependency flag {flag} is reserved on {STAGE_NAMES[stage]}-module "
                            f"instructions and must be 0 (allowed range [0, 0])")
    if insn.kind == "mem":
        mem = f["memory_type"]
        is_nop = f["x_size"] == 0
        allowed = (MemId.UOP, MemId.WGT, MemId.INP, MemId.ACC, MemId.ACC_8BIT) if op == Opcode.LOAD else (MemId.OUT,)
        if mem not in _MEM_IDS or (not is_nop and mem not in allowed):
            names = ", ".join(f"{int(m)} {m.name}" for m in allowed)
            raise InsnError(f"{where}: memory_type = {mem} is not valid for "
                            f"{'LOAD' if op == Opcode.LOAD else 'STORE'}; allowed: {names}")
        if is_nop:
            return
        if f["y_size"] == 0:
            raise InsnError(f"{where}: y_size = 0 with x_size = {f['x_size']}; allowed range [1, 65535] "
                            f"(x_size = 0 makes a NOP)")
        pads = (f["y_pad_0"], f["y_pad_1"], f["x_pad_0"], f["x_pad_1"])
        if op == Opcode.STORE or mem == MemId.UOP:
            if any(pads):
                raise InsnError(f"{where}: padding is not allowed on a {_mem_name(mem)} "
                                f"{'STORE' if op == Opcode.STORE else 'LOAD'} (allowed range [0, 0])")
        if mem == MemId.UOP and f["y_size"] != 1:
            raise InsnError(f"{where}: a UOP load must have y_size = 1 (allowed range [1, 1]), got {f['y_size']}")
        pitch = f["x_pad_0"] + f["x_size"] + f["x_pad_1"]
        rows = f["y_pad_0"] + f["y_size"] + f["y_pad_1"]
        depth = sram_depth(cfg, mem)
        if f["sram_base"] + pitch * rows > depth:
            raise InsnError(
                f"{where}: {_mem_name(mem)} SRAM range [{f['sram_base']}, {f['sram_base'] + pitch * rows}) "
                f"exceeds the buffer; allowed range [0, {depth}]")
        if dram_size is not None:
            eb = elem_bytes(cfg, mem)
            start = f["dram_base"] * eb
            end = (f["dram_base"] + (f["y_size"] - 1) * f["x_stride"] + f["x_size"]) * eb
            if end > dram_size:
                raise InsnError(f"{where}: DRAM byte range [{start:#x}, {end:#x}) is outside device memory "
                                f"[0, {dram_size:#x})")
    elif insn.kind in ("gemm", "alu") and op != Opcode.FINISH:
        if not f["uop_bgn"] <= f["uop_end"] <= cfg.UOP_DEPTH:
            raise InsnError(f"{where}: uop range [{f['uop_bgn']}, {f['uop_end']}) must satisfy "
                            f"uop_bgn <= uop_end <= {cfg.UOP_DEPTH}")
        if insn.kind == "alu":
            problem = alu_opcode_error(cfg, f["alu_opcode"])
            if problem:
                raise InsnError(f"{where}: {problem}")
            problem = post_imm_error(cfg, f["imm"]) if f["alu_opcode"] == AluOp.POST else None
            if problem:
                raise InsnError(f"{where}: {problem}")


def format_stream(insns: list[Insn], disasm: Callable[[Insn], str], title: str) -> str:
    """``title``, then one line per instruction: index, module, ``disasm(insn)``, token counts after it."""
    tokens = {q: 0 for q in TOKEN_QUEUES}
    lines = [title]
    for i, insn in enumerate(insns):
        for flag, q in _FLAG_QUEUES[insn.stage].items():
            if q is not None:
                tokens[q] += insn.f[flag] if flag.startswith("push") else -insn.f[flag]
        counts = " ".join(f"{q}={n}" for q, n in tokens.items())
        lines.append(f"{i:6d} {STAGE_NAMES[insn.stage]:7s} {disasm(insn):90s} {counts}")
    return "\n".join(lines)


def force_serial(insns: list[Insn]) -> None:
    """Rewrite the dependency flags of ``insns`` in place so the modules run them strictly in order
    (VTA's ``DEBUG_FORCE_SERIAL``).

    Every pair of consecutive instructions of neighbouring stages is chained by one token (the first
    pushes towards the second's stage, the second pops it); every other flag is cleared. Pairs of the
    same module already run in order; a load followed directly by a store has no queue between them
    (as in VTA). The caller appends the closing handshake that makes FINISH wait for every module.
    """
    for insn in insns:
        for flag in ("pop_prev", "pop_next", "push_prev", "push_next"):
            insn.f[flag] = 0
    for prev, nxt in zip(insns, insns[1:]):
        a, b = prev.stage, nxt.stage
        if abs(a - b) == 1:
            prev.f["push_next" if b > a else "push_prev"] = 1
            nxt.f["pop_prev" if b > a else "pop_next"] = 1


def schedule(cfg: Config, insns: list[Insn], execute: Callable[[int, Insn], object] | None = None,
             disasm: Callable[[Insn], str] | None = None, order: Sequence[int] | None = None,
             peaks: dict[str, int] | None = None, check_depth: bool = True, trace: list[int] | None = None) -> dict:
    """Run ``insns`` on three in-order cores with token queues; return the final token counts.

    Each core runs the instructions at the head of its queue as long as their pops can be served
    (pops before, pushes after the instruction, docs/architecture.md §2.3). The run ends when FINISH executes;
    then every queue must be empty and every token count zero. A state where no core can progress
    raises :class:`DeadlockError` naming what each core waits for. ``trace`` (a list) receives the index of each
    instruction as it runs: with the default ``order`` the same sequence every time for the same stream, so a
    stream's dry run can hand it to the golden model.
    """
    queues: dict[int, list[int]] = {STAGE_LOAD: [], STAGE_COMPUTE: [], STAGE_STORE: []}
    for i, insn in enumerate(insns):
        queues[insn.stage].append(i)
    heads = {s: 0 for s in queues}
    tokens = {q: 0 for q in TOKEN_QUEUES}
    flagmap = {s: [(flag, q) for flag, q in m.items() if q is not None] for s, m in _FLAG_QUEUES.items()}
    finished = False

    def describe():
        lines = []
        for s, q in queues.items():
            h = heads[s]
            if h >= len(q):
                lines.append(f"  {STAGE_NAMES[s]:8s}: idle, all {len(q)} instructions done")
                continue
            insn = insns[q[h]]
            waits = [qn for flag, qn in flagmap[s] if flag.startswith("pop") and insn.f[flag] and tokens[qn] == 0]
            text = disasm(insn) if disasm else f"opcode {insn.opcode}"
            why = f"waits for a token on {', '.join(waits)}" if waits else "ready"
            lines.append(f"  {STAGE_NAMES[s]:8s}: {why} at instruction #{q[h]} ({text}); "
                         f"{len(q) - h} of {len(q)} left")
        lines.append("  tokens  : " + ", ".join(f"{q}={n}" for q, n in tokens.items()))
        return "\n".join(lines)

    def state():
        return {"heads": {STAGE_NAMES[s]: (queues[s][heads[s]] if heads[s] < len(queues[s]) else None)
                          for s in queues}, "tokens": dict(tokens)}

    order = order or (STAGE_LOAD, STAGE_COMPUTE, STAGE_STORE)
    peak = {q: 0 for q in TOKEN_QUEUES}
    while not finished:
        progress = False
        for s in order:
            q = queues[s]
            pops = [(flag, qn) for flag, qn in flagmap[s] if flag.startswith("pop")]
            pushes = [(flag, qn) for flag, qn in flagmap[s] if flag.startswith("push")]
            while heads[s] < len(q):
                insn = insns[q[heads[s]]]
                if any(insn.f[flag] and tokens[qn] == 0 for flag, qn in pops):
                    break
                for flag, qn in pops:
                    if insn.f[flag]:
                        tokens[qn] -= 1
                if execute is not None:
                    execute(q[heads[s]], insn)
                if trace is not None:
                    trace.append(q[heads[s]])
                for flag, qn in pushes:
                    if insn.f[flag]:
                        tokens[qn] += 1
                        peak[qn] = max(peak[qn], tokens[qn])
                heads[s] += 1
                progress = True
                if insn.opcode == Opcode.FINISH:
                    finished = True
                    break
            if finished:
                break
        if not finished and not progress:
            if all(heads[s] >= len(queues[s]) for s in queues):
                raise DeadlockError("the stream ended without a FINISH instruction:\n" + describe(), state())
            raise DeadlockError("deadlock: no module can make progress before FINISH:\n" + describe(), state())
    left = {STAGE_NAMES[s]: len(queues[s]) - heads[s] for s in queues if heads[s] < len(queues[s])}
    if left or any(tokens.values()):
        raise DeadlockError("FINISH ran while work or tokens were left over (a correct stream makes FINISH "
                            "wait for every module and leaves every token queue empty):\n" + describe(), state())
    if peaks is not None:
        peaks.update(peak)
        return tokens
    if check_depth:         # (False: a stream whose dry run checked it already)
        _check_token_depth(cfg, insns, disasm)
    return tokens


def _check_token_depth(cfg, insns, disasm):
    """Refuse a stream that could hold more than TOKEN_QUEUE_DEPTH tokens in a queue at some point.

    Only a queue with more pushes than the depth can overflow. For such a queue, its consumer is
    made to wait as long as the stream allows (the other modules run first whenever they can): the
    count it then reaches is the most any timing of the hardware can reach."""
    pushes = {q: 0 for q in TOKEN_QUEUES}
    for insn in insns:
        for flag, q in _FLAG_QUEUES[insn.stage].items():
            if q is not None and flag.startswith("push") and insn.f[flag]:
                pushes[q] += 1
    for q, n in pushes.items():
        if n <= TOKEN_QUEUE_DEPTH:
            continue
        consumer = TOKEN_QUEUES[q][1]
        order = tuple(s for s in (STAGE_LOAD, STAGE_COMPUTE, STAGE_STORE) if s != consumer) + (consumer,)
        peaks = {}
        schedule(cfg, insns, None, disasm, order=order, peaks=peaks)
        if peaks[q] > TOKEN_QUEUE_DEPTH:
            producer = STAGE_NAMES[TOKEN_QUEUES[q][0]]
            raise InsnError(f"token queue {q} could hold {peaks[q]} tokens; the hardware holds at most "
                            f"{TOKEN_QUEUE_DEPTH} (the {producer} module may run that far ahead of "
                            f"{STAGE_NAMES[consumer]}); pop a token from the other direction now and then "
                            f"(a WAR dependency) or synchronize more often")
