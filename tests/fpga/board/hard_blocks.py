"""The hard blocks of a synthesised ULX3S board netlist, shared by the floorplan and build tests."""


def ulx3s_hard_blocks():
    """The MULT18X18D and DP16KD cells yosys makes of configs/ulx3s.json (names as in its netlist)."""
    cells = {f"soc.vta.compute.gemm.prod_0_{o}_{i}_dsp": "MULT18X18D" for o in range(8) for i in range(8)}
    cells.update({f"soc.vta.compute.footprint.span_{n}_dsp": "MULT18X18D" for n in ("d0", "d1", "s0", "s1")})
    cells.update({f"soc.vta.wgt_mem.0.{j}": "DP16KD" for j in range(15)})
    for b in range(2):
        cells.update({f"soc.vta.compute.acc_bank{b}.0.{j}": "DP16KD" for j in range(8)})
        cells.update({f"soc.vta.compute.out_bank{b}.0.{j}": "DP16KD" for j in range(2)})
    cells.update({f"soc.vta.inp_mem.0.{j}": "DP16KD" for j in range(2)})
    cells.update({f"soc.vta.compute.uop_mem.{k}.0": "DP16KD" for k in range(3)})
    cells.update({f"soc.vta.fetch.load_queue.storage.0.{j}": "DP16KD" for j in range(4)})
    cells.update({f"soc.ram.mem.{k}.0": "DP16KD" for k in range(2)})
    cells["soc.vta.compute.gemm.sum_TRELLIS_FF_Q"] = "TRELLIS_FF"
    return cells
