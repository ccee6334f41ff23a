"""Blocks of the memory system convert to Verilog where the whole design does not show it: bus widths
no shipped config has, and the AXI port names. (The shipped configs' whole designs are elaborated and
linted by tests/hw/test_top.py.)"""

import pytest
from amaranth.back import verilog

from hw.axi import AxiMaster
from hw.control import ControlRegs
from hw.fetch import Fetch
from hw.queues import TokenQueue
from sw.config import load_config

BLOCKS = {
    "token_queue": lambda cfg: TokenQueue(),
    "axi_master": lambda cfg: AxiMaster(cfg, 5),
    "control_regs": lambda cfg: ControlRegs(cfg),
    "fetch": lambda cfg: Fetch(cfg),
}


def test_axi_port_names():
    text = verilog.convert(AxiMaster(load_config("default"), 2), name="axi_master")
    for name in ("awvalid", "awready", "awaddr", "awlen", "awsize", "awburst", "awcache", "awprot",
                 "wvalid", "wready", "wdata", "wstrb", "wlast", "bvalid", "bready", "bresp",
                 "arvalid", "arready", "araddr", "arlen", "arsize", "arburst", "arcache", "arprot",
                 "rvalid", "rready", "rdata", "rresp", "rlast", "awid", "arid", "rid", "bid"):
        assert f"axi__{name}" in text, name


@pytest.mark.parametrize("log_bus_width", [7, 9])
def test_wide_bus_converts(log_bus_width):
    cfg = load_config("default").with_changes(LOG_BUS_WIDTH=log_bus_width)
    for block in ("axi_master", "fetch"):
        text = verilog.convert(BLOCKS[block](cfg), name=block)
        assert f"module {block}" in text
