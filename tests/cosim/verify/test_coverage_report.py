"""The coverage report (cosim.verify.coverage_report): untoggled signals listed with their bits, and each untoggled
point explained or listed as a hole."""
from cosim.verify import coverage_dat, coverage_report


def _toggle(module, signal, count):
    return {"page": f"v_toggle/{module}", "o": signal, "count": count}


def test_untoggled_signals_are_listed_with_their_bits(tmp_path):
    pts = [_toggle("vta_top.axi", f"addr[{b}]:{d}", int(b < 4)) for b in range(8) for d in ("0->1", "1->0")]
    pts += [_toggle("vta_top", "busy:0->1", 0), _toggle("vta_top", "busy:1->0", 5),
            _toggle("vta_axi_handshake__W3_Cz5", "cycle[9]:0->1", 0)]
    assert coverage_dat.untoggled_signals(pts) == [("vta_top.axi", "addr", 8, 16, [4, 5, 6, 7]),
                                               ("vta_top", "busy", 1, 2, [])]
    verilog = tmp_path / "vta_top.v"
    verilog.write_text("module a;\n")
    text = coverage_report.report(pts, verilog)
    assert "Signals with bits never toggled: 2, 9 toggle points" in text
    assert "  vta_top.axi, addr: 8/16, bits 4-7" in text
    # no Verilog to explain them by and no rule for them: every untoggled point is a hole, listed by signal
    assert "by Amaranth-level reason (cosim/verify/toggles.py): 9 not explained:" in text
    assert "  vta_top.axi, addr: bits 4-7\n" in text and "  vta_top, busy: bits 0\n" in text
