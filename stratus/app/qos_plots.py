"""Figures of ``stratus qos sweep`` (paper 001): the Table 1 shape (% revenue improvement
over QoPS against the OC-factor, one line per load/mix, DVQoPS dashed) and the Table 2
shape (DVQoPS revenue and load variance against a fixed rollback window). Each function
takes the sweep's results and a path (the caller writes through a temporary name:
stratus.app.outputs), so a report can call them too."""

from __future__ import annotations


def _groups(runs):
    out: dict[tuple, list] = {}
    for r in runs:
        out.setdefault((r["dup_frac"], r["urgent_frac"], r["urgent_cost"]), []).append(r)
    return out


def plot_table1(ax, doc: dict) -> bool:
    drawn = False
    for i, ((d, u, c), runs) in enumerate(sorted(_groups(doc["runs"]).items())):
        v = sorted((r["oc"], r["improvement_pct"]) for r in runs
                   if r["scheme"] == "vqops" and r["improvement_pct"] is not None)
        if not v:
            continue
        color = f"C{i % 10}"
        name = f"{c:g}X/{100 * u:g}%/d={d:g} (load {runs[0]['offered_load']:.2f})"
        ax.plot([f for f, _ in v], [p for _, p in v], "o-", color=color, label=name)
        dv = [r["improvement_pct"] for r in runs if r["scheme"] == "dvqops"
              and r.get("dv_window") == "auto" and r["improvement_pct"] is not None]
        if dv:
            ax.axhline(dv[0], color=color, ls="--", lw=1)
        drawn = True
    if drawn:
        ax.axhline(0.0, color="k", lw=0.5)
        ax.set_xlabel("OC-factor f")
        ax.set_ylabel("revenue vs QoPS (%)")
        ax.set_title("VQoPS (lines) and DVQoPS (dashed) vs QoPS — 001 Table 1 shape",
                     fontsize=9)
        ax.legend(fontsize=7)
    return drawn


def plot_table2(ax, doc: dict) -> bool:
    drawn = False
    for i, ((d, u, c), runs) in enumerate(sorted(_groups(doc["runs"]).items())):
        v = sorted((float(r["dv_window"].split(":")[1]), r["revenue"], r.get("load_var"))
                   for r in runs if r["scheme"] == "dvqops"
                   and str(r.get("dv_window") or "").startswith("fixed:"))
        if not v:
            continue
        ax.plot([w for w, _, _ in v], [rev for _, rev, _ in v], "o-", color=f"C{i % 10}",
                label=f"revenue {c:g}X/{100 * u:g}%/d={d:g}")
        lv = [(w, x) for w, _, x in v if x is not None]
        if lv:
            ax2 = ax.twinx()
            ax2.plot([w for w, _ in lv], [x for _, x in lv], "s:", color="gray",
                     label="load variance")
            ax2.set_yscale("log")
            ax2.set_ylabel("load variance (full W segments)")
        drawn = True
    if drawn:
        ax.set_xscale("log", base=2)
        ax.set_xlabel("fixed rollback window W (h)")
        ax.set_ylabel("DVQoPS revenue")
        ax.set_title("DVQoPS against a fixed window — 001 Table 2 shape", fontsize=9)
        ax.legend(fontsize=7, loc="lower right")
    return drawn


def plot_sweep(doc: dict, out) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    has2 = any(str(r.get("dv_window") or "").startswith("fixed:") for r in doc["runs"])
    has1 = any(r["scheme"] == "vqops" for r in doc["runs"])
    n = max(1, has1 + has2)
    fig, axes = plt.subplots(1, n, figsize=(6.5 * n, 4.5), squeeze=False)
    k = 0
    if has1:
        plot_table1(axes[0][k], doc)
        k += 1
    if has2:
        plot_table2(axes[0][k], doc)
    if not (has1 or has2):
        axes[0][0].text(0.5, 0.5, "nothing to draw: no VQoPS and no fixed-window DVQoPS runs",
                        ha="center")
    fig.tight_layout()
    try:
        fig.savefig(out, format="png", dpi=100)
    finally:
        plt.close(fig)
