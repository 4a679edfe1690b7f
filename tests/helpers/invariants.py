"""Independent checks of the engine's invariants on a replay recorded with record=True.

These recompute everything from the raw per-interval logs, not from the engine's own
totals, so a bookkeeping bug in the engine shows up as a disagreement.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import defaultdict

import numpy as np

from stratus.pricing.prices import PriceBook


def step_integral(times, prices, t0: float, t1: float) -> float:
    """$ for one instance over [t0, t1] of a step price, walking the steps one by one in
    plain Python (independent of the engine's cumulative-sum integral). ``times`` and
    ``prices`` are read element by element (a 90-day spot series is long, an instance's
    life spans a few of its steps): each as a Python float."""
    n = len(times)
    i = max(bisect_right(times, t0) - 1, 0)  # the step in force at t0
    total, t = 0.0, t0
    while t < t1:
        nxt = float(times[i + 1]) if i + 1 < n else t1
        end = min(max(nxt, t), t1)
        total += float(prices[i]) * (end - t)
        t = end
        i += 1
        if i >= n:
            total += float(prices[-1]) * (t1 - t)
            break
    return total / 3600.0


def check_invariants(trace, res, prices: PriceBook | None = None, partial: bool = False) -> None:
    """The engine's invariants over a recorded replay. ``partial``: the replay may have
    stopped early (a guard, starvation): tasks not done are counted as unfinished, and
    every task made at most its runtime of progress."""
    a = res.audit
    assert a, "replay must be recorded (record=True)"
    prices = prices or a["prices"]
    insts, req = a["instances"], a["req"]
    n = len(trace)
    runtime = trace.column("runtime_s")

    # every task finishes exactly once (or, stopped early, is counted unfinished)
    finish = res.tasks["finish_s"].to_numpy()
    assert res.summary["tasks_completed"] + res.summary["tasks_unfinished"] == n
    assert int(np.isfinite(finish).sum()) == res.summary["tasks_completed"]
    if partial:
        assert (res.summary["ended_early"] is None) == (res.summary["tasks_unfinished"] == 0)
    else:
        assert res.summary["tasks_completed"] == n and res.summary["ended_early"] is None
        assert np.all(np.isfinite(finish)), "a task never finished"

    # nothing outlives the replay; every instance released
    for inst in insts.values():
        assert inst.released_at is not None and inst.released_at >= inst.requested_at

    # capacity never exceeded, in any dimension, at any instant; holds only within life
    by_inst = defaultdict(list)
    for iid, tid, s, e in a["holds"]:
        inst = insts[iid]
        assert s <= e
        assert inst.requested_at <= s and e <= inst.released_at, "resources held outside instance life"
        by_inst[iid].append((s, e, req[tid]))
    for iid, inst in insts.items():
        # released the moment it has nothing left, unless a policy kept it: its holds cover
        # its whole billed life, with no idle gap (Stratus §4.1)
        if inst.was_kept:
            continue
        covered = inst.requested_at
        for s, e, _ in sorted(by_inst[iid], key=lambda h: h[0]):
            assert s <= covered + 1e-9, f"instance {iid} idle from {covered} to {s} but not released"
            covered = max(covered, e)
        assert abs(covered - inst.released_at) < 1e-9, \
            f"instance {iid} released at {inst.released_at}, last task gone at {covered}"
    for iid, hs in by_inst.items():
        cap = insts[iid].itype.capacity
        events = [(s, 1, r) for s, _, r in hs] + [(e, 0, r) for _, e, r in hs]
        events.sort(key=lambda x: (x[0], x[1]))  # at equal times, releases before holds
        load = [0] * len(cap)
        for _, kind, r in events:
            load = [x + (y if kind else -y) for x, y in zip(load, r)]
            assert all(x <= c for x, c in zip(load, cap)), f"instance {iid} over capacity: {load} > {cap}"
        assert all(x == 0 for x in load)

    # every task runs exactly its runtime, only on a ready instance while holding it
    progress = np.zeros(n)
    holds_of = defaultdict(list)
    for iid, tid, s, e in a["holds"]:
        holds_of[(tid, iid)].append((s, e))
    faults = res.summary.get("faults") or {}
    # a task sent back by a revocation or a crash ran more than its runtime in all
    revoked = res.summary["tasks_revoked"] > 0 or faults.get("tasks_restarted", 0) > 0
    mig_total = sum(e - s for *_, s, e in a["migrations"])
    assert math.isclose(res.summary["migration_seconds"], mig_total, rel_tol=1e-9, abs_tol=2e-3)
    for tid, iid, s, e in a["segments"]:
        progress[tid] += e - s
        inst = insts[iid]
        assert inst.ready_at is not None and s >= inst.ready_at - 1e-9, "ran before the instance was ready"
        assert any(hs <= s + 1e-9 and e <= he + 1e-9 for hs, he in holds_of[(tid, iid)]), \
            "ran without holding resources"
    done = np.isfinite(finish)
    assert revoked or np.all(progress[~done] <= runtime[~done] + 1e-6), \
        "an unfinished task ran too long"
    if not revoked and partial:
        np.testing.assert_allclose(progress[done], runtime[done], rtol=1e-9, atol=1e-6)
    elif not revoked:
        np.testing.assert_allclose(progress, runtime, rtol=1e-9, atol=1e-6)
        mig_time = np.zeros(n)
        for tid, _src, _dst, s, e in a["migrations"]:
            mig_time[tid] += e - s
        first = res.tasks["first_start_s"].to_numpy()
        np.testing.assert_allclose(finish - first, runtime + mig_time, rtol=1e-9, atol=1e-6)
        assert res.tasks["migrations"].sum() == len(a["migrations"]) == res.summary["migrations"]
    # a migration past the task's estimate is one of its migrations; with true runtimes
    # for estimates no task outruns its estimate, so none is (issue 36's breakdown)
    past = res.tasks["migrations_past_estimate"].to_numpy()
    assert np.all(past <= res.tasks["migrations"].to_numpy())
    if res.summary.get("estimator") == "oracle":
        assert past.sum() == 0, "a migration past an oracle estimate"

    check_faults(res, progress, runtime, finish)

    # money: each instance's bill is the integral of its price from request to release
    total = 0.0
    for inst in insts.values():
        s = prices.series(inst.itype.name, inst.market)
        want = step_integral(s.times, s.prices, inst.requested_at, inst.released_at)
        assert math.isclose(inst.cost, want, rel_tol=1e-9, abs_tol=1e-12), (inst, inst.cost, want)
        total += want
    assert math.isclose(res.instances["cost_usd"].sum(), total, rel_tol=1e-9, abs_tol=1e-9)
    if "savings_plan_usd_per_hour" in res.summary:  # on-demand usage billed under the plan
        plan = savings_plan_per_second(res, prices)
        total += plan["bill"] - plan["usage"]
    assert math.isclose(res.summary["total_cost_usd"], total, rel_tol=1e-9, abs_tol=1e-9)
    assert math.isclose(sum(res.summary["cost_by_market"].values()), total, rel_tol=1e-9,
                        abs_tol=1e-8)

    check_utilization(res)

    # the fluid lower bound is a lower bound
    assert res.summary["total_cost_usd"] >= res.summary["lower_bound_cost_usd"] - 1e-6
    assert res.summary["lower_bound_cost_usd"] > 0 or (partial and not done.any())
    # and so is the integer one (where OR-Tools is installed), never below the fluid one
    lo = res.summary.get("lower_bound_integer_usd")
    if lo is not None:
        assert res.summary["total_cost_usd"] >= lo * (1 - 1e-9) - 1e-12
        assert lo >= res.summary["lower_bound_cost_usd"] * (1 - 1e-9) - 1e-12


def savings_plan_per_second(res, prices: PriceBook | None = None) -> dict[str, float]:
    """The savings plan's bill (stratus.commitments.savings) recomputed by brute force from the
    instance log: every released on-demand instance's life cut into seconds counted from the
    plan's origin (the first tick), each second's on-demand price added to its clock hour;
    then per hour h, commitment C_h (the last hour prorated by seconds) and bill_h = C_h +
    max(0, U_h - C_h / (1 - d)). Checks the summary's plan keys; returns the totals."""
    a, s = res.audit, res.summary
    prices = prices or a["prices"]
    rate, d = s["savings_plan_usd_per_hour"], s["savings_plan_discount"]
    start, end = a["horizon"]
    n = max(1, math.ceil((end - start) / 3600.0 - 1e-12))
    usage = np.zeros(n)
    for inst in a["instances"].values():
        if inst.market != "on-demand":
            continue
        series = prices.series(inst.itype.name, "on-demand")
        t0, t1 = inst.requested_at, inst.released_at
        # one element per second j of the plan, [start + j, start + j + 1), from the one
        # holding t0 to the last that begins before t1 (numpy for the seconds' loop: an
        # instance lives for hours; each second's arithmetic as it would be in Python)
        j0 = math.floor(t0 - start)
        j = np.arange(j0, max(j0, math.ceil(t1 - start)) + 1, dtype=np.int64)
        j = j[start + j < t1]
        lo, hi = np.maximum(start + j, t0), np.minimum(start + j + 1, t1)
        keep = hi > lo
        j, lo, hi = j[keep], lo[keep], hi[keep]
        # the price in force at lo: PriceSeries.at (the last change at or before lo)
        price = series.prices[np.maximum(np.searchsorted(series.times, lo, "right") - 1, 0)]
        # each second into its clock hour, in order (np.add.at adds one by one)
        np.add.at(usage, np.minimum(j // 3600, n - 1), price * (hi - lo) / 3600.0)
    out = dict.fromkeys(("commitment", "usage", "covered", "unused", "bill"), 0.0)
    for h, u in enumerate(usage.tolist()):
        c = rate * max(0.0, min(3600.0, end - (start + 3600.0 * h))) / 3600.0
        cov = min(u, c / (1.0 - d))
        out["commitment"] += c
        out["usage"] += u
        out["covered"] += cov
        out["unused"] += c - (1.0 - d) * cov
        out["bill"] += c + max(0.0, u - c / (1.0 - d))
    for key in ("commitment", "covered", "unused"):
        assert math.isclose(s[f"savings_plan_{key}_usd"], out[key], rel_tol=1e-8,
                            abs_tol=1e-8), (key, s[f"savings_plan_{key}_usd"], out[key])
    assert math.isclose(s["cost_by_market"]["savings-plan"], out["commitment"], rel_tol=1e-8,
                        abs_tol=1e-8)
    if "on-demand" in s["cost_by_market"]:
        assert math.isclose(s["cost_by_market"]["on-demand"], out["bill"] - out["commitment"],
                            rel_tol=1e-8, abs_tol=1e-8)
    return out


def check_faults(res, progress, runtime, finish) -> None:
    """The cloud's own faults (stratus.sim.faults): a crashed instance is billed to its crash
    and no further, holds nothing after it, crashed only once it was up; the progress every
    task made is its runtime plus what crashes lost (when nothing else discards progress)."""
    a, faults = res.audit, res.summary.get("faults")
    crashes = a.get("crashes") or {}
    if faults is None:
        assert not crashes
        return
    assert faults["crashes"] == len(crashes)
    insts = a["instances"]
    for iid, t in crashes.items():
        inst = insts[iid]
        assert inst.released_at == t, f"instance {iid} crashed at {t}, billed to {inst.released_at}"
        assert inst.ready_at is not None and inst.ready_at <= t
    for iid, _tid, _s, e in a["holds"]:
        if iid in crashes:
            assert e <= crashes[iid] + 1e-9, "a task held a crashed instance after its crash"
    if res.summary["tasks_revoked"] == 0 and res.summary["ended_early"] is None:
        done = np.isfinite(finish)
        assert done.all()
        assert math.isclose(progress.sum(), runtime.sum() + faults["lost_task_seconds"],
                            rel_tol=1e-9, abs_tol=1e-3 * (1 + faults["tasks_restarted"]))
    if faults["crashes"] == 0:
        assert faults["tasks_restarted"] == 0 and faults["lost_usd"] == 0
    assert faults["lost_usd"] >= 0 and faults["lost_core_seconds"] >= 0


def check_utilization(res) -> None:
    """Utilization, progress utilization, spin-up share and the bill's breakdown, recomputed
    from the per-interval logs (allocation counts only while an instance is ready)."""
    from stratus.base.resources import ALL_DIMS

    a, summ = res.audit, res.summary
    insts, req = a["instances"], a["req"]
    if not insts:
        return
    caps = {inst.itype.capacity for inst in insts.values()}
    dims = len(next(iter(caps)))
    DIMS = ALL_DIMS[:dims]  # noqa: N806 (the run's dimensions: the catalog's)
    billed, booting, allocated, progress = (np.zeros(dims) for _ in range(4))
    for inst in insts.values():
        cap = np.asarray(inst.itype.capacity, dtype=float)
        billed += cap * (inst.released_at - inst.requested_at)
        up = inst.ready_at if inst.ready_at is not None else inst.released_at
        booting += cap * (min(up, inst.released_at) - inst.requested_at)
    for iid, tid, s, e in a["holds"]:
        ready = insts[iid].ready_at
        if ready is not None:
            allocated += np.asarray(req[tid], dtype=float) * max(0.0, e - max(s, ready))
    for tid, _iid, s, e in a["segments"]:
        progress += np.asarray(req[tid], dtype=float) * (e - s)
    transfer = np.zeros(dims)
    for tid, _src, _dst, s, e in a["migrations"]:
        transfer += np.asarray(req[tid], dtype=float) * (e - s)
    if not billed.any():
        return
    u = summ["utilization"]
    for i, d in enumerate(DIMS):
        if not billed[i]:  # GPUs, on a run that rented no GPU type
            assert u[d] is None and u[f"progress_{d}"] is None, (d, u)
            continue
        assert math.isclose(u[d], allocated[i] / billed[i], abs_tol=2e-4), (d, u[d])
        assert math.isclose(u[f"progress_{d}"], (progress[i] + transfer[i]) / billed[i],
                            abs_tol=2e-4), d
        # a task in transfer holds both ends: allocation = progress + 2 x transfers (ready)
        assert u[d] >= u[f"progress_{d}"] - 2e-4
    b = summ["billed_breakdown"]
    i = DIMS.index(b["resource"])
    idle = _idle_by_state(insts, req, a["holds"], i)
    for k, v in idle.items():
        assert math.isclose(b[k], v / billed[i], abs_tol=2e-4), (k, b[k], v / billed[i])
    shares = {k: v for k, v in b.items() if k != "resource"}
    assert all(v >= 0 for v in shares.values()), shares
    assert math.isclose(sum(shares.values()), 1.0, abs_tol=1e-3), shares
    assert math.isclose(b["progress"], progress[i] / billed[i], abs_tol=2e-4)
    assert math.isclose(b["spinup"], booting[i] / billed[i], abs_tol=2e-4)
    assert math.isclose(summ["spinup_share"], booting[i] / billed[i], abs_tol=2e-4)
    # every instance full in its fullest dimension counts at least as much as any one
    # dimension over all instances, when capacities are proportional across dimensions
    # (m4; not with several shapes, e.g. GPUs on a few small instances)
    if len({tuple(c / cap[0] for c in cap) for cap in caps}) == 1:
        assert u["per_instance_constraining"] >= u["constraining"] - 2e-4


def _idle_by_state(insts, req, holds, i: int) -> dict[str, float]:
    """Idle resource-time of dimension ``i`` on ready instances, by the instance's state
    between consecutive load changes, rebuilt from the hold intervals by a sweep."""
    out = dict.fromkeys(("idle_fragmentation", "idle_shape", "idle_low_one_task",
                         "idle_low_several_tasks"), 0.0)
    by_inst = defaultdict(list)
    for iid, tid, s, e in holds:
        by_inst[iid].append((s, 1, tid))
        by_inst[iid].append((e, -1, tid))
    for iid, inst in insts.items():
        if inst.ready_at is None or inst.ready_at >= inst.released_at:
            continue
        cap = inst.itype.capacity
        used, count, prev = [0] * len(cap), 0, inst.ready_at
        # at equal times, releases before holds (as the engine applies them)
        for t, kind, tid in sorted(by_inst[iid], key=lambda x: (x[0], x[1])):
            lo, hi = max(prev, inst.ready_at), min(t, inst.released_at)
            if hi > lo:
                _book(out, cap, used, count, i, hi - lo)
            prev = max(prev, t)
            used = [u + kind * r for u, r in zip(used, req[tid])]
            count += kind
        if inst.released_at > prev:
            _book(out, cap, used, count, i, inst.released_at - max(prev, inst.ready_at))
    return out


def _book(out, cap, used, count, i, dt) -> None:
    # a dimension the type lacks (0 GPUs) is neither used nor idle, as in the engine
    share = [u / c if c else 0.0 for u, c in zip(used, cap)]
    if all(2 * u < c for u, c in zip(used, cap) if c):
        key = "idle_low_one_task" if count == 1 else "idle_low_several_tasks"
    else:
        # the fullest dimension; ties go to the first, as in the engine
        key = "idle_fragmentation" if share.index(max(share)) == i else "idle_shape"
    out[key] += (cap[i] - used[i]) * dt


def comparable(res) -> tuple:
    """Everything about a replay that must be identical for identical inputs and seed."""
    s = dict(res.summary)
    s.pop("wall_seconds")
    # JSON so that NaN (an instance released before it came up) compares equal to itself
    return (s, res.instances.to_json(), res.tasks.to_json(), res.jobs.to_json())
