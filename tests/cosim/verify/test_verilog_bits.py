"""Classes of equal bits read from the Verilog (cosim.verify.verilog_bits)."""
from cosim.verify import verilog_bits

from .demo_verilog import VERILOG


def test_constant_bits_and_copies_form_classes(tmp_path):
    path = tmp_path / "top.v"
    path.write_text(VERILOG)
    find, members, derived, widths, srcs = verilog_bits.bit_classes(path)
    assert find(("top", "$3", 0)) == ("c", 1) and find(("top", "$3", 1)) == ("c", 0)
    assert [find(("top", "$3", i)) for i in range(6, 10)] == [("c", 0)] * 4
    assert find(("top", "$3", 2)) == find(("top", "a", 0)) == find(("top.child", "q", 0))   # a port is its net
    assert find(("top", "q", 1)) == find(("top", "$9", 1))          # a register and its next-state value
    assert widths["top"]["$3"] == 10 and widths["top.child"]["p"] == 4
    assert derived[("top", "$4")][0] == "any" and derived[("top", "$6")][0] == "all"
    assert srcs[("top", "$4")] == "hw/demo.py:3" and srcs[("top", "$10")] == "hw/demo.py:7"


def test_a_product_with_a_power_of_two_is_its_operand_shifted(tmp_path):
    path = tmp_path / "scale.v"
    path.write_text("module top(b);\n  input [1:0] b;\n  wire [7:0] \\$75 ;\n"
                    "  assign \\$75  = b * (* src = \"hw/store.py:172\" *) 7'h40;\nendmodule\n")
    find = verilog_bits.bit_classes(path)[0]
    assert [find(("top", "$75", i)) for i in (0, 5)] == [("c", 0)] * 2
    assert find(("top", "$75", 6)) == find(("top", "b", 0)) and find(("top", "$75", 7)) == find(("top", "b", 1))
