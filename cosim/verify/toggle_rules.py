"""The reasons bits of the accelerator never toggle in the coverage runs, read by
:func:`cosim.verify.toggles.explain_toggles`.

A reason is keyed in one of two ways:

- by signal name: :data:`TOGGLE_RULES`, (module pattern, signal-name pattern, bits, why), for named signals (a
  counter, a field, a port);
- by the Amaranth line of an expression: :data:`ANNOTATED`, ``{key: (module pattern, bits, why)}``, applied to the
  signals whose ``src`` attribute names a line of the project annotated ``# untoggled: KEY`` (several keys:
  ``# untoggled: KEY, KEY``, tried in that order; :mod:`cosim.verify.sources`). This is how the unnamed ``$N`` wires
  of an expression are explained without depending on Amaranth's numbering of them: the annotation sits on the line
  the ``src`` attribute names, so it moves with the line. Lines of the Amaranth library (which carries no
  annotations) are keyed by :data:`LIBRARY_LINES`, ``{"amaranth/<file>:<line>": (key, ...)}``, for the version
  :data:`AMARANTH_VERSION` (its line numbers change with the version).

The bits: "all", "from k" (bits k and up), "below k", "bits a,b,c", "high" (the signal's untoggled bits that reach
its top) or "low" (those from its bit 0 up). The module pattern (a regex over the module's name, "" for any) limits
a rule or a key to some instances. The rules by name are tried before a signal's annotated keys. A reason explains a
whole class of equal bits (:func:`cosim.verify.verilog_bits.bit_classes`) when one member matches, so a rule names
the signal where the reason is plain rather than each copy.
"""

from __future__ import annotations

__all__ = ["COUNTER", "FIFO_FULL", "MODULE_ERROR", "ACC_LOAD_ROWS", "TOGGLE_RULES", "ANNOTATED", "LIBRARY_LINES",
           "AMARANTH_VERSION"]

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

ANNOTATED: dict = {
    # a counter plus one, a counter minus its value at launch: the count of the run (a host write of all ones to
    # ``cycles`` moves only the carry out of the sum)
    "counter": (r"\.regs$", "all", COUNTER),
    "padded-size": (r"\.compute$", "from 17",
                    "a size plus its two paddings (< 2^16 + 2 x 15 < 2^17) in an acc load's row count"),
    "acc-load-rows": (r"\.compute$", "from 31", ACC_LOAD_ROWS),
    "module-error": (r"\.store$", "all", MODULE_ERROR),
    "store-count": (r"\.store$", "high",
                    "a row, element or response count of one store plus one or two: it reaches 2^16 only in the last "
                    "rows of a store of 65,535 rows (the coverage runs stop long stores after 2^17 beats), or never (a "
                    "count below the size, at most 65,534, plus one)"),
    "stride-carry": (r"\.(store|load\.(inp|wgt)|compute\.ld_\w+)$", "from 32",
                     "the carry out of a DRAM element address plus the row stride: only for rows past element address "
                     "2^32 - 1, byte addresses far above the 32-bit bus"),
    "uop-row-bytes": (r"\.compute\.ld_uop$", "high",
                      "the bytes of one UOP row plus its offset in a beat (at most 65,535 x 4 + 7): the adder's top "
                      "bits stay 0"),
    "fetch-room": (r"\.fetch$", "all",
                   "fetch asks for an instruction's words only when its command queue has room for it (the level "
                   "checks), so 'not the last part, or room' is always true"),
    "fetch-idle": (r"\.fetch$", "all",
                   "fetch is idle unless a launch is pending (pending_start, never set: see its own entry)"),
    "token-push-pop": (r"^vta_top\.tokens_", "all",
                       "a token queue pushed and popped in the same cycle while it holds tokens: the reachable case of "
                       "the uncovered line hw/queues.py `push & pop` (tests/hw/test_queues.py drives it on the queue "
                       "itself)"),
    "burst-length": (r"\.axi$", "high",
                     "a burst's length: the smaller of the command's beats left, the beats to the next 4 KiB boundary "
                     "(at most 512) and 256; the bits above those limits stay 0"),
    "byte-counter-next": (r"", "high",
                          "a byte counter's next value before it is cut to 32 bits: the counter plus one instruction's "
                          "bytes (below 2^32 elements x the element size): the bits above stay 0"),
    "uop-index-bounds": (r"\.compute\.footprint$", "high",
                         "the least and greatest micro-op index of an instruction: SRAM indices (11 bits here) in "
                         "32-bit registers"),
    "count-minus-one": (r"\.compute\.footprint$", "high",
                        "n - 1 for a loop count n >= 1 (0 for n = 0): never negative, the borrow bit stays 0"),
    "staging-reserved": (r"\.fetch$", "high", "the staging buffer's reserved words: at most its depth"),
    "fifo-pointer": (r"", "high",
                     "a FIFO pointer's next value: the increment reaches the pointer's width only at the last entry, "
                     "where the pointer wraps to 0 instead"),
    "padding-alone": (r"\.(load\.(inp|wgt)|compute\.ld_\w+)$", "bits 0",
                      "'a padding term alone is 1' in the loader's first-position flags: it needs x_size = 0 (a NOP: "
                      "the loader never starts) or y_size = 0 with padding, which the ISA forbids (the runtime and the "
                      "golden model refuse it)"),
    "uop-count-plus-one": (r"\.compute\.(gemm|alu)\.seq$|\.compute\.footprint$", "high",
                           "a micro-op address or loop counter plus one: at most the micro-op SRAM's depth or 2^14 - 1 "
                           "iterations, the bit above stays 0"),
    "loop-span": (r"\.compute\.footprint$", "high",
                  "the loops' span of an instruction ((iterations - 1) x factor over both loops): 2^25 and more only "
                  "for loops whose indices leave the SRAM, which the runtime and the golden model refuse"),
    "age": (r"\.compute\.footprint$", "high", "age counts to 4 and stops: age + 1 stays below 8"),
    "acc-writes-sum": (r"\.compute$", "high",
                       "the accumulator writes of one cycle (the GEMM's and the ALU's, 0 or 1 each): the partial sums' "
                       "top bits stay 0"),
    "fsm-halt-test": (r"\.(compute|load|store)$", "all",
                      "the test Amaranth's FSM writes for a module's HALT state, entered only on a decode error that "
                      "fetch pre-empts (the uncovered lines of the HALT states)"),
    "uop-address": (r"\.compute\.(gemm|alu)\.seq$", "high",
                    "a micro-op address register (the current one, the first): below the micro-op SRAM's depth (only "
                    "the end may equal it)"),
    "fifo-level": (r"", "high", FIFO_FULL),
    "staging-read": (r"\.fetch\.staging$", "all",
                     "fetch takes every staging word in the cycle it appears (r_en whenever r_rdy): '~r_rdy | r_en' is "
                     "always 1"),
    "sram-index": (r"\.compute\.(gemm|alu)\.seq$|\.compute\.alu$", "high",
                   "an SRAM index (a micro-op's index plus the loops' offsets): below the SRAM's depth, as the runtime "
                   "and the golden model refuse loops that leave an SRAM (the carry bit above stays 0)"),
    "load-or-store": (r"^vta_top$", "all",
                      "'the accepted instruction is a LOAD or STORE', for a module that fetch only sends loads (load) "
                      "or stores (store): always true there"),
}

AMARANTH_VERSION = "0.5.10"
LIBRARY_LINES: dict = {
    "amaranth/hdl/_dsl.py:486": ("fsm-halt-test",),          # Module.FSM: the state tests after the FSM's body
    "amaranth/lib/fifo.py:118": ("fifo-pointer",),           # _incr: the next read or write pointer
    "amaranth/lib/fifo.py:184": ("fifo-level",),             # SyncFIFO: level + 1
    "amaranth/lib/fifo.py:186": ("fifo-level",),             # SyncFIFO: level - 1
    "amaranth/lib/fifo.py:287": ("staging-read",),           # SyncFIFOBuffered: do_inner_read
    "amaranth/lib/fifo.py:312": ("fifo-level",),             # SyncFIFOBuffered: inner_level + 1
    "amaranth/lib/fifo.py:314": ("fifo-level",),             # SyncFIFOBuffered: inner_level - 1
    "amaranth/lib/fifo.py:322": ("fifo-level",),             # SyncFIFOBuffered: level = inner_level + r_rdy
}
TOGGLE_RULES: list = [
    (r"", r"^(reg_|base_)?(cycles|\w+_busy|\w+_stall|gemm_uops|alu_uops|acc_writes|dma_\w+_beats|read_beats__\d+"
          r"|write_beats|insn_fetched|routed)(\$\d+)?$", "high", COUNTER),
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
    (r"\.compute$", r"^ld_rows$", "from 31", ACC_LOAD_ROWS),
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
    (r"\.axi\.write_len$", r"^storage\[\d+\]$", "bits 0",
     "bit 0 of a stored write burst length (AWLEN = beats - 1): the store's bursts are whole 16-byte elements, an "
     "even number of beats, so every length written is odd"),
    (r"", r"^\$auto\$verilog_backend", "all",
     "a register Yosys's Verilog writer adds to each module to run its combinational processes at time 0 (never "
     "assigned)"),
    (r"", r"^error(_code)?(\$\d+)?$|^tail\.code$", "from 3",
     "error codes 8 and 9 (COMPUTE_ERROR, STORE_ERROR) come from module errors that repeat fetch's checks, so fetch "
     "stops such an instruction first (the uncovered lines of the HALT states)"),
]
