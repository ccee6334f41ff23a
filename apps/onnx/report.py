"""The per-layer report of a network run: a printed table, a CSV and a PNG chart.

Per layer (accelerator layers and CPU layers and islands alike): name, kind, output shape, where it
ran (vta / cpu), MACs, cycles (on the RTL; the golden model does not count cycles), MAC utilization =
MACs / (cycles x BATCH x BLOCK_IN x BLOCK_OUT), the roofline fraction = max(MACs / peak, DRAM bytes /
bytes per cycle) / cycles, DRAM bytes moved by the accelerator (loads of inp, wgt, acc, uop and
stores), wall seconds. Totals: the share of MACs that ran on the accelerator, cycles, inferences per
second at 100 and 200 MHz, utilization over the offloaded conv layers.
"""

from __future__ import annotations

import csv

from sw.tables import Column
from sw.tables import format_table as _table

__all__ = ["rows", "totals", "format_table", "write_csv", "write_png", "COLUMNS"]

COLUMNS = ("layer", "kind", "shape", "where", "macs", "cycles", "utilization", "roofline_fraction",
           "dram_bytes", "seconds")
_BYTES = ("inp_load_nbytes", "wgt_load_nbytes", "acc_load_nbytes", "uop_load_nbytes", "out_store_nbytes")


def rows(records, cfg, dram_bytes_per_cycle: float = 8) -> list[dict]:
    """Report rows from the runner's records."""
    peak = cfg.BATCH * cfg.BLOCK_IN * cfg.BLOCK_OUT
    out = []
    for r in records:
        c = r["counters"]
        cycles = int(c.get("cycles", 0) or 0)
        nbytes = int(sum(c.get(k, 0) for k in _BYTES))
        bound = max(r["macs"] / peak, nbytes / dram_bytes_per_cycle)
        out.append({"layer": r["name"], "kind": r["kind"], "shape": "x".join(map(str, r["out_shape"])),
                    "where": r["where"], "macs": r["macs"], "cycles": cycles,
                    "utilization": r["macs"] / (cycles * peak) if cycles else float("nan"),
                    "roofline_fraction": bound / cycles if cycles else float("nan"),
                    "dram_bytes": nbytes, "seconds": r["seconds"]})
    return out


def totals(report_rows, cfg) -> dict:
    """Whole-network figures."""
    peak = cfg.BATCH * cfg.BLOCK_IN * cfg.BLOCK_OUT
    cycles = sum(r["cycles"] for r in report_rows)
    conv = [r for r in report_rows if r["kind"] == "conv" and r["where"] == "vta"]
    conv_cycles = sum(r["cycles"] for r in conv)
    macs = sum(r["macs"] for r in report_rows)
    vta_macs = sum(r["macs"] for r in report_rows if r["where"] == "vta")
    t = {"layers": len(report_rows), "vta_layers": sum(r["where"] == "vta" for r in report_rows),
         "islands": sum(r["kind"] == "island" for r in report_rows),
         "macs": macs, "vta_macs": vta_macs, "mac_share": vta_macs / macs if macs else float("nan"), "cycles": cycles,
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
         Column("dram_bytes", "DRAM B", ",d"), Column("seconds", "s", ".3f"))


def format_table(report_rows, cfg) -> str:
    lines = [_table(report_rows, TABLE)]
    t = totals(report_rows, cfg)
    lines.append(f"total: {t['layers']} layers ({t['vta_layers']} on VTA, {t['islands']} CPU islands), "
                 f"{t['macs'] / 1e9:.3f} G MAC of which {t['mac_share']:.1%} on the accelerator, "
                 f"{t['dram_bytes'] / 1e6:.1f} MB DRAM, {t['seconds']:.2f} s in layers")
    if t["cycles"]:
        lines.append(f"cycles {t['cycles']:,}; {t['inferences_per_s_100MHz']:.2f} inferences/s at 100 MHz, "
                     f"{t['inferences_per_s_200MHz']:.2f} at 200 MHz; MAC utilization over the offloaded "
                     f"conv layers {t['conv_utilization']:.1%}")
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
