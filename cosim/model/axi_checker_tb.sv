// Negative-test bench of the AXI4 protocol checker: a scripted master and slave, one scenario per run
// (+case=<name>), each breaking one rule on purpose (or none: "clean"). Before the violating clock edge the
// script prints "MARK <cycle>" (the cycle the checker will report); the checker's violations are printed by
// axi_checker.cpp (VTA_AXI_PRINT). Built and run by cosim/verify/axi_check.py (negative_test), no cocotb.
`timescale 1ns/1ps
module axi_checker_tb;
  localparam int BUS = 64;
  localparam int BYTES = BUS / 8;
  import "DPI-C" function void vta_axi_ranges_reset(input int enabled);
  import "DPI-C" function void vta_axi_range_add(input longint unsigned lo, input longint unsigned hi);

  logic clk = 1'b0;
  always #5 clk = ~clk;
  logic rst = 1'b1;
  longint cycle = 0;
  always @(posedge clk) cycle <= cycle + 1;
  logic run_end = 1'b0;

  logic awvalid = 0, awready = 1, wvalid = 0, wready = 1, wlast = 0, bvalid = 0, bready = 1;
  logic arvalid = 0, arready = 1, rvalid = 0, rready = 1, rlast = 0;
  logic [0:0] awid = 0, bid = 0, arid = 0, rid = 0;
  logic [31:0] awaddr = 0, araddr = 0;
  logic [7:0] awlen = 0, arlen = 0;
  logic [2:0] awsize = 3, arsize = 3, awprot = 0, arprot = 0;
  logic [1:0] awburst = 1, arburst = 1, bresp = 0, rresp = 0;
  logic [3:0] awcache = 0, arcache = 0;
  logic [BUS-1:0] wdata = 0, rdata = 0;
  logic [BYTES-1:0] wstrb = '1;

  vta_axi_checker #(.BUS(BUS)) chk (.*);

  task automatic tick(); @(posedge clk); #1; endtask
  task automatic mark(); $display("MARK %0d", cycle); endtask

  // one transfer per call: VALID with the payload until READY (the scripted slave keeps READY high)
  task automatic aw(input logic [31:0] addr, input int len, input int size = 3, input int burst = 1);
    awvalid = 1; awaddr = addr; awlen = 8'(len); awsize = 3'(size); awburst = 2'(burst);
    tick(); awvalid = 0;
  endtask
  task automatic ar(input logic [31:0] addr, input int len, input int size = 3, input int burst = 1);
    arvalid = 1; araddr = addr; arlen = 8'(len); arsize = 3'(size); arburst = 2'(burst);
    tick(); arvalid = 0;
  endtask
  task automatic w(input int beats, input int last_at, input logic [BYTES-1:0] strb = '1);
    for (int i = 0; i < beats; i++) begin
      wvalid = 1; wdata = BUS'(i); wstrb = strb; wlast = (i == last_at); tick();
    end
    wvalid = 0; wlast = 0;
  endtask
  task automatic b(); bvalid = 1; tick(); bvalid = 0; endtask
  task automatic r(input int beats, input int last_at);
    for (int i = 0; i < beats; i++) begin
      rvalid = 1; rdata = BUS'(i); rlast = (i == last_at); tick();
    end
    rvalid = 0; rlast = 0;
  endtask
  task automatic finish_run(); run_end = 1; tick(); run_end = 0; tick(); endtask

  string name;
  initial begin
    if (!$value$plusargs("case=%s", name)) name = "clean";
    repeat (3) tick();
    rst = 0;
    tick();
    case (name)
      "clean": begin                                // legal traffic with waits, data before its address
        vta_axi_ranges_reset(1); vta_axi_range_add(64'h1000, 64'h2000);
        awready = 0; awvalid = 1; awaddr = 32'h1000; awlen = 3; tick(); tick(); awready = 1; tick(); awvalid = 0;
        wready = 0; wvalid = 1; wdata = 1; tick(); wready = 1; tick(); wdata = 2; tick();
        wdata = 3; tick(); wlast = 1; wdata = 4; tick(); wvalid = 0; wlast = 0;
        bready = 0; bvalid = 1; tick(); bready = 1; tick(); bvalid = 0;
        w(2, 1); aw(32'h1ff0, 1); b();              // data ahead of the address, ending at the 4 KiB boundary
        ar(32'h2000, 1); rready = 0; rvalid = 1; tick(); rready = 1; r(2, 1);
        ar(32'h2ff8, 0); r(1, 0);
        finish_run();
      end
      "valid_dropped_AW": begin awready = 0; awvalid = 1; tick(); mark(); awvalid = 0; tick(); end
      "valid_dropped_W": begin wready = 0; wvalid = 1; tick(); mark(); wvalid = 0; tick(); end
      "valid_dropped_AR": begin arready = 0; arvalid = 1; tick(); mark(); arvalid = 0; tick(); end
      "valid_dropped_R": begin ar(32'h0, 0); rready = 0; rvalid = 1; tick(); mark(); rvalid = 0; tick(); end
      "valid_dropped_B": begin aw(32'h0, 0); w(1, 0); bready = 0; bvalid = 1; tick(); mark(); bvalid = 0; tick(); end
      "payload_changed_AW": begin awready = 0; awvalid = 1; tick(); mark(); awaddr = 32'h40; tick(); end
      "payload_changed_W": begin wready = 0; wvalid = 1; tick(); mark(); wstrb = 8'h0f; tick(); end
      "payload_changed_AR": begin arready = 0; arvalid = 1; tick(); mark(); arlen = 2; tick(); end
      "payload_changed_R": begin ar(32'h0, 1); rready = 0; rvalid = 1; tick(); mark(); rdata = 7; tick(); end
      "payload_changed_B": begin aw(32'h0, 0); w(1, 0); bready = 0; bvalid = 1; tick(); mark(); bresp = 2; tick(); end
      "boundary_4k_AW": begin mark(); aw(32'h0ff8, 1); end
      "boundary_4k_AR": begin mark(); ar(32'h1f08, 31); end
      "bad_size_AR": begin mark(); ar(32'h0, 0, 2); end
      "bad_size_AW": begin mark(); aw(32'h0, 0, 4); end
      "bad_burst_AR": begin mark(); ar(32'h0, 0, 3, 0); end
      "bad_len_AW": begin mark(); aw(32'h0, 2, 3, 2); end   // a WRAP burst of 3 beats
      "wlast_early": begin aw(32'h0, 3); w(1, -1); mark(); w(1, 0); end
      "wlast_missing": begin aw(32'h0, 1); w(1, -1); mark(); w(1, -1); end
      "rlast_wrong": begin ar(32'h0, 1); mark(); r(1, 0); end
      "unexpected_resp_R": begin mark(); r(1, 0); end
      "unexpected_resp_B": begin mark(); b(); end
      "resp_not_taken_B": begin aw(32'h0, 0); w(1, 0); mark(); finish_run(); end
      "resp_not_taken_R": begin ar(32'h0, 3); r(2, -1); mark(); finish_run(); end
      "write_outside": begin
        vta_axi_ranges_reset(1); vta_axi_range_add(64'h1000, 64'h2000);
        aw(32'h1ff8, 0); w(1, 0, 8'h80);      // the last byte of the buffer is allowed ...
        aw(32'h2000, 0); mark(); w(1, 0, 8'h01);      // ... the first byte after it is not
        b(); b();
      end
      default: $fatal(1, "unknown case %s", name);
    endcase
    repeat (2) tick();
    $display("DONE %s", name);
    $finish;
  end
endmodule
