"""The per-layer report of a network run: a printed table, a CSV and a PNG chart.

Per layer: name, kind, output shape, where it ran (vta / cpu), MACs, cycles (on the RTL; the golden
model does not count cycles), MAC utilization = MACs / (cycles x BATCH x BLOCK_IN x BLOCK_OUT), the
roofline fraction = max(MACs / peak, DRAM bytes / bytes per cycle) / cycles, DRAM bytes moved by the
accelerator (loads of inp, wgt, acc, uop and stores), wall seconds. Totals: cycles, inferences per
second at 100 and 200 MHz, utilization over the offloaded conv layers.
"""

from __future__ import annotations

import csv

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
    t = {"layers": len(report_rows), "vta_layers": sum(r["where"] == "vta" for r in report_rows),
         "macs": sum(r["macs"] for r in report_rows), "cycles": cycles,
         "dram_bytes": sum(r["dram_bytes"] for r in report_rows),
         "seconds": sum(r["seconds"] for r in report_rows),
         "conv_utilization": sum(r["macs"] for r in conv) / (conv_cycles * peak) if conv_cycles else float("nan")}
    t["inferences_per_s_100MHz"] = 100e6 / cycles if cycles else float("nan")
    t["inferences_per_s_200MHz"] = 200e6 / cycles if cycles else float("nan")
    return t


def _pct(x):
    return "      -" if x != x else f"{x:7.1%}"


def format_table(report_rows, cfg) -> str:
    lines = [f"{'layer':26s} {'kind':10s} {'shape':>14s} {'where':5s} {'MACs':>11s} {'cycles':>10s} "
             f"{'util':>7s} {'roofl':>7s} {'DRAM B':>10s} {'s':>6s}"]
    for r in report_rows:
        lines.append(f"{r['layer'][:26]:26s} {r['kind']:10s} {r['shape']:>14s} {r['where']:5s} {r['macs']:11d} "
                     f"{(r['cycles'] or '-'):>10} {_pct(r['utilization'])} {_pct(r['roofline_fraction'])} "
                     f"{r['dram_bytes']:10d} {r['seconds']:6.2f}")
    t = totals(report_rows, cfg)
    lines.append(f"total: {t['layers']} layers ({t['vta_layers']} on VTA), {t['macs'] / 1e9:.3f} G MAC, "
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
    """Bar chart of per-layer cycles (or seconds without cycles) and the MAC utilization line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    vta = [r for r in report_rows if r["where"] == "vta"]
    names = [r["layer"] for r in vta]
    have_cycles = any(r["cycles"] for r in vta)
    vals = [r["cycles"] if have_cycles else r["seconds"] for r in vta]
    fig, ax = plt.subplots(figsize=(max(8, 0.35 * len(vta)), 4.5))
    ax.bar(range(len(vta)), vals, color=["tab:blue" if r["kind"] == "conv" else "tab:gray" for r in vta])
    ax.set_ylabel("cycles" if have_cycles else "seconds (golden model)")
    ax.set_xticks(range(len(vta)), names, rotation=90, fontsize=7)
    if have_cycles:
        ax2 = ax.twinx()
        ax2.plot(range(len(vta)), [r["utilization"] * 100 for r in vta], "o-", color="tab:red")
        ax2.set_ylabel("MAC utilization %")
        ax2.set_ylim(0, 100)
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
