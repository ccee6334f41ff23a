"""Why bits never toggled (cosim.verify.toggles): classes of equal bits read from the Verilog, and the rules."""
from cosim.verify import toggles

VERILOG = r"""
module top(clk, a);
  input clk;
  input [3:0] a;
  wire [9:0] \$3 ;
  wire [8:0] \$4 ;
  wire [7:0] cnt;
  wire [7:0] \$5 ;
  wire [1:0] \$6 ;
  wire [1:0] \$7 ;
  wire [1:0] sel;
  wire [3:0] \port$1 ;
  reg [1:0] \$8 ;
  reg [1:0] \$9 ;
  reg [1:0] q;
  assign \$3  = { 4'h0, a, 2'h1 };
  (* src = "hw/demo.py:7" *)
  wire [7:0] \$10 ;
  assign \$4  = cnt + (* src = "hw/demo.py:3" *) 1'h1;
  assign \$6  = sel[0] ? (* src = "hw/demo.py:4" *) 2'h1 : 2'h2;
  assign \$7  = sel[0] ? (* src = "hw/demo.py:5" *) 2'h1 : 2'h3;
  assign \$5  = \$10 ;
  always @* begin
    \$8  = 2'h2;
    if (sel[1]) begin
      \$8  = 2'h3;
    end
  end
  always @* begin
    \$9  = 2'h2;
    if (sel[1]) begin
      \$9  = 2'h1;
    end
  end
  always @(posedge clk)
    q <= \$9 ;
  \top.child  child (
    .p(\port$1 ),
    .q(a)
  );
endmodule

module \top.child (p, q);
  input [3:0] p;
  input [3:0] q;
endmodule
"""


def classes(tmp_path):
    path = tmp_path / "top.v"
    path.write_text(VERILOG)
    return path, toggles.bit_classes(path)


def test_constant_bits_and_copies_form_classes(tmp_path):
    _, (find, members, derived, widths, srcs) = classes(tmp_path)
    assert find(("top", "$3", 0)) == ("c", 1) and find(("top", "$3", 1)) == ("c", 0)
    assert [find(("top", "$3", i)) for i in range(6, 10)] == [("c", 0)] * 4
    assert find(("top", "$3", 2)) == find(("top", "a", 0)) == find(("top.child", "q", 0))   # a port is its net
    assert find(("top", "q", 1)) == find(("top", "$9", 1))          # a register and its next-state value
    assert widths["top"]["$3"] == 10 and widths["top.child"]["p"] == 4
    assert derived[("top", "$4")][0] == "any" and derived[("top", "$6")][0] == "all"
    assert srcs[("top", "$4")] == "hw/demo.py:3" and srcs[("top", "$10")] == "hw/demo.py:7"


def test_untoggled_points_are_explained_by_rule_class_or_operand(tmp_path):
    path, _ = classes(tmp_path)
    rules = [("^top$", "^cnt$", "high", "a counter")]
    points = [("top", "$3", 9), ("top.child", "q", 1),            # tied to 0; a copy of a[1] (no rule)
              ("top", "cnt", 6), ("top", "cnt", 7),                 # the counter's top bits
              ("top", "$4", 7), ("top", "$4", 8),                   # cnt + 1 follows cnt, its carry cnt's top bit
              ("top", "$4", 3)]                                     # cnt[3] toggled: $4[3] is a hole
    explained, holes = toggles.explain_toggles(points, path, rules)
    assert explained[toggles.TIED + "0 in the Verilog (a constant, or a copy of one)"] == [("top", "$3", 9)]
    assert explained["a counter"] == [("top", "cnt", 6), ("top", "cnt", 7), ("top", "$4", 7), ("top", "$4", 8)]
    assert holes == [("top.child", "q", 1), ("top", "$4", 3)]


def test_a_multiplexer_or_process_is_explained_only_when_all_its_inputs_agree(tmp_path):
    path, _ = classes(tmp_path)
    points = [("top", "$6", 0), ("top", "$6", 1), ("top", "$7", 0), ("top", "$7", 1),
              ("top", "$8", 1), ("top", "$8", 0), ("top", "$9", 0)]
    explained, holes = toggles.explain_toggles(points, path, [])
    # $6 = sel ? 1 : 2 moves both bits; $7 = sel ? 1 : 3 holds bit 0 at 1; $8 is 2 or 3 (bit 1 always 1)
    assert holes == [("top", "$6", 0), ("top", "$6", 1), ("top", "$7", 1), ("top", "$8", 0), ("top", "$9", 0)]
    assert sorted(p for v in explained.values() for p in v) == [("top", "$7", 0), ("top", "$8", 1)]


def test_rule_bit_specs_and_source_patterns(tmp_path):
    path, _ = classes(tmp_path)
    points = [("top", "cnt", 0), ("top", "cnt", 1), ("top", "cnt", 4), ("top", "cnt", 7), ("top", "$5", 2)]
    rules = [("", "^cnt$", "low", "low bits"), ("", "^cnt$", "bits 4", "bit four"),
             ("", r"^src:hw/demo\.py:7\b", "all", "from its source line")]
    explained, holes = toggles.explain_toggles(points, path, rules)
    assert explained == {"low bits": [("top", "cnt", 0), ("top", "cnt", 1)], "bit four": [("top", "cnt", 4)],
                         "from its source line": [("top", "$5", 2)]}
    assert holes == [("top", "cnt", 7)]                                # bit 7 alone: not the top run of a rule


def test_a_product_with_a_power_of_two_is_its_operand_shifted(tmp_path):
    path = tmp_path / "scale.v"
    path.write_text("module top(b);\n  input [1:0] b;\n  wire [7:0] \\$75 ;\n"
                    "  assign \\$75  = b * (* src = \"hw/store.py:172\" *) 7'h40;\nendmodule\n")
    find = toggles.bit_classes(path)[0]
    assert [find(("top", "$75", i)) for i in (0, 5)] == [("c", 0)] * 2
    assert find(("top", "$75", 6)) == find(("top", "b", 0)) and find(("top", "$75", 7)) == find(("top", "b", 1))
