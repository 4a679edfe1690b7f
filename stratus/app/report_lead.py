"""The report's opening: per workload (and market), which competitor is cheapest and by how
much over the runner-up, window by window. References (perfect runtimes) are not
competitors; a cost model such as Fargate is one (a user can buy it)."""

from __future__ import annotations

from stratus.app.comparison import spread


def _usd(x: float) -> str:
    return f"${x:,.0f}" if x >= 100 else f"${x:.2f}" if x >= 1 else f"${x:.3g}"


def _pct(s: dict) -> str:
    return f"{s['mean']:.1%} ± {s['std']:.1%}"


def winner(g) -> dict | None:
    """The cheapest competitor of ``g`` (one workload's replay rows at one market, columns
    scheduler, window, total_cost_usd) by mean cost over the windows, the runner-up, and
    the winner's saving over it, 1 - cost_winner / cost_runner_up on each window both ran
    (mean ± sd); None when no competitor ran."""
    from stratus.app.figures import _reference

    comp = g[[not _reference(n) for n in g["scheduler"]]].reset_index(drop=True)
    if comp.empty:
        return None
    means = comp.groupby("scheduler")["total_cost_usd"].mean().sort_values(kind="stable")
    out = {"winner": means.index[0], "cost_usd": float(means.iloc[0]),
           "windows": int(comp["window"].nunique()), "competitors": len(means)}
    if len(means) < 2:
        return out
    ru = means.index[1]
    a = comp[comp["scheduler"] == out["winner"]].groupby("window")["total_cost_usd"].mean()
    b = comp[comp["scheduler"] == ru].groupby("window")["total_cost_usd"].mean()
    both = [w for w in a.index if w in b.index and b[w] > 0]
    cheapest = comp.loc[comp.groupby("window")["total_cost_usd"].idxmin(), "scheduler"]
    out.update(runner_up=ru, runner_up_cost_usd=float(means.iloc[1]),
               saving=spread([1.0 - a[w] / b[w] for w in both]),
               cheapest_on=int((cheapest == out["winner"]).sum()))
    return out


def lead(df) -> list[str]:
    """One sentence per workload and market of the replay rows in ``df`` (ok rows of one
    comparable group per label, stratus.app.report_groups), estimate-error (h) cells aside."""
    from stratus.app.figures import _replay

    r = _replay(df)
    if r.empty:
        return []
    r = r[r["h"].isna()]
    out = []
    for (label, market), g in r.groupby(["trace_label", "market"], sort=True):
        w = winner(g)
        if w is None:
            out.append(f"{label} ({market}): only references ran (perfect runtimes), no "
                       "competitor.")
            continue
        n = w["windows"]
        head = (f"{label} ({market}, {n} window{'s' * (n != 1)}): {w['winner']} is the "
                f"cheapest of {w['competitors']} competitor{'s' * (w['competitors'] != 1)}, "
                f"{_usd(w['cost_usd'])} a window on average")
        if "runner_up" not in w:
            out.append(head + " (the only competitor).")
        elif w["saving"] is None:
            out.append(head + f"; the runner-up {w['runner_up']} costs "
                              f"{_usd(w['runner_up_cost_usd'])} (no window where both ran).")
        else:
            out.append(head + f", {_pct(w['saving'])} below the runner-up {w['runner_up']} "
                              f"({_usd(w['runner_up_cost_usd'])}; saving per window, mean ± "
                              f"sd over {w['saving']['n']}; cheapest on {w['cheapest_on']} "
                              f"of {n}).")
    return out
