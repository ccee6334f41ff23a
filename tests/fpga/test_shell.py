"""The vendor shell (hw/shell.py): port names Vivado infers interfaces from, and the wiring to vta_top."""
import json
import re

from amaranth.lib import wiring

from fpga.shell import SHELL_NAME, main
from hw.axi import axi4_lite_signature, axi4_signature
from hw.top import CTL_ADDR_BITS
from sw.config import load_config

# the smallest buildable config keeps elaboration fast
TINY = load_config("configs/small.json").with_changes(
    LOG_BLOCK=1, LOG_UOP_BUFF_SIZE=4, LOG_INP_BUFF_SIZE=4, LOG_WGT_BUFF_SIZE=5, LOG_ACC_BUFF_SIZE=6)


def expected_ports(cfg):
    ports = {"ap_clk": "input", "aresetn": "input", "interrupt": "output"}
    for name, member in axi4_signature(cfg.BUS_WIDTH).members.items():
        ports[f"m_axi_{name}"] = "output" if member.flow == wiring.Out else "input"
    for name, member in axi4_lite_signature(CTL_ADDR_BITS, 32).members.items():
        ports[f"s_axi_{name}"] = "input" if member.flow == wiring.Out else "output"
    return ports


def test_shell_ports_in_verilog(tmp_path, capsys):
    """Through the command line (``python -m fpga.shell --config ... -o ...``), on the tiny config."""
    config = tmp_path / "tiny.json"
    config.write_text(json.dumps(TINY.to_dict()))
    assert main(["--config", str(config), "-o", str(tmp_path / "vta_shell.v")]) == 0
    assert "wrote " in capsys.readouterr().out
    text = (tmp_path / "vta_shell.v").read_text()
    assert text.count(f"module {SHELL_NAME}(") == 1 and f"module \\{SHELL_NAME}.vta " in text    # the accelerator inside
    header = re.search(rf"^module {SHELL_NAME}\((.*?)\);", text, re.S | re.M)
    assert header, "no vta_shell module"
    names = {p.strip() for p in header.group(1).split(",")}
    want = expected_ports(TINY)
    assert names == set(want)
    body = text[header.end():text.index("endmodule", header.end())]
    for name, direction in want.items():
        assert re.search(rf"^\s*{direction}\s+(\[\d+:0\]\s+)?{name};", body, re.M), (name, direction)
    # widths of the buses
    assert re.search(rf"output \[{TINY.BUS_WIDTH - 1}:0\] m_axi_wdata;", body)
    assert re.search(r"output \[31:0\] m_axi_araddr;", body)
    assert re.search(rf"input \[{CTL_ADDR_BITS - 1}:0\] s_axi_awaddr;", body)
    # interface attributes for the clock, the reset and the interrupt
    assert 'X_INTERFACE_PARAMETER = "ASSOCIATED_BUSIF m_axi:s_axi, ASSOCIATED_RESET aresetn"' in body
    assert 'X_INTERFACE_PARAMETER = "POLARITY ACTIVE_LOW"' in body
    assert 'X_INTERFACE_PARAMETER = "SENSITIVITY LEVEL_HIGH"' in body
    # no stray clock/reset ports of the inner design
    assert not ({"clk", "rst", "irq"} & names)
