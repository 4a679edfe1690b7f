"""Schedulers side by side as the Stratus paper reports them: normalized cost (Fig. 4;
``NORMALIZED_BY`` says what it divides by), cost over the integer lower bound, constraining utilization
(Fig. 5) and latency (Table 2); over several seeded slices, the mean and the spread (§4.2
runs twenty 1-day slices). Also the estimate-error sensitivity of §5.4.2 (Fig. 8)."""

from __future__ import annotations

import math
from collections.abc import Sequence

#: what a multi-slice comparison aggregates, and where it sits in a replay summary
METRICS: dict[str, tuple[str, ...]] = {
    "total_cost_usd": ("total_cost_usd",),
    "normalized_cost": ("normalized_cost",),
    "cost_over_bound": ("cost_over_bound",),
    "utilization_constraining": ("utilization", "constraining"),
    "latency_p50": ("latency", "p50"),
    "latency_p95": ("latency", "p95"),
    "instances_acquired": ("instances_acquired",),
    "instances_cleared": ("instances_cleared",),
    "migrations": ("migrations",),
}

#: counts of what only some schedulers do (Stratus's clearing): 0 in a table for a scheduler
#: that has no such part, whose summary leaves the key out (docs/reference/metrics.md)
ZERO_WHERE_ABSENT = frozenset({"instances_cleared"})

#: what it aggregates too under --faults (stratus.sim.faults)
FAULT_METRICS: dict[str, tuple[str, ...]] = {
    "fault_crashes": ("faults", "crashes"),
    "fault_tasks_restarted": ("faults", "tasks_restarted"),
    "fault_lost_task_seconds": ("faults", "lost_task_seconds"),
    "fault_lost_usd": ("faults", "lost_usd"),
    "fault_ice_failures": ("faults", "ice_failures"),
}

#: the bound ``cost_over_bound`` divides by: the integer one where the replay has it
BOUND_KEYS = ("lower_bound_integer_usd", "lower_bound_cost_usd")


#: what ``normalized_cost`` divides by, in words (compare's table, the report's figures)
NORMALIZED_BY = ("cost ÷ the most expensive of stratus, fleet, hotspot and scloud on the same "
                 "window when all four ran (Stratus Fig. 4), else ÷ the most expensive policy "
                 "that ran; a cost model such as fargate is never the divisor")


def normalization_pool(names) -> list[str]:
    """The schedulers (of ``names``, run on one window) whose most expensive run
    ``normalized_cost`` divides by: the paper's four when all four ran (Stratus Fig. 4),
    else every policy; never a cost model (Fargate's bill is 3-5x the rest and is not what
    Fig. 4 normalizes to). One definition for compare and the report."""
    from stratus.app.paper import FIG4_SET
    from stratus.app.registry import is_cost_model

    names = list(dict.fromkeys(names))
    if set(FIG4_SET) <= set(names):
        return [n for n in names if n in FIG4_SET]
    return [n for n in names if not is_cost_model(n)]


def normalizer(costs: dict[str, float]) -> tuple[str | None, float | None]:
    """(scheduler, cost) that ``normalized_cost`` divides by among ``costs`` (scheduler ->
    cost on one window); (None, None) when no policy ran or the top cost is 0."""
    pool = normalization_pool(costs)
    if not pool:
        return None, None
    top = max(pool, key=lambda n: costs[n])
    return (top, costs[top]) if costs[top] > 0 else (None, None)


def annotate(runs: list[dict]) -> list[dict]:
    """Add ``normalized_cost`` (``NORMALIZED_BY``; ``normalized_by`` names the run divided
    by) and ``cost_over_bound`` (over the tightest lower bound the run reports) to each
    summary of one window, in place."""
    by, top = normalizer({r["scheduler"]: r["total_cost_usd"] for r in runs})
    for r in runs:
        cost = r["total_cost_usd"]
        r["normalized_cost"] = round(cost / top, 6) if top else None
        r["normalized_by"] = by
        bound = next((r[k] for k in BOUND_KEYS if r.get(k)), None)
        r["cost_over_bound"] = round(cost / bound, 6) if bound else None
        r["bound_used"] = next((k for k in BOUND_KEYS if r.get(k)), None)
    return runs


def summary_field(summary: dict, path: tuple[str, ...]):
    """The value at ``path`` in a summary (None where it has none)."""
    v = summary
    for k in path:
        if not isinstance(v, dict) or k not in v:
            return None
        v = v[k]
    return v


def metric(summary: dict, key: str, path: tuple[str, ...]):
    """A table's ``key`` (at ``path``) from a summary: None where the summary has no value,
    but 0 for a count the scheduler cannot make (``ZERO_WHERE_ABSENT``)."""
    if key in ZERO_WHERE_ABSENT and path[0] not in summary:
        return 0
    return summary_field(summary, path)


def spread(values: Sequence[float | None]) -> dict | None:
    """Mean, sample standard deviation, min and max of the finite values (None: none)."""
    xs = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not xs:
        return None
    n = len(xs)
    mean = sum(xs) / n
    std = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1)) if n > 1 else 0.0
    return {"mean": round(mean, 6), "std": round(std, 6), "min": round(min(xs), 6),
            "max": round(max(xs), 6), "n": n}


def aggregate(slices: Sequence[Sequence[dict]]) -> list[dict]:
    """Per scheduler (in the order of the first slice), the spread of every metric over
    the slices. ``slices`` holds one annotated list of summaries per slice."""
    names = [r["scheduler"] for r in slices[0]] if slices else []
    out = []
    for name in names:
        rows = [r for runs in slices for r in runs if r["scheduler"] == name]
        agg = {"scheduler": name, "slices": len(rows)}
        for key, path in METRICS.items():
            agg[key] = spread([metric(r, key, path) for r in rows])
        if any("crashes" in (r.get("faults") or {}) for r in rows):  # only under --faults
            for key, path in FAULT_METRICS.items():
                agg[key] = spread([summary_field(r, path) for r in rows])
        out.append(agg)
    return out


def sensitivity(points: Sequence[tuple[float, Sequence[dict]]]) -> dict:
    """Fig. 8 from (h, summaries) pairs, one pair per (h, slice): per h and scheduler the
    spread of cost, instances acquired and cleared and latency; and, per h, how much more
    each scheduler costs than the first one (no-clear over Stratus, §5.4.2)."""
    hs = sorted({h for h, _ in points})
    names: list[str] = []
    for _, runs in points:
        names += [r["scheduler"] for r in runs if r["scheduler"] not in names]
    rows = []
    relative = []
    for h in hs:
        runs = [r for hh, rs in points if hh == h for r in rs]
        for name in names:
            mine = [r for r in runs if r["scheduler"] == name]
            rows.append({"h": h, "scheduler": name, "slices": len(mine),
                         "total_cost_usd": spread([r["total_cost_usd"] for r in mine]),
                         "instances_acquired": spread([r["instances_acquired"] for r in mine]),
                         "instances_cleared": spread([
                             metric(r, "instances_cleared", METRICS["instances_cleared"])
                             for r in mine]),
                         "latency_p50": spread([summary_field(r, ("latency", "p50")) for r in mine]),
                         "latency_p95": spread([summary_field(r, ("latency", "p95")) for r in mine])})
            if any("crashes" in (r.get("faults") or {}) for r in mine):  # only under --faults
                rows[-1].update({k: spread([summary_field(r, path) for r in mine])
                                 for k, path in FAULT_METRICS.items()})
        base = [r["total_cost_usd"] for r in runs if r["scheduler"] == names[0]]
        if base and sum(base) > 0:
            for name in names[1:]:
                other = [r["total_cost_usd"] for r in runs if r["scheduler"] == name]
                relative.append({"h": h, "scheduler": name, "versus": names[0],
                                 "cost_ratio": round(sum(other) / sum(base), 6)})
    # cost against the same scheduler with perfect estimates (h = 1), where it was run
    for name in names:
        ref = next((r["total_cost_usd"]["mean"] for r in rows
                    if r["scheduler"] == name and r["h"] == 1.0 and r["total_cost_usd"]), None)
        for r in rows:
            if r["scheduler"] == name:
                r["cost_over_h1"] = (round(r["total_cost_usd"]["mean"] / ref, 6)
                                     if ref and r["total_cost_usd"] else None)
    return {"h": hs, "schedulers": names, "points": rows, "relative": relative}
