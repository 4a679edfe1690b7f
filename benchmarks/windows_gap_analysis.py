"""Where a replay's bill went, and what the runtime estimates had to do with it (issue 36,
item 1): the pieces of ``benchmarks/windows_gap.py``, each reading one finished replay made
with ``record=True`` (its audit logs) and the trace it replayed.

- ``bill_by_cause``: every instance's bill split over its life (at the instance's mean
  $/s, so the parts sum to its cost) into spin-up, CPU held by tasks, and idle CPU by the
  instance's state: not low (``packing``: fragmentation and shape), below half in every
  dimension with every task on it past its estimate (``low_overrun``: kept alive by tasks
  the scheduler took for done, or readjusted to half done, Stratus §3.4 heuristic 1),
  below half with some task still within its estimate (``low_within``), and no task at
  all (``empty``).
- ``estimate_error_by_bin``: per runtime bin of the true runtime (Stratus §3.2 bins,
  [2^(k-1), 2^k) s), how far the estimate the task was placed with was off, and the
  share of tasks placed in a lower (under) or higher (over) bin than their runtime's.
- ``migration_causes``: migrations, and those begun after the task had outrun its
  estimate (``migrations_past_estimate`` of the tasks table); ``clearing_causes``: the
  instances tasks were moved off, by whether the tasks moved had outrun their estimates.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from stratus.packers.binning import bin_of

CAUSES = ("spinup", "used", "packing", "low_overrun", "low_within", "empty")


def overrun_times(segments, est: np.ndarray) -> np.ndarray:
    """Per task, the time its progress passed its estimate (inf: never), from the run
    segments (tid, iid, start, end) of a recorded replay."""
    out = np.full(est.size, np.inf)
    if not segments:
        return out
    tid, _, s, e = (np.asarray(c) for c in zip(*segments))
    tid = tid.astype(np.int64)
    s = s.astype(np.float64)
    e = e.astype(np.float64)
    order = np.lexsort((s, tid))
    tid, s, e = tid[order], s[order], e[order]
    length = e - s
    cum = np.cumsum(length)
    first = np.r_[True, tid[1:] != tid[:-1]]
    base = np.maximum.accumulate(np.where(first, cum - length, 0.0))  # cum before a task's
    done_after = cum - base
    done_before = done_after - length
    target = est[tid]
    hit = (done_before <= target) & (done_after > target)
    # the first segment in which the progress crosses the estimate (one per task at most)
    out[tid[hit]] = s[hit] + (target[hit] - done_before[hit])
    return out


def bill_by_cause(instances, holds, req, t_over, catalog, dim: int = 0) -> dict:
    """Dollars per cause (CAUSES), summed over instances; see the module docstring. Held
    and idle are shares of dimension ``dim`` (the run's constraining resource)."""
    by_iid: dict[int, list] = defaultdict(list)
    for iid, tid, s, e in holds:
        if e > s:
            by_iid[iid].append((tid, s, e))
    out = dict.fromkeys(CAUSES, 0.0)
    for row in instances.itertuples(index=False):
        life = row.released_s - row.requested_s
        if not life > 0:
            continue
        rate = row.cost_usd / life
        ready = row.ready_s if not math.isnan(row.ready_s) else row.released_s
        ready = min(ready, row.released_s)
        out["spinup"] += rate * (ready - row.requested_s)
        cap = catalog[row.type].capacity
        _sweep(out, rate, cap, ready, row.released_s, by_iid.get(row.iid, ()), req, t_over,
               dim)
    return out


def _sweep(out: dict, rate: float, cap, t0: float, t1: float, holds, req, t_over,
           dim: int) -> None:
    """One ready instance's life [t0, t1): its held and idle CPU between events."""
    ev = []  # (time, kind, tid): kind 0 leaves, 1 passes its estimate, 2 arrives
    for tid, s, e in holds:
        ev.append((max(s, t0), 2, tid))
        ev.append((min(e, t1), 0, tid))
        if s < t_over[tid] < e:
            ev.append((t_over[tid], 1, tid))
    ev.sort()
    dims = len(cap)
    used = [0] * dims
    on: set[int] = set()
    over: set[int] = set()
    t = t0
    k = 0
    while True:
        nxt = ev[k][0] if k < len(ev) else t1
        nxt = min(max(nxt, t), t1)
        dt = nxt - t
        if dt > 0:
            share = used[dim] / cap[dim] if cap[dim] else 0.0
            out["used"] += rate * dt * share
            idle = rate * dt * (1.0 - share)
            if not on:
                out["empty"] += idle
            elif any(c and 2 * u >= c for u, c in zip(used, cap)):
                out["packing"] += idle
            elif over >= on:
                out["low_overrun"] += idle
            else:
                out["low_within"] += idle
        t = nxt
        if k >= len(ev) or t >= t1:
            break
        _, kind, tid = ev[k]
        k += 1
        r = req[tid]
        if kind == 2:
            on.add(tid)
            if t_over[tid] <= t:
                over.add(tid)
            for d in range(dims):
                used[d] += r[d]
        elif kind == 1:
            if tid in on:
                over.add(tid)
        else:
            on.discard(tid)
            over.discard(tid)
            for d in range(dims):
                used[d] -= r[d]


def _bin_label(k: int) -> str:
    if k == 0:
        return "<1 s"
    lo, hi = 2 ** (k - 1), 2 ** k
    return f"{_dur(lo)}-{_dur(hi)}"


def _dur(s: float) -> str:
    if s < 60:
        return f"{s:g}s"
    if s < 3600:
        return f"{s / 60:.3g}m"
    return f"{s / 3600:.3g}h"


def estimate_error_by_bin(runtime: np.ndarray, est: np.ndarray, weight: np.ndarray,
                          job: np.ndarray | None = None,
                          submit: np.ndarray | None = None) -> dict:
    """Per true-runtime bin: tasks, their share of ``weight`` (vCPU-seconds), the median
    and 10th/90th percentiles of estimate/actual, and the shares of tasks (and of weight)
    placed in a lower or a higher bin. With ``job``, also the lower/higher shares an
    estimate of the job's own mean task runtime would have had (what a perfect per-job
    estimator, as JVuPredict is, Stratus §3.4, still gets wrong). With ``submit``, the
    same per hour of submission from the first task's (``by_hour``): how the error falls
    as the estimator learns."""
    ok = np.isfinite(est) & np.isfinite(runtime)
    runtime, est, weight = runtime[ok], est[ok], weight[ok]
    true_bin = np.array([bin_of(x) for x in runtime.tolist()], dtype=np.int64)
    est_bin = np.array([bin_of(x) for x in est.tolist()], dtype=np.int64)
    jm_bin = None
    if job is not None:
        job = job[ok]
        codes, inv = np.unique(job, return_inverse=True)
        mean = np.bincount(inv, runtime) / np.bincount(inv)
        jm_bin = np.array([bin_of(x) for x in mean[inv].tolist()], dtype=np.int64)
    ratio = est / np.maximum(runtime, 1e-9)
    total_w = float(weight.sum()) or 1.0
    rows = []
    for k in sorted(set(true_bin.tolist())):
        m = true_bin == k
        w = weight[m]
        lower, higher = est_bin[m] < k, est_bin[m] > k
        row = {"bin": k, "range": _bin_label(k), "tasks": int(m.sum()),
               "weight_share": float(w.sum() / total_w),
               "ratio_p10": float(np.percentile(ratio[m], 10)),
               "ratio_median": float(np.median(ratio[m])),
               "ratio_p90": float(np.percentile(ratio[m], 90)),
               "placed_lower": float(lower.mean()), "placed_higher": float(higher.mean()),
               "weight_lower": float(w[lower].sum() / max(w.sum(), 1e-12)),
               "weight_higher": float(w[higher].sum() / max(w.sum(), 1e-12))}
        if jm_bin is not None:
            row["jobmean_lower"] = float((jm_bin[m] < k).mean())
            row["jobmean_higher"] = float((jm_bin[m] > k).mean())
        rows.append(row)
    tot = {"tasks": int(ok.sum()),
           "placed_lower": float((est_bin < true_bin).mean()) if ok.any() else 0.0,
           "placed_higher": float((est_bin > true_bin).mean()) if ok.any() else 0.0,
           "weight_lower": float(weight[est_bin < true_bin].sum() / total_w),
           "weight_higher": float(weight[est_bin > true_bin].sum() / total_w),
           "median_abs_log_ratio": float(np.median(np.abs(np.log(np.maximum(ratio, 1e-12)))))
           if ok.any() else 0.0}
    if jm_bin is not None:
        tot["jobmean_lower"] = float((jm_bin < true_bin).mean())
        tot["jobmean_higher"] = float((jm_bin > true_bin).mean())
        tot["jobmean_weight_lower"] = float(weight[jm_bin < true_bin].sum() / total_w)
    out = {"bins": rows, "all": tot}
    if submit is not None:
        hour = ((submit[ok] - submit[ok].min()) // 3600).astype(np.int64)
        lower = est_bin < true_bin
        out["by_hour"] = [
            {"hour": int(h), "tasks": int((hour == h).sum()),
             "weight_share": float(weight[hour == h].sum() / total_w),
             "weight_lower": float(weight[(hour == h) & lower].sum()
                                   / max(weight[hour == h].sum(), 1e-12)),
             "median_abs_log_ratio": float(np.median(np.abs(np.log(
                 np.maximum(ratio[hour == h], 1e-12)))))}
            for h in sorted(set(hour.tolist()))]
    return out


def migration_causes(tasks) -> dict:
    """Migrations, those begun past the task's estimate, and the tasks moved."""
    mig = tasks["migrations"].to_numpy()
    past = tasks["migrations_past_estimate"].to_numpy()
    return {"migrations": int(mig.sum()), "past_estimate": int(past.sum()),
            "tasks_moved": int((mig > 0).sum()),
            "tasks_moved_past_estimate": int((past > 0).sum())}


def clearing_causes(mig_log, t_over: np.ndarray) -> dict:
    """Instances tasks were migrated off (for Stratus: the instances clearing emptied,
    §3.4), by whether every task moved off had outrun its estimate when its transfer
    began, some had, or none had. ``mig_log``: the audit's (tid, src, dst, start, end)."""
    by_src: dict[int, list[bool]] = defaultdict(list)
    for tid, src, _, start, _ in mig_log or ():
        by_src[src].append(bool(t_over[tid] < start))
    out = {"instances": len(by_src), "all_past_estimate": 0, "some_past_estimate": 0,
           "none_past_estimate": 0}
    for flags in by_src.values():
        key = ("all_past_estimate" if all(flags) else
               "some_past_estimate" if any(flags) else "none_past_estimate")
        out[key] += 1
    return out


def analyse(res, trace, catalog) -> dict:
    """The breakdown of one recorded replay of ``trace`` (the fitted window it replayed)."""
    audit = res.audit
    if not audit:
        raise ValueError("analyse needs a replay made with record=True")
    f = trace.frame
    runtime = f["runtime_s"].to_numpy(dtype=np.float64)
    est = res.tasks["estimate_s"].to_numpy(dtype=np.float64)
    req = audit["req"]
    cpu = np.array([r[0] for r in req], dtype=np.float64)
    t_over = overrun_times(audit["segments"], est)
    names = list(catalog.dims)
    dim = names.index(res.summary.get("constraining_resource")) \
        if res.summary.get("constraining_resource") in names else 0
    bill = {k: float(v) for k, v in
            bill_by_cause(res.instances, audit["holds"], req, t_over, catalog, dim).items()}
    s = res.summary
    out = {"summary": {k: s.get(k) for k in (
        "scheduler", "estimator", "tasks", "jobs", "total_cost_usd", "lower_bound_cost_usd",
        "instance_hours", "instances_acquired", "migrations", "instances_cleared",
        "tasks_migrated", "estimator_warmup_hours", "estimator_warmup_jobs",
        "estimator_error", "billed_breakdown", "utilization", "latency")},
        "bill_by_cause_usd": bill, "bill_resource": names[dim],
        "migrations": migration_causes(res.tasks),
        "cleared": clearing_causes(audit.get("migrations"), t_over)}
    if s.get("estimator") != "oracle":
        out["estimate_error"] = estimate_error_by_bin(runtime, est, cpu * runtime,
                                                      f["job_id"].to_numpy(),
                                                      f["submit_s"].to_numpy(dtype=float))
    return out
