"""Independent checks of the engine's invariants on a replay recorded with record=True.

These recompute everything from the raw per-interval logs, not from the engine's own
totals, so a bookkeeping bug in the engine shows up as a disagreement.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import defaultdict

import numpy as np

from pricing.prices import PriceBook


def step_integral(times, prices, t0: float, t1: float) -> float:
    """$ for one instance over [t0, t1] of a step price, walking the steps one by one in
    plain Python (independent of the engine's cumulative-sum integral)."""
    times, prices = times.tolist(), prices.tolist()
    i = max(bisect_right(times, t0) - 1, 0)  # the step in force at t0
    total, t = 0.0, t0
    while t < t1:
        nxt = times[i + 1] if i + 1 < len(times) else t1
        end = min(max(nxt, t), t1)
        total += prices[i] * (end - t)
        t = end
        i += 1
        if i >= len(times):
            total += prices[-1] * (t1 - t)
            break
    return total / 3600.0


def check_invariants(trace, res, prices: PriceBook | None = None) -> None:
    a = res.audit
    assert a, "replay must be recorded (record=True)"
    prices = prices or a["prices"]
    insts, req = a["instances"], a["req"]
    n = len(trace)
    runtime = trace.column("runtime_s")

    # every task finishes exactly once
    assert res.summary["tasks_completed"] == n
    finish = res.tasks["finish_s"].to_numpy()
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
    revoked = res.summary["tasks_revoked"] > 0
    mig_total = sum(e - s for *_, s, e in a["migrations"])
    assert math.isclose(res.summary["migration_seconds"], mig_total, rel_tol=1e-9, abs_tol=2e-3)
    for tid, iid, s, e in a["segments"]:
        progress[tid] += e - s
        inst = insts[iid]
        assert inst.ready_at is not None and s >= inst.ready_at - 1e-9, "ran before the instance was ready"
        assert any(hs <= s + 1e-9 and e <= he + 1e-9 for hs, he in holds_of[(tid, iid)]), \
            "ran without holding resources"
    if not revoked:
        np.testing.assert_allclose(progress, runtime, rtol=1e-9, atol=1e-6)
        mig_time = np.zeros(n)
        for tid, _src, _dst, s, e in a["migrations"]:
            mig_time[tid] += e - s
        first = res.tasks["first_start_s"].to_numpy()
        np.testing.assert_allclose(finish - first, runtime + mig_time, rtol=1e-9, atol=1e-6)
        assert res.tasks["migrations"].sum() == len(a["migrations"]) == res.summary["migrations"]

    # money: each instance's bill is the integral of its price from request to release
    total = 0.0
    for inst in insts.values():
        s = prices.series(inst.itype.name, inst.market)
        want = step_integral(s.times, s.prices, inst.requested_at, inst.released_at)
        assert math.isclose(inst.cost, want, rel_tol=1e-9, abs_tol=1e-12), (inst, inst.cost, want)
        total += want
    assert math.isclose(res.summary["total_cost_usd"], total, rel_tol=1e-9, abs_tol=1e-12)
    assert math.isclose(res.instances["cost_usd"].sum(), total, rel_tol=1e-9, abs_tol=1e-9)

    # the fluid lower bound is a lower bound
    assert res.summary["total_cost_usd"] >= res.summary["lower_bound_cost_usd"] - 1e-6
    assert res.summary["lower_bound_cost_usd"] > 0


def comparable(res) -> tuple:
    """Everything about a replay that must be identical for identical inputs and seed."""
    s = dict(res.summary)
    s.pop("wall_seconds")
    # JSON so that NaN (an instance released before it came up) compares equal to itself
    return (s, res.instances.to_json(), res.tasks.to_json(), res.jobs.to_json())
