"""A virtual board: the Verilated accelerator behind the two files a Zynq board's runtime maps, so that the
``board`` target (:class:`sw.targets.zynq.BoardDevice`) runs unchanged, with no mock of the accelerator.

On a board the runtime maps the register window (``/dev/uio0``) and a contiguous DMA buffer
(``/dev/udmabuf0``). Here both are plain shared files, and the accelerator runs free in the simulator while
the host process maps them exactly so:

* device memory: the testbench's DPI DRAM is the memory file itself, mapped MAP_SHARED in the simulator
  (``cosim/model/dram.cpp``, ``vta_dram_use_file``), and the testbench answers bus address ``phys + a`` with
  its byte ``a`` (``dram_window``), as the board's DDR answers the physical address of the buffer;
* registers: a page file of :data:`PAGE_BYTES` that the testbench keeps in step with the accelerator's
  AXI4-Lite registers without Python (``cosim/model/vboard.cpp``, called every few cycles from
  ``vta_tb.sv``): a word the host wrote becomes an AXI4-Lite write (``control`` after the others), and every
  register is read in sweeps and mirrored back (``control`` first read, last published, so a finished run's
  counters are in the page when its finish bit is). Two words past the register map stand for the board's
  PS: :data:`RESET_WORD` (the host writes 1: the accelerator is reset, as FCLK_RESET0_N does; the word reads 0
  again once the page shows the reset registers) and :data:`QUIT_WORD` (the host writes 1: the session ends).

:func:`serve` is the simulator's side, run by ``cosim.run``: it maps the files, turns the bridge on and
sleeps in one trigger (the testbench's ``vboard_quit``), so Python inside the simulator does not wake per
cycle. :class:`VirtualBoard` is the host's side: it makes the files, runs :func:`serve` in a thread and hands
out :class:`~sw.targets.zynq.BoardDevice` objects on them::

    with VirtualBoard("small") as vb, vb.device() as dev, runtime.use_target(dev):
        programs.vector_add()
"""

from __future__ import annotations

import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from sw.config import Config, load_config
from sw.registers import REGISTERS
from sw.targets.zynq import BoardDevice, BoardError, ContiguousMemory, Mmio

if TYPE_CHECKING:
    from cosim.sim.rtl import RtlDevice

__all__ = ["VirtualBoard", "serve", "PAGE_BYTES", "RESET_WORD", "QUIT_WORD", "DEFAULT_PHYS", "DEFAULT_DRAM_BYTES"]

PAGE_BYTES = 4096              # the register page (one UIO map of one page)
RESET_WORD = 0xFF8             # past the register map: the host writes 1 to reset the accelerator
QUIT_WORD = 0xFFC              # past the register map: the host writes 1 to end the session
DEFAULT_PHYS = 0x10000000      # the bus address of device memory (a PYNQ-Z2 CMA region is about there)
DEFAULT_DRAM_BYTES = 64 << 20
READY_TIMEOUT = 300.0          # seconds for the simulator to start and publish the registers
QUIT_TIMEOUT = 60.0            # seconds for the session to end after the quit word


def serve(page: str, dram: str, phys: int) -> dict:
    """Inside the simulator: make ``dram`` (a file) device memory at bus address ``phys``, mirror the registers
    into ``page`` and run the accelerator free until the host writes :data:`QUIT_WORD`. Returns the bridge's
    counters: AXI4-Lite writes forwarded, register reads, sweeps published, resets."""
    import ctypes

    from cocotb.task import resume
    from cocotb.triggers import RisingEdge

    from sw import runtime

    dut = cast("RtlDevice", runtime.current().target).dut
    lib = ctypes.CDLL(None)
    err = lib.vta_dram_use_file(str(dram).encode())
    if err:
        raise OSError(-err, f"the simulator cannot map the virtual board's memory file {dram}")
    offsets = [REGISTERS["control"]] + [off for name, off in REGISTERS.items() if name != "control"]
    err = lib.vta_vboard_open(str(page).encode(), (ctypes.c_uint32 * len(offsets))(*offsets), len(offsets),
                              ctypes.c_uint32(RESET_WORD), ctypes.c_uint32(QUIT_WORD))
    if err:
        raise OSError(-err, f"the simulator cannot map the virtual board's register page {page}")

    async def until_quit():
        dut.dram_window.value = phys
        dut.vboard_on.value = 1
        await RisingEdge(dut.vboard_quit)

    resume(until_quit)()
    stats = (ctypes.c_uint64 * 4)()
    lib.vta_vboard_stats(stats)
    return dict(zip(("writes", "reads", "sweeps", "resets"), map(int, stats)))


class VirtualBoard:
    """The host's side of a virtual board of ``config`` (module doc): device memory of ``dram_bytes`` at bus
    address ``phys`` (a multiple of ``dram_bytes`` rounded up to a power of two), files in ``directory`` (a fresh
    temporary directory by default, removed at the end). Use it as a context manager: entering builds the model
    if needed, starts the session and waits until the page shows the registers; leaving ends the session and
    re-raises an error of the simulator's side. ``stats`` then holds what :func:`serve` returned. Other
    ``cosim.run`` calls of the same config wait until the session ends (one simulator per config)."""

    def __init__(self, config: Config | str | None = None, phys: int = DEFAULT_PHYS,
                 dram_bytes: int = DEFAULT_DRAM_BYTES, directory: str | Path | None = None, **run_options: Any):
        self.cfg = load_config(config)
        self.phys, self.dram_bytes, self.run_options = phys, dram_bytes, run_options
        self._directory = directory
        self._tmp = None
        self._thread: threading.Thread | None = None
        self._result: dict = {}
        self._page: Mmio | None = None
        self.stats = None

    # ------------------------------------------------------------------ the files a device maps
    @property
    def page_path(self) -> Path:
        return self.dir / "uio0"

    @property
    def dram_path(self) -> Path:
        return self.dir / "udmabuf0"

    @property
    def spec(self) -> str:
        """The runtime's target spec of this board: ``board:<page>,<dram>@<phys>``."""
        return f"board:{self.page_path},{self.dram_path}@{self.phys:#x}"

    def device(self, **options) -> BoardDevice:
        """A :class:`~sw.targets.zynq.BoardDevice` on this board (``options``: timeout; reset defaults to :meth:`reset`)."""
        options.setdefault("reset", self.reset)
        regs = Mmio(self.page_path)
        return BoardDevice(regs, ContiguousMemory(self.dram_path, phys=self.phys), self.cfg, **options)

    def reset(self, timeout: float = 10.0) -> None:
        """Reset the accelerator (the board's PL reset): write :data:`RESET_WORD` and wait until it reads 0."""
        page = self._page
        assert page is not None, "the virtual board is not started"
        page.write32(RESET_WORD, 1)
        self._wait(lambda: page.read32(RESET_WORD) == 0, timeout, "the reset to be acknowledged")

    # ------------------------------------------------------------------ the session
    def __enter__(self):
        import cosim

        cosim.build_model(self.cfg)          # before the clock of READY_TIMEOUT starts: a build takes minutes
        if self._directory is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="vta-vboard-")
            self.dir = Path(self._tmp.name)
        else:
            self.dir = Path(self._directory)
            self.dir.mkdir(parents=True, exist_ok=True)
        self.page_path.write_bytes(bytes(PAGE_BYTES))
        with open(self.dram_path, "wb") as fh:
            fh.truncate(self.dram_bytes)
        ContiguousMemory(self.dram_path, phys=self.phys, min_bytes=self.dram_bytes).close()   # checks phys
        self._page = Mmio(self.page_path)

        def session():
            try:
                self._result["stats"] = cosim.run(serve, str(self.page_path), str(self.dram_path), self.phys,
                                                  config=self.cfg, **self.run_options)
            except BaseException as err:  # noqa: BLE001 - re-raised by the host's side
                self._result["error"] = err

        self._thread = threading.Thread(target=session, name="vboard-session", daemon=True)
        self._thread.start()
        try:
            self._wait(lambda: self._page.read32(REGISTERS["version"]) != 0, READY_TIMEOUT,
                       "the simulator to start and mirror the registers")
        except BaseException:
            self._quit()
            raise
        return self

    def _wait(self, done, timeout: float, what: str) -> None:
        start = time.monotonic()
        while not done():
            if "error" in self._result or self._thread is None or not self._thread.is_alive():
                raise BoardError(f"the virtual board's simulator ended while waiting for {what}") \
                    from self._result.get("error")
            if time.monotonic() - start > timeout:
                raise BoardError(f"the virtual board: no sign of {what} after {timeout:g} s")
            time.sleep(0.001)

    def _quit(self) -> None:
        if self._page is not None:
            self._page.write32(QUIT_WORD, 1)
        if self._thread is not None:
            self._thread.join(QUIT_TIMEOUT)
            if self._thread.is_alive():
                self._result.setdefault("error", BoardError(
                    f"the virtual board's simulator did not end within {QUIT_TIMEOUT:g} s of the quit word (is the "
                    f"accelerator's AXI4-Lite slave stuck?); its thread is left running"))
        if self._page is not None:
            self._page.close()
            self._page = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __exit__(self, exc_type, exc, tb):
        self._quit()
        self.stats = self._result.get("stats")
        if "error" in self._result and exc is None:
            raise self._result["error"]
