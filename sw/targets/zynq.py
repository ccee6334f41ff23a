"""The ``board`` target of the runtime: the accelerator on a Zynq board (PYNQ-Z2 and the like), from Linux.

:class:`BoardDevice` has the target interface of :class:`sw.fsim.FsimDevice` (``cfg``, ``dram``, ``run``,
docs/architecture.md §1.3) and runs the launch sequence every hardware target shares (:mod:`sw.targets.launch`) as
32-bit MMIO accesses:

* :class:`Mmio`: the control registers, a register window file mapped with ``mmap`` (a UIO device,
  ``/dev/uio0``: its map 0, sized as ``/sys/class/uio/uio0/maps/map0/size`` says; or ``/dev/mem`` at an
  explicit offset; or any file);
* :class:`ContiguousMemory`: device memory, a physically contiguous DMA buffer mapped with ``mmap`` (a
  u-dma-buf device, ``/dev/udmabuf0``, whose bus address and size come from
  ``/sys/class/u-dma-buf/udmabuf0/phys_addr`` and ``.../size``; or any file with an explicit bus address and
  size). It is the target's ``dram``; the runtime keeps using offsets into it, and a launch points
  ``insn_addr`` at ``phys + offset`` and the five base-address registers at ``phys`` (ORed into every DMA
  address), as :meth:`cosim.sim.rtl.RtlDevice.set_window` does in co-simulation.

Caches: both files are opened with ``O_SYNC``. A u-dma-buf opened so is mapped uncached (its default
``sync_mode`` 1), so the accelerator and the CPU see each other's writes without any flush or invalidate (a
UIO map is device memory, uncached anyway). Uncached memory is slow for the CPU, which matters only for
large copies; mapping it cached would need the u-dma-buf ``sync_for_device``/``sync_for_cpu`` calls around
every run, which this target does not make.

A run polls ``control`` until its finish bit rises (no interrupt needed), with a wall-clock ``timeout``; the
errors are those of the co-simulation (:class:`sw.targets.launch.RunTimeout`, :class:`sw.targets.launch.AxiResponseError`,
:class:`sw.pipeline.VTAError` naming the error code), each with what every module was doing. A run that
stopped on an error or timed out resets the accelerator with ``reset`` (by default :class:`ZynqPlReset`:
the PL reset line FCLK_RESET0_N of a Zynq-7000, which the block design wires to the shell's ``aresetn``).

:func:`open_board` opens a board from a target spec, ``"board:/dev/uio0,/dev/udmabuf0"``; the runtime's
``make_target``/``use_target`` accept the same spec. docs/fpga.md ("Running on a Zynq board") describes the
block design and the device tree; ``cosim.sim.vboard`` runs this target on the Verilated accelerator.
"""

from __future__ import annotations

import mmap
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import numpy as np

from sw.config import Config, load_config
from sw.pipeline import VTAError
from sw.registers import REGISTER_MAP, REGISTERS, config_words, version_word
from sw.targets import launch as seq

__all__ = ["BoardDevice", "BoardError", "Mmio", "ContiguousMemory", "ZynqPlReset", "open_board", "parse_spec",
           "aligned_block", "REGISTER_WINDOW_BYTES", "DEFAULT_UIO", "DEFAULT_UDMABUF", "DEFAULT_TIMEOUT"]

DEFAULT_UIO = "/dev/uio0"
DEFAULT_UDMABUF = "/dev/udmabuf0"
DEFAULT_TIMEOUT = 10.0            # seconds of wall-clock time a run may take
# the bytes of the register window the accelerator decodes (16 address bits); a map may be as small as one page
REGISTER_WINDOW_BYTES = 1 << 16
_MAP_END = max(r.offset for r in REGISTER_MAP) + 4      # the register map must fit in a window
_PAGE = mmap.PAGESIZE
_U32 = 1 << 32


class BoardError(VTAError):
    """A board's files, addresses or bitstream do not fit the runtime (the message names the field and what is allowed)."""


def _check_int(what: str, name: str, value, lo: int, hi: int, multiple: int = 1) -> int:
    """``value`` as an int in [lo, hi] and a multiple of ``multiple``, else a BoardError naming it."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not lo <= value <= hi \
            or value % multiple:
        step = f"a multiple of {multiple:#x} " if multiple > 1 else ""
        shown = f"{int(value):#x}" if isinstance(value, (int, np.integer)) and not isinstance(value, bool) else repr(value)
        raise BoardError(f"{what}: {name} = {shown}; allowed: {step}in [{lo:#x}, {hi:#x}]")
    return int(value)


def _sysfs_int(path: Path, what: str) -> int:
    try:
        return int(path.read_text().strip(), 0)
    except (OSError, ValueError) as err:
        raise BoardError(f"{what}: cannot read {path} ({err})") from None


def _map(path, size: int, offset: int, what: str) -> tuple:
    """(the open fd, an mmap of ``size`` bytes at ``offset`` of ``path``, shared, read-write, O_SYNC)."""
    try:
        fd = os.open(str(path), os.O_RDWR | os.O_SYNC)
    except OSError as err:
        raise BoardError(f"{what}: cannot open {path} ({err.strerror})") from None
    try:
        return fd, mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE, offset=offset)
    except (OSError, ValueError) as err:
        os.close(fd)
        raise BoardError(f"{what}: cannot map {size:#x} bytes at offset {offset:#x} of {path} ({err})") from None


def _unmap(mm: mmap.mmap, fd: int) -> None:
    os.close(fd)
    try:
        mm.close()
    except BufferError:        # numpy arrays still view it: the mapping goes with the last of them
        pass


class Mmio:
    """32-bit registers in a mapped register window: ``read32(offset)`` and ``write32(offset, value)``.

    ``path``: a UIO device (``/dev/uioN``: its map ``map_index``, mapped at file offset ``map_index`` pages as UIO
    wants, of the size ``/sys/class/uio/uioN/maps/mapM/size`` gives), or any other file (``/dev/mem``, a plain
    file) mapped at ``offset`` (a multiple of the page size). ``size`` defaults to the UIO map's size, else the
    file's size; it must be a multiple of 4 and hold the register map (``0x0`` to ``0xc8``). Each access is one
    aligned 32-bit load or store (what an AXI4-Lite slave wants)."""

    def __init__(self, path: str | Path = DEFAULT_UIO, size: int | None = None, offset: int = 0, map_index: int = 0):
        self.path = Path(path)
        name = self.path.name
        uio = Path("/sys/class/uio") / name / "maps" / f"map{map_index}"
        if name.startswith("uio") and uio.is_dir():
            _check_int("Mmio", "map_index", map_index, 0, 4)
            offset = map_index * _PAGE
            if size is None:
                size = _sysfs_int(uio / "size", "Mmio")
        elif size is None:
            try:
                size = self.path.stat().st_size
            except OSError as err:
                raise BoardError(f"Mmio: cannot open {path} ({err.strerror})") from None
            if size == 0:
                raise BoardError(f"Mmio: {path} has no size (a device file): give size, in [{_MAP_END:#x}, "
                                 f"{REGISTER_WINDOW_BYTES:#x}] bytes")
        self.size = _check_int("Mmio", "size", size, _MAP_END, REGISTER_WINDOW_BYTES, 4)
        self.offset = _check_int("Mmio", "offset", offset, 0, (1 << 64) - _PAGE, _PAGE)
        self._fd, self._mm = _map(self.path, self.size, self.offset, "Mmio")
        self.words = np.frombuffer(self._mm, dtype=np.uint32)

    def _index(self, offset) -> int:
        return _check_int("Mmio", "register offset", offset, 0, self.size - 4, 4) >> 2

    def read32(self, offset: int) -> int:
        """The 32-bit word at byte ``offset``."""
        return int(self.words[self._index(offset)])

    def write32(self, offset: int, value: int) -> None:
        """Write the 32-bit ``value`` at byte ``offset``."""
        i = self._index(offset)
        self.words[i] = _check_int("Mmio", f"value at offset {offset:#x}", value, 0, _U32 - 1)

    def close(self) -> None:
        """Unmap the window (once no numpy view of it is left: else when the last one is freed)."""
        if self._mm is not None:
            self.words = None   # type: ignore[assignment]  # dropped at close: a closed window is not used again
            _unmap(self._mm, self._fd)
            self._mm = None

    def __repr__(self):
        return f"Mmio({str(self.path)!r}, size={self.size:#x}, offset={self.offset:#x})"


def aligned_block(phys: int, size: int) -> tuple:
    """(offset, length) of the largest block of the bus range [phys, phys + size) that device memory can be: its
    bus address is a multiple of its length rounded up to a power of two (the base registers are ORed into DMA
    addresses, so ORing must be adding) and it ends at or below 4 GiB (32-bit addresses)."""
    best = (0, 0)
    end = min(phys + size, _U32)
    align = 1 << 32
    while align >= _PAGE:
        start = -(-phys // align) * align
        length = min(align, end - start)
        if length > best[1]:
            best = (start - phys, length)
        align >>= 1
    return best


class ContiguousMemory:
    """A physically contiguous DMA buffer, mapped: device memory of a board.

    ``path``: a u-dma-buf device (``/dev/udmabufN``; ``phys`` and ``size`` default to its sysfs attributes
    ``phys_addr`` and ``size`` in ``/sys/class/u-dma-buf/udmabufN/``, or ``/sys/class/udmabuf/...`` of older
    versions) or any file (then ``phys``, the bus address of its first byte, must be given; ``size`` defaults to
    the file's size). ``phys`` must be a multiple of the page size and the buffer below 4 GiB.

    ``dram`` (the target's device memory, a uint8 numpy array on the mapping) is the largest naturally aligned
    block of the buffer (:func:`aligned_block`), and ``phys`` its bus address: a 64 MiB buffer at a 64 MiB
    boundary is used whole; CMA aligns a buffer only to 1 MiB by default (CONFIG_CMA_ALIGNMENT), so give the
    u-dma-buf twice the memory the programs need. ``min_bytes`` is the least that block may hold."""

    def __init__(self, path: str | Path = DEFAULT_UDMABUF, phys: int | None = None, size: int | None = None,
                 min_bytes: int = 1 << 20):
        self.path = Path(path)
        sysfs = next((d / self.path.name for d in (Path("/sys/class/u-dma-buf"), Path("/sys/class/udmabuf"))
                      if (d / self.path.name / "phys_addr").exists()), None)
        if phys is None:
            if sysfs is None:
                raise BoardError(f"ContiguousMemory: {path} is not a u-dma-buf device (no "
                                 f"/sys/class/u-dma-buf/{self.path.name}/phys_addr): give phys, its bus address")
            phys = _sysfs_int(sysfs / "phys_addr", "ContiguousMemory")
        if size is None:
            if sysfs is not None:
                size = _sysfs_int(sysfs / "size", "ContiguousMemory")
            else:
                try:
                    size = self.path.stat().st_size
                except OSError as err:
                    raise BoardError(f"ContiguousMemory: cannot open {path} ({err.strerror})") from None
        self.buffer_phys = _check_int("ContiguousMemory", "phys", phys, 0, _U32 - _PAGE, _PAGE)
        self.buffer_size = _check_int("ContiguousMemory", "size", size, _PAGE, _U32 - self.buffer_phys, _PAGE)
        self.min_bytes = _check_int("ContiguousMemory", "min_bytes", min_bytes, _PAGE, _U32, _PAGE)
        offset, length = aligned_block(self.buffer_phys, self.buffer_size)
        if length < self.min_bytes:
            raise BoardError(f"ContiguousMemory: the largest naturally aligned block of the buffer "
                             f"[{self.buffer_phys:#x}, {self.buffer_phys + self.buffer_size:#x}) has {length:#x} "
                             f"bytes; allowed: at least min_bytes = {self.min_bytes:#x} (allocate a larger buffer)")
        self.offset, self.phys = offset, self.buffer_phys + offset
        self._fd, self._mm = _map(self.path, self.buffer_size, 0, "ContiguousMemory")
        self.dram = np.frombuffer(self._mm, dtype=np.uint8, count=length, offset=offset)

    def close(self) -> None:
        """Unmap the buffer (once no numpy view of it is left, such as a runtime's: else when the last one is freed)."""
        if self._mm is not None:
            self.dram = None    # type: ignore[assignment]  # dropped at close: a closed buffer is not used again
            _unmap(self._mm, self._fd)
            self._mm = None

    def __repr__(self):
        return (f"ContiguousMemory({str(self.path)!r}, phys={self.buffer_phys:#x}, size={self.buffer_size:#x}; "
                f"device memory {self.phys:#x}+{len(self.dram) if self.dram is not None else 0:#x})")


class ZynqPlReset:
    """Reset the programmable logic of a Zynq-7000 through its PS: pulse FPGA``line``_OUT_RST (FCLK_RESET``line``_N)
    in the SLCR register FPGA_RST_CTRL (``slcr`` + 0x240), unlocking the SLCR (key 0xDF0D at +0x8) first and
    locking it again (key 0x767B at +0x4) after. The block design wires FCLK_RESET0_N through a Processor System
    Reset to the shell's ``aresetn``. Needs ``/dev/mem`` (root); opened at the first reset only."""

    UNLOCK, LOCK, FPGA_RST_CTRL = 0x008, 0x004, 0x240
    UNLOCK_KEY, LOCK_KEY = 0xDF0D, 0x767B

    def __init__(self, line: int = 0, path: str | Path = "/dev/mem", slcr: int = 0xF8000000, hold_seconds: float = 1e-4):
        self.line = _check_int("ZynqPlReset", "line", line, 0, 3)
        self.path, self.slcr, self.hold_seconds = path, slcr, hold_seconds
        self._mmio: Mmio | None = None

    def __call__(self) -> None:
        if self._mmio is None:
            self._mmio = Mmio(self.path, size=_PAGE, offset=self.slcr)
        m, bit = self._mmio, 1 << self.line
        m.write32(self.UNLOCK, self.UNLOCK_KEY)
        m.write32(self.FPGA_RST_CTRL, m.read32(self.FPGA_RST_CTRL) | bit)
        time.sleep(self.hold_seconds)         # the reset is held for many cycles of any PL clock
        m.write32(self.FPGA_RST_CTRL, m.read32(self.FPGA_RST_CTRL) & ~bit)
        m.write32(self.LOCK, self.LOCK_KEY)

    def close(self) -> None:
        if self._mmio is not None:
            self._mmio.close()
            self._mmio = None


class BoardDevice:
    """The accelerator of a board as a runtime target (module doc).

    ``regs``: its register window; ``mem``: its device memory; ``cfg``: the config the bitstream was built for (a
    Config, a name or JSON path, or None for $VTA_CONFIG/default), checked against the bitstream's ``version``,
    ``config0`` and ``config1`` registers. ``timeout``: the wall-clock seconds a run may take. ``reset``: a callable
    that resets the accelerator (after a run stopped on an error or timed out), or None (then the run's error says
    that the accelerator was not reset)."""

    name = "board"

    def __init__(self, regs: Mmio, mem: ContiguousMemory, cfg: Config | str | None = None,
                 timeout: float = DEFAULT_TIMEOUT, reset: Callable[[], None] | None = None,
                 poll_seconds: float = 1e-4):
        self.regs, self.mem = regs, mem
        self.cfg = load_config(cfg)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= 86400:
            raise BoardError(f"BoardDevice: timeout = {timeout!r}; allowed: seconds in (0, 86400]")
        self.timeout, self.reset, self.poll_seconds = float(timeout), reset, poll_seconds
        self.dram = mem.dram
        self.window = mem.phys
        self.launches = 0
        self._check_bitstream()

    def _check_bitstream(self) -> None:
        c0, c1 = config_words(self.cfg)
        want = {"version": version_word(self.cfg), "config0": c0, "config1": c1}
        got = {name: self.regs.read32(REGISTERS[name]) for name in want}
        wrong = [f"{name} = {got[name]:#010x} (config {self.cfg.name} has {want[name]:#010x})"
                 for name in want if got[name] != want[name]]
        if wrong:
            raise BoardError(f"the accelerator at {self.regs.path} was not built for config {self.cfg.name}: "
                             + "; ".join(wrong) + " (docs/registers.md: load its bitstream, or give its config)")

    # ------------------------------------------------------------------ the target interface
    def run(self, insn_addr: int, insn_count: int, wait_cycles: int | None = None) -> dict:
        """Launch ``insn_count`` instructions at offset ``insn_addr`` of ``dram``, wait for the finish bit (at most
        ``wait_cycles`` cycles of the accelerator and ``timeout`` seconds), return the counters of the run."""
        self._reset_missing = False
        try:
            return seq.run_sync(seq.launch(self.cfg, self.dram, insn_addr, insn_count, self.window),
                                lambda op: self._execute(op, wait_cycles))
        except VTAError as err:
            if self._reset_missing:
                err.add_note("this board device has no reset (reset=None): the accelerator was not reset after the "
                             "error; reload the bitstream before the next run")
            raise

    def _execute(self, op, wait_cycles):
        """One operation of the launch sequence (:mod:`sw.targets.launch`), as MMIO accesses."""
        if isinstance(op, seq.Write):
            return self.regs.write32(op.offset, op.value & (_U32 - 1))
        if isinstance(op, seq.Read):
            return self.regs.read32(op.offset)
        if isinstance(op, seq.Launch):
            self.regs.write32(REGISTERS["control"], 1)
            self._started = time.monotonic()
            return None
        if isinstance(op, seq.Wait):
            return self._wait(wait_cycles)
        if isinstance(op, seq.Reset):
            if self.reset is None:
                self._reset_missing = True
            else:
                self.reset()
            return None
        if isinstance(op, seq.Check):
            return None
        raise TypeError(f"unknown launch operation {op!r}")

    def _wait(self, wait_cycles) -> seq.Stop:
        """Poll ``control`` until its finish bit (bit 1) rises, ``cycles`` reaches ``wait_cycles`` or ``timeout``
        seconds have passed."""
        control, cycles = REGISTERS["control"], REGISTERS["cycles"]
        limit = int(wait_cycles) if wait_cycles and wait_cycles < _U32 else None
        pause = 0.0
        while True:
            if self.regs.read32(control) & 2:
                self.launches += 1
                return seq.Stop(seq.FINISHED)
            if limit is not None and self.regs.read32(cycles) >= limit:
                self.launches += 1
                return seq.Stop(seq.TIMEOUT, f"wait_cycles = {wait_cycles}")
            if time.monotonic() - self._started > self.timeout:
                self.launches += 1
                return seq.Stop(seq.TIMEOUT, f"timeout = {self.timeout:g} s of wall-clock time")
            time.sleep(pause)
            pause = min(self.poll_seconds, pause + self.poll_seconds / 10)

    def close(self) -> None:
        """Unmap the register window and device memory (and the reset's, if it has one to close)."""
        self.regs.close()
        self.mem.close()
        self.dram = None    # type: ignore[assignment]  # dropped at close: a closed device is not used again
        close = getattr(self.reset, "close", None)
        if close is not None:
            close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"BoardDevice(config {self.cfg.name}, {self.regs!r}, {self.mem!r})"


# ---------------------------------------------------------------------- target specs
def parse_spec(spec: str) -> dict:
    """The parts of a board target spec: ``"board"`` (the defaults: /dev/uio0 and /dev/udmabuf0) or
    ``"board:UIO[,MEM[@PHYS]]"``: the register window file and the device memory file, with the bus address of a
    memory file that is not a u-dma-buf device (hex or decimal). Returns ``{"uio": ..., "udmabuf": ..., "phys": ...}``
    with the parts the spec gives."""
    if not isinstance(spec, str) or not (spec == "board" or spec.startswith("board:")):
        raise BoardError(f"target spec = {spec!r}; allowed: 'board' or 'board:UIO[,MEM[@PHYS]]', e.g. "
                         f"'board:{DEFAULT_UIO},{DEFAULT_UDMABUF}'")
    out: dict[str, str | int] = {}
    rest = spec[len("board:"):] if spec != "board" else ""
    if not rest:
        return out
    parts = rest.split(",")
    if len(parts) > 2 or not all(parts):
        raise BoardError(f"target spec = {spec!r}: expected 'board:UIO[,MEM[@PHYS]]' (two comma-separated paths at most)")
    out["uio"] = parts[0]
    if len(parts) == 2:
        mem, _, phys = parts[1].partition("@")
        out["udmabuf"] = mem
        if phys:
            try:
                out["phys"] = int(phys, 0)
            except ValueError:
                raise BoardError(f"target spec = {spec!r}: PHYS = {phys!r} is not an integer (e.g. 0x10000000)") from None
    return out


def open_board(spec: str = "board", *, uio: str | Path | None = None, udmabuf: str | Path | None = None,
               phys: int | None = None, size: int | None = None, config: Config | str | None = None,
               timeout: float = DEFAULT_TIMEOUT,
               reset: Literal["zynq7000"] | Callable[[], None] | None = "zynq7000") -> BoardDevice:
    """A :class:`BoardDevice` from a target spec (:func:`parse_spec`) and keywords: ``uio`` (register window file,
    default /dev/uio0), ``udmabuf`` (device memory file, default /dev/udmabuf0), ``phys``/``size`` (for a memory
    file that is not a u-dma-buf), ``config``, ``timeout`` and ``reset`` ("zynq7000": :class:`ZynqPlReset` on line
    0; None: no reset; or a callable). A part given both in the spec and as a keyword is an error."""
    parts = parse_spec(spec)
    for name, value in (("uio", uio), ("udmabuf", udmabuf), ("phys", phys)):
        if value is not None:
            if name in parts:
                raise BoardError(f"{name} is given twice: {parts[name]!r} in the target spec {spec!r} and "
                                 f"{name}={value!r}; give it once")
            parts[name] = value
    if reset == "zynq7000":
        reset = ZynqPlReset()
    elif reset is not None and not callable(reset):
        raise BoardError(f"reset = {reset!r}; allowed: 'zynq7000', None or a callable")
    regs = Mmio(parts.get("uio", DEFAULT_UIO))
    try:
        mem = ContiguousMemory(parts.get("udmabuf", DEFAULT_UDMABUF), phys=parts.get("phys"), size=size)
    except BaseException:
        regs.close()
        raise
    try:
        return BoardDevice(regs, mem, config, timeout=timeout, reset=reset)
    except BaseException:
        regs.close()
        mem.close()
        raise
