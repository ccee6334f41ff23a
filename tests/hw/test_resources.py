"""The yosys stat parser of hw.resources (the synthesis itself runs in `python -m hw.resources`)."""
from hw.resources import FAMILIES, parse_stat

NEW_LAYOUT = """
        +----------Count including submodules.
        |
    18539 cells
     1163   CARRY4
       67   DSP48E1
     5885   FDRE
       24   LUT1
     3407   LUT2
     1487   LUT6
       25   RAM32M
       15   RAMB18E1
       14   RAMB36E1
        1   vta_top.axi
"""

OLD_LAYOUT = """
   Number of cells:              12
     LUT4                         7
     TRELLIS_FF                   3
     MULT18X18D                   1
     DP16KD                       1
"""


def test_parse_new_stat_layout():
    assert parse_stat(NEW_LAYOUT, FAMILIES["xc7"][1]) == {"LUT": 4918, "FF": 5885, "DSP": 67, "BRAM36": 14,
                                                           "BRAM18": 15, "LUTRAM": 25}


def test_parse_old_stat_layout():
    out = parse_stat(OLD_LAYOUT, FAMILIES["ecp5"][1])
    assert (out["LUT"], out["FF"], out["DSP"], out["BRAM"]) == (7, 3, 1, 1)
