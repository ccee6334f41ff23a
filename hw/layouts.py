"""Amaranth layouts of the instruction and micro-op formats, derived from :mod:`sw.isa`.

``insn_layouts(cfg)`` gives ``{"mem": ..., "gemm": ..., "alu": ...}`` as 128-bit
``data.FlexibleLayout`` views with the exact bit offsets of the Python encoder, and
``uop_layout(cfg)`` the 32-bit micro-op. View a 128-bit signal with ``data.View(layout, sig)``.
"""

from amaranth.hdl import signed, unsigned
from amaranth.lib import data

from sw.config import Config
from sw.isa import Format, isa_for

__all__ = ["layout_of", "insn_layouts", "uop_layout"]


def layout_of(fmt: Format) -> data.FlexibleLayout:
    return data.FlexibleLayout(fmt.size, {
        f.name: data.Field(signed(f.width) if f.signed else unsigned(f.width), f.offset) for f in fmt
    })


def insn_layouts(cfg: Config) -> dict:
    isa = isa_for(cfg)
    return {kind: layout_of(fmt) for kind, fmt in isa.formats.items()}


def uop_layout(cfg: Config) -> data.FlexibleLayout:
    return layout_of(isa_for(cfg).uop)
