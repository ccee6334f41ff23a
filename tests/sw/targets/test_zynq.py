"""The board target's files and checks (sw.targets.zynq) on temporary files: no board, no accelerator. A register file
that nothing answers is a board whose accelerator never finishes. The runs on the Verilated accelerator are in
tests/cosim/sim/test_vboard.py."""
import numpy as np
import pytest

from sw import runtime
from sw.config import load_config
from sw.registers import REGISTERS, config_words, version_word
from sw.targets import zynq as board
from sw.targets.launch import RunTimeout
from sw.targets.zynq import BoardDevice, BoardError, ContiguousMemory, Mmio, ZynqPlReset, aligned_block, parse_spec


def _file(tmp_path, name, size):
    path = tmp_path / name
    with open(path, "wb") as fh:
        fh.truncate(size)
    return path


def _page(tmp_path, config="small", size=4096):
    """A register page holding the version and config words of ``config`` (what the bitstream would show)."""
    path = _file(tmp_path, "uio0", size)
    m = Mmio(path)
    cfg = load_config(config)
    c0, c1 = config_words(cfg)
    m.write32(REGISTERS["version"], version_word(cfg))
    m.write32(REGISTERS["config0"], c0)
    m.write32(REGISTERS["config1"], c1)
    m.close()
    return path


def test_mmio_reads_and_writes_words_of_the_file(tmp_path):
    path = _file(tmp_path, "regs", 4096)
    m = Mmio(path)
    assert m.size == 4096 and m.offset == 0
    m.write32(0x0C, 0x10000040)
    m.write32(0xFFC, 0xFFFFFFFF)
    assert m.read32(0x0C) == 0x10000040 and m.read32(0xFFC) == 0xFFFFFFFF
    m.close()
    raw = path.read_bytes()
    assert raw[0x0C:0x10] == bytes([0x40, 0, 0, 0x10]) and raw[0xFFC:] == b"\xff" * 4


def test_mmio_checks_its_arguments(tmp_path):
    m = Mmio(_file(tmp_path, "regs", 4096))
    for bad in (2, 4096, -4, True):
        with pytest.raises(BoardError, match=r"Mmio: register offset = .*; allowed: a multiple of 0x4 in \[0x0, 0xffc\]"):
            m.read32(bad)
    with pytest.raises(BoardError, match=r"Mmio: value at offset 0x8 = 0x100000000; allowed: in \[0x0, 0xffffffff\]"):
        m.write32(0x8, 1 << 32)
    with pytest.raises(BoardError, match=r"Mmio: size = 0x40; allowed: a multiple of 0x4 in \[0xc8, 0x10000\]"):
        Mmio(_file(tmp_path, "tiny", 64))
    with pytest.raises(BoardError, match=r"Mmio: offset = 0x64; allowed: a multiple of 0x1000"):
        Mmio(_file(tmp_path, "big", 8192), size=4096, offset=100)
    with pytest.raises(BoardError, match="Mmio: cannot open .*missing"):
        Mmio(tmp_path / "missing")


def test_aligned_block_is_the_largest_naturally_aligned_part():
    assert aligned_block(0x10000000, 64 << 20) == (0, 64 << 20)
    # a 128 MiB CMA buffer aligned to 1 MiB only: from the next 128 MiB boundary to its end, 113 MiB
    assert aligned_block(0x1F100000, 128 << 20) == (0xF00000, 113 << 20)
    assert aligned_block(0x1F100000, 1 << 20) == (0, 1 << 20)
    assert aligned_block(0xFF000000, 16 << 20) == (0, 16 << 20)           # ends at 4 GiB exactly


def test_contiguous_memory_is_the_aligned_block_of_the_file(tmp_path):
    path = _file(tmp_path, "udmabuf0", 3 << 20)
    mem = ContiguousMemory(path, phys=0x1F100000)      # 3 MiB at a 1 MiB boundary: its 2 MiB-aligned 2 MiB
    assert (mem.buffer_phys, mem.buffer_size, mem.offset, mem.phys) == (0x1F100000, 3 << 20, 1 << 20, 0x1F200000)
    assert mem.dram.dtype == np.uint8 and len(mem.dram) == 2 << 20
    mem.dram[:4] = [1, 2, 3, 4]
    mem.close()
    assert path.read_bytes()[1 << 20:(1 << 20) + 4] == bytes([1, 2, 3, 4])


def test_contiguous_memory_checks_its_arguments(tmp_path):
    path = _file(tmp_path, "dram", 1 << 20)
    with pytest.raises(BoardError, match=r"is not a u-dma-buf device .*give phys, its bus address"):
        ContiguousMemory(path)
    with pytest.raises(BoardError, match=r"ContiguousMemory: phys = 0x10000010; allowed: a multiple of 0x1000 in "
                                         r"\[0x0, 0xfffff000\]"):
        ContiguousMemory(path, phys=0x10000010)
    with pytest.raises(BoardError, match=r"ContiguousMemory: size = 0x100000; allowed: a multiple of 0x1000 in "
                                         r"\[0x1000, 0x80000\]"):
        ContiguousMemory(path, phys=0xFFF80000)
    with pytest.raises(BoardError, match=r"the largest naturally aligned block of the buffer \[0x10080000, 0x10180000\) "
                                         r"has 0x80000 bytes; allowed: at least min_bytes = 0x100000"):
        ContiguousMemory(path, phys=0x10080000)


def test_board_device_checks_the_bitstreams_config(tmp_path):
    mem = ContiguousMemory(_file(tmp_path, "dram", 1 << 20), phys=0x10000000)
    with pytest.raises(BoardError, match=r"was not built for config default: config0 = 0x06330533 \(config default "
                                         r"has 0x76440533\); config1 = 0x0e0f0c0d \(config default has 0x11120f0f\)"):
        BoardDevice(Mmio(_page(tmp_path, "small")), mem, "default")
    with pytest.raises(BoardError, match=r"version = 0x00000000"):
        BoardDevice(Mmio(_file(tmp_path, "blank", 4096)), mem, "small")


def test_a_run_writes_the_launch_and_times_out_when_nothing_finishes(tmp_path):
    resets = []
    regs = Mmio(_page(tmp_path))
    dev = BoardDevice(regs, ContiguousMemory(_file(tmp_path, "dram", 1 << 20), phys=0x10000000), "small",
                      timeout=0.05, reset=lambda: resets.append(1))
    assert dev.name == "board" and dev.window == 0x10000000 and len(dev.dram) == 1 << 20
    with pytest.raises(RunTimeout, match=r"^the run did not finish within timeout = 0.05 s of wall-clock time:\n"
                                         r"  status 0x0, 0 instructions fetched, cycles 0\n") as info:
        dev.run(0x400, 7, 1 << 31)
    assert "fetch is idle" in str(info.value)
    written = {name: regs.read32(REGISTERS[name]) for name in
               ("control", "insn_count", "insn_addr", "uop_addr", "inp_addr", "wgt_addr", "acc_addr", "out_addr")}
    assert written == {"control": 1, "insn_count": 7, "insn_addr": 0x10000400, "uop_addr": 0x10000000,
                       "inp_addr": 0x10000000, "wgt_addr": 0x10000000, "acc_addr": 0x10000000, "out_addr": 0x10000000}
    assert resets == [1] and dev.launches == 1


def test_a_run_stops_at_wait_cycles_and_without_a_reset_says_so(tmp_path):
    regs = Mmio(_page(tmp_path))
    dev = BoardDevice(regs, ContiguousMemory(_file(tmp_path, "dram", 1 << 20), phys=0), "small")
    regs.write32(REGISTERS["cycles"], 500)             # the accelerator ran 500 cycles and did not finish
    with pytest.raises(RunTimeout, match=r"did not finish within wait_cycles = 100:") as info:
        dev.run(0, 2, 100)
    assert any("no reset (reset=None): the accelerator was not reset" in n for n in info.value.__notes__)


def test_zynq_pl_reset_pulses_its_line_between_unlock_and_lock(tmp_path):
    path = _file(tmp_path, "mem", 4096)
    m = Mmio(path)
    m.write32(ZynqPlReset.FPGA_RST_CTRL, 0b1100)       # lines 2 and 3 held in reset by someone else
    reset = ZynqPlReset(line=1, path=path, slcr=0, hold_seconds=0)
    reset()
    assert (m.read32(0x8), m.read32(0x4), m.read32(0x240)) == (0xDF0D, 0x767B, 0b1100)
    reset.close()
    with pytest.raises(BoardError, match=r"ZynqPlReset: line = 0x4; allowed: in \[0x0, 0x3\]"):
        ZynqPlReset(line=4)


def test_target_specs():
    assert parse_spec("board") == {}
    assert parse_spec("board:/dev/uio1") == {"uio": "/dev/uio1"}
    assert parse_spec("board:/dev/uio0,/dev/udmabuf0") == {"uio": "/dev/uio0", "udmabuf": "/dev/udmabuf0"}
    assert parse_spec("board:/tmp/r,/tmp/m@0x10000000") == {"uio": "/tmp/r", "udmabuf": "/tmp/m", "phys": 0x10000000}
    with pytest.raises(BoardError, match=r"allowed: 'board' or 'board:UIO\[,MEM\[@PHYS\]\]'"):
        parse_spec("boards:/dev/uio0")
    with pytest.raises(BoardError, match="two comma-separated paths at most"):
        parse_spec("board:a,b,c")
    with pytest.raises(BoardError, match="PHYS = 'x10' is not an integer"):
        parse_spec("board:a,b@x10")


def test_make_target_opens_a_board_from_its_spec(tmp_path):
    page, dram = _page(tmp_path), _file(tmp_path, "dram", 1 << 20)
    dev = runtime.make_target(f"board:{page},{dram}@0x20000000", config="small", reset=None, timeout=2)
    assert isinstance(dev, BoardDevice) and dev.window == 0x20000000 and dev.timeout == 2.0 and dev.cfg.name == "small"
    dev.close()
    dev = runtime.make_target("board", uio=page, udmabuf=dram, phys=0, config="small")
    assert isinstance(dev.reset, ZynqPlReset) and dev.window == 0
    dev.close()
    with pytest.raises(BoardError, match=r"uio is given twice: .* in the target spec .* and uio="):
        board.open_board(f"board:{page}", uio=page)
    with pytest.raises(runtime.RuntimeError_, match="options config, uio are for a board target only"):
        runtime.make_target("small", uio=page, config="small")
    with pytest.raises(BoardError, match=r"reset = 'yes'; allowed: 'zynq7000', None or a callable"):
        runtime.make_target("board", uio=page, udmabuf=dram, phys=0, config="small", reset="yes")
