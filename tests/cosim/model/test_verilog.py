"""The generated Verilog and what the testbench learns from it (cosim.model.verilog)."""
from amaranth.hdl import Shape
from amaranth.lib import wiring

from cosim.model import testbench, verilog
from hw.top import TRACE_LANES, Top
from sw.config import load_config
from sw.registers import REGISTERS


def test_ports_header_declares_every_port_of_the_top_signature():
    cfg = load_config("batch2")
    gen = verilog.generate(cfg)
    decls = {}
    for line in gen.ports_header.read_text().splitlines()[1:]:
        words = line.split(";")[0].split()
        width = int(words[1][1:].split(":")[0]) + 1 if words[1].startswith("[") else 1
        decls[words[-1]] = (width, line.split("// vta_top ")[1].strip())
    top = Top(cfg)
    top._MustUse__silence = True
    members = top.signature.members
    assert set(decls) == set(members)
    for name, member in members.items():
        assert decls[name] == (Shape.cast(member.shape).width, "input" if member.flow == wiring.In else "output"), name
    assert decls["m_axi_wdata"][0] == cfg.BUS_WIDTH and "module vta_top" in gen.text()


def test_interface_and_parameters_come_from_the_hardware():
    gen = verilog.generate("small")
    params = testbench.testbench_parameters(gen.interface)
    assert params["BUS"] == load_config("small").BUS_WIDTH and params["NMOD"] == len(TRACE_LANES)
    assert (params["REG_CONTROL"], params["REG_INSN_COUNT"], params["REG_INSN_ADDR"]) == tuple(
        REGISTERS[n] for n in ("control", "insn_count", "insn_addr"))


def test_generate_is_memoized_and_keyed_by_the_sources():
    a = verilog.generate("small")
    assert verilog.generate("small") is a
    assert a.directory.name == f"small-{verilog.source_digest(load_config('small'))}"
    assert verilog.source_digest(load_config("small")) != verilog.source_digest(load_config("default"))
