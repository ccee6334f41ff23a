// The memory port of the cocotbext-axi variant (VTA_TB_AXIRAM, included by vta_tb.sv; cosim/sim/axiram.py).
//
// cocotbext-axi expects to read pre-edge values at its clock edge and to have its writes take effect after
// the edge. The C++ clock loop reports post-edge values, so the AxiRam runs on the falling edge (clk_n)
// and its side of the port goes through one register here:
// * at the falling edge it reads axiram_* = the master's outputs, stable until the next rising edge, and its
//   own outputs as the DUT sees them until that edge: the handshakes it sees are those of the next edge;
// * what it writes at the falling edge reaches the DUT through the register right after the rising edge.
logic clk_n;
assign clk_n = !clk;
// master -> slave: read-only copies under the AxiRam's prefix
logic axiram_awvalid, axiram_wvalid, axiram_wlast, axiram_bready, axiram_arvalid, axiram_rready;
logic [$bits(m_axi_awid)-1:0] axiram_awid;
logic [$bits(m_axi_awaddr)-1:0] axiram_awaddr;
logic [7:0] axiram_awlen, axiram_arlen;
logic [2:0] axiram_awsize, axiram_arsize, axiram_awprot, axiram_arprot;
logic [1:0] axiram_awburst, axiram_arburst;
logic [3:0] axiram_awcache, axiram_arcache;
logic [$bits(m_axi_wdata)-1:0] axiram_wdata;
logic [$bits(m_axi_wstrb)-1:0] axiram_wstrb;
logic [$bits(m_axi_arid)-1:0] axiram_arid;
logic [$bits(m_axi_araddr)-1:0] axiram_araddr;
assign {axiram_awvalid, axiram_awid, axiram_awaddr, axiram_awlen, axiram_awsize, axiram_awburst, axiram_awcache,
        axiram_awprot} = {m_axi_awvalid, m_axi_awid, m_axi_awaddr, m_axi_awlen, m_axi_awsize, m_axi_awburst,
        m_axi_awcache, m_axi_awprot};
assign {axiram_wvalid, axiram_wdata, axiram_wstrb, axiram_wlast, axiram_bready} =
       {m_axi_wvalid, m_axi_wdata, m_axi_wstrb, m_axi_wlast, m_axi_bready};
assign {axiram_arvalid, axiram_arid, axiram_araddr, axiram_arlen, axiram_arsize, axiram_arburst, axiram_arcache,
        axiram_arprot, axiram_rready} = {m_axi_arvalid, m_axi_arid, m_axi_araddr, m_axi_arlen, m_axi_arsize,
        m_axi_arburst, m_axi_arcache, m_axi_arprot, m_axi_rready};
// slave -> master: written by the AxiRam, registered into the DUT's inputs at the rising edge
logic axiram_awready = 1'b0, axiram_wready = 1'b0, axiram_bvalid = 1'b0, axiram_arready = 1'b0;
logic axiram_rvalid = 1'b0, axiram_rlast = 1'b0;
logic [$bits(m_axi_bid)-1:0] axiram_bid = '0;
logic [1:0] axiram_bresp = '0, axiram_rresp = '0;
logic [$bits(m_axi_rid)-1:0] axiram_rid = '0;
logic [$bits(m_axi_rdata)-1:0] axiram_rdata = '0;
always @(posedge clk) begin
  {m_axi_awready, m_axi_wready, m_axi_bvalid, m_axi_bid, m_axi_bresp} <=
    {axiram_awready, axiram_wready, axiram_bvalid, axiram_bid, axiram_bresp};
  {m_axi_arready, m_axi_rvalid, m_axi_rid, m_axi_rdata, m_axi_rresp, m_axi_rlast} <=
    {axiram_arready, axiram_rvalid, axiram_rid, axiram_rdata, axiram_rresp, axiram_rlast};
end
