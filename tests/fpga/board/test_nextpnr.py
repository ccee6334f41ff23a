"""nextpnr's options and its report (fpga.board.nextpnr) on recorded output."""
from fpga.board.nextpnr import nextpnr_options, parse_nextpnr_report, report_markdown

NEXTPNR_LOG = """
Info: Device utilisation:
Info:             TRELLIS_IO:    11/  365     3%
Info:                   DCCA:     2/   56     3%
Info:                 DP16KD:    40/  208    19%
Info:             MULT18X18D:    64/  156    41%
Info:                EHXPLLL:     1/    4    25%
Info:             TRELLIS_FF:  9000/83640    10%
Info:           TRELLIS_COMB: 15000/83640    17%
Info:           TRELLIS_RAMW:    10/10455     0%
Info: Max frequency for clock '$glbnet$clk': 91.40 MHz (FAIL at 100.00 MHz)
Info: Device utilisation:
Info:             TRELLIS_IO:    11/  365     3%
Info:                 DP16KD:    40/  208    19%
Info:             MULT18X18D:    64/  156    41%
Info:                EHXPLLL:     1/    4    25%
Info:             TRELLIS_FF:  9100/83640    10%
Info:           TRELLIS_COMB: 15500/83640    18%
Info: Max frequency for clock '$glbnet$clk': 104.25 MHz (PASS at 100.00 MHz)
"""


def test_parse_nextpnr_report():
    rep = parse_nextpnr_report(NEXTPNR_LOG)
    assert rep["utilisation"]["TRELLIS_COMB"] == (15500, 83640)
    assert rep["utilisation"]["MULT18X18D"] == (64, 156)
    assert rep["fmax"]["$glbnet$clk"] == {"fmax_mhz": 104.25, "target_mhz": 100.0, "pass": True}
    text = report_markdown(rep)
    assert "| MULT18 | 64 | 156 | 41 |" in text and "104.2 MHz" in text


def test_nextpnr_options():
    """The board build routes with the timing-driven rip-up unless told not to, and always asks for
    the report with every endpoint's arrival (fpga.timing --routed)."""
    assert nextpnr_options() == ("--seed 1 --router router2 --tmg-ripup --timing-allow-fail "
                                      "--report top_report.json --detailed-timing-report")
    opts = nextpnr_options(seed=3, router="router1", ripup=False, extra="--placer-heap-timingweight 30")
    assert opts.split() == ["--seed", "3", "--router", "router1", "--timing-allow-fail", "--report", "top_report.json",
                            "--detailed-timing-report", "--placer-heap-timingweight", "30"]


def test_report_judges_fmax_against_the_target_and_the_pll():
    """With a timing target above the PLL's frequency (``--timing``), the report judges the Fmax against both."""
    rep = parse_nextpnr_report(NEXTPNR_LOG.replace("104.25 MHz (PASS", "99.50 MHz (FAIL"))
    assert "**99.5 MHz** (target 100 MHz, FAIL; the PLL's 95 MHz: PASS)" in report_markdown({**rep, "pll_mhz": 95.0})
    assert "**99.5 MHz** (target 100 MHz, FAIL)\n" in report_markdown({**rep, "pll_mhz": 100.0})
    rep["fmax"]["$glbnet$clk"]["fmax_mhz"] = 94.7
    assert "the PLL's 95 MHz: FAIL" in report_markdown({**rep, "pll_mhz": 95.0})
