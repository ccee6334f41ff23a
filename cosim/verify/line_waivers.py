"""The uncovered lines of the accelerator that no program can reach (or that a module-level test covers), read by
:func:`cosim.verify.uncovered.explain`.

A waiver is keyed in one of two ways:

- by the Amaranth line of an ``if``'s condition: :data:`ANNOTATED`, ``{key: (module pattern, why)}``, applied to an
  uncovered ``if`` whose condition comes from a line of the project annotated ``# unreachable: KEY``
  (:mod:`cosim.verify.sources`): the annotation sits on the line the condition's ``src`` attribute names, so it
  moves with the line;
- by what the Verilog names: :data:`KNOWN_UNREACHABLE`, (module pattern, pattern on the line's source key of
  :func:`cosim.verify.uncovered.uncovered_sources`, why), for keys the Verilog spells with signal names (a case
  label and its subject, an ``if`` on a wire with no ``src`` of its own).

The module pattern (a regex over the module's name, "" for any) must match every module the line is uncovered in.
The report lists a line with a waiver under "explained"; anything else is a hole for a new directed test.
"""

from __future__ import annotations

__all__ = ["ANNOTATED", "KNOWN_UNREACHABLE"]

ANNOTATED: dict = {
    "alu-opcode": (r"^vta_top\.compute\.alu$",
                   "the ALU's own unsupported-opcode error: fetch already stops the stream with BAD_ALU_OPCODE before "
                   "such an instruction reaches the compute queue"),
    "token-push-pop": (r"^vta_top\.tokens_",
                       "reachable, not unreachable: a token queue pushed and popped in the same cycle while it holds "
                       "tokens; in the system that needs the producer's end and the consumer's start to fall on one "
                       "cycle (the directed token_traffic program lines it up for s2g only); tests/hw/test_queues.py "
                       "drives it on the TokenQueue itself (test_random_against_model, "
                       "test_default_depth_saturates_at_255)"),
}

KNOWN_UNREACHABLE = [
    (r"^vta_top\.compute$", r"case insn\[2:0\] = default",
     "compute's decoder default (opcodes 5-7): fetch stops the stream with BAD_OPCODE before such an instruction "
     "is queued"),
    (r"^vta_top\.compute$", r"case compute_fsm_state = 3'h3",
     "compute's HALT state (states are numbered as first named in hw/compute.py: IDLE, DECODE, DRAIN, HALT), entered "
     "only on a decode error (a LOAD of INP/WGT/OUT, a bad ALU opcode, opcodes 5-7): fetch routes INP/WGT loads to "
     "load and rejects the rest first"),
    (r"^vta_top\.load$", r"case load_fsm_state = 3'h2",
     "load's HALT state (IDLE, DECODE, HALT: hw/load.py), entered only for a memory type other than INP/WGT: "
     "fetch routes only INP/WGT loads to load"),
    (r"^vta_top\.store$", r"case store_fsm_state = 3'h2",
     "store's HALT state (IDLE, DECODE, HALT: hw/store.py), entered only for a memory type other than OUT: fetch "
     "rejects such a store (BAD_MEMORY_TYPE) first"),
    (r"^vta_top$", r"case \\?insn__payload(\$\d+)? ?\[9:7\] = 3'h[0-5]",
     "the DMA byte counters switch on the memory type of every module's accepted instruction: fetch routes INP/WGT "
     "loads to load and UOP/ACC/ACC_8BIT loads to compute, so the other memory types of each switch never occur"),
    (r"^vta_top$", r"\(near: if \\error\$\d+\)",
     "the error-code priority branches for load/compute/store module errors: the modules' errors repeat checks "
     "fetch makes first (see the HALT states); the AXI error response's branch is covered by the directed "
     "programs that make the memory answer SLVERR/DECERR (cosim.verify.directed_suite.AXI_CASES)"),
]
