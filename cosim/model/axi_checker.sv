// AXI4 protocol checker of the accelerator's memory port, instantiated by vta_tb (VTA_TB_AXI_CHECK) and by
// the checker's own negative-test bench (axi_checker_tb.sv). It only watches: every rule is an immediate
// assertion evaluated at the clock edge (Verilator --assert), and a violation calls vta_axi_violation
// (axi_checker.cpp) with the rule, the channel and the cycle; Python reads them after the run and fails it
// (cosim/sim/axi_monitor.py). Nothing here wakes Python.
//
// Rules (the rule names are what a violation reports):
//   valid_dropped    AW/W/AR (master) and R/B (slave): VALID fell before READY took the transfer
//   payload_changed  the same channels: the payload changed while VALID waited for READY
//   boundary_4k      AR/AW: the burst crosses a 4 KiB boundary
//   bad_size         AR/AW: the beat size is not the bus width (the only size the memories serve)
//   bad_burst        AR/AW: the burst type is not INCR
//   bad_len          AR/AW: the length is illegal for the burst type (FIXED <= 16 beats, WRAP 2/4/8/16)
//   wlast_early      W: WLAST on a beat before the last of its burst
//   wlast_missing    W: no WLAST on the last beat of its burst
//   rlast_wrong      R: RLAST not exactly on the last beat of the read burst
//   unexpected_resp  R/B: a response with no outstanding burst
//   resp_not_taken   R/B: bursts without their responses taken when the run ended (the irq)
//   write_outside    W: a written byte lies outside every allocated buffer (vta_axi_write_allowed)
`timescale 1ns/1ps
module vta_axi_checker #(
  parameter int BUS = 64,
  parameter int ADDR = 32,
  parameter int IDW = 1
) (
  input logic clk, rst,
  input longint cycle,
  input logic run_end,                       // high in the cycle the run ends normally: all responses are due
  input logic awvalid, awready, input logic [IDW-1:0] awid, input logic [ADDR-1:0] awaddr,
  input logic [7:0] awlen, input logic [2:0] awsize, input logic [1:0] awburst,
  input logic [3:0] awcache, input logic [2:0] awprot,
  input logic wvalid, wready, input logic [BUS-1:0] wdata, input logic [BUS/8-1:0] wstrb, input logic wlast,
  input logic bvalid, bready, input logic [IDW-1:0] bid, input logic [1:0] bresp,
  input logic arvalid, arready, input logic [IDW-1:0] arid, input logic [ADDR-1:0] araddr,
  input logic [7:0] arlen, input logic [2:0] arsize, input logic [1:0] arburst,
  input logic [3:0] arcache, input logic [2:0] arprot,
  input logic rvalid, rready, input logic [IDW-1:0] rid, input logic [BUS-1:0] rdata, input logic [1:0] rresp,
  input logic rlast
);
  localparam int BYTES = BUS / 8;
  localparam int LOG_BYTES = $clog2(BYTES);
  localparam int Q = 64;                     // outstanding bursts tracked per direction

  import "DPI-C" function void vta_axi_violation(input string rule, input string channel, input longint cycle,
                                                 input string detail);
  import "DPI-C" function int vta_axi_write_allowed(input longint unsigned addr, input int nbytes);
  import "DPI-C" function void vta_axi_stall(input int channel);

  // ---------------------------------------------------------------- backpressure counters (functional coverage)
  // Cycles a channel waited, counted in axi_checker.cpp: 0 AR and 2 AW and 3 W (VALID, no READY from the
  // memory), 1 R paused by the memory inside a burst (no VALID after a beat that was not the last),
  // 4 R and 5 B held by the accelerator (VALID, no READY from the master).
  logic r_in_burst = 1'b0;
  always @(posedge clk) begin
    if (rst) r_in_burst <= 1'b0;
    else begin
      if (rvalid && rready) r_in_burst <= !rlast;
      if (arvalid && !arready) vta_axi_stall(0);
      if (r_in_burst && !rvalid) vta_axi_stall(1);
      if (awvalid && !awready) vta_axi_stall(2);
      if (wvalid && !wready) vta_axi_stall(3);
      if (rvalid && !rready) vta_axi_stall(4);
      if (bvalid && !bready) vta_axi_stall(5);
    end
  end

  // ---------------------------------------------------------------- handshake rules, one instance per channel
  vta_axi_handshake #(.W(ADDR + 8 + 3 + 2 + 4 + 3 + IDW), .CH("AW")) hs_aw (
    .clk, .rst, .cycle, .valid(awvalid), .ready(awready), .payload({awaddr, awlen, awsize, awburst, awcache, awprot, awid}));
  vta_axi_handshake #(.W(BUS + BUS / 8 + 1), .CH("W")) hs_w (
    .clk, .rst, .cycle, .valid(wvalid), .ready(wready), .payload({wdata, wstrb, wlast}));
  vta_axi_handshake #(.W(ADDR + 8 + 3 + 2 + 4 + 3 + IDW), .CH("AR")) hs_ar (
    .clk, .rst, .cycle, .valid(arvalid), .ready(arready), .payload({araddr, arlen, arsize, arburst, arcache, arprot, arid}));
  vta_axi_handshake #(.W(BUS + 2 + 1 + IDW), .CH("R")) hs_r (
    .clk, .rst, .cycle, .valid(rvalid), .ready(rready), .payload({rdata, rresp, rlast, rid}));
  vta_axi_handshake #(.W(2 + IDW), .CH("B")) hs_b (
    .clk, .rst, .cycle, .valid(bvalid), .ready(bready), .payload({bresp, bid}));

  // ---------------------------------------------------------------- address-channel rules
  function automatic void check_address(string ch, longint cyc, logic [ADDR-1:0] addr, logic [7:0] len,
                                        logic [2:0] size, logic [1:0] burst);
    automatic longint unsigned first = longint'(addr);
    automatic longint unsigned last = first + (longint'(len) + 1) * (longint'(1) << size) - 1;
    assert ((first >> 12) == (last >> 12))
      else vta_axi_violation("boundary_4k", ch, cyc, $sformatf("burst at %h of %0d beats of %0d bytes crosses a 4 KiB boundary",
                                                               addr, int'(len) + 1, 1 << size));
    assert (int'(size) == LOG_BYTES)
      else vta_axi_violation("bad_size", ch, cyc, $sformatf("size %0d (%0d bytes); the bus is %0d bytes (size %0d)",
                                                            size, 1 << size, BYTES, LOG_BYTES));
    assert (burst == 2'b01)
      else vta_axi_violation("bad_burst", ch, cyc, $sformatf("burst type %0d; only INCR (1) is served", burst));
    assert (burst == 2'b01 || (burst == 2'b00 && len < 16) ||
            (burst == 2'b10 && (len == 1 || len == 3 || len == 7 || len == 15)))
      else vta_axi_violation("bad_len", ch, cyc, $sformatf("length %0d beats is illegal for burst type %0d",
                                                           int'(len) + 1, burst));
  endfunction

  always @(posedge clk) begin
    if (!rst && awvalid && awready) check_address("AW", cycle, awaddr, awlen, awsize, awburst);
    if (!rst && arvalid && arready) check_address("AR", cycle, araddr, arlen, arsize, arburst);
  end

  // ---------------------------------------------------------------- write bursts: WLAST, range, responses
  logic [ADDR-1:0] aw_addr [Q];
  logic [7:0] aw_len [Q];
  int aw_head = 0, aw_count = 0;             // accepted AWs whose data is not complete
  int w_beat = 0;                            // beats of the current data burst so far
  int early_lo [256], early_hi [256];        // byte ranges of data beats accepted before their AW
  logic early_last [256];
  int early_n = 0;
  int b_due = 0;                             // complete write bursts whose response is not taken yet

  // one data beat of the burst (addr, len) at index beat; returns 1 when the burst is complete
  function automatic logic data_beat(longint cyc, logic [ADDR-1:0] addr, logic [7:0] len, int beat, int lo, int hi,
                                     logic last);
    if (lo <= hi) begin
      automatic longint unsigned at = longint'(addr) + longint'(beat) * BYTES + longint'(lo);
      assert (vta_axi_write_allowed(at, hi - lo + 1) != 0)
        else vta_axi_violation("write_outside", "W", cyc, $sformatf("beat %0d of the burst at %h writes %0d bytes at %h, outside every allocated buffer",
                                                                    beat, addr, hi - lo + 1, at));
    end
    assert (!last || beat == int'(len))
      else vta_axi_violation("wlast_early", "W", cyc, $sformatf("WLAST on beat %0d of a %0d-beat burst at %h",
                                                                beat + 1, int'(len) + 1, addr));
    assert (last || beat != int'(len))
      else vta_axi_violation("wlast_missing", "W", cyc, $sformatf("no WLAST on beat %0d, the last of the burst at %h",
                                                                  beat + 1, addr));
    return last || beat >= int'(len);
  endfunction

  always @(posedge clk) begin
    if (rst) begin
      aw_head <= 0; aw_count <= 0; w_beat <= 0; early_n <= 0; b_due <= 0;
    end else begin
      automatic int head = aw_head, count = aw_count, beat = w_beat, n_early = early_n, due = b_due;
      automatic int lo = BYTES, hi = -1;
      for (int i = BYTES - 1; i >= 0; i--) if (wstrb[i]) lo = i;
      for (int i = 0; i < BYTES; i++) if (wstrb[i]) hi = i;
      if (awvalid && awready) begin
        automatic int tail = (head + count) % Q;
        aw_addr[tail] = awaddr; aw_len[tail] = awlen;
        count = count + 1;
        if (count == 1 && n_early > 0) begin   // data that ran ahead of this address: check it now
          automatic int e = 0;
          automatic logic complete = 1'b0;
          for (e = 0; e < n_early && !complete; e++)
            complete = data_beat(cycle, awaddr, awlen, e, early_lo[e], early_hi[e], early_last[e]);
          beat = complete ? 0 : n_early;
          if (complete) begin head = (head + 1) % Q; count = count - 1; due = due + 1; end
          n_early = 0;
        end
      end
      if (wvalid && wready) begin
        if (count > 0) begin
          if (data_beat(cycle, aw_addr[head], aw_len[head], beat, lo, hi, wlast)) begin
            beat = 0; head = (head + 1) % Q; count = count - 1; due = due + 1;
          end else begin
            beat = beat + 1;
          end
        end else if (n_early < 256) begin
          early_lo[n_early] = lo; early_hi[n_early] = hi; early_last[n_early] = wlast;
          n_early = n_early + 1;
        end
      end
      if (bvalid && bready) begin
        assert (due > 0)
          else vta_axi_violation("unexpected_resp", "B", cycle, "a write response with no complete write burst");
        if (due > 0) due = due - 1;
      end
      if (run_end) begin
        assert (due == 0 && count == 0 && n_early == 0)
          else vta_axi_violation("resp_not_taken", "B", cycle, $sformatf(
                 "the run ended with %0d write responses not taken and %0d write bursts incomplete", due,
                 count + (n_early > 0 ? 1 : 0)));
      end
      aw_head <= head; aw_count <= count; w_beat <= beat; early_n <= n_early; b_due <= due;
    end
  end

  // ---------------------------------------------------------------- read bursts: RLAST and responses
  logic [7:0] ar_len [Q];
  int ar_head = 0, ar_count = 0, r_beat = 0;
  always @(posedge clk) begin
    if (rst) begin
      ar_head <= 0; ar_count <= 0; r_beat <= 0;
    end else begin
      automatic int head = ar_head, count = ar_count, beat = r_beat;
      if (arvalid && arready) begin
        ar_len[(head + count) % Q] = arlen;
        count = count + 1;
      end
      if (rvalid && rready) begin
        assert (count > 0)
          else vta_axi_violation("unexpected_resp", "R", cycle, "a read beat with no outstanding read burst");
        if (count > 0) begin
          automatic logic final_beat = (beat == int'(ar_len[head]));
          assert (rlast == final_beat)
            else vta_axi_violation("rlast_wrong", "R", cycle, $sformatf("RLAST %0d on beat %0d of a %0d-beat burst",
                                                                        rlast, beat + 1, int'(ar_len[head]) + 1));
          if (final_beat || rlast) begin beat = 0; head = (head + 1) % Q; count = count - 1; end
          else beat = beat + 1;
        end
      end
      if (run_end) begin
        assert (count == 0)
          else vta_axi_violation("resp_not_taken", "R", cycle, $sformatf(
                 "the run ended with %0d read bursts whose data was not all taken", count));
      end
      ar_head <= head; ar_count <= count; r_beat <= beat;
    end
  end
endmodule

// VALID held and the payload stable from the cycle VALID rises until READY takes the transfer.
module vta_axi_handshake #(parameter int W = 8, parameter string CH = "?") (
  input logic clk, rst,
  input longint cycle,
  input logic valid, ready,
  input logic [W-1:0] payload
);
  import "DPI-C" function void vta_axi_violation(input string rule, input string channel, input longint cycle,
                                                 input string detail);
  logic waiting = 1'b0;                      // VALID was high without READY in the previous cycle
  logic [W-1:0] held = '0;
  always @(posedge clk) begin
    if (rst) begin
      waiting <= 1'b0;
    end else begin
      if (waiting) begin
        assert (valid)
          else vta_axi_violation("valid_dropped", CH, cycle, "VALID fell before READY took the transfer");
        assert (!valid || payload == held)
          else vta_axi_violation("payload_changed", CH, cycle, "the payload changed while VALID waited for READY");
      end
      waiting <= valid && !ready;
      held <= payload;
    end
  end
endmodule
