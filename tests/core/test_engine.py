"""Exact timelines, billing and decision validation of the engine."""

from __future__ import annotations

import math

import pytest

from stratus.app.registry import make_scheduler
from stratus.base.errors import ConfigError, DecisionError, TraceError
from stratus.policy.compose import Plan
from stratus.pricing.catalog import M4
from stratus.replays import replay
from stratus.sim.decisions import Acquire, Decisions, Migrate, Place
from stratus.sim.engine import MIB_BITS, Engine, ReplayConfig
from stratus.sim.estimate import Estimator
from tests.helpers.trace import make_trace


def cfg(**kw):
    base = dict(spinup_s=(40.0, 40.0), tick_s=60.0, record=True, market="on-demand")
    base.update(kw)
    return ReplayConfig(**base)


def test_single_task_timeline_and_bill():
    tr = make_trace([(1, 0, 10.0, 500.0, 1.0, 2.0)])
    res = replay(tr, make_scheduler("task-per-instance"), cfg())
    inst = res.instances.iloc[0]
    # arrives at 10, scheduled at the tick at 60, instance ready at 100, done at 600
    assert (inst.requested_s, inst.ready_s, inst.released_s) == (60.0, 100.0, 600.0)
    assert inst.type == "m4.large"
    assert res["total_cost_usd"] == pytest.approx(0.10 * 540 / 3600)
    assert res.tasks.first_start_s[0] == 100.0 and res.tasks.finish_s[0] == 600.0
    assert res["latency"]["p50"] == pytest.approx((600 - 10) / 500)
    # fluid bound: 1 vCPU for 500 s at 0.05 $/vCPU-h (cpu binds: 1 vCPU vs 2 GiB of 4/vCPU)
    assert res["lower_bound_cost_usd"] == pytest.approx(0.05 * 500 / 3600)
    assert res["utilization"]["cpu"] == pytest.approx(1 * 500 / (2 * 540), abs=1e-4)


def test_cheapest_type_that_fits_each_dimension():
    tr = make_trace([(1, 0, 0.0, 60.0, 2.0, 8.0), (2, 0, 0.0, 60.0, 2.1, 1.0),
                     (3, 0, 0.0, 60.0, 0.5, 8.5), (4, 0, 0.0, 60.0, 64.0, 256.0)])
    res = replay(tr, make_scheduler("task-per-instance"), cfg(spinup_s=(0.0, 0.0)))
    assert sorted(res.instances.type) == sorted(["m4.large", "m4.xlarge", "m4.xlarge", "m4.16xlarge"])


class ScriptedScheduler:
    """Runs a fixed script: {tick time: function(view, plan)}."""

    name = "scripted"

    def __init__(self, script):
        self.script = script

    def schedule(self, view):
        plan = Plan(view)
        fn = self.script.get(view.now)
        if fn:
            fn(view, plan)
        return plan.decisions


def test_finish_frees_capacity_for_a_tick_at_the_same_instant():
    # task 0 ends exactly at t=180 (a tick); task 1 must be placeable on the same instance then
    tr = make_trace([(1, 0, 0.0, 120.0, 2.0, 8.0), (2, 0, 100.0, 60.0, 2.0, 8.0)])
    st = {}

    def first(view, plan):
        st["acq"] = plan.acquire(M4["m4.large"], view.pending, keep=True)

    def second(view, plan):
        (inst,) = view.instances
        assert inst.free == inst.capacity  # task 0 finished at 180, before this tick
        plan.place(view.pending[0], inst)
        plan.decisions.keep[inst.iid] = False

    res = replay(tr, ScriptedScheduler({0.0: first, 180.0: second}), cfg(spinup_s=(0.0, 0.0)))
    assert res.tasks.finish_s.tolist() == [120.0, 240.0]
    assert len(res.instances) == 1 and res.instances.released_s[0] == 240.0


def test_migration_stops_progress_and_holds_both_instances():
    # 4 GiB moves in 4*1024 MiB * 8 Mibit / 160 Mbit/s = 214.7 s
    tr = make_trace([(1, 0, 0.0, 1000.0, 1.0, 4.0)])
    mig = 4 * 1024 * MIB_BITS / 160e6

    def go(view, plan):
        plan.acquire(M4["m4.large"], view.pending)

    def move(view, plan):
        (src,) = view.instances
        (task,) = src.tasks.values()
        assert view.elapsed(task) == pytest.approx(300 - 40)
        plan.acquire(M4["m4.xlarge"], migrate=[task])

    res = replay(tr, ScriptedScheduler({0.0: go, 300.0: move}), cfg())
    # the task keeps running until the destination is ready at 340, then freezes for `mig`
    assert res["migrations"] == 1 and res["migration_seconds"] == pytest.approx(mig, abs=1e-3)
    assert res.tasks.finish_s[0] == pytest.approx(40 + 1000 + mig)
    src, dst = res.instances.sort_values("iid").itertuples()
    assert src.released_s == pytest.approx(340 + mig)  # held until the transfer ends
    assert dst.ready_s == 340.0 and dst.released_s == pytest.approx(40 + 1000 + mig)


def test_migration_to_running_instance_starts_at_once():
    tr = make_trace([(1, 0, 0.0, 1000.0, 1.0, 1.0), (2, 0, 0.0, 5000.0, 1.0, 1.0)])

    def go(view, plan):
        a, b = view.pending
        plan.acquire(M4["m4.large"], [a])
        plan.acquire(M4["m4.large"], [b])

    def move(view, plan):
        i0, i1 = view.instances
        plan.migrate(next(iter(i0.tasks.values())), i1)

    res = replay(tr, ScriptedScheduler({0.0: go, 120.0: move}), cfg())
    mig = 1024 * MIB_BITS / 160e6
    assert res.tasks.finish_s[0] == pytest.approx(40 + 1000 + mig)
    assert res.instances.released_s[0] == pytest.approx(120 + mig)


@pytest.mark.parametrize(("footprint", "share"), [("request", 1.0), ("usage:0.5", 0.5),
                                                 ("usage:0.25", 0.25), ("usage:1", 1.0)])
def test_migration_moves_the_configured_footprint(footprint, share):
    # Stratus §4.1: a migration takes the container's memory footprint / 160 Mbit/s; the
    # footprint is the memory request, or the share F of it given by usage:F. The view's
    # migration_seconds (clearing's cost-benefit, §3.4) is the engine's duration.
    tr = make_trace([(1, 0, 0.0, 1000.0, 1.0, 1.0), (2, 0, 0.0, 5000.0, 1.0, 1.0)])
    seen = {}

    def go(view, plan):
        a, b = view.pending
        plan.acquire(M4["m4.large"], [a])
        plan.acquire(M4["m4.large"], [b])

    def move(view, plan):
        i0, i1 = view.instances
        task = next(iter(i0.tasks.values()))
        seen["view"] = view.migration_seconds(task)
        plan.migrate(task, i1)

    res = replay(tr, ScriptedScheduler({0.0: go, 120.0: move}),
                 cfg(migration_footprint=footprint))
    mig = share * 1024 * MIB_BITS / 160e6
    assert seen["view"] == pytest.approx(mig)
    assert res["migration_seconds"] == pytest.approx(mig, abs=1e-3)
    assert res.tasks.finish_s[0] == pytest.approx(40 + 1000 + mig)
    assert res["migration_footprint"] == footprint


@pytest.mark.parametrize("bad", ["unknown-task", "not-pending", "overfull", "release-busy",
                                 "bad-market", "dead-instance", "migrate-pending", "migrate-twice"])
def test_invalid_decisions_raise(bad):
    tr = make_trace([(1, 0, 0.0, 1000.0, 2.0, 8.0), (2, 0, 0.0, 1000.0, 2.0, 8.0)])
    state = {}

    def first(view, plan):
        a, b = view.pending
        state["acq"] = plan.acquire(M4["m4.large"], [a])
        plan.acquire(M4["m4.large"], [b])

    def second(view, plan):
        i0, i1 = view.instances
        t0 = next(iter(i0.tasks.values()))
        d = plan.decisions
        if bad == "unknown-task":
            from stratus.sim.model import Task
            d.placements.append(Place(Task(99, 9, 0, 0.0, 1.0, (1, 1)), i0))
        elif bad == "not-pending":
            d.placements.append(Place(t0, i1))
        elif bad == "overfull":
            d.migrations.append(Migrate(t0, i1))
        elif bad == "release-busy":
            d.releases.append(i0)
        elif bad == "bad-market":
            d.acquisitions.append(Acquire(M4["m4.large"], "spot", [], [t0]))
        elif bad == "dead-instance":
            from stratus.sim.model import Instance
            d.migrations.append(Migrate(t0, Instance(77, M4["m4.large"], "on-demand", None, 0.0)))
        elif bad == "migrate-twice":
            d.acquisitions.append(Acquire(M4["m4.xlarge"], "on-demand", [], [t0, t0]))
        elif bad == "migrate-pending":
            d.acquisitions.append(Acquire(M4["m4.xlarge"], "on-demand", [], [t0]))
            d.acquisitions.append(Acquire(M4["m4.xlarge"], "on-demand", [], [t0]))

    with pytest.raises(DecisionError, match="scheduler 'scripted' at t=60"):
        replay(tr, ScriptedScheduler({0.0: first, 60.0: second}), cfg())


def test_task_larger_than_every_type_is_refused_with_its_row():
    tr = make_trace([(1, 0, 0.0, 10.0, 1.0, 1.0), (7, 3, 5.0, 10.0, 65.0, 1.0)])
    with pytest.raises(TraceError, match=r"larger than every m4 instance type.* row 1 \(job 7, task 3\)"):
        replay(tr, make_scheduler("task-per-instance"), cfg())


def test_scheduler_that_never_places_is_reported():
    tr = make_trace([(1, 0, 0.0, 10.0, 1.0, 1.0)])

    class Lazy:
        name = "lazy"

        def schedule(self, view):
            return Decisions()

    # the run ends with a result: the task counted unfinished, the reason given
    res = replay(tr, Lazy(), cfg(max_idle_ticks=50))
    assert res["tasks_unfinished"] == 1 and res["tasks_completed"] == 0
    assert "no task finished for 50 ticks" in res["ended_early"]


def test_idle_time_between_arrivals_is_skipped():
    tr = make_trace([(1, 0, 0.0, 10.0, 1.0, 1.0), (2, 0, 30 * 86400.0, 10.0, 1.0, 1.0)])
    eng = Engine(tr, make_scheduler("task-per-instance"),
                 cfg())
    res = eng.run()
    assert res["tasks_completed"] == 2
    assert eng.ticks < 20  # did not tick through 30 idle days


def test_empty_trace():
    tr = make_trace([(1, 0, 0.0, 10.0, 1.0, 1.0)])
    tr = tr.window(100.0, 200.0)
    res = replay(tr, make_scheduler("task-per-instance"), cfg())
    assert res["tasks"] == 0 and res["total_cost_usd"] == 0.0


def test_spinup_is_seeded_and_in_range():
    tr = make_trace([(j, 0, 0.0, 100.0, 1.0, 1.0) for j in range(200)])
    r1 = replay(tr, make_scheduler("task-per-instance"), cfg(spinup_s=(30.0, 160.0), seed=3))
    r2 = replay(tr, make_scheduler("task-per-instance"), cfg(spinup_s=(30.0, 160.0), seed=3))
    r3 = replay(tr, make_scheduler("task-per-instance"), cfg(spinup_s=(30.0, 160.0), seed=4))
    spin = (r1.instances.ready_s - r1.instances.requested_s).to_numpy()
    assert spin.min() >= 30 and spin.max() <= 160 and spin.std() > 20
    assert r1.instances.ready_s.tolist() == r2.instances.ready_s.tolist()
    assert r1.instances.ready_s.tolist() != r3.instances.ready_s.tolist()


def test_bad_config_is_refused():
    tr = make_trace([(1, 0, 0.0, 10.0, 1.0, 1.0)])
    with pytest.raises(ConfigError, match="tick"):
        replay(tr, make_scheduler("task-per-instance"), cfg(tick_s=0))
    with pytest.raises(ConfigError, match="unknown replay option"):
        replay(tr, make_scheduler("task-per-instance"), cfg(), tikc_s=5)
    with pytest.raises(ConfigError, match="unknown scheduler"):
        replay(tr, make_scheduler("nope"), cfg())
    with pytest.raises(ConfigError, match="scheduler object.*make_scheduler"):
        replay(tr, "task-per-instance", cfg())  # the core resolves no names
    with pytest.raises(ConfigError, match="Estimator object.*make_estimator"):
        replay(tr, make_scheduler("task-per-instance"), cfg(estimator="oracle"))
    for bad in ("usage", "usage:0", "usage:1.5", "usage:-1", "usage:nan", "usage:x", "used:0.5", ""):
        with pytest.raises(ConfigError, match="--migration-footprint.*'request' or 'usage:F'"):
            replay(tr, make_scheduler("task-per-instance"), cfg(migration_footprint=bad))
    assert math.isfinite(replay(tr, make_scheduler("first-fit"), cfg())["total_cost_usd"])


def test_the_max_hours_guard_after_the_last_task_is_not_an_early_end():
    """All tasks done, one idle instance kept, the guard's limit before the next tick: the
    replay ended by itself (a property test found it reported as stopped early)."""
    from stratus.policy.compose import ComposedScheduler, Part

    class KeepOne(Part):
        name = "keep-one"

        def scale(self, view, plan, tasks):
            plan.acquire(M4["m4.large"], list(tasks), keep=True)

    tr = make_trace([(1, 0, 0.0, 100.0, 1.0, 2.0)])
    sched = ComposedScheduler("k", scaler=KeepOne())
    # ticks every 300 s; the task ends at 100 s; the guard at 0.05 h = 180 s, before the
    # next tick
    res = replay(tr, sched, cfg(tick_s=300.0, spinup_s=(0.0, 0.0), max_hours=0.05))
    assert res.summary["tasks_completed"] == 1 and res.summary["tasks_unfinished"] == 0
    assert res.summary["ended_early"] is None


class _FixedEstimate(Estimator):
    name = "fixed"

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def predict(self, tasks):
        return [self.seconds] * len(tasks)


@pytest.mark.parametrize(("estimate", "past"), [(200.0, 1), (299.0, 1), (301.0, 0),
                                                (5000.0, 0)])
def test_tasks_table_holds_estimate_and_migrations_past_it(estimate, past):
    # the transfer begins when the destination is ready, at 340, after 300 s of progress
    # (started at 40): a migration past the estimate is one begun with more progress than
    # the estimate, so the scheduler had taken the task for done (issue 36's breakdown)
    tr = make_trace([(1, 0, 0.0, 1000.0, 1.0, 4.0)])

    def go(view, plan):
        plan.acquire(M4["m4.large"], view.pending)

    def move(view, plan):
        (src,) = view.instances
        plan.acquire(M4["m4.xlarge"], migrate=list(src.tasks.values()))

    res = replay(tr, ScriptedScheduler({0.0: go, 300.0: move}),
                 cfg(estimator=_FixedEstimate(estimate)))
    assert res.tasks.estimate_s[0] == estimate
    assert res.tasks.migrations[0] == 1
    assert res.tasks.migrations_past_estimate[0] == past
