"""A sweep's results as tables and plots: every (point, network, board) row, the Pareto fronts, the best configs.

:func:`rows` flattens the results of :func:`apps.dse.sweep.run_sweep`: per point, network and board the cycles of
the network on the RTL, the clock (the measured Fmax where there is one, else the board's) and the inferences per
second at it, the resources of the board's part family (LUTs as the part's limit counts them, FF, DSP, block RAM,
UltraRAM), the utilisation of each and whether the point fits. :func:`pareto` is the front of the fitting points
in (resource, cycles), :func:`best` the fitting point with the fewest cycles per (network, board) (ties: fewer
LUTs). :func:`write` writes ``points.csv``, ``points.json``, ``summary.md`` and a PNG per (network, board).
"""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path

from sw.tables import Column, format_table, write_markdown

__all__ = ["rows", "pareto", "best", "failures", "summary", "write", "write_png", "CSV_COLUMNS"]

CSV_COLUMNS = ("point", "network", "board", "part", "family", "cycles", "exact", "vta_layers", "layers", "clock_mhz",
               "clock_source",
               "inferences_per_s", "LUT", "FF", "DSP", "BRAM", "URAM", "LUT_use", "FF_use", "DSP_use", "BRAM_use",
               "fits", "over", "fmax_mhz", "rtl_seconds", "error")


def rows(results: dict) -> list[dict]:
    """One row per (point, network, board); a row of a failed part has its ``error`` and blanks where it failed."""
    out = []
    for p in results["points"]:
        for net in results["networks"]:
            r = p["rtl"].get(net["name"], {"error": "not run"})
            for b in results["boards"]:
                s = p["synth"].get(b["family"], {"error": "not run"})
                f = p["fmax"].get(b["board"], {})
                row = {"point": p["name"], **p["values"], "network": net["name"], "board": b["board"],
                       "part": b["label"], "family": b["family"]}
                errors = [f"{kind}: {res['error']}" for kind, res in (("rtl", r), ("synth", s), ("fmax", f))
                          if "error" in res]
                cycles = r.get("cycles") if "error" not in r else None
                clock, source = (f["fmax_mhz"], "fmax") if "fmax_mhz" in f else (b["clock_mhz"], "board")
                row.update(cycles=cycles, exact=r.get("exact"), vta_layers=r.get("vta_layers"), layers=r.get("layers"),
                           clock_mhz=clock, clock_source=source,
                           inferences_per_s=clock * 1e6 / cycles if cycles else None,
                           fmax_mhz=f.get("fmax_mhz"), rtl_seconds=r.get("seconds"))
                if "error" in s:
                    row.update(LUT=None, FF=None, DSP=None, BRAM=None, URAM=None, fits=None, over="")
                else:
                    dev = s["devices"][b["label"]]
                    use = dev["use"]
                    row.update(LUT=s["LUT"], FF=s["counts"].get("FF", 0), DSP=s["counts"].get("DSP", 0), BRAM=s["BRAM"],
                               URAM=s["counts"].get("URAM", 0), fits=dev["fits"],
                               over=" ".join(k for k, v in use.items() if v > 1),
                               **{f"{k}_use": use.get(k) for k in ("LUT", "FF", "DSP", "BRAM")})
                row["error"] = "; ".join(e.splitlines()[0] for e in errors)
                out.append(row)
    return out


def _usable(rows_: list[dict]) -> list[dict]:
    return [r for r in rows_ if r.get("fits") and r.get("cycles")]


def pareto(rows_: list[dict], x: str, y: str = "cycles") -> list[dict]:
    """The rows no other row beats in both ``x`` and ``y`` (smaller is better in both), by ``x``; rows missing
    either are left out."""
    items = sorted((r for r in rows_ if r.get(x) is not None and r.get(y) is not None), key=lambda r: (r[x], r[y]))
    front, best_y = [], math.inf
    for r in items:
        if r[y] < best_y:
            front.append(r)
            best_y = r[y]
    return front


def best(rows_: list[dict]) -> dict:
    """(network, board) -> the fitting row with the fewest cycles (ties: fewer LUTs), or None when no point fits."""
    out: dict = {}
    for r in rows_:
        out.setdefault((r["network"], r["board"]), None)
    for r in _usable(rows_):
        key = (r["network"], r["board"])
        if out[key] is None or (r["cycles"], r["LUT"]) < (out[key]["cycles"], out[key]["LUT"]):
            out[key] = r
    return out


def failures(results: dict) -> list[tuple[str, str, str, str]]:
    """(point, kind, network / family / board, error) of every failed result."""
    return [(p["name"], kind, name, res["error"]) for p in results["points"] for kind in ("rtl", "synth", "fmax")
            for name, res in p[kind].items() if "error" in res]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")


def png_name(sweep: str, network: str, board: str) -> str:
    return f"{_slug(sweep)}-{_slug(network)}-{_slug(board)}.png"


def write_png(rows_: list[dict], path: str | Path, title: str) -> None:
    """Cycles per inference against LUTs (left) and DSPs (right) of one (network, board): the fitting points (blue),
    the points that do not fit (grey crosses), the Pareto front of the fitting ones (red, its points named) and the
    best fitting point (a star); inferences/s on the right axis."""
    import matplotlib
    import numpy as np

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    measured = [r for r in rows_ if r.get("cycles") and r.get("LUT") is not None]
    fig, axes = plt.subplots(1, 2, figsize=(13, 5.2))
    clock = measured[0]["clock_mhz"] if measured else 100.0
    top = best(measured).get((measured[0]["network"], measured[0]["board"])) if measured else None
    for ax, x, label in ((axes[0], "LUT", "LUTs (as the part's limit counts them)"), (axes[1], "DSP", "DSP blocks")):
        ok = [r for r in measured if r["fits"]]
        no = [r for r in measured if not r["fits"]]
        ax.scatter([r[x] for r in no], [r["cycles"] / 1e6 for r in no], marker="x", color="0.6", label="does not fit")
        ax.scatter([r[x] for r in ok], [r["cycles"] / 1e6 for r in ok], color="tab:blue", label="fits")
        front = pareto(ok, x)
        if front:
            ax.step([r[x] for r in front], [r["cycles"] / 1e6 for r in front], where="post", color="tab:red",
                    label="Pareto front (fitting points)")
        if top is not None:
            ax.scatter([top[x]], [top["cycles"] / 1e6], marker="*", s=220, color="gold", edgecolor="black", zorder=3,
                       label=f"best: {top['point']}")
        span = max((r["cycles"] for r in measured), default=1) / 1e6
        for i, r in enumerate(sorted(front, key=lambda r: -r["cycles"])):       # labels stacked, each with an arrow
            ax.annotate(r["point"], (r[x], r["cycles"] / 1e6), fontsize=7, xytext=(25, -12 - 13 * i),
                        textcoords="offset points", arrowprops={"arrowstyle": "-", "color": "0.5", "lw": 0.6})
        for r in no:
            if r["cycles"] / 1e6 < 0.6 * span:          # the far, faster points that do not fit: named too
                ax.annotate(r["point"], (r[x], r["cycles"] / 1e6), fontsize=7, color="0.45", xytext=(4, 4),
                            textcoords="offset points")
        ax.set_xlabel(label)
        ax.set_ylabel("million cycles per inference")
        ax.grid(alpha=0.3)
        if measured:
            def per_s(v):
                return clock / np.maximum(v, 1e-9)
            sec = ax.secondary_yaxis("right", functions=(per_s, per_s))
            sec.set_ylabel(f"inferences/s at {clock:g} MHz")
        ax.legend(fontsize=8, loc="center right")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _fmt_int(v) -> str:
    return "-" if v is None else f"{v:,}"


def _fmt_use(r, k) -> str:
    v = r.get(k)
    if v is None:
        return "-"
    use = r.get(f"{k}_use")
    return f"{v:,g} ({use:.0%})" if use is not None else f"{v:,g}"


def summary(results: dict, png_paths: dict | None = None, link_base: str | Path | None = None) -> str:
    """The markdown summary: the best fitting config per (network, board), every point, the failures, the plots
    (``png_paths``: (network, board) -> path, linked relative to ``link_base``)."""
    rr = rows(results)
    params = results["params"]
    st = results["stats"]
    lines = [f"Sweep `{results['sweep']}`: {len(results['points'])} points x {len(results['networks'])} network(s) x "
             f"{len(results['boards'])} board(s); {st['computed']} results computed, {st['cached']} from the cache, "
             f"{st['failed']} failed; {st['wall_seconds']:.0f} s wall"
             + (f" on {len(st['workers'])} worker(s)" if st["workers"] else "")
             + (f"; resources of the block `{results['unit']}` alone" if results.get("unit") else "") + ".", ""]
    lines += ["Best fitting config per network and board (fewest cycles per inference; inferences/s at the board's "
              "clock, or at the measured Fmax):", ""]
    table = []
    for (net, board), r in best(rr).items():
        n_fit = sum(1 for x in rr if x["network"] == net and x["board"] == board and x.get("fits"))
        if r is None:
            table.append({"network": net, "board": board, "point": "(none fits)", "fit": f"0/{len(results['points'])}"})
            continue
        table.append({"network": net, "board": board, "point": f"`{r['point']}`",
                      **{k: r.get(k) for k in params}, "cycles": _fmt_int(r["cycles"]),
                      "ips": f"{r['inferences_per_s']:.2f} at {r['clock_mhz']:g} MHz", "LUT": _fmt_use(r, "LUT"),
                      "DSP": _fmt_use(r, "DSP"), "BRAM": _fmt_use(r, "BRAM"), "fit": f"{n_fit}/{len(results['points'])}"})
    cols = [Column("network", "network"), Column("board", "board"), Column("point", "best config"),
            *[Column(k, k, lambda v: "" if v is None else str(v)) for k in params],
            Column("cycles", "cycles"), Column("ips", "inferences/s"), Column("LUT", "LUT"), Column("DSP", "DSP"),
            Column("BRAM", "BRAM"), Column("fit", "points that fit")]
    lines += [format_table(table, cols, markdown=True), ""]
    lines += ["Every point (cycles per inference on the RTL, every tensor equal to the numpy reference unless marked, "
              "and the layers on the accelerator of all layers: the others, such as a requantization a config without "
              "the ALU's MUL cannot do, run on the CPU and are not in the cycles; resources per part family as LUT / FF "
              "/ DSP / BRAM):", ""]
    families = list(dict.fromkeys(b["family"] for b in results["boards"]))
    table = []
    for p in results["points"]:
        row = {"point": f"`{p['name']}`", **p["values"]}
        for net in results["networks"]:
            r = p["rtl"].get(net["name"], {})
            row[f"c:{net['name']}"] = "FAILED" if "error" in r else (
                f"{r['cycles']:,} ({r['vta_layers']}/{r['layers']})") if "cycles" in r else "-"
        for fam in families:
            s = p["synth"].get(fam, {})
            row[f"f:{fam}"] = "FAILED" if "error" in s else (
                f"{s['LUT']:,} / {s['counts'].get('FF', 0):,} / {s['counts'].get('DSP', 0)} / {s['BRAM']:g}"
                + (f" / {s['counts']['URAM']} URAM" if s["counts"].get("URAM") else "")) if "LUT" in s else "-"
        fit = [b["board"] for b in results["boards"] if p["synth"].get(b["family"], {}).get("devices", {})
               .get(b["label"], {}).get("fits")]
        row["fits"] = ", ".join(fit) or "none"
        fm = [f"{b}: {r['fmax_mhz']:.1f}" for b, r in p["fmax"].items() if "fmax_mhz" in r]
        if results.get("fmax"):
            row["fmax"] = ", ".join(fm) or "-"
        table.append(row)
    cols = [Column("point", "point"), *[Column(k, k, lambda v: str(v)) for k in params],
            *[Column(f"c:{n['name']}", f"cycles {n['name']}") for n in results["networks"]],
            *[Column(f"f:{fam}", fam) for fam in families], Column("fits", "fits"),
            *([Column("fmax", "Fmax MHz")] if results.get("fmax") else [])]
    lines += [format_table(table, cols, markdown=True), ""]
    fails = failures(results)
    if fails:
        lines += ["Failures:", ""]
        lines += [f"- `{p}` {kind} {name}: {err.splitlines()[0]}" for p, kind, name, err in fails]
        lines += [""]
    if png_paths:
        base = Path(link_base) if link_base is not None else None
        for (net, board), path in png_paths.items():
            rel = Path(path).resolve().relative_to(base.resolve()) if base is not None and \
                Path(path).resolve().is_relative_to(base.resolve()) else Path(path)
            lines.append(f"![{net} on {board}]({rel.as_posix()})")
        lines.append("")
    return "\n".join(lines)


def write(results: dict, out_dir: str | Path, png_dir: str | Path | None = None,
          markdown: str | Path | None = None) -> dict:
    """``points.csv`` (a row per point, network and board), ``points.json`` (the results), ``summary.md`` in
    ``out_dir``; a Pareto PNG per (network, board) in ``png_dir`` (default ``out_dir``); with ``markdown``, the
    summary also between the ``<!-- dse-<sweep> -->`` markers of that file (its links relative to it). Returns the
    paths written."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    png_dir = Path(png_dir) if png_dir is not None else out_dir
    png_dir.mkdir(parents=True, exist_ok=True)
    rr = rows(results)
    params = results["params"]
    with open(out_dir / "points.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["point", *params, *CSV_COLUMNS[1:]], extrasaction="ignore")
        w.writeheader()
        w.writerows(rr)
    (out_dir / "points.json").write_text(json.dumps(results, indent=1, default=str))
    pngs = {}
    for net in results["networks"]:
        for b in results["boards"]:
            sel = [r for r in rr if r["network"] == net["name"] and r["board"] == b["board"]]
            path = png_dir / png_name(results["sweep"], net["name"], b["board"])
            write_png(sel, path, f"{net['name']} on {b['board']} ({b['label']}), sweep {results['sweep']}: "
                                 f"{sum(1 for r in sel if r.get('fits'))} of {len(sel)} points fit")
            pngs[(net["name"], b["board"])] = path
    (out_dir / "summary.md").write_text(summary(results, pngs, out_dir))
    written = {"csv": out_dir / "points.csv", "json": out_dir / "points.json", "summary": out_dir / "summary.md",
               "png": pngs}
    if markdown is not None:
        write_markdown(markdown, summary(results, pngs, Path(markdown).parent), f"dse-{_slug(results['sweep'])}")
        written["markdown"] = Path(markdown)
    return written
