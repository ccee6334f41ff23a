"""The register map of the control interface, as data (no Amaranth): names, offsets, kinds, the status
bits and error codes.

The hardware (:class:`hw.control.ControlRegs`, which imports this module), the launch
sequence every target driver runs (:mod:`sw.targets.launch`: the co-simulation's and the board's), the offsets
they use (:data:`REGISTERS`) and the documentation table (:func:`register_table_markdown`) all come from
:data:`REGISTER_MAP`. It lives in ``sw`` because the runtime's board target needs it and ``sw`` imports
nothing from ``hw``; it imports nothing of Amaranth, so the co-simulation's simulator process reads the
map without loading the HDL.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sw.config import Config

__all__ = ["ErrorCode", "ERROR_CODE_BITS", "IMPL_REVISION", "Register", "REGISTER_MAP", "REGISTERS", "STATUS_BITS",
           "register_table_markdown", "version_word", "config_words", "const_values"]


class ErrorCode(IntEnum):
    """Cause of a stopped run, in bits 8-11 of the ``status`` register (0x40)."""
    NONE = 0
    BAD_OPCODE = 1          # opcode 6..7, or 5 (DEPTHWISE) without DEPTHWISE
    BAD_MEMORY_TYPE = 2     # memory_type 6..7, OUT on a LOAD, not OUT on a STORE that is not a NOP
    RESERVED_DEP_FLAG = 3   # pop_prev/push_prev on a load-module insn, pop_next/push_next on a STORE
    BAD_ALU_OPCODE = 4      # alu_opcode 6..7, MUL without ALU_MUL, or POST without POST_UNIT
    AXI_ERROR = 5           # an AXI read or write response other than OKAY
    BAD_UOP_LOAD = 6        # a LOAD UOP with y_size != 1 or padding (reported by the datapath)
    LOAD_ERROR = 7          # the load module rejected an instruction (its own ``error`` output)
    COMPUTE_ERROR = 8       # the compute module rejected an instruction
    STORE_ERROR = 9         # the store module rejected an instruction


ERROR_CODE_BITS = 4

# Bits of the status register.
STATUS_BITS = {"busy": 0, "finished": 1, "error": 2, "error_code": (8, ERROR_CODE_BITS)}

# Implementation revision, in bits 24-31 of the version register.
IMPL_REVISION = 1


@dataclass(frozen=True)
class Register:
    """One 32-bit register.

    ``kind`` says how the hardware implements it:

    * ``control``: the launch/finish register;
    * ``host``: written by the host, driven out on the port of the same name;
    * ``cycles``: counts every cycle of a run; cleared at launch, stops (latched) at finish;
    * ``counter``: counts the cycles in which input port ``port`` is high during a run; cleared at
      launch, stops at finish;
    * ``delta``: input port ``port`` is a free-running 32-bit event counter of a module; the register
      reads its increase since launch, and holds it from finish on;
    * ``input``: a read-only snapshot of input port ``port`` (``width`` bits);
    * ``status``: run state and error code;
    * ``const``: a build-time constant (``version``, ``config0``, ``config1``).
    """
    name: str
    offset: int
    access: str           # "RW" or "RO"
    reset: object         # int, or "config" for a value derived from the build's config
    kind: str
    description: str
    port: str | None = None
    width: int = 32


def _counter(name, offset, port, what):
    return Register(name, offset, "RO", 0, "counter", what, port=port, width=1)


REGISTER_MAP = (
    Register("control", 0x00, "RW", 0, "control",
             "bit 0 launch: the host writes 1 to start a run (ignored while one runs), reads 1 while "
             "it runs; bit 1 finish: set by the hardware when the run ends (FINISH or an error), "
             "cleared by a launch or by writing 0"),
    Register("cycles", 0x04, "RW", 0, "cycles",
             "cycles of the current or last run (cleared at launch, latched at finish)"),
    Register("insn_count", 0x08, "RW", 0, "host", "number of 128-bit instructions to fetch"),
    Register("insn_addr", 0x0C, "RW", 0, "host", "byte address of the first instruction"),
    Register("uop_addr", 0x10, "RW", 0, "host", "uop base address (ORed into uop DRAM addresses)"),
    Register("inp_addr", 0x14, "RW", 0, "host", "inp base address (ORed into inp DRAM addresses)"),
    Register("wgt_addr", 0x18, "RW", 0, "host", "wgt base address (ORed into wgt DRAM addresses)"),
    Register("acc_addr", 0x1C, "RW", 0, "host", "acc base address (ORed into acc DRAM addresses)"),
    Register("out_addr", 0x20, "RW", 0, "host", "out base address (ORed into out DRAM addresses)"),
    Register("acc_writes", 0x24, "RO", 0, "delta", "ACC row writes during the run (latched at finish)",
             "acc_writes", 32),
    Register("status", 0x40, "RO", 0, "status",
             "bit 0 busy, bit 1 finished, bit 2 error; bits 8-11 error code (sw.registers.ErrorCode: "
             "1 bad opcode (6..7, or 5 DEPTHWISE without DEPTHWISE), 2 bad memory type, 3 reserved dependency flag, "
             "4 bad ALU opcode, "
             "5 AXI error response, 6 bad UOP load, 7/8/9 load/compute/store module error); kept "
             "until the next launch"),
    Register("version", 0x44, "RO", "config", "const",
             "bits 0-7/8-15/16-23 ISA version patch/minor/major (HW_VER), bits 24-31 implementation "
             "revision"),
    Register("config0", 0x48, "RO", "config", "const",
             "config id: LOG_INP_WIDTH 0-3, LOG_WGT_WIDTH 4-7, LOG_ACC_WIDTH 8-11, LOG_BATCH 12-15, "
             "LOG_BLOCK_IN 16-19, LOG_BLOCK_OUT 20-23, LOG_BUS_WIDTH 24-27, ALU_MUL 28, POST_UNIT 29, DEPTHWISE 30"),
    Register("config1", 0x4C, "RO", "config", "const",
             "config id: LOG_UOP_BUFF_SIZE 0-7, LOG_INP_BUFF_SIZE 8-15, LOG_WGT_BUFF_SIZE 16-23, "
             "LOG_ACC_BUFF_SIZE 24-31"),
    _counter("fetch_busy", 0x50, "fetch_busy", "cycles fetch has instructions left to route"),
    _counter("fetch_stall", 0x54, "fetch_stall",
             "cycles fetch waits on memory or on a full command queue"),
    _counter("load_busy", 0x58, "load_busy", "cycles the load module executes an instruction"),
    _counter("load_stall", 0x5C, "load_stall", "cycles the load module waits on a token or on memory"),
    _counter("compute_busy", 0x60, "compute_busy", "cycles the compute module executes an instruction"),
    _counter("compute_stall", 0x64, "compute_stall",
             "cycles the compute module waits on a token with neither its GEMM nor its ALU running"),
    _counter("store_busy", 0x68, "store_busy", "cycles the store module executes an instruction"),
    _counter("store_stall", 0x6C, "store_stall", "cycles the store module waits on a token or on memory"),
    Register("tokens_l2g", 0x70, "RO", 0, "input", "tokens load -> compute (now)", "tokens_l2g", 16),
    Register("tokens_g2l", 0x74, "RO", 0, "input", "tokens compute -> load (now)", "tokens_g2l", 16),
    Register("tokens_g2s", 0x78, "RO", 0, "input", "tokens compute -> store (now)", "tokens_g2s", 16),
    Register("tokens_s2g", 0x7C, "RO", 0, "input", "tokens store -> compute (now)", "tokens_s2g", 16),
    Register("queue_load", 0x80, "RO", 0, "input", "instructions in the load command queue (now)",
             "queue_load", 16),
    Register("queue_compute", 0x84, "RO", 0, "input",
             "instructions in the compute command queue (now)", "queue_compute", 16),
    Register("queue_store", 0x88, "RO", 0, "input", "instructions in the store command queue (now)",
             "queue_store", 16),
    Register("insn_fetched", 0x8C, "RO", 0, "input",
             "instructions fetch has routed in this run (after an error: the index of the bad one)",
             "insn_fetched", 32),
    Register("gemm_counter", 0x90, "RO", 0, "delta", "GEMM micro-ops (not reset ones) during the run",
             "gemm_uops", 32),
    Register("alu_counter", 0x94, "RO", 0, "delta", "ALU micro-ops during the run", "alu_uops", 32),
    Register("dma_fetch_beats", 0x98, "RO", 0, "delta",
             "bus words read for fetch during the run (AxiMaster read_beats)", "dma_fetch_beats", 32),
    Register("dma_load_beats", 0x9C, "RO", 0, "delta",
             "bus words read for the load module (inp, wgt) during the run", "dma_load_beats", 32),
    Register("dma_compute_beats", 0xA0, "RO", 0, "delta",
             "bus words read for the compute module (uop, acc) during the run", "dma_compute_beats", 32),
    Register("dma_store_beats", 0xA4, "RO", 0, "delta",
             "bus words written for the store module during the run (AxiMaster write_beats)",
             "dma_store_beats", 32),
    Register("inp_load_nbytes", 0xA8, "RO", 0, "delta", "bytes loaded into the inp SRAM (padding excluded)",
             "inp_load_bytes", 32),
    Register("wgt_load_nbytes", 0xAC, "RO", 0, "delta", "bytes loaded into the wgt SRAM (padding excluded)",
             "wgt_load_bytes", 32),
    Register("acc_load_nbytes", 0xB0, "RO", 0, "delta",
             "bytes loaded into the acc SRAM (ACC_8BIT counted at acc element size, as VTA's profiler)",
             "acc_load_bytes", 32),
    Register("uop_load_nbytes", 0xB4, "RO", 0, "delta", "bytes of micro-ops loaded", "uop_load_bytes", 32),
    Register("modules", 0xBC, "RO", 0, "input",
             "now: bits 0-3 fetch/load/compute/store busy, bits 4-7 the same modules waiting for a token "
             "(fetch: for memory or queue space)", "modules_now", 8),
    Register("out_store_nbytes", 0xB8, "RO", 0, "delta", "bytes stored from the out SRAM", "out_store_bytes", 32),
    Register("axi_error", 0xC0, "RO", 0, "input",
             "the first AXI response other than OKAY of the run (with error code 5): bits 0-1 RRESP/BRESP "
             "(2 SLVERR, 3 DECERR), bit 2 set for a write response, bits 4-7 the read client (0 fetch, "
             "1 compute: uop/acc, 2 load: inp/wgt); 0 when there was none; cleared at launch",
             "axi_error_info", 8),
    Register("axi_error_addr", 0xC4, "RO", 0, "input",
             "the byte address of the burst that response belonged to (its AR or AW address)", "axi_error_addr", 32),
)

REGISTERS = {r.name: r.offset for r in REGISTER_MAP}


def _check_map():
    offsets = [r.offset for r in REGISTER_MAP]
    if len(set(offsets)) != len(offsets) or any(o % 4 for o in offsets) or len(REGISTERS) != len(REGISTER_MAP):
        raise ValueError("REGISTER_MAP: offsets and names must be unique and offsets word-aligned")


_check_map()


def version_word(cfg: Config | None = None) -> int:
    hw_ver = getattr(cfg, "HW_VER", "0.0.2")
    major, minor, patch = (int(x) for x in hw_ver.split("."))
    return patch | minor << 8 | major << 16 | IMPL_REVISION << 24


def config_words(cfg: Config | None = None) -> tuple[int, int]:
    """The values of ``config0`` and ``config1`` for a config (zeros without one)."""
    if cfg is None:
        return 0, 0
    c0 = (cfg.LOG_INP_WIDTH | cfg.LOG_WGT_WIDTH << 4 | cfg.LOG_ACC_WIDTH << 8 | cfg.LOG_BATCH << 12
          | cfg.LOG_BLOCK_IN << 16 | cfg.LOG_BLOCK_OUT << 20 | cfg.LOG_BUS_WIDTH << 24
          | cfg.ALU_MUL << 28 | cfg.POST_UNIT << 29 | cfg.DEPTHWISE << 30)
    c1 = (cfg.LOG_UOP_BUFF_SIZE | cfg.LOG_INP_BUFF_SIZE << 8 | cfg.LOG_WGT_BUFF_SIZE << 16
          | cfg.LOG_ACC_BUFF_SIZE << 24)
    return c0, c1


def const_values(cfg: Config | None = None) -> dict[str, int]:
    """The values of the constant registers for a config: ``{"version": ..., "config0": ..., "config1": ...}``."""
    c0, c1 = config_words(cfg)
    return {"version": version_word(cfg), "config0": c0, "config1": c1}


def register_table_markdown(cfg: Config | None = None) -> str:
    """The register map as a markdown table."""
    consts = const_values(cfg) if cfg is not None else {}
    rows = ["| offset | name | access | reset | description |", "|---|---|---|---|---|"]
    for r in REGISTER_MAP:
        if r.reset == "config":
            reset = f"{consts[r.name]:#010x}" if r.name in consts else "from the config"
        else:
            reset = f"{r.reset:#x}"
        rows.append(f"| {r.offset:#06x} | `{r.name}` | {r.access} | {reset} | {r.description} |")
    return "\n".join(rows)
