"""The per-layer report of a network run: a printed table, a CSV and a PNG chart.

Per layer (accelerator layers and CPU layers and islands alike): name, kind, output shape, where it
ran (vta / cpu), MACs, cycles (on the RTL; the golden model does not count cycles), MAC utilization =
MACs / (cycles x BATCH x BLOCK_IN x BLOCK_OUT), the roofline fraction = max(MACs / peak, DRAM bytes /
bytes per cycle, ALU cycles) / cycles, DRAM bytes moved by the accelerator (loads of inp, wgt, acc, uop and
stores), wall seconds. The ALU cycles (column ``alu_cycles``, a bound of its own: the compute module runs them
beside the GEMMs, so a layer whose requantization outlasts its GEMMs is bound by it) are its micro-ops at one
per cycle, except those of POST instructions (the post-processing unit, :data:`sw.ops.schedule.POST_COUNTERS`):
their rows at one per cycle (two with the residual) and each instruction's fixed cost. Totals: the share
of MACs that ran on the accelerator, cycles and the sum of the layers' bounds, inferences per second at
100 and 200 MHz, utilization over the offloaded conv layers.
"""

from __future__ import annotations

import csv

import numpy as np

from sw.tables import Column
from sw.tables import format_table as _table

__all__ = ["rows", "totals", "by_group", "format_table", "format_groups", "write_csv", "write_png", "alu_cycles",
           "COLUMNS"]

COLUMNS = ("layer", "kind", "shape", "where", "macs", "cycles", "utilization", "roofline_fraction",
           "alu_cycles", "dram_bytes", "seconds", "group")
_BYTES = ("inp_load_nbytes", "wgt_load_nbytes", "acc_load_nbytes", "uop_load_nbytes", "out_store_nbytes")


def rows(records, cfg, dram_bytes_per_cycle: float = 8) -> list[dict]:
    """Report rows from the runner's records."""
    peak = cfg.BATCH * cfg.BLOCK_IN * cfg.BLOCK_OUT
    out = []
    for r in records:
        c = r["counters"]
        cycles = int(c.get("cycles", 0) or 0)
        nbytes = int(sum(c.get(k, 0) for k in _BYTES))
        alu = alu_cycles(c)
        bound = max(r["macs"] / peak, nbytes / dram_bytes_per_cycle, float(alu))
        out.append({"layer": r["name"], "kind": r["kind"], "shape": "x".join(map(str, r["out_shape"])),
                    "where": r["where"], "macs": r["macs"], "cycles": cycles,
                    "utilization": r["macs"] / (cycles * peak) if cycles else float("nan"),
                    "bound_cycles": bound if r["where"] == "vta" else 0.0,
                    "roofline_fraction": bound / cycles if cycles else float("nan"), "alu_cycles": alu,
                    "dram_bytes": nbytes, "seconds": r["seconds"], "group": _group(r),
                    "ops": r.get("ops", r["kind"])})
    return out


def alu_cycles(counters: dict) -> int:
    """The ALU's bound in cycles of a layer's counters: a cycle per ALU micro-op, and for POST instructions the
    planner's cycles of them (``post_cycles``) in place of their micro-ops (``post_uops``)."""
    return int(counters.get("alu_counter", 0)) - int(counters.get("post_uops", 0)) + int(counters.get("post_cycles", 0))


def _group(r) -> str:
    """The layer's class for the breakdown: 'conv 3x3' / 'conv 1x1' (by kernel), 'stem' (fewer than 8 input
    channels), 'depthwise', with ' + add' (' + pointwise') for a conv with a residual add (a table island) in its
    epilogue, or the kind ('add',
    'dense', 'deconv', 'matmul', CPU kinds)."""
    if r["kind"].startswith("conv+"):
        return _group({**r, "kind": "conv"}) + " + " + r["kind"][5:]
    if r["kind"] != "conv" or len(r.get("in_shape", ())) != 4 or not r["macs"]:
        return r["kind"]
    cin = r["in_shape"][1]
    per_output = r["macs"] // max(1, int(np.prod(r["out_shape"])))     # C_in / groups * kh * kw
    if cin < 8:
        return "stem"
    if per_output < cin:            # one input channel per group: depthwise (its kernel is k x k)
        return "depthwise" if int(round(per_output ** 0.5)) ** 2 == per_output else "grouped conv"
    k = int(round((per_output / cin) ** 0.5))
    return f"conv {k}x{k}"


def by_group(report_rows) -> list[dict]:
    """Cycles, MACs and utilization per layer class (``group``), largest share of cycles first."""
    groups: dict[str, dict] = {}
    for r in report_rows:
        g = groups.setdefault(r["group"], {"group": r["group"], "layers": 0, "macs": 0, "cycles": 0})
        g["layers"] += 1
        g["macs"] += r["macs"]
        g["cycles"] += r["cycles"]
    total = sum(g["cycles"] for g in groups.values()) or 1
    for g in groups.values():
        g["share"] = g["cycles"] / total
    return sorted(groups.values(), key=lambda g: -g["cycles"])


def totals(report_rows, cfg) -> dict:
    """Whole-network figures."""
    peak = cfg.BATCH * cfg.BLOCK_IN * cfg.BLOCK_OUT
    cycles = sum(r["cycles"] for r in report_rows)
    conv = [r for r in report_rows if r["kind"].startswith("conv") and r["where"] == "vta"]
    conv_cycles = sum(r["cycles"] for r in conv)
    macs = sum(r["macs"] for r in report_rows)
    vta_macs = sum(r["macs"] for r in report_rows if r["where"] == "vta")
    t = {"layers": len(report_rows), "vta_layers": sum(r["where"] == "vta" for r in report_rows),
         "islands": sum(r["kind"] == "island" for r in report_rows),
         "macs": macs, "vta_macs": vta_macs, "mac_share": vta_macs / macs if macs else float("nan"), "cycles": cycles,
         "bound_cycles": sum(r.get("bound_cycles", 0.0) for r in report_rows),
         "alu_cycles": sum(r.get("alu_cycles", 0) for r in report_rows),
         "dram_bytes": sum(r["dram_bytes"] for r in report_rows),
         "seconds": sum(r["seconds"] for r in report_rows),
         "conv_utilization": sum(r["macs"] for r in conv) / (conv_cycles * peak) if conv_cycles else float("nan")}
    t["inferences_per_s_100MHz"] = 100e6 / cycles if cycles else float("nan")
    t["inferences_per_s_200MHz"] = 200e6 / cycles if cycles else float("nan")
    return t


TABLE = (Column("layer", "layer", lambda v: v[:30]), Column("kind", "kind"), Column("shape", "shape"),
         Column("where", "where"), Column("macs", "MACs", ",d"),
         Column("cycles", "cycles", lambda v: f"{v:,}" if v else "-"),
         Column("utilization", "util", ".1%"), Column("roofline_fraction", "roofl", ".1%"),
         Column("alu_cycles", "ALU bound", ",d"),
         Column("dram_bytes", "DRAM B", ",d"), Column("seconds", "s", ".3f"))


def format_groups(report_rows, cfg, markdown: bool = False) -> str:
    """The cycles by layer class (:func:`by_group`) as a table, with MAC utilization per class."""
    peak = cfg.BATCH * cfg.BLOCK_IN * cfg.BLOCK_OUT
    groups = [g for g in by_group(report_rows) if g["cycles"]]      # the accelerator's layers
    for g in groups:
        g["utilization"] = g["macs"] / (g["cycles"] * peak) if g["cycles"] else float("nan")
    return _table(groups, (Column("group", "layers of kind"), Column("layers", "n", "d"),
                           Column("cycles", "cycles", ",d"), Column("share", "of cycles", ".1%"),
                           Column("macs", "MACs", ",d"), Column("utilization", "MAC util", ".1%")), markdown)


def format_table(report_rows, cfg) -> str:
    lines = [_table(report_rows, TABLE)]
    t = totals(report_rows, cfg)
    share = f"of which {t['mac_share']:.1%} on the accelerator" if t["macs"] else "(no convolution or matrix product)"
    lines.append(f"total: {t['layers']} layers ({t['vta_layers']} on VTA, {t['islands']} CPU islands), "
                 f"{t['macs'] / 1e9:.3f} G MAC {share}, "
                 f"{t['dram_bytes'] / 1e6:.1f} MB DRAM, {t['seconds']:.2f} s in layers")
    if t["vta_layers"]:
        lines.append(f"ALU bound {t['alu_cycles']:,} cycles (a micro-op a cycle; POST instructions a row a cycle, two "
                     f"with the residual, and their fixed cost)")
    islands = [r for r in report_rows if r["kind"] == "island"]
    if islands:
        secs = sum(r["seconds"] for r in islands)
        lines.append(f"CPU islands (onnxruntime): {len(islands)}, {secs:.3f} s = {secs / max(t['seconds'], 1e-12):.1%} "
                     f"of the time in layers: " + ", ".join(f"{r['layer']} ({r['ops']})" for r in islands))
    if t["cycles"]:
        lines.append(f"cycles {t['cycles']:,}; {t['inferences_per_s_100MHz']:.2f} inferences/s at 100 MHz, "
                     f"{t['inferences_per_s_200MHz']:.2f} at 200 MHz; MAC utilization over the offloaded "
                     f"conv layers {t['conv_utilization']:.1%}")
        lines.append(f"the layers' bounds (GEMM, DRAM or ALU, the roofl column) sum to {t['bound_cycles']:,.0f} cycles: "
                     f"{t['bound_cycles'] / t['cycles']:.1%} of the run")
    else:
        lines.append("cycles: not counted on the golden model (run on the RTL: --target rtl)")
    return "\n".join(lines)


def write_csv(report_rows, path):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        for r in report_rows:
            w.writerow({k: r[k] for k in COLUMNS})


def write_png(report_rows, path, title=""):
    """Per-layer chart of every layer: cycles of the accelerator's layers with their MAC utilization
    (top), wall seconds of each layer coloured by where it ran (bottom)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r["layer"] for r in report_rows]
    x = range(len(report_rows))
    fig, (ax, bx) = plt.subplots(2, 1, figsize=(max(8, 0.35 * len(names)), 7), sharex=True)
    colour = {"vta": "tab:blue", "cpu": "tab:orange"}
    ax.bar(x, [r["cycles"] for r in report_rows], color=[colour[r["where"]] for r in report_rows])
    ax.set_ylabel("cycles (RTL; 0 on the golden model)")
    ax2 = ax.twinx()
    ax2.plot(x, [r["utilization"] * 100 for r in report_rows], "o", color="tab:red")
    ax2.set_ylabel("MAC utilization %")
    ax2.set_ylim(0, 100)
    bx.bar(x, [r["seconds"] for r in report_rows], color=[colour[r["where"]] for r in report_rows])
    bx.set_ylabel("wall s (blue VTA, orange CPU)")
    bx.set_xticks(list(x), names, rotation=90, fontsize=7)
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
