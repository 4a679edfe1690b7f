"""The line a report gives HSpot beside task-per-instance (issue 36, docs/decisions.md
"HSpot equals task-per-instance where no hop pays").

HSpot (Stratus §4.3) is task-per-instance's placement plus price hopping. Where it made no
hop, the two placed every task alike, and they differ only by HSpot's bid (10x on-demand:
a spike above on-demand revokes task-per-instance, not HSpot). On the bundled m4 spot
prices a larger type costs more than a smaller one at every instant outside such spikes,
so most windows have no hop, and two bars would show one baseline twice. The line says
why from HSpot's own counts: ``hops_weighed`` is 0 where no type a running task fits was
ever cheaper than its own (scalers/hotspot_migration.py)."""

from __future__ import annotations

import json
import math

HOTSPOT, TPI = "hotspot", "task-per-instance"
SAME_USD = 0.005  # costs are printed to the cent: equal below half a cent


def counts_of(summary) -> tuple[int | None, int | None]:
    """(hops, hops weighed) of a summary dict or a result row's JSON (None: not recorded)."""
    if isinstance(summary, str):
        summary = json.loads(summary) if summary not in ("", "null") else None
    if not isinstance(summary, dict):
        return None, None
    hops, weighed = summary.get("hops"), summary.get("hops_weighed")
    return (None if hops is None else int(hops), None if weighed is None else int(weighed))


def _why(weighed: int | None) -> str:
    if weighed == 0:
        return ("no type a running task fits was ever cheaper per hour than the one it ran "
                "on")
    if weighed is None:
        return ("no type a running task fits became cheaper by enough to pay for the move, "
                "the §4.3 rule")
    return (f"a cheaper type was weighed {weighed:,} times, but its saving over the "
            f"remaining runtime never paid for the move, the §4.3 rule")


def hotspot_line(windows) -> str | None:
    """The sentence for one trace, from each window's (HSpot's hops, HSpot's hops weighed,
    HSpot's cost, task-per-instance's cost); None without a window where both ran with a
    known hop count."""
    ws = [w for w in windows if w[0] is not None and all(map(math.isfinite, w[2:]))]
    if not ws:
        return None
    n = len(ws)
    hops = sum(w[0] for w in ws)
    known = [w[1] for w in ws if w[1] is not None]
    weighed = sum(known) if len(known) == n else None
    diff = sum(a - b for _, _, a, b in ws) / n
    differ = sum(abs(a - b) >= SAME_USD for _, _, a, b in ws)
    of = f"{n} window{'s' * (n != 1)}"
    if hops == 0 and differ == 0:
        where = f"every one of {of}" if n > 1 else "its one window"
        return (f"HSpot equals task-per-instance here: in {where} HSpot made no hop "
                f"({_why(weighed)}), so it placed and billed every task as "
                f"task-per-instance does, to the cent. They are one baseline, not two.")
    if hops == 0:
        return (f"HSpot made no hop in {of} ({_why(weighed)}): it placed every task as "
                f"task-per-instance does and differs only by its bid (10x on-demand, so a "
                f"spike does not revoke it), which changed the cost in {differ} of {of}, by "
                f"{diff:+,.2f} $ a window on average.")
    hopped = sum(w[0] > 0 for w in ws)
    return (f"HSpot hopped {hops:,} times, in {hopped} of {of}; its cost minus "
            f"task-per-instance's: {diff:+,.2f} $ a window on average (the difference also "
            f"holds its bid: task-per-instance is revoked in a spike, HSpot is not).")


def hotspot_lines(rows) -> dict[str, str]:
    """Per trace label: the line, for a DataFrame of replay rows (columns trace_label,
    window, scheduler, total_cost_usd, result_json) where HSpot and task-per-instance ran."""
    out = {}
    for label, g in rows.groupby("trace_label", sort=False):
        if not {HOTSPOT, TPI} <= set(g["scheduler"]) or "result_json" not in g:
            continue
        windows = []
        for _, w in g.groupby("window", sort=False):
            hs, tpi = w[w["scheduler"] == HOTSPOT], w[w["scheduler"] == TPI]
            if len(hs) and len(tpi):
                windows.append((*counts_of(hs["result_json"].iloc[0]),
                                float(hs["total_cost_usd"].iloc[0]),
                                float(tpi["total_cost_usd"].iloc[0])))
        line = hotspot_line(windows)
        if line:
            out[label] = line
    return out


def compare_line(doc: dict) -> str | None:
    """The line for a ``stratus compare`` document (one window, or each of its slices)."""
    windows = []
    for runs in ([s["runs"] for s in doc["slices"]] if "slices" in doc else [doc["runs"]]):
        by = {r.get("scheduler"): r for r in runs}
        hs, tpi = by.get(HOTSPOT), by.get(TPI)
        if hs and tpi:
            windows.append((*counts_of(hs), float(hs["total_cost_usd"]),
                            float(tpi["total_cost_usd"])))
    return hotspot_line(windows)
