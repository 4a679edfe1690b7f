"""Readable tables for the terminal (``--json`` prints the raw summaries instead)."""

from __future__ import annotations

from collections.abc import Sequence


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.4f}" if abs(v) < 1000 else f"{v:,.1f}"
    return str(v)


def table(headers: Sequence[str], rows: Sequence[Sequence], align_left: int = 1) -> str:
    cells = [[str(h) for h in headers]] + [[_fmt(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    out = []
    for k, r in enumerate(cells):
        parts = [c.ljust(w) if i < align_left else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))]
        out.append("  ".join(parts).rstrip())
        if k == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def _integer_bound(s: dict) -> str:
    lo = s.get("lower_bound_integer_usd")
    if lo is None:
        return "- (" + s.get("lower_bound_integer_note", "not computed") + ")"
    st = s.get("lower_bound_integer_stats") or {}
    how = "" if st.get("kind", "exact") == "exact" else (
        f"  [{st['kind']}: {st['time_limited_slots']} slots time-limited, {st['lp_slots']} "
        f"LP relaxation; best cover found <= {st['gap_max']:.2%} above]")
    return f"{lo:,.2f}" + (f"  (cost = {s['total_cost_usd'] / lo:.2f} x bound)" if lo else "") + how


def _f3(v) -> str:
    return "-" if v is None else f"{v:.3f}"


def _estimator_text(s: dict) -> str:
    """A learning estimator's warm-up (hours, jobs) and its error over the replay."""
    err = s["estimator_error"]
    h, n = s.get("estimator_warmup_hours", 0.0), s.get("estimator_warmup_jobs", 0)
    warm = f"{h:g} h, {n:,} jobs" + (" (cold start)" if not n else "")
    mal = err.get("median_abs_log_ratio")
    return warm + (f" / median |log(est/actual)| {mal:.3f} over {err['jobs']:,} jobs"
                   if mal is not None else " / no job finished")


def summary_table(s: dict) -> str:
    u, lat = s["utilization"], s["latency"]
    ratio = s["total_cost_usd"] / s["lower_bound_cost_usd"] if s.get("lower_bound_cost_usd") else None
    rows = [
        ("scheduler", s["scheduler"]),
        ("trace", s["trace"]),
        ("market / estimator", f"{s['market']} / {s['estimator']}"),
        *([("estimator warm-up / error", _estimator_text(s))] if "estimator_error" in s else []),
        ("tasks completed", f"{s['tasks_completed']:,} / {s['tasks']:,} ({s['jobs']:,} jobs)"),
        *([("tasks unfinished", f"{s['tasks_unfinished']:,} ({s['ended_early']})")]
          if s.get("ended_early") else []),
        ("total cost ($)", f"{s['total_cost_usd']:,.2f}"),
        ("fluid lower bound ($)", f"{s['lower_bound_cost_usd']:,.2f}"
         + (f"  (cost = {ratio:.2f} x bound)" if ratio else "")),
        ("integer lower bound ($)", _integer_bound(s)),
        ("instance-hours", _fmt(s["instance_hours"]) if s["instance_hours"] is None
         else f"{s['instance_hours']:,.1f}"),
        # an empty window has no utilization (None in JSON): shown as "-"
        ("utilization cpu / mem", f"{_f3(u['cpu'])} / {_f3(u['mem'])}"),
        ("constraining utilization", f"{_f3(u['constraining'])} ({s['constraining_resource']})"),
        ("progress / per-instance util.", f"{_fmt(u.get('progress'))} / "
         f"{_fmt(u.get('per_instance_constraining'))}"),
        ("spin-up share of the bill", _fmt(s.get("spinup_share"))),
        ("normalized latency p50 / p95", f"{_fmt(lat['p50'])} / {_fmt(lat['p95'])}"),
        ("instances acquired", f"{s['instances_acquired']:,}"),
        ("migrations (seconds)", f"{s['migrations']:,} ({s['migration_seconds']:,.0f} s)"),
    ]
    for key in ("instances_cleared", "tasks_migrated", "revocations"):
        if key in s and (key != "revocations" or s[key]):
            rows.append((key.replace("_", " "), f"{s[key]:,}"))
    rows.append(("cost by type ($)", ", ".join(f"{k} {v:,.2f}" for k, v in s["cost_by_type"].items())))
    if s.get("reserved_instances"):  # --reserved: prepaid instances, in instances acquired
        rows.append(("reserved (in acquired)", f"{s['reserved']} ({s['reserved_instances']:,} "
                                               f"instance{'s' * (s['reserved_instances'] != 1)}"
                                               f", ${s['reserved_cost_usd']:,.2f})"))
        if "tasks_ran_on_cloud" in s:  # what ran where, by the instances' own records
            rows.append(("tasks ran on reserved / cloud / both",
                         f"{s['tasks_ran_on_reserved']:,} / {s['tasks_ran_on_cloud']:,} / "
                         f"{s['tasks_ran_on_both']:,} ({s['ran_on_cloud_fraction']:.1%} "
                         f"used a cloud instance)"))
    w = s.get("waiting")
    if w:  # the gate's split: where it sent each task, not where the task ran
        rows.append((f"waiting gate ({w['policy']}, share {'on' if w['share'] else 'off'})",
                     f"started {w['gate_started_on_reserved']:,} on reserved, turned away "
                     f"{w['gate_turned_away']:,} ({w['gate_turned_away_fraction']:.1%}; "
                     f"{w['turned_away_ran_on_reserved']:,} of them ran on reserved "
                     f"room); mean wait {w['mean_wait_s']:,.1f} s"))
    if s.get("savings_plan_usd_per_hour"):  # --savings-plan: its commitment and use
        rows.append(("savings plan ($/h:discount)",
                     f"{s['savings_plan']} (committed ${s['savings_plan_commitment_usd']:,.2f}"
                     f", covered ${s['savings_plan_covered_usd']:,.2f} of on-demand, unused "
                     f"${s['savings_plan_unused_usd']:,.2f})"))
    aa = s.get("anti_affinity")
    if aa:  # the trace carries anti-affinity flags (Stratus §4.2 assumption 2)
        rows.append(("anti-affinity", f"{'on' if aa['honoured'] else 'off (ignored)'}: "
                                      f"{aa['flagged_tasks']:,} flagged tasks in "
                                      f"{aa['flagged_jobs']:,} jobs"))
    f = s.get("faults")
    if f and "crashes" in f:  # --faults: what the cloud's own faults did
        rows.append(("faults", f["spec"]))
        rows.append(("crashes (tasks restarted)", f"{f['crashes']:,} ({f['tasks_restarted']:,})"))
        rows.append(("work lost (task-h, $)", f"{f['lost_task_seconds'] / 3600:,.1f} h, "
                                              f"${f['lost_usd']:,.2f}"))
        rows.append(("failed requests (ICE)", f"{f['ice_failures']:,} ({f['ice_shortages']:,} "
                                              f"shortages, {f['ice_tasks_returned']:,} tasks "
                                              f"sent back)"))
    rows.append(("wall seconds", f"{s['wall_seconds']:.2f}"))
    return table(("metric", "value"), rows, align_left=2)


def normalized_note(summaries: Sequence[dict]) -> str:
    """The line under a table that says what ``normalized`` divides by."""
    from stratus.app.comparison import NORMALIZED_BY

    by = {s.get("normalized_by") for s in summaries} - {None}
    here = f" (here {by.pop()}'s)" if len(by) == 1 else ""
    return f"normalized = {NORMALIZED_BY}{here}"


def comparison_table(summaries: Sequence[dict]) -> str:
    """One row per scheduler: cost, normalized cost (``normalized_note``: Stratus Fig. 4)
    and cost over the lower bound (the integer one where there is one; both bounds are
    shown), constraining utilization (Fig. 5), latency (Table 2)."""
    rows = []
    for s in summaries:
        rows.append((s["scheduler"], s["total_cost_usd"], s.get("normalized_cost"),
                     s.get("lower_bound_cost_usd"), s.get("lower_bound_integer_usd"),
                     s.get("cost_over_bound"), s["utilization"]["constraining"],
                     s["latency"]["p50"], s["latency"]["p95"], s["instances_acquired"],
                     s["migrations"], s["wall_seconds"]))
    return table(("scheduler", "cost $", "normalized", "fluid bound $", "int. bound $", "/ bound",
                  "util", "lat p50", "lat p95", "instances", "migrations", "wall s"),
                 rows) + "\n" + normalized_note(summaries)


def _ms(d: dict | None) -> str:
    """mean ± std of a spread (stratus.app.comparison.spread)."""
    if not d:
        return "-"
    fmt = ",.1f" if abs(d["mean"]) >= 1000 else ".3f"
    return f"{d['mean']:{fmt}} ± {d['std']:{fmt}}"


def slices_table(aggregates: Sequence[dict]) -> str:
    """A multi-slice comparison: mean ± standard deviation over the slices."""
    rows = [(a["scheduler"], a["slices"], _ms(a["total_cost_usd"]), _ms(a["normalized_cost"]),
             _ms(a["cost_over_bound"]), _ms(a["utilization_constraining"]),
             _ms(a["latency_p50"]), _ms(a["latency_p95"])) for a in aggregates]
    return table(("scheduler", "slices", "cost $", "normalized", "/ bound", "util", "lat p50",
                  "lat p95"), rows) + "\n" + normalized_note([]) + ", slice by slice"


def sensitivity_table(doc: dict) -> str:
    """Stratus Fig. 8: cost, instances acquired and cleared against the error factor h."""
    ratio = {(r["h"], r["scheduler"]): r["cost_ratio"] for r in doc["relative"]}
    rows = [(p["h"], p["scheduler"], _ms(p["total_cost_usd"]), p.get("cost_over_h1"),
             ratio.get((p["h"], p["scheduler"])), _ms(p["instances_acquired"]),
             _ms(p["instances_cleared"]), _ms(p["latency_p95"])) for p in doc["points"]]
    ref = doc["schedulers"][0] if doc["schedulers"] else "-"
    return table(("h", "scheduler", "cost $", "/ cost at h=1", f"/ {ref}", "acquired",
                  "cleared", "lat p95"), rows, align_left=2)
