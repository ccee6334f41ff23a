"""A small Verilog file for the toggle tests: constants, copies, a sum, multiplexers, processes, an instance."""
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
