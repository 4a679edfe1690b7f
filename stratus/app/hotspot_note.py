"""The line a report gives HSpot beside task-per-instance (issue 36, docs/decisions.md
"HSpot equals task-per-instance where no hop pays").

HSpot (Stratus §4.3) is task-per-instance's placement plus price hopping. Where it made no
hop, the two placed every task alike, and they differ only by HSpot's bid (10x on-demand:
a spike above on-demand revokes task-per-instance, not HSpot). On the bundled m4 spot
prices a larger type costs more than a smaller one at every instant outside such spikes,
so most windows have no hop, and two bars would show one baseline twice."""

from __future__ import annotations

import json
import math

HOTSPOT, TPI = "hotspot", "task-per-instance"
SAME_USD = 0.005  # costs are printed to the cent: equal below half a cent


def hops_of(result_json) -> int | None:
    """The hop count in a result row's summary (None: not recorded)."""
    if not isinstance(result_json, str) or result_json in ("", "null"):
        return None
    hops = json.loads(result_json).get("hops")
    return None if hops is None else int(hops)


def hotspot_line(windows: list[tuple[int | None, float, float]]) -> str | None:
    """The sentence for one trace, from each window's (HSpot's hops, HSpot's cost,
    task-per-instance's cost); None without a window where both ran with a known count."""
    ws = [w for w in windows if w[0] is not None and all(map(math.isfinite, w[1:]))]
    if not ws:
        return None
    n = len(ws)
    hops = sum(h for h, _, _ in ws)
    diff = sum(a - b for _, a, b in ws) / n
    differ = sum(abs(a - b) >= SAME_USD for _, a, b in ws)
    of = f"{n} window{'s' * (n != 1)}"
    if hops == 0 and differ == 0:
        where = f"every one of {of}" if n > 1 else "its one window"
        return (f"HSpot equals task-per-instance here: in {where} HSpot made no hop (no type "
                f"a running task fits became cheaper by enough to pay for the move, the §4.3 "
                f"rule), so it placed and billed every task as task-per-instance does, to the "
                f"cent. They are one baseline, not two.")
    if hops == 0:
        return (f"HSpot made no hop in {of}: it placed every task as task-per-instance does "
                f"and differs only by its bid (10x on-demand, so a spike does not revoke it), "
                f"which changed the cost in {differ} of {of}, by {diff:+,.2f} $ a window on "
                f"average.")
    hopped = sum(h > 0 for h, _, _ in ws)
    return (f"HSpot hopped {hops:,} times, in {hopped} of {of}; its cost minus "
            f"task-per-instance's: {diff:+,.2f} $ a window on average (the difference also "
            f"holds its bid: task-per-instance is revoked in a spike, HSpot is not).")


def hotspot_lines(rows) -> dict[str, str]:
    """Per trace label: the line, for a DataFrame of replay rows (columns trace_label,
    window, scheduler, total_cost_usd, result_json) where HSpot and task-per-instance ran."""
    out = {}
    for label, g in rows.groupby("trace_label", sort=False):
        if not {HOTSPOT, TPI} <= set(g["scheduler"]):
            continue
        windows = []
        for _, w in g.groupby("window", sort=False):
            hs, tpi = w[w["scheduler"] == HOTSPOT], w[w["scheduler"] == TPI]
            if len(hs) and len(tpi):
                hops = hops_of(hs["result_json"].iloc[0]) if "result_json" in hs else None
                windows.append((hops, float(hs["total_cost_usd"].iloc[0]),
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
            windows.append((hs.get("hops"), float(hs["total_cost_usd"]),
                            float(tpi["total_cost_usd"])))
    return hotspot_line(windows)
