"""The floorplan of the datapath's hard blocks on the LFE5U-85F (fpga.board.floorplan)."""
from fpga.board import floorplan as fpga
from tests.fpga.board.hard_blocks import ulx3s_hard_blocks


def bel_xy(bel):
    x, y, _ = bel.split("/")
    return int(x[1:]), int(y[1:])


def test_floorplan_slices_the_datapath_by_lane():
    blocks = ulx3s_hard_blocks()
    plan = fpga.floorplan(blocks)
    dsp = {b for y in fpga.ECP5_85_DSP_ROWS for b in fpga.ecp5_85_row("dsp", y)}
    ebr = {b for y in fpga.ECP5_85_EBR_ROWS for b in fpga.ecp5_85_row("ebr", y)}
    assert len(dsp) == 156 and len(ebr) == 208         # the LFE5U-85F's MULT18 and EBR counts
    assert len(set(plan.values())) == len(plan) == 64 + 15 + 16 + 4 + 2 + 3
    assert not any(n.startswith(("soc.vta.compute.footprint", "soc.vta.fetch", "soc.ram")) for n in plan)
    xs = {}
    for o in range(8):
        sites = [plan[f"soc.vta.compute.gemm.prod_0_{o}_{i}_dsp"] for i in range(8)]
        assert set(sites) <= dsp and {bel_xy(s)[1] for s in sites} == {(34, 58)[o % 2]}
        xs[o] = sorted(bel_xy(s)[0] for s in sites)
    for s in range(4):                                  # a lane pair shares its columns, left to right
        assert xs[2 * s] == xs[2 * s + 1]
        assert s == 0 or xs[2 * s][0] > xs[2 * s - 1][-1]
    for name, bel in plan.items():
        if blocks[name] == "DP16KD":
            assert bel in ebr and bel_xy(bel)[1] == 46
    for mem, n in (("soc.vta.wgt_mem.0", 15), ("soc.vta.compute.acc_bank0.0", 8), ("soc.vta.compute.acc_bank1.0", 8)):
        x = [bel_xy(plan[f"{mem}.{j}"])[0] for j in range(n)]
        assert x == sorted(x), mem                      # slices follow the lanes
        assert xs[0][0] - 20 <= x[0] and x[-1] <= xs[6][-1] + 20, mem
    shared = [bel_xy(plan[n])[0] for n in plan if "inp_mem" in n or "uop_mem" in n]
    assert xs[2][0] <= min(shared) and max(shared) <= xs[5][-1]     # in the middle


def test_floorplan_gives_up_when_the_array_does_not_fit():
    big = {f"soc.vta.compute.gemm.prod_0_{o}_{i}_dsp": "MULT18X18D" for o in range(16) for i in range(16)}
    assert fpga.floorplan(big) == {}
    assert fpga.floorplan({"soc.vta.inp_mem.0.0": "DP16KD"}) == {}
