"""hw/timing.py: the pre-route timing triage on small hand-built ECP5 netlists (yosys JSON shape)."""

import pytest

from fpga import timing
from fpga.timing import DELAYS, Netlist, analyse, format_report


def _cell(kind, conns, dirs, **params):
    return {"type": kind, "connections": conns, "port_directions": dirs, "parameters": params, "attributes": {}}


def _ff(d, q, ce=None):
    conns = {"CLK": [1], "DI": [d], "Q": [q]}
    dirs = {"CLK": "input", "DI": "input", "Q": "output"}
    if ce is not None:
        conns["CE"], dirs["CE"] = [ce], "input"
    return _cell("TRELLIS_FF", conns, dirs)


def _lut(a, z, b=None):
    conns = {"A": [a], "B": [b if b is not None else "0"], "Z": [z]}
    return _cell("LUT4", conns, {"A": "input", "B": "input", "Z": "output"})


def _netlist(cells, names):
    return Netlist({"modules": {"top": {
        "attributes": {"top": "00000000000000000000000000000001"},
        "cells": cells,
        "netnames": {name: {"bits": bits, "hide_name": 0} for name, bits in names.items()},
    }}})


def route(fanout=1):
    return DELAYS["route"] + DELAYS["route_fanout"] * fanout


def test_chain_of_luts_between_registers():
    # q0 -> LUT -> LUT -> LUT -> d of r1
    cells = {"r0": _ff(20, 10), "l1": _lut(10, 11), "l2": _lut(11, 12), "l3": _lut(12, 13), "r1": _ff(13, 20)}
    net = _netlist(cells, {"a.q0": [10], "a.n1": [11], "a.n2": [12], "a.n3": [13], "b.q1": [20]})
    paths, summary = analyse(net, period=10.0)
    expected = DELAYS["ff_clk_q"] + 4 * route() + 3 * DELAYS["lut"] + DELAYS["ff_setup"]
    assert paths[0].endpoint == "b.q1"
    assert paths[0].arrival == pytest.approx(expected)
    assert [name for _, name, _ in paths[0].steps] == ["a.q0", "a.n1", "a.n2", "a.n3"]
    assert summary["failing"] == 0 and summary["endpoints"] == 2


def test_block_ram_read_into_logic_is_slow_and_reported():
    ebr = _cell("DP16KD", {"CLKA": [1], "ADA0": [10], "DOA0": [30]},
                {"CLKA": "input", "ADA0": "input", "DOA0": "output"}, REGMODE_A="NOREG")
    cells = {"r0": _ff(40, 10), "ram": ebr, "l1": _lut(30, 31), "l2": _lut(31, 32), "l3": _lut(32, 33),
             "l4": _lut(33, 34), "r1": _ff(34, 40, ce=10)}
    net = _netlist(cells, {"addr": [10], "rd": [30], "x1": [31], "x2": [32], "x3": [33], "x4": [34], "out": [40]})
    paths, summary = analyse(net, period=10.0)
    expected = DELAYS["ebr_clk_q"] + 5 * route() + 4 * DELAYS["lut"] + DELAYS["ff_setup"]
    assert paths[0].endpoint == "out" and paths[0].arrival == pytest.approx(expected)
    assert summary["failing"] == 1        # only the data input is late; CE and the RAM address are fast
    # the same RAM with its output register is fast
    ebr["parameters"]["REGMODE_A"] = "OUTREG"
    paths, summary = analyse(_netlist(cells, {"out": [40]}), period=10.0)
    assert summary["failing"] == 0


def test_carry_chain_uses_dedicated_routing_and_fanout_costs():
    ccu = lambda a, cin, s, cout: _cell("CCU2C", {"A0": [a], "CIN": [cin], "S0": [s], "COUT": [cout]},
                                        {"A0": "input", "CIN": "input", "S0": "output", "COUT": "output"})
    cells = {"r0": _ff(50, 10), "c0": ccu(10, "0", 11, 12), "c1": ccu(10, 12, 13, 14), "c2": ccu(10, 14, 15, 16),
             "r1": _ff(15, 50)}
    net = _netlist(cells, {"q": [10], "s2": [15]})
    paths, _ = analyse(net, period=10.0)
    q_route = route(3)                      # q drives three carry cells
    expected = (DELAYS["ff_clk_q"] + q_route + DELAYS["carry_in"] + DELAYS["carry"] + DELAYS["carry_sum"]
                + route() + DELAYS["ff_setup"])
    assert paths[0].arrival == pytest.approx(expected)


def test_a_bus_is_one_row_and_the_report_names_it():
    cells = {f"r{i}": _ff(100 + i, 10 + i) for i in range(4)}
    cells.update({f"l{i}": _lut(10 + i, 100 + i) for i in range(4)})
    net = _netlist(cells, {"bus": [100, 101, 102, 103], "q": [10, 11, 12, 13]})
    paths, summary = analyse(net, period=1.0, top=10)
    assert [p.endpoint for p in paths] == ["q[0]"]            # one row for the 4-bit register
    assert summary["failing"] == 4
    text = format_report(paths, summary, 1.0)
    assert "4 estimated over 1 ns" in text and "q[0]" in text


def test_combinational_loop_terminates():
    cells = {"l1": _lut(11, 10), "l2": _lut(10, 11), "r": _ff(10, 12)}
    paths, summary = analyse(_netlist(cells, {"a": [10], "b": [11]}), period=10.0)
    assert summary["endpoints"] == 1 and paths[0].arrival < 10


def test_unknown_cells_are_listed():
    cells = {"x": _cell("MYSTERY", {"O": [10]}, {"O": "output"}), "r": _ff(10, 11)}
    _, summary = analyse(_netlist(cells, {}), period=10.0)
    assert summary["unknown_cells"] == {"MYSTERY": 1}
    assert "MYSTERY x1" in format_report([], summary, 10.0)


def test_main_reads_a_netlist_file(tmp_path, capsys):
    import json
    cells = {"r0": _ff(11, 10), "l": _lut(10, 11)}
    data = {"modules": {"top": {"attributes": {"top": 1}, "cells": cells,
                                "netnames": {"q": {"bits": [10]}, "d": {"bits": [11]}}}}}
    path = tmp_path / "top.json"
    path.write_text(json.dumps(data))
    assert timing.main([str(path), "--period", "2"]) == 0
    out = capsys.readouterr().out
    assert "1 endpoints, 1 estimated over 2 ns" in out and "q" in out


def test_delay_overrides_apply_to_one_call_only():
    cells = {"r0": _ff(20, 10), "l1": _lut(10, 11), "r1": _ff(11, 20)}
    net = _netlist(cells, {"q": [10], "d": [11]})
    base, _ = analyse(net, period=10.0)
    slow, _ = analyse(net, period=10.0, delays={"lut": 5.0})
    again, _ = analyse(net, period=10.0)
    assert slow[0].arrival == pytest.approx(base[0].arrival + 5.0 - DELAYS["lut"])
    assert again[0].arrival == pytest.approx(base[0].arrival)


def test_routed_endpoints_of_a_build_report(tmp_path, capsys):
    import json
    report = {"detailed_net_timings": [
        {"net": "a", "event": "posedge clk", "driver": "x", "port": "F", "endpoints": [
            {"cell": "soc.vta.compute.alu.wr_q_TRELLIS_FF_Q_3", "port": "DI", "event": "posedge clk", "delay": [2.0, 12.5]},
            {"cell": "soc.vta.compute.alu.wr_q_TRELLIS_FF_Q_7", "port": "DI", "event": "posedge clk", "delay": [2.0, 11.0]},
            {"cell": "soc.vta.compute.alu.wr_q_TRELLIS_FF_Q_7", "port": "CE", "event": "posedge clk", "delay": [1.0, 10.5]},
            {"cell": "soc.vta.load.wgt.b_LUT4_Z_TRELLIS_FF", "port": "M", "event": "posedge clk", "delay": [1.0, 10.2]},
            {"cell": "soc.vta.store.fifo.storage.0.1$DPRAM_COMB0", "port": "WD", "event": "posedge clk",
             "delay": [1.0, 9.9]}]},
        {"net": "r", "event": "<async>", "driver": "rst", "port": "Q", "endpoints": [
            {"cell": "soc.vta.fetch.x_TRELLIS_FF_Q", "port": "LSR", "event": "posedge clk", "delay": [20.0, 30.0]}]},
    ]}
    eps = timing.routed_endpoints(report)
    assert [e[0] for e in eps] == [12.5, 11.0, 10.5, 10.2, 9.9]     # worst first, the async reset left out
    text = timing.format_routed(eps, 10.0, depth=4)
    lines = text.splitlines()
    assert lines[0] == "5 endpoints, 4 over 10 ns; worst 12.50 ns (80.0 MHz before setup)"
    assert "     3     12.50  soc.vta.compute.alu" in lines and "     1     10.20  soc.vta.load.wgt" in lines
    # one row per signal and port, the worst bit's arrival; the FIFO under the period is not listed
    assert [ln for ln in lines if ln.startswith(" 1")] == [
        " 12.50  soc.vta.compute.alu.wr_q (DI)", " 10.50  soc.vta.compute.alu.wr_q (CE)", " 10.20  soc.vta.load.wgt.b (M)"]
    path = tmp_path / "top_report.json"
    path.write_text(json.dumps(report))
    assert timing.main(["--routed", str(path)]) == 0
    assert capsys.readouterr().out.startswith("5 endpoints, 4 over 10 ns")
    path.write_text(json.dumps({"critical_paths": []}))
    with pytest.raises(ValueError, match="detailed-timing-report"):
        timing.routed_endpoints(path)
