"""The ``rtl`` target of the runtime: the Verilated accelerator, driven from inside a cocotb test.

:class:`RtlDevice` has the same interface as :class:`sw.fsim.FsimDevice` (``cfg``, ``dram``,
``run``). Its ``dram`` is the C++ DPI memory of the testbench mapped as a numpy array (no copy).
``run`` is called from ordinary (blocking) code running in a cocotb bridge thread; it hands the
launch to the simulator with ``cocotb.task.resume`` and blocks until the run ends, so Python wakes
only for the few register accesses of a launch and once at the end.
"""

from __future__ import annotations

import ctypes

import numpy as np

from sw.pipeline import VTAError

from . import axi_monitor

__all__ = ["RtlDevice", "WatchdogError", "RunTimeout", "AxiResponseError", "AXI_RESPONSES", "dram_view"]

# AXI response codes (RRESP/BRESP) that are errors, by name
AXI_RESPONSES = {"SLVERR": 2, "DECERR": 3}
# the AxiMaster's read clients (hw/top.py): what each one reads
READ_CLIENTS = {0: ("fetch", "instructions"), 1: ("compute", "UOP/ACC loads"), 2: ("load", "INP/WGT loads")}


class WatchdogError(VTAError):
    """The accelerator made no progress for the watchdog budget; the message says what each module waits for."""


class RunTimeout(VTAError):
    """The run did not finish within ``wait_cycles``."""


class AxiResponseError(VTAError):
    """The accelerator stopped on an AXI response other than OKAY (error code ``AXI_ERROR``); the message names the
    channel, the response, the burst's address and the instruction whose transfer it was. ``channel`` is "read" or
    "write", ``client`` the module whose transfer failed, ``response`` "SLVERR"/"DECERR", ``address`` the burst's."""

    def __init__(self, message, channel, client, response, address):
        super().__init__(message)
        self.channel, self.client, self.response, self.address = channel, client, response, address


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

    def __init__(self, dut, cfg, watchdog_cycles: int = 100_000, dram_latency: int = 20,
                 dram_bytes_per_cycle: int = 8, trace: bool = False, mem: str = "dpi", mem_seed: int = 0,
                 dram_stall: int = 0):
        from hw import registers as control

        self.dut = dut
        self.cfg = cfg
        self.regs = control.REGISTERS
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
        self._fault = None
        self.window = 0
        self.base_registers = None      # what a launch writes to the base-address registers (None: the window)
        if mem == "cocotbext":           # cocotbext-axi's AxiRam serves the memory port (cosim/sim/axiram.py)
            from .axiram import attach
            self.axiram = attach(dut, self.dram, mem_seed, dram_latency)

    # ------------------------------------------------------------------ register access (async)
    async def write_reg(self, name_or_offset, value: int):
        from cocotb.triggers import ValueChange
        dut = self.dut
        dut.ctl_addr.value = self._offset(name_or_offset)
        dut.ctl_wdata.value = int(value) & 0xFFFFFFFF
        dut.ctl_we.value = 1
        dut.ctl_req.value = 1 - int(dut.ctl_req.value)
        await ValueChange(dut.ctl_ack)

    async def read_reg(self, name_or_offset) -> int:
        from cocotb.triggers import ValueChange
        dut = self.dut
        dut.ctl_addr.value = self._offset(name_or_offset)
        dut.ctl_we.value = 0
        dut.ctl_req.value = 1 - int(dut.ctl_req.value)
        await ValueChange(dut.ctl_ack)
        return int(dut.ctl_rdata.value)

    def _offset(self, name_or_offset) -> int:
        if isinstance(name_or_offset, int):
            return name_or_offset
        return self.regs[name_or_offset]

    async def read_counters(self) -> dict:
        """Every register except the host-written ones."""
        from hw import registers as control
        out = {}
        for reg in control.REGISTER_MAP:
            if reg.kind != "host":
                out[reg.name] = await self.read_reg(reg.offset)
        return out

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
        whole of device memory below 4 GiB. The DPI DRAM only (not ``mem="cocotbext"``)."""
        size = len(self.dram)
        align = 1 << (size - 1).bit_length()
        if self.mem != "dpi":
            raise ValueError(f"set_window needs the DPI DRAM (mem='dpi'), not mem={self.mem!r}")
        if isinstance(base, bool) or not isinstance(base, int) or not 0 <= base <= (1 << 32) - align \
                or base % align:
            raise ValueError(f"window base = {base!r}; allowed: a multiple of {align:#x} in [0, {(1 << 32) - align:#x}] "
                             f"(device memory is {size:#x} bytes)")
        self.window = base
        self.dut.dram_window.value = base

    def _arm_fault(self):
        channel, beat, response = self._fault or ("read", 0, None)
        if self.mem == "cocotbext":
            self.axiram.fail(channel if response else None, beat)
        else:
            self.dut.dram_fault.value = (AXI_RESPONSES[response] | (channel == "write") << 2) if response else 0
            self.dut.dram_fault_at.value = beat
        self._fault = None

    def _axi_error(self, regs, insn_addr, insn_count) -> AxiResponseError:
        """The exception for a run stopped by an AXI error response, from the ``axi_error`` registers."""
        info, addr = regs["axi_error"], regs["axi_error_addr"] - self.window
        response = {v: k for k, v in AXI_RESPONSES.items()}.get(info & 3, f"response {info & 3}")
        if info >> 2 & 1:
            channel, client, what = "write", "store", "STORE"
        else:
            channel, (client, what) = "read", READ_CLIENTS.get(info >> 4, (f"client {info >> 4}", "?"))
        where = self._transfer_at(channel, client, addr, insn_addr, insn_count)
        return AxiResponseError(
            f"the accelerator stopped on an AXI error: {response} on the {channel} channel for the {client} module "
            f"({what}), burst at {addr:#x}{where}\n" + describe_state(regs), channel, client, response, addr)

    def _transfer_at(self, channel, client, addr, insn_addr, insn_count) -> str:
        """'': or ', in instruction #i (its disassembly)' for the first instruction of the stream whose DRAM range
        holds ``addr`` and that ``client`` runs."""
        from sw.isa import MemId, Opcode, isa_for
        from sw.pipeline import elem_bytes

        isa = isa_for(self.cfg)
        if client == "fetch":
            inside = insn_addr <= addr < insn_addr + insn_count * isa.insn_bytes
            return f", instruction words #{(addr - insn_addr) // isa.insn_bytes}.." if inside else ""
        mems = {"compute": (MemId.UOP, MemId.ACC, MemId.ACC_8BIT), "load": (MemId.INP, MemId.WGT),
                "store": (MemId.OUT,)}[client]
        try:
            insns = isa.decode_stream(self.dram[insn_addr:insn_addr + insn_count * isa.insn_bytes])
        except ValueError:
            return ""
        bus = self.cfg.BUS_WIDTH // 8
        for i, insn in enumerate(insns):
            if insn.kind != "mem" or insn.f["x_size"] == 0 or insn.f["memory_type"] not in mems:
                continue
            if (insn.opcode == Opcode.STORE) != (channel == "write"):
                continue
            eb = elem_bytes(self.cfg, insn.f["memory_type"])
            f = insn.f
            for row in range(f["y_size"]):
                start = (f["dram_base"] + row * f["x_stride"]) * eb
                if start // bus * bus <= addr < start + f["x_size"] * eb:
                    return f", in instruction #{i} ({isa.disasm(insn)})"
        return ""

    # ------------------------------------------------------------------ the target interface
    def run(self, insn_addr: int, insn_count: int, wait_cycles: int | None = None) -> dict:
        from cocotb.task import resume
        axi_monitor.begin_run(self)        # here: the calling thread's runtime holds the buffers the run may write
        return resume(self._run)(insn_addr, insn_count, wait_cycles)

    async def _run(self, insn_addr, insn_count, wait_cycles):
        from cocotb.triggers import RisingEdge

        dut = self.dut
        self.lib.vta_dram_clear_faults()
        self._arm_fault()
        await self.write_reg("insn_count", insn_count)
        await self.write_reg("insn_addr", self.window + insn_addr)
        for ptr in ("uop_addr", "inp_addr", "wgt_addr", "acc_addr", "out_addr"):
            await self.write_reg(ptr, self.window if self.base_registers is None else self.base_registers)
        dut.watchdog_limit.value = self.watchdog_cycles
        dut.cycle_limit.value = int(wait_cycles) if wait_cycles else (1 << 63)
        dut.arm.value = 1 - int(dut.arm.value)
        await self.write_reg("control", 1)
        if not int(dut.done.value):        # done was cleared when armed; a tiny run may already be over
            await RisingEdge(dut.done)
        why = int(dut.why.value)
        self.launches += 1
        regs = await self.read_counters()
        if why in (2, 3) or decode_error(regs["status"]):
            await self.reset()        # a stopped or hung accelerator is reset, so the next run starts clean
        # AXI protocol violations first: they explain a hang or a wrong result
        axi_monitor.check_run(stopped_on_error=bool(decode_error(regs["status"])))
        if why == 2:
            raise WatchdogError(f"the accelerator made no progress for {self.watchdog_cycles} cycles "
                                f"(cycle {regs['cycles']} of the run):\n" + describe_state(regs))
        if why == 3:
            raise RunTimeout(f"the run did not finish within wait_cycles = {wait_cycles}:\n" + describe_state(regs))
        err = decode_error(regs["status"])
        if err and regs["axi_error"]:
            raise self._axi_error(regs, insn_addr, insn_count)
        if err:
            raise VTAError(f"the accelerator stopped on an error: {err}\n" + describe_state(regs))
        faults = int(self.lib.vta_dram_faults())
        if faults:
            raise VTAError(f"the accelerator accessed DRAM outside device memory {faults} times (first at "
                           f"{int(self.lib.vta_dram_first_fault()):#x})")
        return profiler_counters(regs)

    async def reset(self):
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


# registers that are not counters of a run
NOT_COUNTERS = ("control", "status", "version", "config0", "config1")


def profiler_counters(regs: dict) -> dict:
    """The counters of a run, named as their registers (docs/registers.md): VTA's profiler counters
    first (the golden model's :data:`sw.fsim.COUNTER_NAMES`, same names), then cycles and the hardware's own."""
    from sw.fsim import COUNTER_NAMES

    out = {name: regs[name] for name in COUNTER_NAMES}
    out["cycles"] = regs["cycles"]
    out.update((name, value) for name, value in regs.items() if name not in out and name not in NOT_COUNTERS)
    return out


def decode_error(status: int) -> str:
    from hw.registers import STATUS_BITS, ErrorCode
    lo, width = STATUS_BITS["error_code"]
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
