"""Why a bit of the accelerator never toggled: the toggle half of ``make coverage``'s "every hole explained".

A toggle point is one direction of one bit of one signal. Many untoggled bits are the same net under several names
(an Amaranth expression ``$34 = {7'h00, load_insn_elems, 8'h00}``, a port and the signal connected to it) or are
tied to a constant by the Verilog itself. :func:`bit_classes` reads the generated Verilog and puts every bit into
a class of bits that always hold the same value (continuous assignments of names, slices, constants and
concatenations; instance port connections), with the class's constant when it has one. An untoggled bit is then
explained when its class is constant, or when some bit of its class matches a rule of :data:`TOGGLE_RULES`
(module, signal, which bits, why): counters whose high bits need more events than any simulation makes, fields a
module only ever sees at one value, and so on. :func:`explain_toggles` does this for every untoggled point and
returns what stays unexplained, so the report can say "0 not explained" as it does for lines.
"""

from __future__ import annotations

import re
from collections import defaultdict
from functools import cache
from pathlib import Path

__all__ = ["bit_classes", "TOGGLE_RULES", "explain_toggles", "source_line"]

_ID = r"(?:\\\S+ |[A-Za-z_][\w$]*)"
_DECL = re.compile(rf"^\s*(?:wire|reg|input|output|inout)\s+(?:signed\s+)?(?:\[(\d+):(\d+)\]\s*)?({_ID})")
_MODULE = re.compile(rf"^module ({_ID})")
_ASSIGN = re.compile(rf"^\s*assign ({_ID})\s*(?:\[(\d+)(?::(\d+))?\])?\s*= (.*);\s*$")
_INSTANCE = re.compile(rf"^\s*({_ID})\s+({_ID})\s*\($")
_PORT = re.compile(rf"^\s*\.({_ID})\s*\((.*)\),?\s*$")
_TERM = re.compile(rf"\s*(?:(\d+)'([hbd])([0-9a-fA-FxzXZ_]+)|({_ID})\s*(?:\[(\d+)(?::(\d+))?\])?)\s*$")
_REPL = re.compile(r"^\s*\{\s*(\d+)\s*\{(.*)\}\s*\}\s*$")
_ATTR = re.compile(r"\(\*[^*]*\*\)\s*")
_SRC = re.compile(r'\(\*\s*src\s*=\s*"([^"|]+)')
ROOT = Path(__file__).resolve().parents[2]


@cache
def _lines(path: str) -> list:
    try:
        return (ROOT / path).read_text().splitlines()
    except OSError:
        return []


def source_line(path: str, n: int) -> str | None:
    """Line ``n`` (from 1) of the source file ``path`` (relative to the project), stripped; None if there is none."""
    lines = _lines(path)
    return lines[n - 1].strip() if 0 < n <= len(lines) else None
_SUM = re.compile(r"^(.+?)\s+([-+])\s+(.+)$")
_MUX = re.compile(r"^(.+?)\s+\?\s+(.+?)\s+:\s+(.+)$")
_SCALE = re.compile(r"^(.+?)\s+\*\s+(\d+)'h([0-9a-f]+)$")        # a product with a constant
_PROC = re.compile(rf"^\s+({_ID})\s*(?:\[(\d+)(?::(\d+))?\])?\s*(<?=) (.*);\s*$")     # in an always block


def _name(ident: str) -> str:
    return (ident[1:] if ident.startswith("\\") else ident).strip()


def _split_top(text: str) -> list:
    """The comma-separated items of a concatenation's inside, nested braces kept whole."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    return items


def _bits(expr: str, widths: dict):
    """The bits of a Verilog expression, least significant first: ``("c", 0|1)`` for a constant bit, ``(name,
    bit)`` for a bit of a signal; None when the expression is anything else (an operator, a function)."""
    expr = expr.strip()
    rep = _REPL.match(expr)
    if rep:
        inner = _bits(rep[2], widths)
        return None if inner is None else inner * int(rep[1])
    if expr.startswith("{") and expr.endswith("}"):
        out = []
        for item in reversed(_split_top(expr[1:-1])):       # the last item is the least significant
            bits = _bits(item, widths)
            if bits is None:
                return None
            out += bits
        return out
    m = _TERM.match(expr + " ")       # an escaped name ends with a space
    if not m:
        return None
    if m[1]:
        width, base, digits = int(m[1]), m[2], m[3].replace("_", "")
        if any(c in "xzXZ" for c in digits):
            return None
        value = int(digits, {"h": 16, "b": 2, "d": 10}[base])
        return [("c", value >> i & 1) for i in range(width)]
    name = _name(m[4])
    if name not in widths:
        return None
    lo, hi = 0, widths[name] - 1
    if m[5] is not None:
        hi = int(m[5])
        lo = int(m[6]) if m[6] is not None else hi
    return [(name, i) for i in range(lo, hi + 1)]


class _Classes:
    """Union-find over bits ``(module, signal, bit)`` and constants."""

    def __init__(self):
        self.parent = {}

    def find(self, x):
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a, b):
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            if ra[0] == "c":             # a constant stays the root of its class
                ra, rb = rb, ra
            self.parent[ra] = rb


def bit_classes(verilog: Path):
    """``(find, members, derived, widths, srcs)``: ``find((module, signal, bit))`` is the root of the bit's class
    (``("c", v)`` for a bit tied to constant ``v``), ``members[root]`` the bits of each class,
    ``derived[(module, signal)]`` is ``("any", operands)`` for a sum or difference, ``("all", inputs)`` for a
    multiplexer or a process's value (each a list of bits, least significant first), ``widths[module][signal]`` the
    signals' widths, ``srcs[(module, signal)]`` the Amaranth source (``file:line``) of a signal's declaration or
    assignment. A register is in the class of its next-state value (their toggles are the same, a cycle apart).
    Modules and signals are named as in the coverage file (Verilog names without their escapes)."""
    lines = Path(verilog).read_text().splitlines()
    widths, modules, module = defaultdict(dict), {}, None
    srcs, attr = {}, None
    for line in lines:                                   # first pass: every module's signal widths and sources
        m = _MODULE.match(line)
        if m:
            module = _name(m[1])
            modules[module] = True
            continue
        m = _DECL.match(line)
        if m and module:
            widths[module][_name(m[3])] = int(m[1]) - int(m[2]) + 1 if m[1] else 1
            if attr:
                srcs[(module, _name(m[3]))] = attr
        a = _ASSIGN.match(line)
        if a and module and _SRC.search(a[4]):
            srcs[(module, _name(a[1]))] = _SRC.search(a[4])[1]
        attr = _SRC.search(line)[1] if line.lstrip().startswith("(*") and _SRC.search(line) else None
    classes, derived, processes, registers = _Classes(), {}, {}, defaultdict(list)
    module, instance = None, None
    for line in lines:
        m = _MODULE.match(line)
        if m:
            module, instance = _name(m[1]), None
            continue
        if module is None:
            continue
        m = _ASSIGN.match(line)
        if m:
            lhs = _name(m[1])
            if lhs not in widths[module]:
                continue
            lo = int(m[3]) if m[3] is not None else int(m[2]) if m[2] is not None else 0
            rhs = _bits(m[4], widths[module])
            if rhs is None:
                text = _ATTR.sub("", m[4])
                scale = _SCALE.match(text)
                factor = int(scale[3], 16) if scale else 0
                operand = _bits(scale[1], widths[module]) if scale else None
                if operand is not None and factor and factor & (factor - 1) == 0:
                    # times 2^k: the operand shifted up k bits, zeros below and above
                    k = factor.bit_length() - 1
                    shifted = [("c", 0)] * k + operand
                    shifted += [("c", 0)] * (widths[module][lhs] - len(shifted))
                    for i, src in enumerate(shifted[:widths[module][lhs] - lo]):
                        classes.union((module, lhs, lo + i), src if src[0] == "c" else (module, *src))
                    continue
                mux, arith = _MUX.match(text), _SUM.match(text)
                # a multiplexer: a bit is explained when the bit of every input is; a sum or difference: when the
                # bit of an operand is (its carries follow that operand's bits)
                mode, operands = ("all", mux.group(2, 3)) if mux else ("any", arith.group(1, 3)) if arith else (None, ())
                operands = [_bits(op, widths[module]) for op in operands]
                if mode and all(operands):
                    derived[(module, lhs)] = (mode, [[b if b[0] == "c" else (module, *b) for b in op]
                                                     for op in operands])
                continue
            for i, src in enumerate(rhs):
                dst = (module, lhs, lo + i)
                classes.union(dst, src if src[0] == "c" else (module, *src))
            continue
        m = _PROC.match(line) if not line.lstrip().startswith("assign") else None
        if m and _name(m[1]) in widths[module]:
            # a value an always block assigns (a process's next-state value or a register): a bit is explained
            # when the bit of every value assigned to it is
            lhs, lo = _name(m[1]), int(m[3]) if m[3] is not None else int(m[2]) if m[2] is not None else 0
            bits = _bits(m[5], widths[module])
            if m[4] == "<=":        # a register and its next-state value: equal, one cycle apart (if it is alone)
                registers[(module, lhs)].append(None if bits is None or m[2] is not None else bits)
                continue
            sources = processes.setdefault((module, lhs), [])
            if bits is None or sources is None:
                processes[(module, lhs)] = None           # something else is assigned: never explained this way
            else:
                full = [("c", 0)] * widths[module][lhs]    # placeholder bits outside the slice: free
                full[lo:lo + len(bits)] = [b if b[0] == "c" else (module, *b) for b in bits]
                sources.append([None if i < lo or i >= lo + len(bits) else b for i, b in enumerate(full)])
            continue
        m = _INSTANCE.match(line)
        if m and _name(m[1]) in modules:
            instance = _name(m[1])
            continue
        if instance is not None:
            if line.strip().startswith(");"):
                instance = None
                continue
            m = _PORT.match(line)
            if m:
                port, bits = _name(m[1]), _bits(m[2], widths[module])
                if bits is None or port not in widths[instance]:
                    continue
                for i, src in enumerate(bits[:widths[instance][port]]):
                    classes.union((instance, port, i), src if src[0] == "c" else (module, *src))
    for (module, lhs), assigned in registers.items():
        if len(assigned) == 1 and assigned[0] is not None and len(assigned[0]) == widths[module][lhs]:
            for i, src in enumerate(assigned[0]):
                classes.union((module, lhs, i), src if src[0] == "c" else (module, *src))
    for key, sources in processes.items():
        if sources and key not in derived:
            derived[key] = ("all", sources)
    members = defaultdict(list)
    for x in list(classes.parent):
        if x[0] != "c":
            members[classes.find(x)].append(x)
    return classes.find, members, derived, widths, srcs


# Untoggled bits no run makes toggle, with the reason: (module pattern, signal pattern, the bits: "all", "from k"
# (bits k and up), "below k", "bits a,b,c", "high" (the signal's untoggled bits that reach its top) or "low" (those from its
# bit 0 up), why). A rule explains a whole class of equal bits (bit_classes) when one member
# matches, so a rule names the signal where the reason is plain (a counter, a field) rather than each copy. A
# signal pattern starting with "src:" matches the Amaranth line of an unnamed expression instead
# ("src:hw/axi.py:76 to_boundary = ..."), so rules do not depend on Amaranth's numbering of ``$N``.
COUNTER = ("an event counter (cycles, busy or stalled cycles, micro-ops, accumulator writes, bus beats, instructions, "
           "bytes), "
           "or the value a register latched from one at launch: bit k first rises after 2^k events; the longest "
           "coverage run has about 2^18 cycles, bit 31 needs 2^31 events (days of this model); the counters wrap at "
           "2^32 (hw/control.py, hw/axi.py)")
FIFO_FULL = ("a FIFO's fill level: its top bits need the FIFO (nearly) full, which the coverage runs did not make: "
             "never for the staging buffer (fetch reserves room before each request); the others fill only under "
             "backpressure from the stage after them lasting longer than in these runs (queue_fill fills the load "
             "and store command queues to 512 entries; the compute queue stops one short there)")
MODULE_ERROR = "the module's own decode error: it repeats a check fetch makes first (the uncovered lines of the HALT states)"
ACC_LOAD_ROWS = ("the row count of an acc load (rows x elements with padding, each < 2^17; the product of a "
                 "registered multiplier, hw.gemm.registered_mul) and the last row it writes: bit 31 needs a load of "
                 "2^31 to 2^32 - 1 rows, reachable, not among the huge transfers (they take every size field at its "
                 "largest, 2^32 + 2^22 rows with the padding, and bit 32 toggles)")
TOGGLE_RULES: list = [
    (r"", r"^(reg_|base_)?(cycles|\w+_busy|\w+_stall|gemm_uops|alu_uops|acc_writes|dma_\w+_beats|read_beats__\d+"
          r"|write_beats|insn_fetched|routed)(\$\d+)?$", "high", COUNTER),
    # a counter plus one, a counter minus its value at launch: the count of the run (a host write of all ones to
    # ``cycles`` moves only the carry out of the sum)
    (r"\.regs$", r"^src:hw/control\.py:\d+ .*(regs\[r\.name\] \+ 1\)|getattr\(self, r\.port\) - bases)", "all",
     COUNTER),
    (r"", r"^(reg_|base_)?((inp|wgt|acc|uop)_load|out_store)_bytes(\$\d+)?$", "high",
     "a byte counter's top bits, or the value a register latched from one at launch: the counter adds the bytes of "
     "each accepted transfer, and an AXI error (the only way to start a transfer longer than device memory) resets "
     "the accelerator, so the launch after one latches a small value; the top bits need gigabytes moved by "
     "finished runs"),
    (r"", r"^base_((inp|wgt|acc|uop)_load|out_store)_bytes$", "all",
     "the value a register latches at launch from a byte counter: the bytes moved since the last reset (every AXI "
     "error resets the accelerator, and only an error ends a transfer longer than device memory), so the bits it "
     "shows depend on the traffic of the finished runs before each launch"),
    (r"", r"^(reg_|base_)?((inp|wgt|acc|uop)_load|out_store)_bytes(\$\d+)?$", "low",
     "a byte counter counts whole elements: its low log2(element bytes) bits stay 0"),
    (r"", r"(^|_|\.)(addr|araddr|awaddr|error_addr|c_byte)$", "low",
     "an address of a whole bus beat, element or instruction: its low bits (log2 of that size) are always 0 "
     "(the AXI4-Lite registers are words)"),
    (r"", r"(^|_|\.)(beats|beats_left|pend_beats|rd_left|wr_left|req_beats)$", "high",
     "a burst or command length: a DMA command is one row of at most 65,535 elements (fewer bus beats than 2^k for "
     "these bits), a burst at most 256 beats"),
    (r"", r"(^|_)(level|inner_level|r_level|w_level|queue_\w+|\w+_level)$", "high", FIFO_FULL),
    (r"", r"^w_rdy(\$\d+)?$", "all", "a FIFO's 'not full', low only when it is full: " + FIFO_FULL),
    (r"", r"^(regs|vta_top)?.*(tokens_\w+|overflow)$", "high",
     "a token queue's count (at most 255 tokens: 8 bits of the 16-bit register) or its overflow flag, set only by "
     "a push into a full queue, which a correct program never makes (tests/hw/test_queues.py drives it)"),
    (r"", r"^(base_)?dma_(fetch|load|store)_beats$", "low",
     "the beats of whole instructions or elements (two bus beats each on a 64-bit bus): the count is even at every "
     "launch"),
    (r"\.compute$", r"^src:hw/compute\.py:\d+ .*mem\.[xy]_size \+ mem\.[xy]_pad_0 \+ mem\.[xy]_pad_1", "from 17",
     "a size plus its two paddings (< 2^16 + 2 x 15 < 2^17) in an acc load's row count"),
    (r"\.compute$", r"^ld_rows$", "from 31", ACC_LOAD_ROWS),
    (r"\.compute$", r"^src:(hw/compute\.py:\d+ +last = first \+ ld_rows|hw/gemm\.py:\d+ .*prod\.eq\(aq \* bq\))",
     "from 31", ACC_LOAD_ROWS),
    (r"\.(load\.(inp|wgt)|compute\.ld_\w+)$", r"^(c_y|w_r|w_c|rows|row_pitch|xd_hi|yd_hi)$", "from 17",
     "a count of rows or elements with padding: at most 65,535 + 2 x 15 < 2^17"),
    (r"\.(load\.(inp|wgt)|compute\.ld_\w+)$", r"^(c_y|w_r|w_c)$", "high",
     "a row or element counter of one transfer: bit k needs 2^k rows (or elements of one row) before the transfer "
     "ends; the coverage runs stop each long transfer after at most 2^17 data beats, so for elements of more than "
     "two beats (WGT: 32, ACC: 8) the top bits are reachable only by runs of minutes on this model"),
    (r"\.compute\.ld_uop$", r"^(c_y|w_r|yd_hi|rows|y_size)$", "from 1",
     "a UOP load is one row without padding (the runtime and the golden model refuse others): its row counts stay 0 "
     "or 1"),
    (r"\.compute\.ld_uop$", r"^(row_pitch|xd_hi|w_c)$", "from 16",
     "a UOP load has no padding: at most 65,535 elements in its row, bit 16 stays 0"),
    (r"\.compute\.alu\.seq$", r"^wgt", "all",
     "the ALU's micro-op sequencer has no weight index: its weight factors are tied to 0 (hw/alu.py), so every "
     "weight offset stays 0"),
    (r"\.compute$", r"^(held|due)_g2[ls]$", "from 8",
     "pushes held behind an older instruction, or due to leave: 256 and more only when more than 255 pushes wait, "
     "which would overflow the token queue they go to (255 tokens; the held_pushes program reaches 255)"),
    (r"\.compute$", r"^uop_(bgn|end)_(gemm|alu)$", "high",
     "a micro-op address one bit wider than the micro-op SRAM's index (uop_end may equal its depth, uop_bgn never)"),
    (r"\.compute\.footprint$", r"^(max_[ds]|min_[ds]|hi|lo|off_[ds]|span_\w+)$", "high",
     "the bounds of an instruction's accumulator footprint: SRAM indices (below the SRAM's depth) plus the loops' "
     "offsets (below 2^25), held in 32-bit registers"),
    (r"", r"^(axi__|m_axi_)?[br]id$", "all", "AXI IDs: the accelerator issues ID 0 only, and the memory answers with it"),
    (r"", r"^(axi__|m_axi_)wstrb$", "all",
     "the store writes whole bus beats (elements are whole beats): WSTRB is all ones"),
    (r"", r"^(bus__|s_axi_)(arprot|awprot)$", "all",
     "AXI4-Lite AxPROT: the host (the testbench's master, a Zynq's GP port with its defaults) drives 0"),
    (r"", r"^(bus__|s_axi_)wstrb$", "all",
     "the host writes whole 32-bit registers (WSTRB 0xF), as the runtime and a board's MMIO do"),
    (r"", r"^(axi_)?error_info$", "from 3",
     "an AXI error's record: bits 0-1 the response, bit 2 set for a write; the read client number (0-2) in bits "
     "4-5; bits 3, 6 and 7 are never set"),
    (r"\.(load(\.inp|\.wgt)?|fetch\.load_queue)$", r"^(insn|word|insn__payload|r_data|r_port__data)(\$\d+)?$",
     "bits 0,1,2,3,5,9",
     "an instruction of the load module: opcode LOAD (bits 0-2 zero), pop_prev and push_prev (bits 3, 5) reserved "
     "for it (fetch refuses them), memory type INP or WGT (bit 9, the type's top bit, zero)"),
    (r"\.(load(\.inp|\.wgt)?)$", r"^insn(\$\d+)?\.(opcode|pop_prev|push_prev)$", "all",
     "a field the load module only ever sees at one value: opcode LOAD, pop_prev and push_prev 0 (fetch refuses "
     "them on a load-module instruction)"),
    (r"\.(load(\.inp|\.wgt)?)$", r"^insn(\$\d+)?\.memory_type$", "from 2",
     "the load module gets INP and WGT loads only (types 2 and 1): bit 2 of the type is 0"),
    (r"\.(store|fetch\.store_queue)$", r"^(word|insn__payload|r_data|r_port__data)(\$\d+)?$", "bits 0,1,2,4,6,7,8",
     "an instruction of the store module: opcode STORE (bits 0-2 = 001), pop_next and push_next (bits 4, 6) "
     "reserved for it, memory type OUT (bits 7-9 = 100)"),
    (r"\.axi\.read_route$", r"^(r_data|r_port__data|w_data|w_port__data|storage\[\d+\])$", "bits 3,4,5",
     "address bits 0-2 of a read burst, kept for an error report: bursts start on bus beats"),
    (r"\.axi\.write_resp$", r"^(r_data|r_port__data|w_data|w_port__data|storage\[\d+\])$", "bits 1,2,3,4",
     "address bits 0-3 of a write burst, kept for an error report: the store's bursts start on 16-byte elements"),
    (r"\.fetch$", r"^(beats_left|req_beats|requested|dma__cmd__payload\.beats)$", "low",
     "fetch moves whole instructions, two bus beats each on a 64-bit bus: its beat counts are even"),
    (r"\.fetch$", r"^low$", "bits 63",
     "bit 63 of an instruction belongs to no field of any format (the encoder leaves it 0)"),
    (r"\.fetch$", r"^pending_start$", "all",
     "a launch that arrives while fetch still discards the words of a stopped run: the runtime resets the "
     "accelerator after every stopped run, so a launch always finds fetch quiet"),
    (r"\.(load|compute|store|compute\.alu)$", r"^(error|bad)$", "all", MODULE_ERROR),
    (r"\.store$", r"^src:hw/store\.py:\d+ .*insn\.memory_type != MemId\.OUT", "all", MODULE_ERROR),
    (r"\.store$", r"^src:hw/store\.py:\d+ .*(c_y \+ 1|r_x \+ 1|r_y \+ 1|r_y \+ 2|acks \+ 1)", "high",
     "a row, element or response count of one store plus one or two: it reaches 2^16 only in the last rows of a "
     "store of 65,535 rows (the coverage runs stop long stores after 2^17 beats), or never (a count below the size, "
     "at most 65,534, plus one)"),
    (r"\.(store|load\.(inp|wgt)|compute\.ld_\w+)$", r"^src:hw/(store|load)\.py:\d+ .*[cdr]_elem \+ (insn\.)?x_stride",
     "from 32",
     "the carry out of a DRAM element address plus the row stride: only for rows past element address 2^32 - 1, "
     "byte addresses far above the 32-bit bus"),
    (r"\.compute\.ld_uop$", r"^src:hw/load\.py:\d+ .*\(c_byte\[:log_bb\] \+ \(x_size << log_eb\)", "high",
     "the bytes of one UOP row plus its offset in a beat (at most 65,535 x 4 + 7): the adder's top bits stay 0"),
    (r"\.fetch$", r"^src:hw/fetch\.py:\d+ .*staging\.r_rdy & \(~final_part \| free\)", "all",
     "fetch asks for an instruction's words only when its command queue has room for it (the level checks), so "
     "'not the last part, or room' is always true"),
    (r"\.fetch$", r"^src:hw/fetch\.py:\d+ .*idle\.eq\(quiet & ~pending_start", "all",
     "fetch is idle unless a launch is pending (pending_start, never set: see its own entry)"),
    (r"^vta_top\.tokens_", r"^src:hw/queues\.py:\d+ +with m\.Elif\(push & pop\):", "all",
     "a token queue pushed and popped in the same cycle while it holds tokens: the reachable case of the uncovered "
     "line hw/queues.py `push & pop` (tests/hw/test_queues.py drives it on the queue itself)"),
    (r"\.axi$", r"^src:hw/axi\.py:\d+ +(to_boundary = |beats = Mux|Mux\(to_boundary)", "high",
     "a burst's length: the smaller of the command's beats left, the beats to the next 4 KiB boundary (at most 512) "
     "and 256; the bits above those limits stay 0"),
    (r"\.axi\.write_len$", r"^storage\[\d+\]$", "bits 0",
     "bit 0 of a stored write burst length (AWLEN = beats - 1): the store's bursts are whole 16-byte elements, an "
     "even number of beats, so every length written is odd"),
    (r"", r"^src:hw/top\.py:\d+ .*counters\[name\] \+ \(elems << log_bytes\)", "high",
     "a byte counter's next value before it is cut to 32 bits: the counter plus one instruction's bytes (below 2^32 "
     "elements x the element size): the bits above stay 0"),
    (r"\.compute\.footprint$", r"^src:hw/footprint\.py:\d+ .*(min_[ds]|max_[ds])\.eq\(Mux", "high",
     "the least and greatest micro-op index of an instruction: SRAM indices (11 bits here) in 32-bit registers"),
    (r"\.compute\.footprint$", r"^src:hw/footprint\.py:\d+ .*n1\.eq\(Mux\(n == 0, 0, n - 1\)\)", "high",
     "n - 1 for a loop count n >= 1 (0 for n = 0): never negative, the borrow bit stays 0"),
    (r"\.fetch$", r"^src:hw/fetch\.py:\d+ +reserved_next = ", "high",
     "the staging buffer's reserved words: at most its depth"),
    (r"", r"^src:\S+/amaranth/lib/fifo\.py:\d+ +return Mux\(signal == modulo - 1, 0, signal \+ 1\)", "high",
     "a FIFO pointer's next value: the increment reaches the pointer's width only at the last entry, where the "
     "pointer wraps to 0 instead"),
    (r"\.(load\.(inp|wgt)|compute\.ld_\w+)$", r"^src:hw/load\.py:\d+ .*sum_is_one|^src:hw/load\.py:\d+ +return Cat\("
     r"\*\(\(t == 1\)", "bits 0",
     "'a padding term alone is 1' in the loader's first-position flags: it needs x_size = 0 (a NOP: the loader never "
     "starts) or y_size = 0 with padding, which the ISA forbids (the runtime and the golden model refuse it)"),
    (r"\.compute\.(gemm|alu)\.seq$|\.compute\.footprint$",
     r"^src:hw/(gemm|footprint)\.py:\d+ .*((u|i_in|i_out)\.eq\((u|i_in|i_out) \+ 1\)|self\.uop_bgn \+ 1 == )", "high",
     "a micro-op address or loop counter plus one: at most the micro-op SRAM's depth or 2^14 - 1 iterations, the "
     "bit above stays 0"),
    (r"\.compute\.footprint$", r"^src:hw/footprint\.py:\d+ .*(span\(gem\.|off_d, off_s = )", "high",
     "the loops' span of an instruction ((iterations - 1) x factor over both loops): 2^25 and more only for loops "
     "whose indices leave the SRAM, which the runtime and the golden model refuse"),
    (r"\.compute\.footprint$", r"^src:hw/footprint\.py:\d+ .*age\.eq\(age \+ 1\)", "high",
     "age counts to 4 and stops: age + 1 stays below 8"),
    (r"\.compute$", r"^src:hw/compute\.py:\d+ .*sum\(wr_count\)", "high",
     "the accumulator writes of one cycle (the GEMM's and the ALU's, 0 or 1 each): the partial sums' top bits stay 0"),
    (r"\.(compute|load|store)$", r"^src:\S+/amaranth/hdl/_dsl\.py:\d+", "all",
     "the test Amaranth's FSM writes for a module's HALT state, entered only on a decode error that fetch pre-empts "
     "(the uncovered lines of the HALT states)"),
    (r"\.compute\.(gemm|alu)\.seq$", r"^src:hw/gemm\.py:\d+ +u, bgn, end = Signal\(uw\)", "high",
     "a micro-op address register (the current one, the first): below the micro-op SRAM's depth (only the end may "
     "equal it)"),
    (r"\.(load\.(inp|wgt)|compute\.ld_\w+)$", r"^src:hw/load\.py:\d+ .*(in_rows = |row_pitch\.eq\(|[xy]d_hi\.eq\()",
     "from 17", "a count of rows or elements with padding: at most 65,535 + 2 x 15 < 2^17"),
    (r"\.(load\.(inp|wgt)|compute\.ld_\w+)$", r"^src:hw/load\.py:\d+ .*c_y\.eq\(c_y \+ 1\)", "from 16",
     "the loader's data-row counter plus one: rows below y_size (at most 65,534) plus one stay below 2^16"),
    (r"", r"^src:\S+/amaranth/lib/fifo\.py:\d+ .*level\.eq\(", "high", FIFO_FULL),
    (r"\.fetch\.staging$", r"^src:\S+/amaranth/lib/fifo\.py:\d+ +do_inner_read", "all",
     "fetch takes every staging word in the cycle it appears (r_en whenever r_rdy): '~r_rdy | r_en' is always 1"),
    (r"", r"^\$auto\$verilog_backend", "all",
     "a register Yosys's Verilog writer adds to each module to run its combinational processes at time 0 (never "
     "assigned)"),
    (r"\.compute\.(gemm|alu)\.seq$|\.compute\.alu$", r"^src:hw/(gemm|alu)\.py:\d+ .*(off_out.+off_in|src_idx \+ o2_s)",
     "high",
     "an SRAM index (a micro-op's index plus the loops' offsets): below the SRAM's depth, as the runtime and the golden "
     "model refuse loops that leave an SRAM (the carry bit above stays 0)"),
    (r"^vta_top$", r"^src:hw/top\.py:\d+ .*insn\.opcode <= Opcode\.STORE", "all",
     "'the accepted instruction is a LOAD or STORE', for a module that fetch only sends loads (load) or stores "
     "(store): always true there"),
    (r"", r"^error(_code)?(\$\d+)?$|^tail\.code$", "from 3",
     "error codes 8 and 9 (COMPUTE_ERROR, STORE_ERROR) come from module errors that repeat fetch's checks, so fetch "
     "stops such an instruction first (the uncovered lines of the HALT states)"),
]


def _rule_bits(spec: str, bit: int, runs: tuple) -> bool:
    """Whether a rule's bits ``spec`` takes ``bit`` of a signal whose untoggled bits at its top start at
    ``runs[0]`` and at its bottom end below ``runs[1]``."""
    if spec == "all":
        return True
    if spec == "high":
        return bit >= runs[0]
    if spec == "low":
        return bit < runs[1]
    kind, k = spec.split()
    if kind == "bits":
        return bit in {int(b) for b in k.split(",")}
    return bit >= int(k) if kind == "from" else bit < int(k)


TIED = "tied to "


def explain_toggles(untoggled, verilog: Path, rules=None):
    """Sort the untoggled points ``[(module, signal, bit)]`` by why: returns ``(explained, holes)`` where
    ``explained`` maps each reason to its points and ``holes`` lists the points with no reason."""
    rules = TOGGLE_RULES if rules is None else rules
    find, members, derived, widths, srcs = bit_classes(verilog)
    compiled = [(re.compile(mp), re.compile(sp), spec, why) for mp, sp, spec, why in rules]

    def source_text(mod, sig):
        """``src:<file:line> <the Amaranth line>`` of a signal (what ``src:`` patterns of a rule match)."""
        src = srcs.get((mod, sig))
        if not src:
            return ""
        path, _, line = src.rpartition(":")
        return f"src:{src} {source_line(path, int(line)) or ''}" if line.isdigit() else f"src:{src}"

    def matches(sp, mod, sig):
        return sp.search(source_text(mod, sig)) if sp.pattern.lstrip("^").startswith("src:") else sp.search(sig)
    missing = defaultdict(set)
    for mod, sig, bit in untoggled:
        missing[(mod, sig)].add(bit)

    def runs(mod, sig):
        """Where the signal's run of untoggled bits that reaches its top starts (its width: none), and where the
        run from its bit 0 ends (0: none)."""
        width, gone = widths.get(mod, {}).get(sig, 0), missing[(mod, sig)]
        top, bottom = width, 0
        while top > 0 and top - 1 in gone:
            top -= 1
        while bottom < width and bottom in gone:
            bottom += 1
        return top, bottom

    def reason(root, depth=0):
        if root[0] == "c":
            return f"{TIED}{root[1]} in the Verilog (a constant, or a copy of one)"
        for mod, sig, bit in members.get(root, [root]):
            for mp, sp, spec, why in compiled:
                if mp.search(mod) and matches(sp, mod, sig) and _rule_bits(spec, bit, runs(mod, sig)):
                    return why
        if depth < 6:     # a bit of a sum, a difference, a multiplexer or a process: from the same bit of its inputs
            for mod, sig, bit in members.get(root, [root]):
                mode, operands = derived.get((mod, sig), (None, []))
                # (the carry out of a sum, one bit above its operands, follows their top bits; None: a bit that a
                # slice assignment does not write)
                ins = [op[min(bit, len(op) - 1)] for op in operands]
                whys = [reason(find(b), depth + 1) for b in ins if b is not None]
                tied = {w for w in whys if w and w.startswith(TIED)}
                free = [w for w in whys if not (w and w.startswith(TIED))]
                if mode == "any" and any(free):
                    # a sum's bit never toggled, and an operand's bit never can: the sum's follows it (a constant
                    # operand explains nothing: the other operand and the carries still move the bit)
                    return next(w for w in free if w)
                if mode == "all" and len(tied) <= 1 and all(free):
                    # every input of a multiplexer or every value a process assigns holds the bit at one value
                    return free[0] if free else tied.pop()
        return None

    cache, explained, holes = {}, defaultdict(list), []
    for point in untoggled:
        root = find(point)
        if root not in cache:
            cache[root] = reason(root)
        if cache[root]:
            explained[cache[root]].append(point)
        else:
            holes.append(point)
    return dict(explained), holes
