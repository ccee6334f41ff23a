"""Timing triage of an ECP5 netlist before place and route: every slow path in one pass.

    python -m fpga.timing --config configs/ulx3s.json --period 10     (yosys only, then the analysis)
    python -m fpga.timing build/fpga/ulx3s/top.json --top 40          (the netlist of a board build)

nextpnr reports one critical path per clock after a whole place and route. This reads the netlist
yosys writes for nextpnr (``top.json``, after ``synth_ecp5``) and estimates, for every register, block
RAM and multiplier input, the latest arrival of data after the clock edge with a simple delay model of
the ECP5 speed grade 6 (the constants of :data:`DELAYS`, nextpnr's cell delays; the route delay of a
net is a flat estimate that grows with its fan-out). It lists the endpoints whose estimate exceeds the
period, worst first, with the path that makes them late, grouped by signal so that a 256-bit bus is one row.

The estimate is a ranking, not a sign-off: nextpnr's routed timing is the measure (``make
bitstream``). It finds the same worst paths as nextpnr where the logic, not the placement, makes them slow.

    python -m fpga.timing --routed build/fpga/ulx3s/top_report.json      (after a board build)

lists the same for a placed and routed build from nextpnr's own timing: the arrival of every endpoint
(``--report FILE --detailed-timing-report``, which :func:`fpga.board.nextpnr.nextpnr_options` asks for),
where nextpnr's log names one critical path per clock; endpoints over the period are counted per unit and listed per signal.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from collections import defaultdict
from dataclasses import dataclass

from sw.cli import UsageError, command, run_as_main
from sw.config import load_config

__all__ = ["Netlist", "analyse", "format_report", "routed_endpoints", "format_routed", "main", "DELAYS"]

# ------------------------------------------------------------------------------------------- the model
# nanoseconds; ECP5 -6 as nextpnr models it (clock-to-out of a DP16KD without its output register is
# the large one: read data should go straight into a register)
DELAYS = {
    "route": 0.90,            # one net, fan-out 1
    "route_fanout": 0.020,    # + this x fan-out, up to "fanout_cap" sinks
    "fanout_cap": 300,
    "lut": 0.24,              # LUT4 input -> F
    "mux": 0.17,              # PFUMX / L6MUX21 (fed inside the slice, no route before the data inputs)
    "carry_in": 0.45,         # CCU2C data input -> COUT
    "carry": 0.07,            # CCU2C CIN -> COUT (two bits)
    "carry_sum": 0.44,        # CCU2C CIN or data input -> S
    "ff_clk_q": 0.52,
    "ff_setup": 0.05,
    "ce_setup": 0.20,
    "lsr_setup": 0.30,
    "ebr_clk_q": 5.83,        # DP16KD, REGMODE NOREG
    "ebr_clk_q_reg": 1.00,    # DP16KD, REGMODE OUTREG
    "ebr_setup": 0.30,
    "mult": 3.93,             # MULT18X18D, A/B -> P with no internal registers
    "mult_clk_q": 0.80,       # MULT18X18D output register
    "mult_setup": 0.30,
    "lutram_rd": 0.45,        # TRELLIS_DPR16X4 RAD -> DO
    "lutram_clk_q": 1.00,     # a write seen at DO
    "lutram_setup": 0.30,
}

_IGNORED = {"TRELLIS_IO", "EHXPLLL", "DCCA", "GSR", "SGSR", "USRMCLK", "OSCG", "DTR", "JTAGG", "PUR"}


@dataclass
class Path:
    """One endpoint: the estimated arrival (data ready, setup included), its name and the path to it."""
    arrival: float
    endpoint: str
    cell_type: str
    steps: list          # [(arrival at the net, net name, driving cell type)], startpoint first


class Netlist:
    """The top module of a yosys JSON netlist with names for every bit."""

    def __init__(self, data: dict):
        mods = data["modules"]
        top = [n for n, mod in mods.items() if str(mod.get("attributes", {}).get("top", "0")).strip("0") != ""]
        self.name = top[0] if top else next(iter(mods))
        mod = mods[self.name]
        self.cells = mod["cells"]
        self.names: dict[int, str] = {}
        rank: dict[int, tuple] = {}
        for name, net in mod["netnames"].items():
            hidden = net.get("hide_name", 0) or name.startswith("$")
            for i, bit in enumerate(net["bits"]):
                if not isinstance(bit, int):
                    continue
                label = name if len(net["bits"]) == 1 else f"{name}[{i}]"
                key = (hidden, len(name))
                if bit not in rank or key < rank[bit]:
                    rank[bit], self.names[bit] = key, label
        self.fanout: dict[int, int] = defaultdict(int)
        self.driver: dict[int, tuple[str, str]] = {}
        for cname, cell in self.cells.items():
            dirs = cell.get("port_directions", {})
            for port, bits in cell["connections"].items():
                for bit in bits:
                    if not isinstance(bit, int):
                        continue
                    if dirs.get(port) == "output":
                        self.driver[bit] = (cname, port)
                    else:
                        self.fanout[bit] += 1

    @classmethod
    def load(cls, path) -> Netlist:
        with open(path) as f:
            return cls(json.load(f))

    def name_of(self, bit) -> str:
        return self.names.get(bit, f"${bit}")


def _param(cell, name, default=""):
    v = cell.get("parameters", {}).get(name, default)
    if isinstance(v, str) and v and set(v) <= {"0", "1"} and len(v) > 8:     # a binary-coded string
        try:
            return bytes(int(v[i:i + 8], 2) for i in range(0, len(v), 8)).decode().strip("\x00 ")
        except ValueError:
            return v
    return v


def _arcs(cell, d):
    """(combinational arcs {out_port: [(in_port, delay)]}, startpoints {out_port: delay},
    endpoints {in_port: setup}) of one cell under the delays ``d``; port names without bit indices,
    matched by prefix."""
    t = cell["type"]
    if t == "LUT4":
        return {"Z": [(p, d["lut"]) for p in "ABCD"]}, {}, {}
    if t in ("PFUMX", "L6MUX21"):
        return {"Z": [(p, d["mux"]) for p in ("ALUT", "BLUT", "C0", "D0", "D1", "SD")]}, {}, {}
    if t == "CCU2C":
        ins = ["A0", "B0", "C0", "D0", "A1", "B1", "C1", "D1"]
        return ({"COUT": [(p, d["carry_in"]) for p in ins] + [("CIN", d["carry"])],
                 "S0": [(p, d["carry_sum"]) for p in ins[:4]] + [("CIN", d["carry_sum"])],
                 "S1": [(p, d["carry_sum"]) for p in ins] + [("CIN", d["carry_sum"])]}, {}, {})
    if t == "TRELLIS_FF":
        return {}, {"Q": d["ff_clk_q"]}, {"DI": d["ff_setup"], "M": d["ff_setup"], "CE": d["ce_setup"],
                                         "LSR": d["lsr_setup"]}
    if t == "DP16KD":
        clk_q = d["ebr_clk_q_reg"] if "OUTREG" in str(_param(cell, "REGMODE_A", "")) + str(_param(cell, "REGMODE_B", "")) \
            else d["ebr_clk_q"]
        return {}, {"DOA": clk_q, "DOB": clk_q}, {p: d["ebr_setup"] for p in ("ADA", "ADB", "DIA", "DIB", "CEA", "CEB",
                                                                             "WEA", "WEB", "CSA", "CSB", "OCEA", "OCEB")}
    if t == "MULT18X18D":
        in_reg = str(_param(cell, "REG_INPUTA_CLK", "NONE")) != "NONE"
        out_reg = str(_param(cell, "REG_OUTPUT_CLK", "NONE")) != "NONE"
        if out_reg:
            return {}, {"P": d["mult_clk_q"]}, {"A": d["mult_setup"] + (0 if in_reg else d["mult"]), "B": d["mult_setup"]}
        if in_reg:
            return {}, {"P": d["mult"] + d["mult_clk_q"]}, {"A": d["mult_setup"], "B": d["mult_setup"]}
        return {"P": [("A", d["mult"]), ("B", d["mult"])]}, {}, {}
    if t == "TRELLIS_DPR16X4":
        return ({"DO": [("RAD", d["lutram_rd"])]}, {"DO": d["lutram_clk_q"]},
                {p: d["lutram_setup"] for p in ("WAD", "DI", "WRE")})
    return None


def _port_base(port):
    return re.sub(r"\d+$", "", port)


def analyse(net: Netlist, period: float = 10.0, top: int = 40, delays: dict | None = None,
            skip=("rst",)) -> tuple[list[Path], dict]:
    """Arrival estimate of every endpoint; returns the ``top`` worst paths (one per signal group) and
    a summary (endpoints over the period, worst arrival, cell types not modelled). Endpoints whose
    worst path starts at a net named in ``skip`` are left out (the synchronous reset, whose fan-out
    to every register would otherwise top the list; nextpnr routes it as any net)."""
    d = {**DELAYS, **(delays or {})}
    arrival: dict[int, float] = {}
    came_from: dict[int, int | None] = {}
    unknown = defaultdict(int)
    info = {}
    for cname, cell in net.cells.items():
        a = _arcs(cell, d)
        if a is None and cell["type"] not in _IGNORED:
            unknown[cell["type"]] += 1
        info[cname] = a

    feeds_mux = set()        # nets into a PFUMX/L6MUX21 data input or a carry input: no general routing
    for cell in net.cells.values():
        ports = {"PFUMX": ("ALUT", "BLUT"), "L6MUX21": ("D0", "D1"), "CCU2C": ("CIN",)}.get(cell["type"], ())
        for port in ports:
            for bit in cell["connections"].get(port, []):
                feeds_mux.add(bit)

    def route(bit):
        if bit in feeds_mux:
            return 0.0
        return d["route"] + d["route_fanout"] * min(max(net.fanout.get(bit, 1), 1), d["fanout_cap"])

    def inputs(cell, arcs):
        for in_port, delay in arcs:
            for p, bits in cell["connections"].items():
                if p == in_port or _port_base(p) == in_port:
                    for b in bits:
                        if isinstance(b, int):
                            yield b, delay

    def arrive(bit0):
        """Arrival at the driver's output of ``bit0`` (iterative depth-first, memoised; a
        combinational loop is cut where it closes: the bit on the stack counts as 0 ns)."""
        stack = [(bit0, False)]
        open_ = set()
        while stack:
            bit, expanded = stack.pop()
            if bit in arrival:
                continue
            drv = net.driver.get(bit)
            a = info[drv[0]] if drv is not None else None
            if a is None:
                arrival[bit], came_from[bit] = 0.0, None
                continue
            cname, port = drv
            cell = net.cells[cname]
            comb, starts, _ = a
            base = _port_base(port)
            arcs = comb.get(base, comb.get(port, []))
            if not expanded:
                open_.add(bit)
                stack.append((bit, True))
                stack.extend((b, False) for b, _ in inputs(cell, arcs) if b not in arrival and b not in open_)
                continue
            best, frm = starts.get(base, starts.get(port, 0.0)), None
            for b, delay in inputs(cell, arcs):
                t = arrival.get(b, 0.0) + route(b) + delay
                if t > best:
                    best, frm = t, b
            arrival[bit], came_from[bit] = best, frm
            open_.discard(bit)
        return arrival[bit0]

    ends = []
    for cname, cell in net.cells.items():
        a = info[cname]
        if a is None:
            continue
        _, _, setups = a
        for port, bits in cell["connections"].items():
            setup = setups.get(_port_base(port), setups.get(port))
            if setup is None:
                continue
            for b in bits:
                if isinstance(b, int) and net.driver.get(b) is not None:
                    ends.append((arrive(b) + route(b) + setup, b, cname, port))
    def start_of(bit):
        walked = set()
        while came_from.get(bit) is not None and bit not in walked:
            walked.add(bit)
            bit = came_from[bit]
        return net.name_of(bit)

    if skip:                # paths from these nets (the reset: a fan-out to every register) are left out
        ends = [e for e in ends if start_of(e[1]) not in skip]
    ends.sort(key=lambda e: -e[0])
    failing = sum(1 for e in ends if e[0] > period)

    def group(name):
        return re.sub(r"\[\d+\]", "", name)

    seen, paths = set(), []
    for t, b, cname, port in ends:
        cell = net.cells[cname]
        ep = _endpoint_name(net, cell, cname, port)
        g = group(ep)
        if g in seen:
            continue
        seen.add(g)
        steps, bit, walked = [], b, set()
        while bit is not None and bit not in walked:      # (a loop ends the walk)
            walked.add(bit)
            drv = net.driver.get(bit)
            steps.append((arrival.get(bit, 0.0), net.name_of(bit), net.cells[drv[0]]["type"] if drv else "input"))
            bit = came_from.get(bit)
        paths.append(Path(t, ep, cell["type"], steps[::-1]))
        if len(paths) >= top:
            break
    summary = {"endpoints": len(ends), "failing": failing, "worst": ends[0][0] if ends else 0.0,
               "unknown_cells": dict(unknown)}
    return paths, summary


def _endpoint_name(net, cell, cname, port):
    """A readable name of an endpoint: a register's output net, else the cell and port."""
    if cell["type"] == "TRELLIS_FF":
        q = cell["connections"].get("Q", [None])[0]
        return net.name_of(q) + ("" if port == "DI" else f" ({port})")
    return f"{cell['type']} {cname.split('.')[-1][:40]}.{_port_base(port)}"


def _short(name, width=70):
    return name if len(name) <= width else "..." + name[-(width - 3):]


def format_report(paths, summary, period, detail: int = 8) -> str:
    out = [f"{summary['endpoints']} endpoints, {summary['failing']} estimated over {period:g} ns; "
           f"worst {summary['worst']:.2f} ns ({1000 / summary['worst']:.1f} MHz)" if summary["worst"] else "no endpoints"]
    if summary["unknown_cells"]:
        out.append("cells not modelled (their outputs count as 0 ns): " +
                   ", ".join(f"{k} x{v}" for k, v in sorted(summary["unknown_cells"].items())))
    out.append("")
    out.append(f"{'ns':>6}  endpoint (one per signal)                                               start")
    for p in paths:
        start = p.steps[0] if p.steps else (0, "?", "?")
        out.append(f"{p.arrival:6.2f}  {_short(p.endpoint):70}  {start[2]} {_short(start[1], 50)}")
    shown = set()
    for p in paths:
        key = tuple(name for _, name, _ in p.steps[:-1])
        if key in shown:
            continue
        shown.add(key)
        if len(shown) > detail:
            break
        out.append("")
        out.append(f"{p.arrival:.2f} ns -> {p.endpoint}")
        for t, name, kind in p.steps:
            out.append(f"    {t:6.2f}  {kind:12} {_short(name, 90)}")
    return "\n".join(out)


# ----------------------------------------------------------------------------- a routed build's endpoints
def _signal_of(cell):
    """The signal of a cell from its name in a routed netlist: yosys names a mapped cell after a signal it
    drives or reads plus the cell type (``<signal>_TRELLIS_FF_Q_<bit>``, ``<signal>_LUT4_Z...``), nextpnr
    adds ``$<part>`` to cells it splits."""
    return re.split(r"_(?:TRELLIS_FF|LUT4|CCU2C|PFUMX|L6MUX21)(?:_|$)|\$", cell)[0]


def routed_endpoints(report) -> list[tuple[float, str, str]]:
    """``[(arrival ns, cell, port)]`` of every endpoint of a clock's own paths in a routed build, worst
    first, from nextpnr's JSON report (a path or the parsed dict) written with ``--report FILE
    --detailed-timing-report``; the arrival is the latest data arrival after the launching edge
    (setup not included). Paths from or to ``<async>`` are left out."""
    if not isinstance(report, dict):
        with open(report) as f:
            report = json.load(f)
    nets = report.get("detailed_net_timings")
    if nets is None:
        raise ValueError("the nextpnr report has no detailed_net_timings: run nextpnr with --detailed-timing-report")
    eps = []
    for net in nets:
        for e in net["endpoints"]:
            if e["event"] != net["event"] or "async" in e["event"]:
                continue
            delay = e["delay"]
            eps.append((max(delay) if isinstance(delay, list) else delay, e["cell"], e["port"]))
    eps.sort(key=lambda e: -e[0])
    return eps


def format_routed(eps, period: float, top: int = 40, depth: int = 4) -> str:
    """The endpoints of :func:`routed_endpoints` over ``period``: how many, per unit (the first ``depth``
    levels of the hierarchy), and the worst ``top`` signals (a bus is one row: its worst bit)."""
    late = [e for e in eps if e[0] > period]
    out = [f"{len(eps)} endpoints, {len(late)} over {period:g} ns; worst {eps[0][0] if eps else 0:.2f} ns"
           + (f" ({1000 / eps[0][0]:.1f} MHz before setup)" if eps else "")]
    units = defaultdict(lambda: [0, 0.0])
    for t, cell, _ in late:
        u = units[".".join(_signal_of(cell).split(".")[:depth])]
        u[0] += 1
        u[1] = max(u[1], t)
    if units:
        out += ["", "  late  worst ns  unit"]
        out += [f"{n:6d}  {w:8.2f}  {u}" for u, (n, w) in sorted(units.items(), key=lambda x: (-x[1][0], x[0]))]
    out += ["", f"{'ns':>6}  signal (port)"]
    seen = set()
    for t, cell, port in late:
        key = (_signal_of(cell), port)
        if key in seen:
            continue
        seen.add(key)
        out.append(f"{t:6.2f}  {_short(key[0], 100)} ({port})")
        if len(seen) >= top:
            break
    return "\n".join(out)


def synthesise(board="ulx3s", config="configs/ulx3s.json", freq_mhz=100.0, build_dir=None):
    """Elaborate the board design and run only yosys (no place and route): a few minutes. Returns
    the path of the JSON netlist."""
    import subprocess
    from pathlib import Path

    from .board.build import ROOT, board_plan
    out = Path(build_dir or ROOT / "build" / "timing" / board)
    board_plan(board, config, freq_mhz, out)
    subprocess.run([os.environ["YOSYS"], "-q", "-l", "top.rpt", "top.ys"], cwd=out, check=True)
    return out / "top.json"


@command
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json", nargs="?", help="yosys JSON netlist after synth_ecp5 (build/fpga/<board>/top.json); "
                                                "without it, --config is synthesised first (yosys only)")
    parser.add_argument("--config", default="configs/ulx3s.json", help="board config to synthesise (without json)")
    parser.add_argument("--period", type=float, default=10.0, help="clock period, ns")
    parser.add_argument("--top", type=int, default=40, help="signals to list")
    parser.add_argument("--detail", type=int, default=8, help="paths to print in full")
    parser.add_argument("--routed", metavar="REPORT", help="instead: the endpoints over the period in nextpnr's "
                        "JSON report of a routed build (--report REPORT --detailed-timing-report)")
    args = parser.parse_args(argv)
    if args.routed:
        if args.json:
            raise UsageError("give either a netlist or --routed REPORT, not both")
        print(format_routed(routed_endpoints(args.routed), args.period, args.top))
        return 0
    if not args.json:
        load_config(args.config)            # a wrong config name is an error before anything is imported or run
    path = args.json or synthesise(config=args.config, freq_mhz=1000 / args.period)
    paths, summary = analyse(Netlist.load(path), args.period, args.top)
    print(format_report(paths, summary, args.period, args.detail))
    return 0


if __name__ == "__main__":
    run_as_main(__spec__)
