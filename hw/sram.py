"""The on-chip SRAMs of the accelerator, sized from the config, and the port signatures to reach them.

=====  ===============  ===============================  ===================================
name   depth            row width (bits)                 written by / read by
=====  ===============  ===============================  ===================================
uop    UOP_DEPTH        32                               compute (LOAD UOP) / compute
inp    INP_DEPTH        BATCH*BLOCK_IN*8                 load / compute (GEMM)
wgt    WGT_DEPTH        BLOCK_OUT*BLOCK_IN*8             load / compute (GEMM)
acc    ACC_DEPTH        BATCH*BLOCK_OUT*32               compute / compute
out    ACC_DEPTH        BATCH*BLOCK_OUT*8                compute (OUT mirror of acc) / store
=====  ===============  ===============================  ===================================

Rows are the little-endian concatenation of the lanes: inp ``[batch][block_in]``, wgt
``[block_out][block_in]`` and acc/out ``[batch][block_out]``, lane 0 in the low bits. Every memory
has one synchronous write port and synchronous read ports (one cycle of read latency).

The memories shared between modules (inp, wgt, out) belong to the top level; a module that uses
one has a member ``In(write_signature(cfg, "inp"))`` (flipped: the module drives ``addr``,
``data`` and ``en``) and the top level joins it to the memory with
``wiring.connect(m, load.inp_wr, inp_mem.write_port())``.
"""

from amaranth.lib import memory
from amaranth.utils import exact_log2

__all__ = ["SRAM_NAMES", "check_config", "parameter_error", "sram_geometry", "make_memory", "write_signature", "read_signature"]

SRAM_NAMES = ("uop", "inp", "wgt", "acc", "out")


def parameter_error(component, message):
    """A ValueError about a parameter of ``component``, which is then never elaborated (so no
    UnusedElaboratable warning is raised for it)."""
    component._MustUse__silence = True
    return ValueError(f"{type(component).__name__}: {message}")


def check_config(cfg, component):
    """Raise a ValueError unless ``cfg`` is a validated :class:`sw.config.Config`."""
    from sw.config import Config
    if not isinstance(cfg, Config):
        raise parameter_error(component, f"cfg must be a sw.config.Config (see sw.config.load_config), "
                                         f"not {type(cfg).__name__}")


def sram_geometry(cfg, name):
    """(depth, row width in bits) of the SRAM ``name`` (one of uop, inp, wgt, acc, out)."""
    if name == "uop":
        return cfg.UOP_DEPTH, 32
    if name == "inp":
        return cfg.INP_DEPTH, cfg.INP_MATRIX_WIDTH
    if name == "wgt":
        return cfg.WGT_DEPTH, cfg.WGT_MATRIX_WIDTH
    if name == "acc":
        return cfg.ACC_DEPTH, cfg.ACC_MATRIX_WIDTH
    if name == "out":
        return cfg.ACC_DEPTH, cfg.OUT_MATRIX_WIDTH
    raise ValueError(f"SRAM name must be one of {', '.join(SRAM_NAMES)}, not {name!r}")


def make_memory(cfg, name, init=()):
    """A :class:`amaranth.lib.memory.Memory` for the SRAM ``name``, zero-initialised."""
    depth, width = sram_geometry(cfg, name)
    return memory.Memory(shape=width, depth=depth, init=init)


def write_signature(cfg, name):
    depth, width = sram_geometry(cfg, name)
    return memory.WritePort.Signature(addr_width=exact_log2(depth), shape=width)


def read_signature(cfg, name):
    depth, width = sram_geometry(cfg, name)
    return memory.ReadPort.Signature(addr_width=exact_log2(depth), shape=width)
