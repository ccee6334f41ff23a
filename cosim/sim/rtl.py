"""The ``rtl`` target of the runtime: the Verilated accelerator, driven from inside a cocotb test.

:class:`RtlDevice` has the same interface as :class:`sw.fsim.FsimDevice` (``cfg``, ``dram``,
``run``). Its ``dram`` is the C++ DPI memory of the testbench mapped as a numpy array (no copy).
``run`` is called from ordinary (blocking) code running in a cocotb bridge thread; it hands the
launch to the simulator with ``cocotb.task.resume`` and blocks until the run ends, so Python wakes
only for the few register accesses of a launch and once at the end.

The launch itself (the register protocol, the read-back of the counters and the decoding of errors) is
:func:`sw.targets.launch.launch`, shared with the board target (:class:`sw.targets.zynq.BoardDevice`); this module awaits
each of its operations in the simulator and adds what only a simulation has: the run monitor's watchdog and
cycle limit, the AXI protocol checks, injected AXI errors and the DPI DRAM's out-of-range accesses.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from sw.config import Config
from sw.pipeline import VTAError
from sw.targets import launch as seq
from sw.targets.launch import (  # the launch sequence and its errors are shared with the board target: re-exported here
    AXI_RESPONSES,
    NOT_COUNTERS,
    READ_CLIENTS,
    AxiResponseError,
    RunTimeout,
    WatchdogError,
    decode_error,
    describe_state,
    profiler_counters,
)

from . import axi_monitor

CLOCK_PERIOD_STEPS = 10_000   # one clock period (10 ns) in simulator time steps of 1 ps (sim_main.cpp's HALF_PERIOD x 2)
CTL_TIMEOUT_CYCLES = 10_000   # an AXI4-Lite access unanswered for this long is an error, not a hang

__all__ = ["RtlDevice", "Launched", "CLOCK_PERIOD_STEPS", "CTL_TIMEOUT_CYCLES", "WatchdogError", "RunTimeout",
           "AxiResponseError", "AXI_RESPONSES", "READ_CLIENTS", "NOT_COUNTERS", "dram_view", "decode_error",
           "describe_state", "profiler_counters"]


def _lib():
    lib = ctypes.CDLL(None)
    lib.vta_dram_base.restype = ctypes.c_void_p
    lib.vta_dram_size.restype = ctypes.c_uint64
    lib.vta_dram_faults.restype = ctypes.c_uint64
    lib.vta_dram_first_fault.restype = ctypes.c_uint64
    lib.vta_trace_size.restype = ctypes.c_uint64
    lib.vta_trace_data.restype = ctypes.c_void_p
    return lib


def dram_view() -> np.ndarray:
    """The testbench DRAM as a writable uint8 numpy array sharing the C++ buffer."""
    lib = _lib()
    size = int(lib.vta_dram_size())
    return np.ctypeslib.as_array((ctypes.c_uint8 * size).from_address(lib.vta_dram_base()))


class RtlDevice:
    name = "rtl"

    def __init__(self, dut: Any, cfg: Config, watchdog_cycles: int = 100_000, dram_latency: int = 20,
                 dram_bytes_per_cycle: int = 8, trace: bool = False, mem: str = "dpi", mem_seed: int = 0,
                 dram_stall: int = 0):
        from sw import registers

        self.dut = dut
        self.cfg = cfg
        self.regs = registers.REGISTERS
        self.lib = _lib()
        self.dram = dram_view()
        self.watchdog_cycles = watchdog_cycles
        dut.dram_latency.value = dram_latency
        dut.dram_bytes_per_cycle.value = dram_bytes_per_cycle
        if not 0 <= dram_stall < 1 << 32:
            raise ValueError(f"dram_stall = {dram_stall}; allowed: 0 <= dram_stall < 2**32 (seed << 8 | chance of 256)")
        dut.dram_stall.value = dram_stall
        dut.trace_enable.value = int(trace)
        self.launches = 0
        self.mem = mem
        self._fault: tuple[str, int, str] | None = None
        self.window = 0
        self.base_registers: int | None = None      # what a launch writes to the base-address registers (None: the window)
        if mem == "cocotbext":           # cocotbext-axi's AxiRam serves the memory port (cosim/sim/axiram.py)
            from .axiram import attach
            self.axiram = attach(dut, self.dram, mem_seed, dram_latency)
        self._arm_fault(None)

    # ------------------------------------------------------------------ register access (async)
    async def write_reg(self, name_or_offset: str | int, value: int) -> None:
        dut = self.dut
        dut.ctl_addr.value = self._offset(name_or_offset)
        dut.ctl_wdata.value = int(value) & 0xFFFFFFFF
        dut.ctl_we.value = 1
        dut.ctl_req.value = 1 - int(dut.ctl_req.value)
        await self._ack(name_or_offset, "write")

    async def read_reg(self, name_or_offset: str | int) -> int:
        dut = self.dut
        dut.ctl_addr.value = self._offset(name_or_offset)
        dut.ctl_we.value = 0
        dut.ctl_req.value = 1 - int(dut.ctl_req.value)
        await self._ack(name_or_offset, "read")
        return int(dut.ctl_rdata.value)

    async def _ack(self, register: str | int, what: str) -> None:
        """Wait for the testbench's AXI4-Lite master to finish the access (a bounded wait: one timed wake)."""
        from cocotb.triggers import First, Timer, ValueChange
        limit = Timer(CTL_TIMEOUT_CYCLES * CLOCK_PERIOD_STEPS, "step")
        if await First(ValueChange(self.dut.ctl_ack), limit) is limit:
            raise VTAError(f"the AXI4-Lite {what} of register {register!r} got no response in {CTL_TIMEOUT_CYCLES} "
                           "cycles (the accelerator's control slave did not answer)")

    def _offset(self, name_or_offset: str | int) -> int:
        if isinstance(name_or_offset, int):
            return name_or_offset
        return self.regs[name_or_offset]

    async def read_counters(self) -> dict:
        """Every register except the host-written ones (:func:`sw.targets.launch.counter_registers`)."""
        return {name: await self.read_reg(name) for name in seq.counter_registers()}

    # ------------------------------------------------------------------ error injection
    def inject_axi_error(self, channel: str, beat: int, response: str = "SLVERR") -> None:
        """Make the memory answer ``response`` on one beat of the next run: ``channel`` "read" (that R beat carries
        zeros and the error) or "write" (that W beat is not written; its burst's B response carries the error);
        ``beat`` counts that channel's beats from 0 at the launch. With ``mem="cocotbext"`` only SLVERR exists
        (cocotbext-axi's AxiRam answers a failed access so) and a write beat's index counts its writes (one per
        beat with a contiguous strobe, as the store module's are). The next run after that one is clean."""
        if channel not in ("read", "write"):
            raise ValueError(f"channel = {channel!r}; allowed: 'read', 'write'")
        allowed = ("SLVERR",) if self.mem == "cocotbext" else tuple(AXI_RESPONSES)
        if response not in allowed:
            raise ValueError(f"response = {response!r}; allowed with mem={self.mem!r}: {', '.join(allowed)}")
        if isinstance(beat, bool) or not isinstance(beat, int) or not 0 <= beat < 1 << 32:
            raise ValueError(f"beat = {beat!r} must be an integer in [0, {(1 << 32) - 1}]")
        self._fault = (channel, beat, response)

    # ------------------------------------------------------------------ where device memory sits on the bus
    def set_window(self, base: int) -> None:
        """Put device memory at bus address ``base`` (0: from address 0), as on a board whose DRAM is high in the
        address map: the runtime keeps using offsets into device memory; a run points ``insn_addr`` at
        ``base + offset`` and sets the five base-address registers (uop/inp/wgt/acc/out_addr, ORed into every DMA
        address) to ``base``, and the DPI DRAM answers bus address ``base + a`` with its byte ``a``. ``base`` must
        be a multiple of device memory's size rounded up to a power of two (so that ORing is adding) and leave the
        whole of device memory below 4 GiB (:func:`sw.targets.launch.check_window`). The DPI DRAM only (not
        ``mem="cocotbext"``)."""
        if self.mem != "dpi":
            raise ValueError(f"set_window needs the DPI DRAM (mem='dpi'), not mem={self.mem!r}")
        base = seq.check_window(base, len(self.dram))
        self.window = base
        self.dut.dram_window.value = base

    def _arm_fault(self, fault: tuple[str, int, str | None] | None = None) -> None:
        """Make the memory answer ``fault`` (channel, beat, response) in the run being launched; None: answer OKAY."""
        channel, beat, response = fault or ("read", 0, None)
        if self.mem == "cocotbext":
            self.axiram.fail(channel if response else None, beat)
        else:
            self.dut.dram_fault.value = (AXI_RESPONSES[response] | (channel == "write") << 2) if response else 0
            self.dut.dram_fault_at.value = beat

    # ------------------------------------------------------------------ the target interface
    def run(self, insn_addr: int, insn_count: int, wait_cycles: int | None = None) -> dict:
        from cocotb.task import resume
        axi_monitor.begin_run(self)        # here: the calling thread's runtime holds the buffers the run may write
        return resume(self._run)(insn_addr, insn_count, wait_cycles)

    async def _run(self, insn_addr, insn_count, wait_cycles):
        return await (await self.start(insn_addr, insn_count, wait_cycles)).finished()

    async def start(self, insn_addr: int, insn_count: int, wait_cycles: int | None = None) -> Launched:
        """Launch ``insn_count`` instructions at byte offset ``insn_addr`` of device memory and return as soon as the
        accelerator runs (the registers written, the run monitor armed): the first half of :meth:`run`, for a
        coroutine that watches the run. ``await (...).finished()`` is the second half."""
        self.lib.vta_dram_clear_faults()
        self._arm_fault(self._fault)        # an injected error lives for this run only (Launched.finished disarms it)
        self._fault = None
        sequence = seq.launch(self.cfg, self.dram, insn_addr, insn_count, self.window, self.base_registers)
        launched = Launched(self, sequence, wait_cycles)
        await launched.advance(until=seq.Wait)
        return launched

    async def execute(self, op: seq.Operation, wait_cycles: int | None = None) -> object:
        """One operation of the launch sequence (:mod:`sw.targets.launch`), in the simulator."""
        from cocotb.triggers import RisingEdge

        dut = self.dut
        if isinstance(op, seq.Write):
            await self.write_reg(op.offset, op.value)
            return None
        if isinstance(op, seq.Read):
            return await self.read_reg(op.offset)
        if isinstance(op, seq.Launch):
            dut.watchdog_limit.value = self.watchdog_cycles
            dut.cycle_limit.value = int(wait_cycles) if wait_cycles else (1 << 63)
            dut.arm.value = 1 - int(dut.arm.value)
            await self.write_reg("control", 1)
            return None
        if isinstance(op, seq.Wait):
            if not int(dut.done.value):        # done was cleared when armed; a tiny run may already be over
                await RisingEdge(dut.done)
            why = int(dut.why.value)
            self.launches += 1
            if why == 2:
                return seq.Stop(seq.WATCHDOG, f"{self.watchdog_cycles} cycles")
            if why == 3:
                return seq.Stop(seq.TIMEOUT, f"wait_cycles = {wait_cycles}")
            return seq.Stop(seq.FINISHED)
        if isinstance(op, seq.Reset):
            await self.reset()
            return None
        if isinstance(op, seq.Check):     # AXI protocol violations first: they explain a hang or a wrong result
            axi_monitor.check_run(stopped_on_error=op.stopped_on_error)
            return None
        raise TypeError(f"unknown launch operation {op!r}")

    async def reset(self) -> None:
        from cocotb.triggers import ClockCycles
        self.dut.reset_req.value = 1 - int(self.dut.reset_req.value)
        await ClockCycles(self.dut.clk, 8)

    def trace(self) -> np.ndarray:
        """Busy/idle transitions logged by the testbench: rows of (cycle, module, busy)."""
        n = int(self.lib.vta_trace_size())
        if n == 0:
            return np.zeros((0, 3), dtype=np.int64)
        raw = np.ctypeslib.as_array((ctypes.c_uint64 * n).from_address(self.lib.vta_trace_data())).copy()
        return np.stack([raw >> 8, (raw >> 1) & 0x7F, raw & 1], axis=1).astype(np.int64)


class Launched:
    """A run started by :meth:`RtlDevice.start`: :meth:`finished` waits for its end and returns its counters (the
    launch sequence's rest: the read-back, the checks, the errors of :func:`sw.targets.launch.launch`)."""

    def __init__(self, device: RtlDevice, sequence: Any, wait_cycles: int | None):
        self.device, self.sequence, self.wait_cycles = device, sequence, wait_cycles
        self.pending: seq.Operation | None = None      # the next operation, not yet executed
        self.counters: dict | None = None

    async def advance(self, until: type | None = None) -> None:
        """Execute the sequence's operations up to (not including) the first of type ``until`` (None: to the end)."""
        result: object = None
        while True:
            if self.pending is None:
                try:
                    self.pending = self.sequence.send(result)
                except StopIteration as done:
                    self.counters = done.value
                    return
            if until is not None and isinstance(self.pending, until):
                return
            op, self.pending = self.pending, None
            result = await self.device.execute(op, self.wait_cycles)

    async def finished(self) -> dict:
        """Wait for the run's end; return its counters, or raise its error (watchdog, timeout, AXI error, ...)."""
        if self.counters is None:
            try:
                await self.advance()
            finally:
                self.device._arm_fault(None)
        counters = self.counters
        assert counters is not None
        faults = int(self.device.lib.vta_dram_faults())
        if faults:
            raise VTAError(f"the accelerator accessed DRAM outside device memory {faults} times (first at "
                           f"{int(self.device.lib.vta_dram_first_fault()):#x})")
        return counters
