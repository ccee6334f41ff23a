"""What the golden-model tests share: a device of each config, and instruction streams written to its DRAM and run."""
import pytest

from sw.config import load_config
from sw.fsim import FsimDevice
from sw.isa import MemId, Opcode, isa_for

DRAM = 1 << 20
INSN_ADDR = 0x80000


def run(dev, insns):
    isa = isa_for(dev.cfg)
    raw = isa.words_to_array(isa.encode(**f) for f in insns)
    dev.dram[INSN_ADDR:INSN_ADDR + raw.size] = raw
    return dev.run(INSN_ADDR, len(insns))


def finish():
    return dict(opcode=Opcode.FINISH)


def load(mem, sram, dram, y, x, stride, pads=(0, 0, 0, 0), **flags):
    return dict(opcode=Opcode.LOAD, memory_type=mem, sram_base=sram, dram_base=dram, y_size=y, x_size=x,
                x_stride=stride, y_pad_0=pads[0], y_pad_1=pads[1], x_pad_0=pads[2], x_pad_1=pads[3], **flags)


def store(sram, dram, y, x, stride, **flags):
    return dict(opcode=Opcode.STORE, memory_type=MemId.OUT, sram_base=sram, dram_base=dram, y_size=y, x_size=x,
                x_stride=stride, **flags)


@pytest.fixture(params=["default", "small", "batch2"])
def dev(request):
    return FsimDevice(load_config(request.param), dram_bytes=DRAM)


def put_uops(dev, uops, at=0):
    isa = isa_for(dev.cfg)
    dev.uop[at:at + len(uops)] = [isa.encode_uop(*u) for u in uops]


