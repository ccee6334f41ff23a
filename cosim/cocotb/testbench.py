"""The accelerator's testbench for cocotb tests: what runs inside the simulator, in the test's coroutines.

A user test module::

    import cocotb
    from cosim.cocotb import Testbench

    @cocotb.test()
    async def test_status_reads_idle(dut):
        async with Testbench(dut) as tb:
            assert await tb.read_reg("status") == 0

``async with Testbench(dut) as tb`` resets the accelerator, zeroes device memory and starts the test's
watchdog; leaving it stops the watchdog, and when the test failed it adds the accelerator's state (every
module's busy and stall counters, the token queues, what each module waits for) to the exception, so cocotb's
report and results.xml carry it. The clock is the model's own (toggled by the C++ main loop): cocotb never
drives it, and nothing here wakes Python once per cycle unless a test awaits clock edges itself.

The parts: :attr:`Testbench.dut` (``dut.<signal>`` is the testbench ``vta_tb``, ``dut.dut.<signal>`` the
accelerator ``vta_top``: every signal in the debug model the runner uses, :mod:`cosim.cocotb.runner`);
:attr:`Testbench.dram`, device memory as a numpy array (the DPI DRAM, or cocotbext-axi's ``AxiRam`` over the same
bytes); :meth:`Testbench.read_reg` / :meth:`Testbench.write_reg`, the AXI4-Lite master (register names of
docs/registers.md); :meth:`Testbench.launch` and :meth:`Launched.finished`, a run started by hand;
:meth:`Testbench.run`, :meth:`Testbench.golden` and :meth:`Testbench.check`, a function using the runtime (any
operator of :mod:`sw.ops`) on the RTL, on the golden model, and both compared; the injected faults of the
fuzzer (:meth:`Testbench.inject_axi_error`, :meth:`Testbench.inject_fetch_fault`); :meth:`Testbench.counters` and
:meth:`Testbench.state`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Literal

import numpy as np

from cosim.sim.rtl import CLOCK_PERIOD_STEPS, Launched, RtlDevice
from sw.config import Config, load_config
from sw.pipeline import VTAError

__all__ = ["Testbench", "TestbenchTimeout", "Launched", "CONFIG_ENV", "MEM_ENV", "MAX_CYCLES_ENV",
           "DEFAULT_MAX_CYCLES"]

CONFIG_ENV = "VTA_CONFIG"                 # the config the model was built for (set by the runner)
MEM_ENV = "VTA_TB_MEM"                    # the memory behind the AXI port: "dpi" or "cocotbext" (set by the runner)
MAX_CYCLES_ENV = "VTA_TB_MAX_CYCLES"      # the default cycle budget of one test (the runner's --max-cycles)
DEFAULT_MAX_CYCLES = 20_000_000


class TestbenchTimeout(AssertionError):
    """A test ran past its cycle budget (``max_cycles``); the message has the accelerator's state."""

    __test__ = False            # a class named Test* is not a pytest test


class Testbench:
    """The accelerator of the simulated model in one cocotb test: ``async with Testbench(dut) as tb: ...``.

    ``config`` is the config the model was built for (default: the runner's, from ``$VTA_CONFIG``); ``max_cycles``
    fails the test once it has run that many clock cycles (None: no limit; default ``$VTA_TB_MAX_CYCLES`` or
    20 million); ``watchdog_cycles`` is the hardware run monitor's limit on cycles without progress during a run;
    ``dram_latency`` and ``dram_bytes_per_cycle`` shape the DPI DRAM, ``dram_stall = seed << 8 | p`` makes it
    pause each channel with chance p/256 per cycle; ``mem_seed`` seeds the pauses of cocotbext-axi's ``AxiRam`` when
    the runner serves the memory with it (``--mem cocotbext``)."""

    __test__ = False

    def __init__(self, dut: Any, config: Config | str | None = None, *, max_cycles: int | None | Literal["env"] = "env",
                 watchdog_cycles: int = 100_000, dram_latency: int = 20, dram_bytes_per_cycle: int = 8,
                 dram_stall: int = 0, mem_seed: int = 0):
        self.dut = dut
        self.cfg = load_config(config if config is not None else os.environ.get(CONFIG_ENV))
        if max_cycles == "env":
            max_cycles = int(os.environ.get(MAX_CYCLES_ENV, DEFAULT_MAX_CYCLES))
        if max_cycles is not None and (isinstance(max_cycles, (bool, str)) or not isinstance(max_cycles, int)
                                       or max_cycles < 1):
            raise ValueError(f"max_cycles = {max_cycles!r}; allowed: an integer >= 1, or None (no limit)")
        self.max_cycles = max_cycles
        self.mem = os.environ.get(MEM_ENV, "dpi")
        self.device_args: dict[str, Any] = {
            "watchdog_cycles": watchdog_cycles, "dram_latency": dram_latency, "dram_bytes_per_cycle": dram_bytes_per_cycle,
            "dram_stall": dram_stall, "mem": self.mem, "mem_seed": mem_seed}
        self.device: RtlDevice | None = None
        self._watchdog: Any = None
        self._fetch_fault: str | None = None
        self._start_step = 0

    # ------------------------------------------------------------------ entering and leaving a test
    async def __aenter__(self) -> Testbench:
        import cocotb
        from cocotb.utils import get_sim_time

        self.device = RtlDevice(self.dut, self.cfg, **self.device_args)
        await self.device.reset()
        self.device.dram[:] = 0
        self._start_step = get_sim_time("step")
        if self.max_cycles is not None:
            self._watchdog = cocotb.start_soon(self._watch(self.max_cycles))
        return self

    async def __aexit__(self, kind: type[BaseException] | None, err: BaseException | None, trace: Any) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        if err is not None and not isinstance(err, (VTAError, TestbenchTimeout)) and isinstance(err, Exception):
            err.add_note(f"the accelerator at cycle {self.cycle} of the test:\n{await self._state_or_why()}")

    async def _watch(self, budget: int) -> None:
        from cocotb.triggers import Timer

        await Timer(budget * CLOCK_PERIOD_STEPS, "step")
        raise TestbenchTimeout(f"the test ran for {budget} cycles (max_cycles) without finishing; the accelerator:\n"
                               f"{await self._state_or_why()}")

    async def _state_or_why(self) -> str:
        try:
            return await self.state()
        except Exception as err:  # noqa: BLE001 - the report says why the state could not be read
            return f"  (its registers could not be read: {err})"

    # ------------------------------------------------------------------ clock, reset, memory
    @property
    def clk(self) -> Any:
        return self.dut.clk

    @property
    def cycle(self) -> int:
        """Clock cycles since this test's testbench started."""
        from cocotb.utils import get_sim_time
        return int((get_sim_time("step") - self._start_step) // CLOCK_PERIOD_STEPS)

    async def cycles(self, n: int) -> None:
        """Let ``n`` clock cycles pass (one timed wake of Python, not one per cycle)."""
        from cocotb.triggers import Timer
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n = {n!r}; allowed: an integer >= 1")
        await Timer(n * CLOCK_PERIOD_STEPS, "step")

    async def reset(self) -> None:
        """Reset the accelerator (registers, queues, modules; SRAM contents and device memory stay)."""
        await self._device().reset()

    @property
    def dram(self) -> np.ndarray:
        """Device memory (uint8), the same bytes the accelerator reads and writes over AXI."""
        return self._device().dram

    # ------------------------------------------------------------------ registers (the AXI4-Lite master)
    async def read_reg(self, name: str | int) -> int:
        """Read a control register by name (docs/registers.md) or byte offset."""
        return await self._device().read_reg(self._register(name))

    async def write_reg(self, name: str | int, value: int) -> None:
        """Write a control register by name or byte offset; ``value`` in [0, 2**32)."""
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= value < 1 << 32:
            raise ValueError(f"value = {value!r} for register {name!r}; allowed: an integer in [0, {(1 << 32) - 1}]")
        await self._device().write_reg(self._register(name), int(value))

    @staticmethod
    def _register(name: str | int) -> str | int:
        from sw.registers import REGISTERS

        if isinstance(name, str):
            if name not in REGISTERS:
                raise KeyError(f"register {name!r}; allowed: {', '.join(REGISTERS)}")
            return name
        if isinstance(name, bool) or not isinstance(name, int) or name < 0 or name % 4:
            raise ValueError(f"register offset {name!r}; allowed: a non-negative multiple of 4, or a register name")
        return name

    async def counters(self) -> dict:
        """Every register a run reports (cycles, busy and stall counters, token counts, status), by name."""
        return await self._device().read_counters()

    async def state(self) -> str:
        """What each module is doing: the report the watchdog gives (status, counters, tokens, waits)."""
        from sw.targets.launch import describe_state
        return describe_state(await self.counters())

    # ------------------------------------------------------------------ runs
    async def launch(self, insn_addr: int, insn_count: int, wait_cycles: int | None = None) -> Launched:
        """Start ``insn_count`` instructions at byte ``insn_addr`` of device memory; returns when the accelerator
        runs. ``await (await tb.launch(...)).finished()`` returns the run's counters, or raises its error
        (:class:`~sw.targets.launch.WatchdogError`, :class:`~sw.targets.launch.AxiResponseError`, ...)."""
        isa_bytes = self._insn_bytes()
        if isinstance(insn_addr, bool) or not isinstance(insn_addr, (int, np.integer)) or \
                not 0 <= insn_addr <= len(self.dram) - isa_bytes or insn_addr % isa_bytes:
            raise ValueError(f"insn_addr = {insn_addr!r}; allowed: a multiple of {isa_bytes} (the instruction size) in "
                             f"[0, {len(self.dram) - isa_bytes}]")
        most = (len(self.dram) - int(insn_addr)) // isa_bytes
        if isinstance(insn_count, bool) or not isinstance(insn_count, (int, np.integer)) or not 0 <= insn_count <= most:
            raise ValueError(f"insn_count = {insn_count!r}; allowed: an integer in [0, {most}] (the instructions from "
                             "insn_addr to the end of device memory)")
        return await self._device().start(int(insn_addr), int(insn_count), wait_cycles)

    def _insn_bytes(self) -> int:
        from sw.isa import isa_for
        return isa_for(self.cfg).insn_bytes

    async def run(self, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` with a fresh runtime on the RTL as the current one (:func:`sw.runtime.current`):
        every operator and runtime call in it runs here, on this simulation; returns what ``fn`` returns. ``fn``
        runs in a thread and blocks while the simulation runs (cocotb's ``bridge``)."""
        from cocotb.task import bridge

        device: Any = self._device()
        if self._fetch_fault:
            from cosim.verify.injected import with_fault
            device, self._fetch_fault = with_fault(device, self._fetch_fault), None
        return await bridge(_call_with)(device, fn, args, kwargs)

    def golden(self, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` on the golden model of the same config (a fresh one per call)."""
        from sw.targets import make_target
        return _call_with(make_target(self.cfg), fn, args, kwargs)

    async def check(self, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        """Run ``fn`` on the RTL and on the golden model; unless they return the same values (arrays with their dtypes,
        dicts, lists, scalars: ``numpy.testing.assert_equal(strict=True)``) raise its ``AssertionError``, which names
        where they differ; return the RTL's."""
        got = await self.run(fn, *args, **kwargs)
        np.testing.assert_equal(got, self.golden(fn, *args, **kwargs), strict=True,
                                err_msg="the RTL (ACTUAL) and the golden model (DESIRED) differ")
        return got

    # ------------------------------------------------------------------ injected faults
    def inject_axi_error(self, channel: str, beat: int = 0, response: str = "SLVERR") -> None:
        """Make the memory answer ``response`` (SLVERR or DECERR) on beat ``beat`` of ``channel`` ("read" or
        "write") in the next run: :meth:`cosim.sim.rtl.RtlDevice.inject_axi_error`. The run after it is clean."""
        self._device().inject_axi_error(channel, beat, response)

    def inject_fetch_fault(self, name: str) -> None:
        """Make the next :meth:`run`'s accelerator read a mutated instruction stream: the decoder fault ``name`` of
        :data:`cosim.verify.injected.FAULTS` (the fuzzer's ``--fault``)."""
        from cosim.verify.injected import FAULTS
        if name not in FAULTS:
            raise ValueError(f"fault = {name!r}; allowed: {', '.join(sorted(FAULTS))}")
        self._fetch_fault = name

    def _device(self) -> RtlDevice:
        if self.device is None:
            raise RuntimeError("the testbench is not started: use it as `async with Testbench(dut) as tb:`")
        return self.device


def _call_with(device: Any, fn: Callable, args: tuple, kwargs: dict) -> Any:
    """``fn(*args, **kwargs)`` with a fresh runtime on ``device`` as the current one."""
    from sw import runtime

    queue = runtime.CommandQueue(device)
    previous = runtime.set_current(queue)
    try:
        return fn(*args, **kwargs)
    finally:
        runtime.set_current(previous)

