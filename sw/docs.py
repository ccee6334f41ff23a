"""Generate the documentation tables from the code: ``python -m sw.docs`` writes docs/isa.md (the instruction
layouts of each config and the sections on ALU opcode 5, POST, and opcode 5, DEPTHWISE)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from sw.cli import run_as_main
from sw.config import load_config
from sw.isa import POST_PARAM_ROWS, POST_RESIDUAL_STAGE, POST_RESIDUAL_STEPS, POST_STAGES, AluOp, isa_for

CONFIGS = ("default", "small", "batch2")
WIDTH = 115                  # the line width of generated prose

_POST_OPERAND = {AluOp.ADD: "added (wrapping)", AluOp.MAX: "lower clip bound", AluOp.MIN: "upper clip bound",
                 AluOp.MUL: "multiplier (int32, the product's low 32 bits)",
                 AluOp.SHR: "shift (negative: left; beyond 31: 31)"}
_POST_IDENTITY = {AluOp.ADD: "0", AluOp.MAX: "-2^31", AluOp.MIN: "2^31 - 1", AluOp.MUL: "1", AluOp.SHR: "0"}


def post_markdown() -> str:
    """The section on ALU opcode 5, POST: its semantics, the parameter block and the configs that build it."""
    built = [(name, load_config(name)) for name in CONFIGS]
    ranges = ", ".join(f"[0, {cfg.ACC_DEPTH - POST_PARAM_ROWS}] on `{name}`" for name, cfg in built if cfg.POST_UNIT)
    without = ", ".join(f"`{name}`" for name, cfg in built if not cfg.POST_UNIT)
    template = " ".join(op.name for op in POST_STAGES)
    intro = (f"An ALU instruction with `alu_opcode` 5 runs each of its micro-ops through a fixed chain of "
             f"{len(POST_STAGES)} ALU steps, the template `{template}` (a bias and a clip of the accumulators, three "
             "multiply, round and shift steps, the output clip), with a residual that has its own steps "
             f"`{' '.join(op.name for op in POST_RESIDUAL_STEPS)}` (a rescale and a zero point) before it is added: a "
             "requantization, or a requantized add, in one pass (docs/architecture.md §2.8).")
    items = [
        f"Its operands are the {POST_PARAM_ROWS} acc rows `[imm, imm + {POST_PARAM_ROWS})`, the *parameter block*, "
        f"read once when the instruction starts: row `imm + k` is stage k's operand for k < {len(POST_STAGES)}, "
        f"rows `imm + {len(POST_STAGES)}` to `imm + {POST_PARAM_ROWS - 1}` those of the residual's steps in order, "
        "one int32 per lane (lanes are "
        "`[BATCH][BLOCK_OUT]`: per tensor the same value on every lane, per channel one value per output channel). "
        "`imm` "
        f"is a row index here, in [0, ACC_DEPTH - {POST_PARAM_ROWS}] ({ranges}); any other value is an `InsnError` "
        "naming `imm` and that range.",
        "Each micro-op (dst, src), in order, sets `acc[dst]` to the chain applied to `acc[dst]`. A micro-op that "
        "reads a row an earlier micro-op of the instruction wrote sees the new value; the parameters stay as the "
        "instruction found them, even when a destination is one of their rows.",
        "Each step is exactly the ALU step of its opcode (`sw.fsim.alu.alu_op`, wrapping int32; a MUL by its full "
        "int32 operand, the low 32 bits of the product); an operand that is the step's identity leaves the value "
        "unchanged.",
        "With `use_imm` = 0 the *residual* `acc[src]` goes through its own steps (`r = ADD(MUL(r, "
        f"p[{len(POST_STAGES)}]), p[{len(POST_STAGES) + 1}])`) and is added (wrapping) right after stage "
        f"{POST_RESIDUAL_STAGE}'s ADD; with `use_imm` = 1 nothing is added, `src` is not read and the residual's "
        "rows are read but unused.",
        f"The config must have `POST_UNIT = 1`; on {without} alu_opcode 5 is an `InsnError` naming POST_UNIT "
        "(the RTL's fetch stops the run with `BAD_ALU_OPCODE`).",
    ]
    out = ["## ALU opcode 5: POST (the post-processing unit)", "", textwrap.fill(intro, WIDTH), ""]
    out += [textwrap.fill(item, WIDTH, initial_indent="- ", subsequent_indent="  ") for item in items]
    out += ["", "| parameter row | stage | step | operand | identity |", "|---|---|---|---|---|"]
    for k, op in enumerate(POST_STAGES):
        operand = _POST_OPERAND[op] + ("; then the residual is added" if k == POST_RESIDUAL_STAGE else "")
        out.append(f"| `imm + {k}` | {k} | {op.name} | {operand} | {_POST_IDENTITY[op]} |")
    for j, op in enumerate(POST_RESIDUAL_STEPS):
        k = len(POST_STAGES) + j
        what = {AluOp.MUL: "the residual's multiplier (int32)", AluOp.ADD: "added to the residual (wrapping)"}[op]
        out.append(f"| `imm + {k}` | residual {j} | {op.name} | {what} | "
                   f"{_POST_IDENTITY[op]} |")
    return "\n".join(out + [""])


def depthwise_markdown() -> str:
    """The section on opcode 5, DEPTHWISE: its semantics and the configs that build it."""
    built = [(name, load_config(name)) for name in CONFIGS]
    with_dw = ", ".join(f"`{name}`" for name, cfg in built if cfg.DEPTHWISE)
    without = ", ".join(f"`{name}`" for name, cfg in built if not cfg.DEPTHWISE)
    intro = ("Opcode 5 is the GEMM core's depthwise mode, built with the config key `DEPTHWISE = 1` (which needs "
             "`BLOCK_IN = BLOCK_OUT`); VTA's opcodes 0-4 are unchanged, so every VTA program runs as before. A "
             "DEPTHWISE instruction has the GEMM layout and the GEMM loop nest (the micro-op executions in the same "
             "order, the same index fields), one micro-op per cycle.")
    items = [
        "The core keeps a *window* of the last `BLOCK_IN` inp rows the instruction read: for execution e with "
        "indices (dst, src, wgt), slot 0 is `inp[src]` and slot k the inp row execution e - k read; slots before "
        "the instruction's first execution are zero (the window starts empty at every DEPTHWISE).",
        "Execution e sets `acc[dst][b][j] = sum over k < BLOCK_IN of window[k][b][j] * wgt[wgt][j][k]`: lane j "
        "multiplies its own channel j across the window by its row j of the weight (the taps of channel j, one per "
        "slot), for each batch row b. The result overwrites the row; it is not added to it. With `reset` = 1 the "
        "row is set to 0 instead.",
        "Executions apply in order, so where two write the same row the later one's value stays. The sum of at most "
        "`BLOCK_IN` int8 products never wraps.",
        "`gemm_counter` counts DEPTHWISE executions as GEMM ones (none with `reset`).",
        f"Built on {with_dw}; on {without} opcode 5 is an `InsnError` naming DEPTHWISE (the RTL's fetch stops the "
        "run with `BAD_OPCODE`).",
    ]
    use = ("How a depthwise convolution uses it (`sw/ops/depthwise.py`): a tile is walked in strips of r output "
           "rows, column by column, each column's hc = (r - 1) * stride + kh input rows top to bottom; when the "
           "micro-op reads the bottom-right pixel of an output's kh x kw neighbourhood, tap (ky, kx) sits in slot "
           "(kw - 1 - kx) * hc + (kh - 1 - ky), so one weight row per channel block serves every output. Each strip "
           "is one DEPTHWISE instruction whose micro-ops are one column step's reads, its inner loop walking the "
           "columns and its outer loop the channel blocks; a read whose window is not a whole neighbourhood writes "
           "the row of an output that a later micro-op writes again (strips run bottom up, and spare rows precede "
           "each block's outputs). On 16 lanes a 3x3 kernel takes strips of 4 rows at stride 1 (6 reads per 4 "
           "outputs of a column) and of 2 at stride 2.")
    out = ["## Opcode 5: DEPTHWISE (the GEMM core's depthwise mode)", "", textwrap.fill(intro, WIDTH), ""]
    out += [textwrap.fill(item, WIDTH, initial_indent="- ", subsequent_indent="  ") for item in items]
    out += ["", textwrap.fill(use, WIDTH)]
    return "\n".join(out + [""])


def isa_markdown() -> str:
    out = ["# Instruction layouts", "",
           "Generated by `python -m sw.docs` from `sw/isa.py`; do not edit by hand. Fields are laid out in order",
           "from bit 0; a field that would cross bit 64 starts at bit 64 (VTA's rule).", ""]
    for name in CONFIGS:
        cfg = load_config(name)
        isa = isa_for(cfg)
        out += [f"## Config `{name}` ({cfg.bitstream})", ""]
        for title, fmt in (("LOAD / STORE", isa.mem), ("GEMM / FINISH / DEPTHWISE", isa.gemm), ("ALU", isa.alu),
                           ("micro-op (32 bits)", isa.uop)):
            out += [f"### {title}", "", fmt.table(), ""]
    return "\n".join(out) + "\n" + post_markdown() + "\n" + depthwise_markdown()


def main() -> int:
    path = Path(__file__).resolve().parent.parent / "docs" / "isa.md"
    path.write_text(isa_markdown())
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    run_as_main(__spec__)
