"""The report's ablation figures: Fig. 6 (the §5.2 chain from SCloud to Stratus) and Fig. 8
(§5.4.2: cost against the estimate error h), from a sweep's replay rows
(``figures._replay``)."""

from __future__ import annotations

from stratus.app import paper
from stratus.app.figures import (
    REF_MARK,
    Figure,
    _bars,
    _fmt,
    _order,
    _replay,
    _savings,
    _stat,
    _wrap,
    paper_note,
    pt_name,
    what_ran,
)


def ablation_figures(df) -> list[Figure]:
    """Fig. 6 from the spot replay rows without an estimate error, Fig. 8 from those with."""
    r = _replay(df)
    if r.empty:
        return []
    spot = r[(r["market"] == "spot") & r["h"].isna()]
    hs = r[r["h"].notna()]
    return ((fig6(spot, sorted(set(spot["trace_label"]))) if not spot.empty else [])
            + (fig8(hs) if not hs.empty else []))

#: Stratus with perfect runtimes: the like-with-like end of the Fig. 6 chain, whose steps
#: all replay with perfect runtimes (docs/decisions.md, "The Fig. 6 chain")
ORACLE_STRATUS = "stratus-oracle"


def fig6(spot, traces) -> list[Figure]:
    """Fig. 6. Every step of the chain has perfect runtimes; Stratus has its history
    estimates. The bars compare like with like, ``stratus-oracle`` over each step, where it
    ran; the table gives Stratus's saving too, the paper's quantity (§5.2 compares Stratus
    with predictions against the steps with perfect runtimes), beside the paper's. Without
    ``stratus-oracle`` the bars are Stratus's, every step hatched as a reference."""
    names = set(spot["scheduler"])
    chain = [n for n in paper.FIG6_CHAIN if n in names]
    bases = [b for b in (ORACLE_STRATUS, "stratus") if b in names]
    if len(chain) < 2 or not bases:
        return []
    like = bases[0] == ORACLE_STRATUS
    data, rows, pv = {}, [], {}
    for t in traces:
        g = spot[spot["trace_label"] == t]
        sav = {b: _savings(g[g["scheduler"].isin([*chain, b])], b) for b in bases}
        data[t] = {n: sav[bases[0]][n] for n in chain if n in sav[bases[0]]}
        p = paper.FIG6_SAVING.get(pt_name(spot, t), {})
        pv[t] = {} if like else p
        for n in chain:
            row = {"trace": t, "step": f"{n} {REF_MARK}"}
            if like:
                row[f"{ORACLE_STRATUS} saves (like with like)"] = _fmt(
                    sav[ORACLE_STRATUS].get(n, _stat([])), 1, pct=True)
            if "stratus" in sav:
                row[f"stratus saves (vs perfect runtimes {REF_MARK})"] = _fmt(
                    sav["stratus"].get(n, _stat([])), 1, pct=True)
            row["paper (stratus vs the step)"] = f"{p[n]:.0%}" if n in p else "—"
            rows.append(row)
    base = bases[0]
    ylabel = (f"{base}'s saving over the step\n(all with perfect runtimes)" if like else
              f"Stratus's saving over the step {REF_MARK}\n(the steps: perfect runtimes)")

    def draw(path, d=data, q=pv):
        _bars(path, d, ylabel, q, "Fig. 6: SCloud + Stratus's features, one at a time", 0.0,
              hatched=(lambda n: False) if like else (lambda n: n in chain))

    how = (f"Bars: {base}'s saving over each step, 1 − cost_{base} / cost_step per window, "
           "mean ± sd: like with like, every step and Stratus given perfect runtimes. The "
           "table adds Stratus's saving with its history estimates over the same steps, the "
           "quantity §5.2 reports (the paper's column; no diamonds on the bars, which are "
           "another quantity). " if like else
           "Bars: Stratus's saving over each step, 1 − cost_stratus / cost_step per window, "
           f"mean ± sd. {REF_MARK} (hatched): every step is a reference given perfect "
           "runtimes and Stratus is not, as in §5.2: a negative saving says perfect "
           f"runtimes are worth more than the features still missing; add {ORACLE_STRATUS} "
           "to the sweep to compare like with like. Diamonds: §5.2's gaps. ")
    return [Figure("fig6-ablation", "Fig. 6 — the ablation chain, SCloud to Stratus",
                   "SCloud with each Stratus feature added in turn (online packing, then "
                   "Stratus's scale-out, then clearing). " + how
                   + paper_note(spot, traces, "spot") + " "
                   + what_ran(spot[spot["scheduler"].isin([*chain, *bases])]), draw, rows)]


def fig8(hs) -> list[Figure]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    traces = sorted(set(hs["trace_label"]))
    hs = hs.copy()
    hs["hv"] = hs["h"].astype(float)
    rows = []
    curves = {}
    for t in traces:
        g = hs[hs["trace_label"] == t]
        # each window's cost over Stratus's at h = 1 on the same window (paired)
        base = g[(g["scheduler"] == "stratus") & (g["hv"] == 1.0)]
        ref = dict(zip(base["window"], base["total_cost_usd"]))
        for n in _order(set(g["scheduler"])):
            pts = []
            for h, gh in sorted(g[g["scheduler"] == n].groupby("hv")):
                s = _stat([c / ref[w] for w, c in zip(gh["window"], gh["total_cost_usd"])
                           if ref.get(w)])
                pts.append((h, s))
                rows.append({"trace": t, "scheduler": n, "h": h,
                             "cost / stratus at h=1": _fmt(s),
                             "instances acquired": _fmt(_stat(gh["instances_acquired"]), 0),
                             "instances cleared": _fmt(_stat(gh["instances_cleared"]), 0)})
            curves[(t, n)] = pts
        if {"stratus", "stratus-noclear"} <= set(g["scheduler"]):
            pair = g[g["scheduler"].isin(["stratus", "stratus-noclear"])]
            sav = [(h, _savings(gh, "stratus").get("stratus-noclear", _stat([])))
                   for h, gh in sorted(pair.groupby("hv"))]
            curves[(t, "clearing saves")] = sav
            p = paper.FIG8_CLEARING_SAVING.get(pt_name(hs, t), {})
            rows += [{"trace": t, "scheduler": "clearing saves (1 − stratus/no-clear)", "h": h,
                      "cost / stratus at h=1": _fmt(s, 1, pct=True),
                      "paper": f"{p[h]:.0%}" if h in p else "—"} for h, s in sav]

    def draw(path, cv=curves):
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
        for (t, n), pts in cv.items():
            ax = axes[1] if n == "clearing saves" else axes[0]
            xs = [h for h, s in pts if s["mean"] is not None]
            ys = [s["mean"] for h, s in pts if s["mean"] is not None]
            es = [s["std"] for h, s in pts if s["mean"] is not None]
            ax.errorbar(xs, ys, yerr=es, marker="o", capsize=3, label=_wrap(f"{t}: {n}", 40))
            if n == "clearing saves":
                p = paper.FIG8_CLEARING_SAVING.get(pt_name(hs, t), {})
                if p:
                    ax.scatter(list(p), list(p.values()), marker="D", color="black",
                               zorder=5, label=f"paper ({pt_name(hs, t)})")
        for ax, yl in zip(axes, ("cost / Stratus's at h = 1", "saving of clearing")):
            ax.set_xscale("log")
            ax.set_xlabel("h (estimate = runtime × U[h, 1] or U[1, h])")
            ax.set_ylabel(yl)
            ax.legend(fontsize=7, frameon=False)
        fig.suptitle("Fig. 8: sensitivity to runtime-estimate error", fontsize=10)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)

    return [Figure("fig8-sensitivity", "Fig. 8 — cost against estimate error h",
                   "Left: daily cost against h (each task's estimate is its runtime times "
                   "h_τ ~ U[h, 1] or U[1, h], §5.4.2), over Stratus's cost at h = 1 on the same "
                   "window, mean ± sd over windows. Right: the saving of instance clearing, 1 − cost(stratus) "
                   "/ cost(stratus-noclear), with §5.4.2's 31%/14% at h = 0.01, 4%/3% more "
                   "at h = 1 and 'comparable' at h = 100 as diamonds."
                   + paper_note(hs, traces, "spot") + " " + what_ran(hs),
                   draw, rows)]
