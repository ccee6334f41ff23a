"""Fixed sites of the datapath's hard blocks on the LFE5U-85F, set in yosys's netlist before nextpnr places it.

The plan slices the die by output lane: the GEMM's products of lane pair (2s, 2s+1) sit side by side in DSP
rows 34 and 58 (one lane each), and segment s of EBR row 46, between them, holds the weight, acc and OUT
slices of those lanes; the input and uop memories, which every lane reads, go in the middle of that row.
Everything else is left to the placer.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

__all__ = ["ECP5_85_GROUPS", "ECP5_85_DSP_ROWS", "ECP5_85_EBR_ROWS", "ecp5_85_row", "floorplan", "apply_floorplan"]

#: LFE5U-85F hard blocks as nextpnr-ecp5 names them (``X{x}/Y{y}/{bel}``): 13 column groups (their
#: first x), each with four MULT18X18D in every DSP row and four DP16KD in every EBR row
ECP5_85_GROUPS = (4, 13, 22, 31, 40, 49, 58, 69, 78, 87, 96, 105, 114)
ECP5_85_DSP_ROWS = (10, 34, 58)
ECP5_85_EBR_ROWS = (22, 46, 70, 82)
_ROW_SITES = {"dsp": ((0, "MULT18_0"), (1, "MULT18_1"), (4, "MULT18_4"), (5, "MULT18_5")),
              "ebr": ((0, "EBR0"), (2, "EBR1"), (4, "EBR2"), (6, "EBR3"))}
_PRODUCT = re.compile(r"^soc\.vta\.compute\.gemm\.prod_(\d+)_(\d+)_(\d+)_dsp$")
#: block RAMs whose slices (``<memory>.<depth>.<slice>``) follow the GEMM/ALU lanes, and those
#: every lane reads (placed between the lanes)
_LANE_MEMS = re.compile(r"^(soc\.vta\.(?:wgt_mem|compute\.(?:acc|out)_bank\d+))\.(\d+)\.(\d+)$")
_SHARED_MEMS = re.compile(r"^soc\.vta\.(?:inp_mem|compute\.uop_mem)\.")


def ecp5_85_row(kind: str, y: int) -> list:
    """The BEL names of one row of the LFE5U-85F, left to right: ``kind`` "dsp" (MULT18X18D) or "ebr"
    (DP16KD)."""
    return [f"X{x + dx}/Y{y}/{bel}" for x in ECP5_85_GROUPS for dx, bel in _ROW_SITES[kind]]


def floorplan(cells: dict) -> dict:
    """BEL placements for the datapath's hard blocks in a synthesised board netlist (``cells``: name
    -> type), as ``{cell name: BEL}``, by the plan of the module doc; empty when the design does not fit
    the plan (more products per row of lane pairs than a DSP row holds, or more slices than EBR row 46)."""
    lanes, products = {}, {}
    for name, kind in cells.items():
        hit = _PRODUCT.match(name)
        if hit and kind == "MULT18X18D":
            b, o, i = map(int, hit.groups())
            lanes.setdefault((b, o), []).append((i, name))
    if not lanes:
        return {}
    order = sorted(lanes)
    per_lane = max(len(v) for v in lanes.values())
    segments = (len(order) + 1) // 2
    dsp_rows = [ecp5_85_row("dsp", ECP5_85_DSP_ROWS[1]), ecp5_85_row("dsp", ECP5_85_DSP_ROWS[2])]
    used = segments * per_lane
    if used > len(dsp_rows[0]):
        return {}
    first = (len(dsp_rows[0]) - used) // 2
    for lane, key in enumerate(order):
        row = dsp_rows[lane % 2]
        for k, (_, name) in enumerate(sorted(lanes[key])):
            products[name] = row[first + (lane // 2) * per_lane + k]
    # EBR row 46: slice j of n of a lane memory holds lanes near (j + 1/2) / n of the row width
    slices = {}
    shared = []
    for name, kind in cells.items():
        if kind != "DP16KD":
            continue
        hit = _LANE_MEMS.match(name)
        if hit:
            slices.setdefault(hit.group(1), []).append((int(hit.group(3)), int(hit.group(2)), name))
        elif _SHARED_MEMS.match(name):
            shared.append(name)
    seg = [[] for _ in range(segments)]
    for mem in sorted(slices):
        width = max(j for j, _, _ in slices[mem]) + 1
        for j, _, name in sorted(slices[mem]):
            lane = min(len(order) - 1, int((j + 0.5) / width * len(order)))
            seg[lane // 2].append(name)
    half = segments // 2
    row_order = [n for s in seg[:half] for n in s] + sorted(shared) + [n for s in seg[half:] for n in s]
    ebr_row = ecp5_85_row("ebr", ECP5_85_EBR_ROWS[1])
    if len(row_order) > len(ebr_row):
        return {}
    first = (len(ebr_row) - len(row_order)) // 2
    return {**products, **{name: ebr_row[first + k] for k, name in enumerate(row_order)}}


def apply_floorplan(netlist) -> int:
    """Set the ``BEL`` attribute of the cells :func:`floorplan` places in yosys's JSON netlist (the
    file is rewritten); returns how many."""
    path = Path(netlist)
    design = json.loads(path.read_text())
    cells = design["modules"]["top"]["cells"]
    plan = floorplan({name: cell["type"] for name, cell in cells.items()})
    for name, bel in plan.items():
        cells[name]["attributes"]["BEL"] = bel
    path.write_text(json.dumps(design))
    return len(plan)

