"""Issue 35, item 3: a task of months is a long task, not a stall. The stall guard stops a
replay only when nothing is on its way to finishing (no task running that kept its
progress); a replay of months ends with the exact bill; and ticks that can decide nothing
are skipped (the engine jumps to the tick after the next event), so it ends quickly."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratus.app.registry import make_scheduler, scheduler_names
from stratus.policy.compose import Plan
from stratus.pricing.catalog import M4
from stratus.pricing.prices import PriceBook, PriceSeries
from stratus.sim.decisions import Decisions
from stratus.sim.engine import Engine, ReplayConfig
from stratus.sim.faults import parse_faults
from tests.helpers.trace import make_trace

DAY = 86400.0
SPIN = 40.0
# a 145-day task (Alibaba's GPU trace has one) and a few short ones, one of them ten days in
ROWS = [(1, 0, 0.0, 145 * DAY, 1.0, 2.0), (2, 0, 100.0, 600.0, 1.0, 2.0),
        (3, 0, 5000.0, 1200.0, 2.0, 4.0), (4, 0, 10 * DAY, 3600.0, 1.0, 2.0)]


def run(rows, scheduler, **cfg):
    conf = dict(market="on-demand", spinup_s=(SPIN, SPIN))
    conf.update(cfg)
    eng = Engine(make_trace(rows), scheduler, ReplayConfig(**conf))
    return eng, eng.run()


def test_a_task_of_months_ends_with_the_exact_bill_in_few_ticks():
    """One instance per task, on demand: each m4.large ($0.10/h) is billed from its request
    (the first tick at or after the submit) to its task's end: spin-up plus runtime."""
    eng, res = run(ROWS, make_scheduler("task-per-instance"))
    assert res["ended_early"] is None and res["tasks_completed"] == 4
    want = 0.10 * sum(SPIN + runtime for _, _, _, runtime, _, _ in ROWS) / 3600
    assert res.instances.cost_usd.sum() == pytest.approx(want, rel=1e-12)
    assert res["total_cost_usd"] == round(want, 7)  # (the summary keeps 7 decimals)
    assert set(res.instances.type) == {"m4.large"}
    long_end = res.tasks.finish_s[0]
    assert long_end == 0.0 + SPIN + 145 * DAY
    # 145 days at a 60-s tick is 208,800 ticks; with nothing pending and the scheduler
    # quiet, the engine ticks only after events (arrivals, instances up, finishes)
    assert eng.ticks < 20


def test_a_task_of_months_on_spot_is_billed_at_the_series_to_its_end():
    """The spot price changes (events the engine wakes for) and holds its last value after
    the history's end; the bill is the price's integral over each instance's life."""
    series = PriceSeries([0.0, 30 * DAY, 60 * DAY], [0.03, 0.04, 0.035])
    book = PriceBook.on_demand(M4).with_series(
        {(t.name, "spot"): series if t.name == "m4.large" else
         PriceSeries.constant(0.3 * t.ondemand_hourly) for t in M4})
    eng, res = run(ROWS, make_scheduler("task-per-instance"), market="spot", prices=book)
    assert res["ended_early"] is None and res["revocations"] == 0
    want = sum(series.cost(a, b) for a, b in zip(res.instances.requested_s,
                                                 res.instances.released_s))
    assert res.instances.cost_usd.sum() == pytest.approx(want, rel=1e-12)
    assert res["total_cost_usd"] == round(want, 7)
    assert eng.ticks < 20


@pytest.mark.slow  # (the ticked replay: 28,800 ticks)
def test_a_revocation_a_price_change_schedules_wakes_the_skipping_engine():
    """A quiet scheduler sleeps through price changes, but one that passes the bid
    schedules a revocation: the task must be back on an instance at the tick after it, not
    at the next arrival ten days on (as an early version of the skip had it)."""
    up, down = 2 * DAY + 30.0, 2 * DAY + 3600.0
    series = PriceSeries([0.0, up, down], [0.03, 0.20, 0.03])  # $0.20 > the $0.10 bid
    book = PriceBook.on_demand(M4).with_series(
        {(t.name, "spot"): series if t.name == "m4.large" else
         PriceSeries.constant(0.3 * t.ondemand_hourly) for t in M4})
    rows = [(1, 0, 0.0, 20 * DAY, 1.0, 2.0), (2, 0, 10 * DAY, 600.0, 1.0, 2.0)]
    runs = [run(rows, s, market="spot", prices=book)
            for s in (make_scheduler("task-per-instance"),
                      Unquiet(make_scheduler("task-per-instance")))]
    (eng, res), (_, ticked) = runs
    assert res["revocations"] == 1 and res["ended_early"] is None
    again = res.instances.requested_s.tolist()[1]  # the long task's second instance
    assert up + 120.0 < again <= up + 120.0 + 60.0
    assert res.instances.equals(ticked.instances) and res["total_cost_usd"] == \
        ticked["total_cost_usd"]
    assert eng.ticks < 50


@pytest.mark.parametrize("name", ["stratus", "first-fit", "stratus-noclear"])
def test_packing_schedulers_end_a_months_long_replay_too(name):
    eng, res = run(ROWS, make_scheduler(name))
    assert res["ended_early"] is None and res["tasks_completed"] == 4
    assert res.tasks.finish_s[0] == pytest.approx(SPIN + 145 * DAY, abs=120)
    assert eng.ticks < 200


class Unquiet:
    """A scheduler without ``quiet``: the engine then ticks every tick (as it does for a
    user's own scheduler object)."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.name = inner.name

    def schedule(self, view):
        return self.inner.schedule(view)

    def reset(self):
        self.inner.reset()

    def start(self, view):
        self.inner.start(view)

    def stats(self):
        return self.inner.stats()


def test_the_stall_guard_lets_a_long_task_run_when_every_tick_is_ticked():
    """Ticked every hour for 145 days (3,480 ticks) with a guard of 100 ticks: the task's
    finish is scheduled and nothing takes its progress away, so this is no stall."""
    eng, res = run(ROWS, Unquiet(make_scheduler("task-per-instance")), tick_s=3600.0,
                   max_idle_ticks=100)
    assert res["ended_early"] is None and res["tasks_completed"] == 4
    assert eng.ticks > 3000


class OnlyJob1:
    """Places job 1's task on an instance of its own, and never any other: job 2's task
    waits forever."""

    name = "only-job-1"

    def schedule(self, view):
        plan = Plan(view)
        for task in view.pending:
            if task.job == 1:
                plan.acquire(M4["m4.large"], [task])
        return plan.decisions


def test_a_stall_is_still_a_stall_once_the_long_task_is_done():
    rows = [(1, 0, 0.0, 30 * DAY, 1.0, 2.0), (2, 0, 0.0, 600.0, 1.0, 2.0)]
    eng, res = run(rows, OnlyJob1(), tick_s=3600.0, max_idle_ticks=100)
    assert res["tasks_completed"] == 1 and res["tasks_unfinished"] == 1
    assert res.tasks.finish_s[0] == pytest.approx(3600.0 * 0 + SPIN + 30 * DAY)
    why = res["ended_early"]
    assert why.startswith("stalled: scheduler 'only-job-1': no task finished for 100 ticks")
    assert "none is running; 1 pending" in why
    # it stopped about 100 ticks after the long task finished, not at the 100th tick
    assert eng.kernel.now == pytest.approx(30 * DAY + 101 * 3600.0, abs=2 * 3600.0)


def test_a_scheduler_that_never_places_is_stopped_at_the_guard():
    class Lazy:
        name = "lazy"

        def schedule(self, view):
            return Decisions()

    eng, res = run([(1, 0, 0.0, 600.0, 1.0, 1.0)], Lazy(), max_idle_ticks=50)
    assert res["tasks_unfinished"] == 1
    assert "no task finished for 50 ticks and none is running" in res["ended_early"]


# --- skipping ticks changes nothing ------------------------------------------------------------

@st.composite
def workloads(draw):
    rows = []
    for j in range(draw(st.integers(1, 6))):
        submit = draw(st.sampled_from([0.0, 30.0, 3600.0, DAY])) + draw(st.floats(0, 600))
        cpu, mem = draw(st.sampled_from([(0.5, 1.0), (1.0, 2.0), (2.0, 8.0), (8.0, 30.0)]))
        for i in range(draw(st.integers(1, 3))):
            runtime = draw(st.sampled_from([60.0, 900.0, 5 * 3600.0, DAY]))
            rows.append((j, i, submit, runtime * draw(st.floats(0.5, 1.5)), cpu, mem))
    return rows


@pytest.mark.slow
@settings(max_examples=5, deadline=None)
@given(rows=workloads(), name=st.sampled_from(scheduler_names()),
       market=st.sampled_from(["on-demand", "spot"]), seed=st.integers(0, 50),
       faults=st.sampled_from([None, "ice:0.3,ice-window:900", "crash:0.05"]))
def test_skipping_quiet_ticks_gives_the_same_replay(rows, name, market, seed, faults):
    """The replay with ticks skipped equals the replay ticked every tick, to the number:
    a skipped tick is one at which the scheduler would have decided nothing (shortages
    that end and instances that crash included)."""
    conf = dict(market=market, seed=seed, spinup_s=(30, 160), faults=parse_faults(faults))
    a_eng, a = run(rows, make_scheduler(name), **conf)
    b_eng, b = run(rows, Unquiet(make_scheduler(name)), **conf)
    sa = {k: v for k, v in a.summary.items() if k != "wall_seconds"}
    sb = {k: v for k, v in b.summary.items() if k != "wall_seconds"}
    assert sa == sb
    assert a.instances.equals(b.instances) and a.tasks.equals(b.tasks)
    assert a_eng.ticks <= b_eng.ticks
