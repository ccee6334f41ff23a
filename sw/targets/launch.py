"""The launch sequence of the accelerator, written once for every driver of the control registers.

A run is the same register protocol on every hardware target (docs/architecture.md §3.9): write ``insn_count``,
``insn_addr`` and the five base addresses, write ``control = 1``, wait for the run to end, read every register that
is not host-written, reset a stopped or hung accelerator, and turn the registers into the counters of the run or
into an exception that says what went wrong and what each module was doing. :func:`launch` is that protocol as a
generator of register operations; a *driver* executes each operation it yields and sends back its result:

* :class:`cosim.sim.rtl.RtlDevice` (co-simulation) awaits each operation in the simulator, through the
  testbench's AXI4-Lite master;
* :class:`sw.targets.zynq.BoardDevice` (a Zynq board) executes them with :func:`run_sync` as 32-bit MMIO accesses.

Operations (all frozen dataclasses): :class:`Write` (result ``None``), :class:`Read` (result: the register's
value), :class:`Launch` (write ``control = 1``; a driver that watches the run arms its monitor first),
:class:`Wait` (block until the run ends; result: a :class:`Stop`), :class:`Reset` (reset the accelerator, so the
next run starts clean) and :class:`Check` (a driver's own checks of the finished run, before any error of the
run is raised; the board has none). The generator's return value is the counters of the run
(:func:`profiler_counters`); errors are raised from it, so from the driver's ``send``.

The errors: :class:`WatchdogError` (no progress for the driver's watchdog budget), :class:`RunTimeout` (not
finished within ``wait_cycles``, or within a board's wall-clock timeout), :class:`AxiResponseError` (the
accelerator stopped on an AXI error response) and :class:`sw.pipeline.VTAError` (stopped on a bad instruction,
naming its error code). Each message ends with :func:`describe_state`.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from sw.config import Config
from sw.pipeline import VTAError
from sw.registers import REGISTER_MAP, REGISTERS, STATUS_BITS, ErrorCode

__all__ = ["launch", "run_sync", "Write", "Read", "Launch", "Wait", "Reset", "Check", "Stop", "FINISHED", "WATCHDOG",
           "TIMEOUT", "BASE_REGISTERS", "NOT_COUNTERS", "AXI_RESPONSES", "READ_CLIENTS", "WatchdogError", "RunTimeout",
           "AxiResponseError", "axi_error", "decode_error", "describe_state", "profiler_counters", "counter_registers",
           "window_alignment", "check_window"]

# AXI response codes (RRESP/BRESP) that are errors, by name
AXI_RESPONSES = {"SLVERR": 2, "DECERR": 3}
# the AxiMaster's read clients (hw/top.py): what each one reads
READ_CLIENTS = {0: ("fetch", "instructions"), 1: ("compute", "UOP/ACC loads"), 2: ("load", "INP/WGT loads")}
# the base-address registers, ORed into every DMA address of their memory type; a launch sets them all to the window
BASE_REGISTERS = ("uop_addr", "inp_addr", "wgt_addr", "acc_addr", "out_addr")
# registers that are not counters of a run
NOT_COUNTERS = ("control", "status", "version", "config0", "config1")
# how a run ended (Stop.why)
FINISHED, WATCHDOG, TIMEOUT = "finished", "watchdog", "timeout"


class WatchdogError(VTAError):
    """The accelerator made no progress for the watchdog budget; the message says what each module waits for."""


class RunTimeout(VTAError):
    """The run did not finish within ``wait_cycles`` (or a board's wall-clock timeout)."""


class AxiResponseError(VTAError):
    """The accelerator stopped on an AXI response other than OKAY (error code ``AXI_ERROR``); the message names the
    channel, the response, the burst's address and the instruction whose transfer it was. ``channel`` is "read" or
    "write", ``client`` the module whose transfer failed, ``response`` "SLVERR"/"DECERR", ``address`` the burst's."""

    def __init__(self, message: str, channel: str, client: str, response: str, address: int) -> None:
        super().__init__(message)
        self.channel, self.client, self.response, self.address = channel, client, response, address


# ---------------------------------------------------------------------- the operations a driver executes
@dataclass(frozen=True)
class Write:
    """Write ``value`` (32 bits) to register ``name``; result ``None``."""
    name: str
    value: int

    @property
    def offset(self) -> int:
        return REGISTERS[self.name]


@dataclass(frozen=True)
class Read:
    """Read register ``name``; result: its 32-bit value."""
    name: str

    @property
    def offset(self) -> int:
        return REGISTERS[self.name]


@dataclass(frozen=True)
class Launch:
    """Start the run: write ``control = 1`` (after arming whatever watches the run); result ``None``."""


@dataclass(frozen=True)
class Wait:
    """Block until the run ends; result: a :class:`Stop`."""


@dataclass(frozen=True)
class Reset:
    """Reset the accelerator (it stopped on an error, hung or ran out of time); result ``None``."""


@dataclass(frozen=True)
class Check:
    """The driver's own checks of the ended run, before the sequence raises the run's error (the co-simulation
    checks the AXI protocol here); ``stopped_on_error``: the status register shows an error code. Result ``None``."""
    stopped_on_error: bool


@dataclass(frozen=True)
class Stop:
    """How a run ended: ``why`` is :data:`FINISHED` (the finish bit rose), :data:`WATCHDOG` or :data:`TIMEOUT`;
    ``limit`` says which limit was reached, as the error message quotes it ("2000 cycles", "wait_cycles = 50",
    "timeout = 10.0 s of wall-clock time")."""
    why: str
    limit: str = ""


Operation = Write | Read | Launch | Wait | Reset | Check


# ---------------------------------------------------------------------- where device memory may sit on the bus
def window_alignment(size: int) -> int:
    """What the bus address of ``size`` bytes of device memory must be a multiple of: ``size`` rounded up to a
    power of two, since a launch ORs the base-address registers into every DMA address and ORing must be adding."""
    return 1 << (int(size) - 1).bit_length()


def check_window(base: int, size: int) -> int:
    """``base`` as the bus address of ``size`` bytes of device memory: a multiple of :func:`window_alignment` with
    the whole of it below 4 GiB (32-bit addresses); else a ValueError naming the allowed values."""
    align = window_alignment(size)
    if isinstance(base, bool) or not isinstance(base, (int, np.integer)) or not 0 <= base <= (1 << 32) - align \
            or base % align:
        raise ValueError(f"window base = {base!r}; allowed: a multiple of {align:#x} in [0, {(1 << 32) - align:#x}] "
                         f"(device memory is {int(size):#x} bytes)")
    return int(base)


# ---------------------------------------------------------------------- the sequence
def counter_registers() -> tuple:
    """The names of the registers a launch reads back: every one except the host-written ones, in map order."""
    return tuple(reg.name for reg in REGISTER_MAP if reg.kind != "host")


def launch(cfg: Config, dram: np.ndarray, insn_addr: int, insn_count: int, window: int = 0,
           bases: int | None = None) -> Generator[Operation, Any, dict]:
    """The launch of ``insn_count`` instructions at byte offset ``insn_addr`` of device memory ``dram`` (a config's
    accelerator), device memory being at bus address ``window``: ``insn_addr`` is written as ``window + insn_addr``
    and the five base-address registers as ``window`` (so every DMA address, ``base | offset``, lands in device
    memory), or as ``bases`` when given (a test's raw program). Yields the register operations (module doc);
    returns the counters of the run, or raises its error."""
    check_window(window, len(dram))
    yield Write("insn_count", insn_count)
    yield Write("insn_addr", window + insn_addr)
    for ptr in BASE_REGISTERS:
        yield Write(ptr, window if bases is None else bases)
    yield Launch()
    stop = yield Wait()
    regs = {}
    for name in counter_registers():
        regs[name] = yield Read(name)
    err = decode_error(regs["status"])
    if stop.why != FINISHED or err:
        yield Reset()        # a stopped or hung accelerator is reset, so the next run starts clean
    yield Check(bool(err))
    failure: VTAError
    if stop.why == WATCHDOG:
        failure = WatchdogError(f"the accelerator made no progress for {stop.limit} "
                                f"(cycle {regs['cycles']} of the run):\n" + describe_state(regs))
    elif stop.why == TIMEOUT:
        failure = RunTimeout(f"the run did not finish within {stop.limit}:\n" + describe_state(regs))
    elif err and regs["axi_error"]:
        failure = axi_error(cfg, dram, regs, insn_addr, insn_count, window)
    elif err:
        failure = VTAError(f"the accelerator stopped on an error: {err}\n" + describe_state(regs))
    else:
        return profiler_counters(regs)
    failure.registers = regs        # as read when it stopped: the reset above clears the registers themselves
    raise failure


def run_sync(sequence: Generator[Operation, Any, dict], execute: Callable[[Operation], object]) -> dict:
    """Drive a launch sequence with a blocking driver: ``execute(op)`` performs one operation and returns its
    result. Returns the sequence's return value (the counters); its errors propagate."""
    result = None
    while True:
        try:
            op = sequence.send(result)
        except StopIteration as done:
            return done.value
        result = execute(op)


# ---------------------------------------------------------------------- reading the registers of an ended run
def profiler_counters(regs: dict) -> dict:
    """The counters of a run, named as their registers (docs/registers.md): VTA's profiler counters
    first (the golden model's :data:`sw.fsim.COUNTER_NAMES`, same names), then cycles and the hardware's own."""
    from sw.fsim import COUNTER_NAMES

    out = {name: regs[name] for name in COUNTER_NAMES}
    out["cycles"] = regs["cycles"]
    out.update((name, value) for name, value in regs.items() if name not in out and name not in NOT_COUNTERS)
    return out


def decode_error(status: int) -> str:
    """The error code in a ``status`` value, as "NAME (code n)"; "" when there is none."""
    lo, width = cast("tuple[int, int]", STATUS_BITS["error_code"])   # (low bit, width): a field of several bits
    code = (status >> lo) & ((1 << width) - 1)
    if not code:
        return ""
    try:
        return f"{ErrorCode(code).name} (code {code})"
    except ValueError:
        return f"error code {code}"


def describe_state(regs: dict) -> str:
    """What each module was doing, from the status registers (for watchdog and error reports)."""
    lines = [f"  status {regs['status']:#x}, {regs['insn_fetched']} instructions fetched, cycles {regs['cycles']}"]
    for mod in ("fetch", "load", "compute", "store"):
        queue = f", command queue holds {regs[f'queue_{mod}']}" if f"queue_{mod}" in regs else ""
        lines.append(f"  {mod:8s}: busy {regs[f'{mod}_busy']} cycles, waiting {regs[f'{mod}_stall']} cycles{queue}")
    lines.append("  tokens  : " + ", ".join(f"{q}={regs[f'tokens_{q}']}" for q in ("l2g", "g2l", "g2s", "s2g")))
    pops = {"fetch": "memory or command-queue space", "load": "a g2l token", "compute": "an l2g or s2g token",
            "store": "a g2s token"}
    now = regs.get("modules", 0)
    for i, mod in enumerate(("fetch", "load", "compute", "store")):
        if (now >> (4 + i)) & 1:
            lines.append(f"  {mod} is waiting for {pops[mod]}")
        elif (now >> i) & 1:
            lines.append(f"  {mod} is executing an instruction")
        else:
            lines.append(f"  {mod} is idle")
    return "\n".join(lines)


def axi_error(cfg: Config, dram: np.ndarray, regs: dict, insn_addr: int, insn_count: int,
              window: int = 0) -> AxiResponseError:
    """The exception for a run stopped by an AXI error response, from the ``axi_error`` registers (the burst's
    address is reported as an offset into device memory, ``axi_error_addr - window``)."""
    info, addr = regs["axi_error"], regs["axi_error_addr"] - window
    response = {v: k for k, v in AXI_RESPONSES.items()}.get(info & 3, f"response {info & 3}")
    if info >> 2 & 1:
        channel, client, what = "write", "store", "STORE"
    else:
        channel, (client, what) = "read", READ_CLIENTS.get(info >> 4, (f"client {info >> 4}", "?"))
    where = _transfer_at(cfg, dram, channel, client, addr, insn_addr, insn_count)
    return AxiResponseError(
        f"the accelerator stopped on an AXI error: {response} on the {channel} channel for the {client} module "
        f"({what}), burst at {addr:#x}{where}\n" + describe_state(regs), channel, client, response, addr)


def _transfer_at(cfg, dram, channel, client, addr, insn_addr, insn_count) -> str:
    """'': or ', in instruction #i (its disassembly)' for the first instruction of the stream whose DRAM range
    holds ``addr`` and that ``client`` runs."""
    from sw.isa import MemId, Opcode, isa_for
    from sw.pipeline import elem_bytes

    isa = isa_for(cfg)
    if client == "fetch":
        inside = insn_addr <= addr < insn_addr + insn_count * isa.insn_bytes
        return f", instruction words #{(addr - insn_addr) // isa.insn_bytes}.." if inside else ""
    mems = {"compute": (MemId.UOP, MemId.ACC, MemId.ACC_8BIT), "load": (MemId.INP, MemId.WGT),
            "store": (MemId.OUT,)}[client]
    try:
        insns = isa.decode_stream(dram[insn_addr:insn_addr + insn_count * isa.insn_bytes])
    except ValueError:
        return ""
    bus = cfg.BUS_WIDTH // 8
    for i, insn in enumerate(insns):
        if insn.kind != "mem" or insn.f["x_size"] == 0 or insn.f["memory_type"] not in mems:
            continue
        if (insn.opcode == Opcode.STORE) != (channel == "write"):
            continue
        eb = elem_bytes(cfg, insn.f["memory_type"])
        f = insn.f
        for row in range(f["y_size"]):
            start = (f["dram_base"] + row * f["x_stride"]) * eb
            if start // bus * bus <= addr < start + f["x_size"] * eb:
                return f", in instruction #{i} ({isa.disasm(insn)})"
    return ""
