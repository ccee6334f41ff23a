// The testbench around the accelerator (vta_top): everything that runs every clock cycle, so Python never does.
//
// * the reset, and the clock: with VTA_TB_CPP_CLOCK defined (the co-simulation's sim_main.cpp and the
//   speed ceiling's harness_main.cpp) clk is an input toggled by the C++ main loop, no --timing needed;
//   without it the testbench generates its own 10 ns clock (for a simulator run with --timing);
// * the DRAM: an AXI4 slave whose beats are read and written through DPI in dram.cpp; its read
//   latency (cycles from AR to the first R beat), bandwidth (bytes per cycle) and seeded random pauses
//   (dram_stall) are run-time inputs;
// * a small AXI4-Lite master: Python sets ctl_addr/ctl_wdata/ctl_we and flips ctl_req; the access
//   runs here and flips ctl_ack when done (one Python wake per register access);
// * the run monitor: after `arm` flips it counts cycles and raises `done` when the accelerator's irq
//   rises (why = 1), when `activity` has been low for watchdog_limit cycles (why = 2), or when
//   cycle_limit cycles have passed (why = 3);
// * optional activity tracing: busy/idle transitions of each module are logged to C++ (no Python);
// * autorun: with +insn_addr=N +insn_count=N the testbench launches one run itself, prints its
//   cycles and finishes (the C++ harness, no Python).
//
// The signals connected to vta_top are declared in vta_ports.svh, generated from the top's signature
// (cosim/model/verilog.py); the parameters come from the same place (cosim/model/build.py passes them with -G).
`timescale 1ns/1ps
module vta_tb #(
  parameter int BUS = 64,                 // AXI4 data width in bits
  parameter int NMOD = 6,                 // bits of the busy port (trace lanes)
  parameter int CTL_ADDR_BITS = 16,       // AXI4-Lite address width
  parameter int REG_CONTROL = 0,          // control register offsets (hw/control.py)
  parameter int REG_INSN_COUNT = 8,
  parameter int REG_INSN_ADDR = 12
)
`ifdef VTA_TB_CPP_CLOCK
  (input logic clk);
`else
  ;
  logic clk = 1'b0;
  always #5 clk = ~clk;
`endif
  localparam int BYTES = BUS / 8;

  import "DPI-C" function void vta_dram_read(input int unsigned addr, input int nbytes, output bit [BUS-1:0] data);
  import "DPI-C" function void vta_dram_write(input int unsigned addr, input int nbytes, input bit [BUS-1:0] data,
                                              input bit [BYTES-1:0] strb);
  import "DPI-C" function void vta_trace_event(input longint cycle, input int module_id, input int busy);

  logic rst = 1'b1;
  int reset_count = 0;
  logic reset_req = 1'b0, reset_seen = 1'b0;   // Python flips reset_req to reset the accelerator again
  always @(posedge clk) begin
    if (reset_req != reset_seen) begin
      reset_seen <= reset_req; reset_count <= 0; rst <= 1'b1;
    end else begin
      if (reset_count < 4) reset_count <= reset_count + 1;
      rst <= (reset_count < 4);
    end
  end

  // ---------------------------------------------------------------- run-time settings (from Python)
  logic [31:0] dram_latency = 32'd20;
  logic [31:0] dram_bytes_per_cycle = 32'd8;
  logic [63:0] watchdog_limit = 64'd100000;
  logic [63:0] cycle_limit = 64'hFFFF_FFFF_FFFF_FFFF;
  logic trace_enable = 1'b0;
  logic [31:0] dram_stall = 32'd0;         // DPI DRAM pauses: [7:0] chance of 256 per channel and cycle, [31:8] seed
  // DPI DRAM error injection: dram_fault [1:0] the response to give (0 none, 1 EXOKAY, 2 SLVERR, 3 DECERR), [2] 0 on
  // a read beat, 1 on a write beat; dram_fault_at: which beat, counted from 0 since the run monitor was armed.
  // The failing read beat carries zeros; the failing write beat is not written and its burst's B carries the error.
  logic [31:0] dram_fault = 32'd0;
  logic [31:0] dram_fault_at = 32'd0;
  // Where device memory sits on the bus: the DPI DRAM answers bus address dram_window + a with its byte a (a board
  // whose DRAM window is high in the address map); an address below the window wraps to a huge offset, outside
  // device memory, and is counted as a fault. 0: device memory from bus address 0.
  logic [31:0] dram_window = 32'd0;
  logic arm = 1'b0;                        // flipped right before launching (the run monitor, below)
  logic fault_arm_seen = 1'b0;
  wire fault_rearm = (arm != fault_arm_seen);
  always @(posedge clk) fault_arm_seen <= arm;

  // ---------------------------------------------------------------- DUT
  `include "vta_ports.svh"
  vta_top dut (.*);

  // ---------------------------------------------------------------- cycle counter and tracing
  longint cycle = 0;
  logic [NMOD-1:0] busy_q = '0;
  always @(posedge clk) begin
    cycle <= cycle + 1;
    if (trace_enable) begin
      for (int i = 0; i < NMOD; i++)
        if (busy[i] != busy_q[i]) vta_trace_event(cycle, i, int'(busy[i]));
    end
    busy_q <= busy;
  end

`ifdef VTA_TB_AXIRAM
  `include "axiram_port.svh"   // the cocotbext-axi variant: cosim/sim/axiram.py serves the memory port instead
`else
  // ---------------------------------------------------------------- DRAM: deterministic pseudo-random pauses
  // With dram_stall[7:0] = p > 0, each slave channel (AR, R, AW, W) pauses in a cycle with chance p/256: its
  // READY (or, for R, the next beat's VALID) stays low. The pattern is an xorshift32 sequence restarted from
  // the seed dram_stall[31:8] at every reset, so a run is repeatable. p = 0 (the default) never pauses.
  logic [31:0] stall_rng = 32'd1;
  always @(posedge clk) begin
    if (rst) stall_rng <= {dram_stall[31:8], 8'h5A};
    else begin
      automatic logic [31:0] x = stall_rng;
      x = x ^ (x << 13); x = x ^ (x >> 17); x = x ^ (x << 5);
      stall_rng <= x;
    end
  end
  wire stall_ar = stall_rng[7:0] < dram_stall[7:0];
  wire stall_r = stall_rng[15:8] < dram_stall[7:0];
  wire stall_aw = stall_rng[23:16] < dram_stall[7:0];
  wire stall_w = stall_rng[31:24] < dram_stall[7:0];

  // ---------------------------------------------------------------- DRAM: AXI4 read slave
  localparam int RQ = 64;
  logic [31:0] rq_addr [RQ];
  logic [7:0]  rq_len  [RQ];
  longint      rq_time [RQ];
  int rq_head = 0, rq_tail = 0, rq_count = 0;
  int r_beat = 0;
  longint r_credit = 0;
  logic [BUS-1:0] r_data = '0;
  logic r_valid = 1'b0, r_last = 1'b0;
  logic [1:0] r_resp = 2'b00;
  longint r_served = 0;                    // read beats given since the monitor was armed (error injection)
  assign m_axi_arready = !rst && (rq_count < RQ) && !stall_ar;
  assign m_axi_rvalid = r_valid;
  assign m_axi_rdata = r_data;
  assign m_axi_rlast = r_last;
  assign m_axi_rresp = r_resp;
  assign m_axi_rid = '0;

  always @(posedge clk) begin
    if (rst) begin
      rq_head <= 0; rq_tail <= 0; rq_count <= 0; r_beat <= 0; r_valid <= 1'b0; r_last <= 1'b0; r_credit <= 0;
      r_resp <= 2'b00; r_served <= 0;
    end else begin
      automatic longint served = fault_rearm ? 0 : r_served;
      automatic int count = rq_count;
      automatic int head = rq_head;
      automatic int beat = r_beat;
      automatic longint credit = r_credit + longint'(dram_bytes_per_cycle);
      automatic logic valid = r_valid;
      if (credit > 2 * BYTES) credit = 2 * BYTES;
      if (m_axi_arvalid && m_axi_arready) begin
        rq_addr[rq_tail] <= m_axi_araddr;
        rq_len[rq_tail] <= m_axi_arlen;
        rq_time[rq_tail] <= cycle + longint'(dram_latency);
        rq_tail <= (rq_tail + 1) % RQ;
        count = count + 1;
      end
      if (valid && m_axi_rready) valid = 1'b0;
      if (!valid && rq_count > 0 && rq_time[head] <= cycle && credit >= BYTES && !stall_r) begin
        if (dram_fault[1:0] != 2'b00 && !dram_fault[2] && served == longint'(dram_fault_at)) begin
          r_data = '0;
          r_resp <= dram_fault[1:0];
        end else begin
          vta_dram_read(rq_addr[head] - dram_window + beat * BYTES, BYTES, r_data);
          r_resp <= 2'b00;
        end
        served = served + 1;
        valid = 1'b1;
        credit = credit - BYTES;
        r_last <= (beat == int'(rq_len[head]));
        if (beat == int'(rq_len[head])) begin
          beat = 0;
          head = (head + 1) % RQ;
          count = count - 1;
        end else begin
          beat = beat + 1;
        end
      end
      r_valid <= valid;
      r_beat <= beat;
      rq_head <= head;
      rq_count <= count;
      r_credit <= credit;
      r_served <= served;
    end
  end

  // ---------------------------------------------------------------- DRAM: AXI4 write slave
  logic [31:0] wq_addr [RQ];
  int wq_head = 0, wq_tail = 0, wq_count = 0;
  int w_beat = 0;
  int b_pending = 0;
  longint w_credit = 0;
  longint w_served = 0, w_bursts = 0, b_sent = 0;   // write beats, bursts and B responses since armed
  longint w_fail_burst = -1;                        // the burst whose B carries the injected error
  assign m_axi_bresp = (w_fail_burst == b_sent) ? dram_fault[1:0] : 2'b00;
  assign m_axi_awready = !rst && (wq_count < RQ) && !stall_aw;
  assign m_axi_wready = !rst && (wq_count > 0) && (w_credit >= BYTES) && !stall_w;
  assign m_axi_bvalid = (b_pending > 0);
  assign m_axi_bid = '0;

  always @(posedge clk) begin
    if (rst) begin
      wq_head <= 0; wq_tail <= 0; wq_count <= 0; w_beat <= 0; b_pending <= 0; w_credit <= 0;
      w_served <= 0; w_bursts <= 0; b_sent <= 0; w_fail_burst <= -1;
    end else begin
      automatic longint served = fault_rearm ? 0 : w_served;
      automatic longint bursts = fault_rearm ? 0 : w_bursts;
      automatic longint sent = fault_rearm ? 0 : b_sent;
      automatic longint fail_burst = fault_rearm ? -1 : w_fail_burst;
      automatic int count = wq_count;
      automatic int pending = b_pending;
      automatic longint credit = w_credit + longint'(dram_bytes_per_cycle);
      if (m_axi_awvalid && m_axi_awready) begin
        wq_addr[wq_tail] <= m_axi_awaddr;
        wq_tail <= (wq_tail + 1) % RQ;
        count = count + 1;
      end
      if (m_axi_wvalid && m_axi_wready) begin
        if (dram_fault[1:0] != 2'b00 && dram_fault[2] && served == longint'(dram_fault_at))
          fail_burst = bursts;
        else
          vta_dram_write(wq_addr[wq_head] - dram_window + w_beat * BYTES, BYTES, m_axi_wdata, m_axi_wstrb);
        served = served + 1;
        credit = credit - BYTES;
        if (m_axi_wlast) begin
          bursts = bursts + 1;
          w_beat <= 0;
          wq_head <= (wq_head + 1) % RQ;
          count = count - 1;
          pending = pending + 1;
        end else begin
          w_beat <= w_beat + 1;
        end
      end
      if (m_axi_bvalid && m_axi_bready) begin
        pending = pending - 1;
        sent = sent + 1;
      end
      if (credit > 2 * BYTES) credit = 2 * BYTES;
      wq_count <= count;
      b_pending <= pending;
      w_served <= served; w_bursts <= bursts; b_sent <= sent; w_fail_burst <= fail_burst;
      w_credit <= credit;
    end
  end

`endif

  // ---------------------------------------------------------------- AXI4-Lite master (Python or autorun)
  logic ctl_req = 1'b0;          // flipped to start one access
  logic ctl_ack = 1'b0;          // flipped when the access is done
  logic ctl_we = 1'b0;
  logic [CTL_ADDR_BITS-1:0] ctl_addr = '0;
  logic [31:0] ctl_wdata = '0;
  logic [31:0] ctl_rdata = '0;
  logic ctl_seen = 1'b0;
  logic [2:0] ctl_state = 3'd0;  // 0 idle, 1 write addr+data, 2 write resp, 3 read addr, 4 read data
  logic aw_done = 1'b0, w_done = 1'b0;
  assign s_axi_awvalid = (ctl_state == 3'd1) && !aw_done;
  assign s_axi_wvalid = (ctl_state == 3'd1) && !w_done;
  assign s_axi_awaddr = ctl_addr;
  assign s_axi_wdata = ctl_wdata;
  assign s_axi_wstrb = '1;
  assign s_axi_awprot = 3'b000;
  assign s_axi_arprot = 3'b000;
  assign s_axi_bready = (ctl_state == 3'd2);
  assign s_axi_arvalid = (ctl_state == 3'd3);
  assign s_axi_araddr = ctl_addr;
  assign s_axi_rready = (ctl_state == 3'd4);

  always @(posedge clk) begin
    if (rst) begin
      ctl_state <= 3'd0; aw_done <= 1'b0; w_done <= 1'b0;
    end else begin
      case (ctl_state)
        3'd0: if (ctl_req != ctl_seen) begin
                ctl_seen <= ctl_req;
                ctl_state <= ctl_we ? 3'd1 : 3'd3;
              end
        3'd1: begin
                automatic logic a = aw_done || s_axi_awready;
                automatic logic w = w_done || s_axi_wready;
                aw_done <= a; w_done <= w;
                if (a && w) ctl_state <= 3'd2;
              end
        3'd2: if (s_axi_bvalid) begin
                aw_done <= 1'b0; w_done <= 1'b0; ctl_state <= 3'd0; ctl_ack <= !ctl_ack;
              end
        3'd3: if (s_axi_arready) ctl_state <= 3'd4;
        3'd4: if (s_axi_rvalid) begin
                ctl_rdata <= s_axi_rdata; ctl_state <= 3'd0; ctl_ack <= !ctl_ack;
              end
        default: ctl_state <= 3'd0;
      endcase
    end
  end

  // ---------------------------------------------------------------- run monitor
  logic arm_seen = 1'b0;
  logic running = 1'b0;
  logic done = 1'b0;             // rises when the run ends, for any reason
  logic [1:0] why = 2'd0;        // 1 irq, 2 watchdog, 3 cycle limit
  longint run_cycles = 0;
  longint idle_cycles = 0;
  logic irq_q = 1'b0;
  always @(posedge clk) begin
    irq_q <= irq;
    if (arm != arm_seen) begin
      arm_seen <= arm;
      running <= 1'b1; done <= 1'b0; why <= 2'd0; run_cycles <= 0; idle_cycles <= 0;
    end else if (running) begin
      run_cycles <= run_cycles + 1;
      idle_cycles <= activity ? 0 : idle_cycles + 1;
      if (irq && !irq_q) begin running <= 1'b0; done <= 1'b1; why <= 2'd1; end
      else if (idle_cycles >= watchdog_limit) begin running <= 1'b0; done <= 1'b1; why <= 2'd2; end
      else if (run_cycles >= cycle_limit) begin running <= 1'b0; done <= 1'b1; why <= 2'd3; end
    end
  end

`ifdef VTA_TB_AXI_CHECK
  // ---------------------------------------------------------------- AXI4 protocol assertions (cosim/sim/axi_monitor.py)
  logic axi_done_q = 1'b0;
  always @(posedge clk) axi_done_q <= done;
  vta_axi_checker #(.BUS(BUS), .ADDR($bits(m_axi_araddr)), .IDW($bits(m_axi_arid))) axi_checker (
    .clk, .rst, .cycle, .run_end(done && !axi_done_q && why == 2'd1),
    .awvalid(m_axi_awvalid), .awready(m_axi_awready), .awid(m_axi_awid), .awaddr(m_axi_awaddr - dram_window), .awlen(m_axi_awlen),
    .awsize(m_axi_awsize), .awburst(m_axi_awburst), .awcache(m_axi_awcache), .awprot(m_axi_awprot),
    .wvalid(m_axi_wvalid), .wready(m_axi_wready), .wdata(m_axi_wdata), .wstrb(m_axi_wstrb), .wlast(m_axi_wlast),
    .bvalid(m_axi_bvalid), .bready(m_axi_bready), .bid(m_axi_bid), .bresp(m_axi_bresp),
    .arvalid(m_axi_arvalid), .arready(m_axi_arready), .arid(m_axi_arid), .araddr(m_axi_araddr - dram_window), .arlen(m_axi_arlen),
    .arsize(m_axi_arsize), .arburst(m_axi_arburst), .arcache(m_axi_arcache), .arprot(m_axi_arprot),
    .rvalid(m_axi_rvalid), .rready(m_axi_rready), .rid(m_axi_rid), .rdata(m_axi_rdata), .rresp(m_axi_rresp),
    .rlast(m_axi_rlast));
`endif

  // ---------------------------------------------------------------- autorun (plain C++ harness, no Python)
  // A clocked sequence: write insn_count and insn_addr, arm the monitor, write control = 1, wait for done.
  longint unsigned auto_insn_addr = 0, auto_insn_count = 0;
  logic auto_on = 1'b0;
  int auto_step = 0;
  logic ctl_ack_q = 1'b0;
  always @(posedge clk) ctl_ack_q <= ctl_ack;
  initial begin
    if ($value$plusargs("insn_addr=%d", auto_insn_addr) && $value$plusargs("insn_count=%d", auto_insn_count))
      auto_on = 1'b1;
  end
  always @(posedge clk) begin
    if (auto_on && !rst && reset_count >= 4) begin
      case (auto_step)
        0, 2, 4: begin
                   ctl_we <= 1'b1;
                   ctl_req <= !ctl_req;
                   ctl_addr <= CTL_ADDR_BITS'(auto_step == 0 ? REG_INSN_COUNT : auto_step == 2 ? REG_INSN_ADDR : REG_CONTROL);
                   ctl_wdata <= auto_step == 0 ? auto_insn_count[31:0] : auto_step == 2 ? auto_insn_addr[31:0] : 32'd1;
                   if (auto_step == 4) arm <= !arm;
                   auto_step <= auto_step + 1;
                 end
        1, 3, 5: if (ctl_ack != ctl_ack_q) auto_step <= auto_step + 1;
        6: if (done) begin
             $display("VTA_HARNESS why=%0d run_cycles=%0d cycle=%0d", why, run_cycles, cycle);
             $finish;
           end
        default: ;
      endcase
    end
  end
endmodule
