"""The report's figures and tables, computed from a sweep's rows (a DataFrame of ok cells).
Every number is a mean and spread over the slices and seeds of a trace; the paper's value
sits beside ours only where the run is the paper's setting (stratus/app/paper.py,
``setting``), and each caption says which setting or why none."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import numpy as np

from stratus.app import paper
from stratus.app.comparison import NORMALIZED_BY, normalizer, spread
from stratus.app.hotspot_note import hotspot_lines
from stratus.app.registry import is_cost_model


@dataclass
class Figure:
    name: str               # file stem
    title: str
    caption: str
    draw: object            # draw(path) writes the PNG
    table: list[dict] = field(default_factory=list)  # the numbers behind it
    notes: list[str] = field(default_factory=list)  # lines the report prints above all


def _stat(xs) -> dict:
    """``comparison.spread`` of ``xs``, with an empty spread where nothing is finite."""
    return spread(list(xs)) or {"mean": None, "std": None, "n": 0}


def _fmt(s: dict, digits: int = 3, pct: bool = False) -> str:
    if s.get("mean") is None:
        return "—"
    k = 100.0 if pct else 1.0
    unit = "%" if pct else ""
    return f"{s['mean'] * k:.{digits}f}{unit} ± {s['std'] * k:.{digits}f}{unit} (n={s['n']})"


def _opt(df, name, default=None):
    col = f"opt_{name}"
    if col not in df:
        return np.array([default] * len(df), dtype=object)
    return np.array([default if (v is None or (isinstance(v, float) and math.isnan(v)))
                     else v for v in df[col]], dtype=object)


def what_ran(df) -> str:
    """The caption's account of exactly what was run: traces, windows, options, code."""
    parts = []
    for label, g in df.groupby("trace_label", sort=False):
        spec = g["trace"].iloc[0]
        hours = g["hours"].dropna().unique() if "hours" in g else []
        sl = g["slice"].dropna().unique() if "slice" in g else []
        seeds = sorted(int(s) for s in g["seed"].unique())
        win = (f"{len(sl)} seeded {_hours(hours)}-hour slices" if len(sl) and len(hours) else
               f"{_hours(hours)} hour{'' if list(hours) == [1] else 's'}" if len(hours) else
               "the whole trace")
        parts.append(f"{label} = <code>{spec}</code>, {win}, seed(s) {seeds}")
    opts = {}
    for c in df.columns:
        if c.startswith("opt_"):
            vals = sorted({str(v) for v in df[c] if v is not None and
                           not (isinstance(v, float) and math.isnan(v))})
            if vals:
                opts[c[4:]] = vals
    o = "; ".join(f"{k} ∈ {{{', '.join(v)}}}" for k, v in opts.items())
    codes = ", ".join(sorted(df["code_version"].unique()))
    return (f"Ran: {'; '.join(parts)}. Options: {o or 'defaults'} (other options at the CLI "
            f"defaults). {len(df)} cells, code version {codes}.")


def _hours(hours) -> str:
    """The window length(s) of a group: one in a comparable group (report_groups)."""
    return " or ".join(f"{float(h):g}" for h in sorted(hours))


def _replay(df):
    r = df[df["command"] == "replay"].copy()
    if r.empty:
        return r
    r["scheduler"] = _opt(r, "scheduler", "stratus")
    if "spec_json" in r:  # the canonical name, with its parameters (stratus?clearing...)
        r["scheduler"] = [json.loads(j)["scheduler"] if isinstance(j, str) and j != "null"
                          else n for j, n in zip(r["spec_json"], r["scheduler"])]
    r["market"] = _opt(r, "market", "spot")
    r["h"] = _opt(r, "h", None)
    settings = [paper.setting(sp, sp.get("market") or "spot")
                for sp in (_spec(row) for row in r.to_dict("records"))]
    r["paper_trace"] = [name for name, _ in settings]
    r["paper_why"] = [why for _, why in settings]
    r["window"] = list(zip(r["slice"].astype(object), r["seed"]))
    return r


def _spec(row: dict) -> dict:
    """A row's canonical spec (rows before results format 2: its trace and options)."""
    j = row.get("spec_json")
    if isinstance(j, str) and j not in ("null", ""):
        return json.loads(j)
    fmt, opts = row.get("format"), row.get("options_json")
    return {"trace": row.get("trace"), "format": fmt if isinstance(fmt, str) else None,
            **(json.loads(opts) if isinstance(opts, str) else {})}


def _normalize(main):
    """``normalized_cost`` per trace and window, as compare computes it
    (``comparison.normalizer``: one definition, ``comparison.NORMALIZED_BY``)."""
    out = []
    for (_, _), g in main.groupby(["trace_label", "window"], sort=False):
        _, top = normalizer(dict(zip(g["scheduler"], g["total_cost_usd"])))
        gg = g.copy()
        gg["normalized_cost"] = gg["total_cost_usd"] / top if top else np.nan
        out.append(gg)
    import pandas as pd

    return pd.concat(out) if out else main


def _order(names) -> list[str]:
    """Competitors first (the paper's four, then by name), then the references."""
    first = ["stratus", "fleet", "hotspot", "scloud"]
    rest = sorted(n for n in names if n not in first)
    return ([n for n in first if n in names] + [n for n in rest if not _reference(n)]
            + [n for n in rest if _reference(n)])


def _reference(name: str) -> str:
    """Why ``name`` is a reference, not a competitor ("" for a competitor): the registry's
    word (stratus-oracle and the Fig. 6 chain are given perfect runtimes)."""
    from stratus.app.registry import reference_of

    return reference_of(name)


REF_MARK = "†"
REF_NOTE = (f" {REF_MARK} (hatched): a reference given perfect runtimes (stratus-oracle, "
            "§5.4.1; the §5.2 ablation chain of Fig. 6), not a competitor: no scheduler "
            "knows the future.")


def _ref_note(names) -> str:
    """The caption's sentence on references, when some of ``names`` are."""
    return REF_NOTE if any(_reference(n) for n in names) else ""


def _label(name: str) -> str:
    return f"{name} {REF_MARK}" if _reference(name) else name


def _spread_note(groups: dict, what: str = "") -> str:
    """The caption's numbers: each scheduler's mean ± sd over the windows, per trace."""
    parts = []
    for t, g in groups.items():
        cells = [f"{_label(n)} {g[n]['mean']:.3f} ± {g[n]['std']:.3f}"
                 for n in _order(g) if g[n].get("mean") is not None]
        if cells:
            n = max(g[k]["n"] for k in g)
            parts.append(f"{t} (n={n} windows): " + "; ".join(cells))
    return f" Spread{what}, mean ± sd: " + " — ".join(parts) + "." if parts else ""


#: legend labels wrap at this many characters: a long group label (two catalogs, say)
#: must not squeeze the bars to a sliver
LEGEND_WRAP = 36
MAX_WIDTH_IN = 10.0


def _wrap(text: str, width: int = LEGEND_WRAP) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(text, width, break_on_hyphens=False)) or text


def _bars_figure(groups: dict, ylabel: str, paper_vals: dict, title: str, hline=None,
                 hatched=None):
    """Grouped bars: groups = {trace: {scheduler: stat}}; paper_vals {trace: {sched: v}};
    ``hatched(name)``: bars drawn hatched and marked † (default: the references). The
    legend sits under the axes, its labels wrapped, the figure taller for it: the bars
    keep the figure's width whatever the labels' length."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    hatched = hatched or _reference
    traces = list(groups)
    names = _order({n for g in groups.values() for n in g})
    labels = [_wrap(f"{t} (ours, mean ± sd)") for t in traces]
    ncol = 2 if len(labels) > 1 else 1
    lines = sum(max(lab.count("\n") + 1 for lab in labels[i:i + ncol])
                for i in range(0, len(labels), ncol)) + (1 if paper_vals else 0)
    # at most the page's width (10 in at 110 dpi, report_html.CSS): a wider PNG is shown
    # shrunk, its text unreadable (the demo's 16 schedulers x 2 traces were 19 in)
    fig, ax = plt.subplots(figsize=(min(MAX_WIDTH_IN, max(6.0, 1.2 + 0.55 * len(names) *
                                                           len(traces))),
                                    3.8 + 0.17 * lines), layout="constrained")
    width = 0.8 / max(1, len(traces))
    x = np.arange(len(names))
    cmap = plt.get_cmap("tab10")
    drawn_paper = False
    for i, t in enumerate(traces):
        means = [groups[t].get(n, {}).get("mean") for n in names]
        stds = [groups[t].get(n, {}).get("std") or 0.0 for n in names]
        xs = x + (i - (len(traces) - 1) / 2) * width
        have = [k for k, m in enumerate(means) if m is not None]  # no bar where none ran
        bars = ax.bar(xs[have], [means[k] for k in have], width * 0.9,
                      yerr=[stds[k] for k in have], capsize=3, color=cmap(i), alpha=0.85,
                      label=labels[i])
        for bar, k in zip(bars, have):
            if hatched(names[k]):  # a reference, not a competitor: hatched, paler
                bar.set_hatch("//")
                bar.set_alpha(0.45)
        pv = paper_vals.get(t, {})
        px = [xx for xx, n in zip(xs, names) if n in pv]
        py = [pv[n] for n in names if n in pv]
        if px:
            ax.scatter(px, py, marker="D", s=36, color="black", zorder=5,
                       label=None if drawn_paper else "paper")
            drawn_paper = True
    if hline is not None:
        ax.axhline(hline, color="grey", lw=0.8, ls=":")
    ax.set_xticks(x)
    ax.set_xticklabels([f"{n} {REF_MARK}" if hatched(n) else n for n in names], rotation=30,
                       ha="right")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    fig.legend(fontsize=8, frameon=False, loc="outside lower center", ncol=ncol)
    return fig


def _bars(path, *args, **kw):
    import matplotlib.pyplot as plt

    fig = _bars_figure(*args, **kw)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _per(g, col) -> dict:
    return {n: _stat(gg[col].astype(float)) for n, gg in g.groupby("scheduler")}


def _rows_in_order(per: dict) -> list[tuple[str, dict]]:
    return [(n, per[n]) for n in _order(per)]


NORM_LABEL = "normalized cost\n(÷ most expensive; caption)"
NORM_COL = "normalized cost (÷ most expensive of the four, else of every policy)"


def replay_figures(df) -> list[Figure]:
    r = _replay(df)
    if r.empty:
        return []
    figs: list[Figure] = []
    nohint = r["h"].isna()
    spot = r[(r["market"] == "spot") & nohint]
    if not spot.empty:
        spot = _normalize(spot)
        traces = sorted(set(spot["trace_label"]))
        hs_lines = hotspot_lines(spot)  # HSpot beside task-per-instance (hotspot_note)
        hs_text = "".join(f" {t}: {hs_lines[t]}" for t in traces if t in hs_lines)
        cost = {t: _per(spot[spot["trace_label"] == t], "normalized_cost") for t in traces}
        # the paper's Fig. 4 divides by the most expensive of its four: ours is that number
        # only where all four ran (comparison.normalization_pool)
        four = {t: set(paper.FIG4_SET) <= set(spot[spot["trace_label"] == t]["scheduler"])
                for t in traces}
        pt = {t: paper.fig4_normalized(pt_name(spot, t)) if four[t] else {} for t in traces}
        rows = [{"trace": t, "scheduler": n, NORM_COL: _fmt(s),
                 "paper": pt[t].get(n, "—"),
                 "cost_usd": _fmt(_stat(spot[(spot["trace_label"] == t) &
                                             (spot["scheduler"] == n)]["total_cost_usd"]), 3),
                 "reference": _reference(n)}
                for t in traces for n, s in _rows_in_order(cost[t])]
        figs.append(Figure(
            "fig4-cost", "Fig. 4 — daily cost, normalized to the most expensive",
            f"Normalized cost = {NORMALIZED_BY} (docs/reference/metrics.md; compare's "
            "normalized column is the same number). Bars: the mean over the windows, "
            "whiskers one standard deviation; cost models such as Fargate are in the table "
            "only. Black diamonds: the paper's Fig. 4, derived from the savings §5.1 states "
            "(the figure itself is not in the text)."
            + paper_note(spot, traces, "spot", {t: "not all of stratus, fleet, hotspot and "
                                                "scloud ran" for t in traces if not four[t]})
            + _ref_note(set(spot["scheduler"])) + _spread_note(_no_models(cost)) + hs_text
            + " " + what_ran(spot),
            lambda p, c=cost, q=pt: _bars(p, _no_models(c), NORM_LABEL, q,
                                          "Fig. 4: normalized daily cost (spot)", 1.0),
            rows, [f"{t}: {hs_lines[t]}" for t in traces if t in hs_lines]))
        util = {t: _per(spot[(spot["trace_label"] == t) & ~_models(spot)],
                        "utilization_constraining") for t in traces}
        pu = {t: ({"stratus": paper.FIG5_STRATUS[p]} if (p := pt_name(spot, t)) in
                  paper.FIG5_STRATUS else {}) for t in traces}
        figs.append(Figure(
            "fig5-utilization", "Fig. 5 — utilization of the constraining resource",
            "Share of the rented constraining resource (per trace: the one the workload's "
            "requests bind) allocated to tasks over the day (summary field "
            "utilization.constraining), mean ± sd over windows. Diamond: Stratus's 86% "
            "(Google) / 79% (TwoSigma) from §5.1." + paper_note(spot, traces, "spot")
            + _ref_note(set(spot["scheduler"])) + _spread_note(util) + " " + what_ran(spot),
            lambda p, c=util, q=pu: _bars(p, c, "constraining utilization", q,
                                          "Fig. 5: constraining-resource utilization"),
            [{"trace": t, "scheduler": n, "utilization": _fmt(s), "paper":
              pu[t].get(n, "—"), "reference": _reference(n)}
             for t in traces for n, s in _rows_in_order(util[t])]))
        lat_rows = []
        for t in traces:
            g = spot[(spot["trace_label"] == t) & ~_models(spot)]
            p = paper.TABLE2.get(pt_name(spot, t), {})
            for n in _order(set(g["scheduler"])):
                gg = g[g["scheduler"] == n]
                ref = p.get(n)
                lat_rows.append({"trace": t, "scheduler": n,
                                 "p50": _fmt(_stat(gg["latency_p50"]), 2),
                                 "p95": _fmt(_stat(gg["latency_p95"]), 2),
                                 "paper p50 / p95": f"{ref[0]} / {ref[1]}" if ref else "—",
                                 "reference": _reference(n)})
        figs.append(Figure("table2-latency", "Table 2 — normalized job latency",
                           "Job latency over the job's ideal runtime (no scheduling or "
                           "spin-up delay), 50th and 95th percentiles per window, mean ± sd "
                           "over windows; the paper's Table 2 beside."
                           + paper_note(spot, traces, "spot")
                           + _ref_note(set(spot["scheduler"])) + " " + what_ran(spot),
                           None, lat_rows))
        far = []
        for t in traces:
            g = spot[spot["trace_label"] == t]
            if {"fargate", "hotspot"} <= set(g["scheduler"]):
                ratio = [f / h for (_, w) in g.groupby("window")
                         for f, h in [(w[w["scheduler"] == "fargate"]["total_cost_usd"].mean(),
                                       w[w["scheduler"] == "hotspot"]["total_cost_usd"].mean())]
                         if h > 0]
                far.append({"trace": t, "fargate / hotspot": _fmt(_stat(ratio), 2),
                            "paper": paper.FARGATE_OVER_HOTSPOT
                            if pt_name(spot, t) else "—"})
        if far:
            figs.append(Figure("fargate", "Fargate — cost over HSpot",
                               "The Fargate cost model's bill over HSpot's on the same "
                               "window, mean ± sd (§5.1 quotes 4.4×)."
                               + paper_note(spot, [f["trace"] for f in far], "spot") + " "
                               + what_ran(spot), None, far))
    od = r[(r["market"] == "on-demand") & nohint]
    if not od.empty:
        od = _normalize(od)
        traces = sorted(set(od["trace_label"]))
        cost = {t: _per(od[od["trace_label"] == t], "normalized_cost") for t in traces}
        rows = []
        for t in traces:
            g = od[od["trace_label"] == t]
            sav = _savings(g, "stratus")
            rng = paper.FIG7_SAVING_RANGE.get(pt_name(od, t, "on-demand"))
            for n, s in sav.items():
                rows.append({"trace": t, "vs": n, "stratus saves": _fmt(s, 1, pct=True),
                             "paper range": f"{rng[0]:.0%}–{rng[1]:.0%}" if rng else "—",
                             "reference": _reference(n)})
        figs.append(Figure(
            "fig7-on-demand", "Fig. 7 — on-demand only, normalized cost",
            f"As Fig. 4 with on-demand instances only (normalized cost = {NORMALIZED_BY}); "
            "the table gives Stratus's saving over each scheduler (1 − cost_stratus / "
            "cost_other per window, mean ± sd) beside the range §5.3 states (10–29% Google, "
            "14–25% TwoSigma)." + paper_note(od, traces, "on-demand")
            + _ref_note(set(od["scheduler"])) + _spread_note(_no_models(cost)) + " "
            + what_ran(od),
            lambda p, c=cost: _bars(p, _no_models(c), NORM_LABEL, {},
                                    "Fig. 7: normalized daily cost (on-demand)", 1.0),
            rows))
    return figs


def _models(df):
    """The rows of cost models (Fargate): no instances, so no utilization to draw."""
    return df["scheduler"].map(is_cost_model).astype(bool)


def _no_models(groups: dict) -> dict:
    """The bars without cost models (Fargate's 4-5x would flatten the rest; its ratio is
    tabulated instead)."""
    return {t: {n: v for n, v in g.items() if not is_cost_model(n)}
            for t, g in groups.items()}


def pt_name(df, label, market: str = "spot") -> str | None:
    """The paper's trace for the rows of ``label`` when every one of them ran in the paper's
    setting (``paper.setting``) at ``market``, else None."""
    g = df[df["trace_label"] == label]
    names = set(g["paper_trace"])
    return names.pop() if len(names) == 1 and set(g["market"]) == {market} else None


def paper_note(df, traces, market: str, extra: dict | None = None) -> str:
    """The caption's account of where the paper's values are shown and why not elsewhere;
    ``extra`` gives a further reason per trace (Fig. 4: not all four schedulers ran)."""
    shown, not_shown = [], []
    for t in traces:
        name = pt_name(df, t, market)
        why = (extra or {}).get(t) or ("" if set(df[df["trace_label"] == t]["market"]) ==
                                       {market} else f"not run at {market} prices alone")
        if name is not None and not why:
            shown.append(f"{t} ({paper.setting_text(name, market)})")
        else:
            whys = why or "; ".join(sorted({w for w in df[df["trace_label"] == t]["paper_why"]
                                            if w}))
            not_shown.append(f"{t} ({whys})")
    out = (" Paper values only where the run is the paper's setting: for "
           + "; ".join(shown) + "." if shown else "")
    return out + (" No paper values for " + "; ".join(not_shown) + "." if not_shown else "")


def _savings(g, ref: str) -> dict:
    """Per other scheduler: 1 - cost(ref)/cost(other), window by window."""
    out = {}
    for n in _order(set(g["scheduler"]) - {ref}):
        xs = []
        for _, w in g.groupby("window"):
            a = w[w["scheduler"] == ref]["total_cost_usd"]
            b = w[w["scheduler"] == n]["total_cost_usd"]
            if len(a) and len(b) and b.iloc[0] > 0:
                xs.append(1.0 - a.iloc[0] / b.iloc[0])
        out[n] = _stat(xs)
    return out
