"""Eva (scalers.eva): its rules on hand-made cases (docs/reference/schedulers.md, "eva").
Its invariants on random workloads are the registry-wide property tests."""

from __future__ import annotations

import pytest

from stratus.app.registry import get_spec, make_scheduler
from stratus.base.errors import ConfigError
from stratus.pricing.prices import ON_DEMAND, SPOT
from tests.helpers.invariants import check_invariants
from tests.helpers.trace import make_trace, replay_recorded


def _loners():
    """Tasks of more than half the largest m4 type's 64 vCPUs: no two fit on one instance
    of any type; some take a 10xlarge, some a 16xlarge (more vCPUs or memory), several
    arrive at one tick, and they run across many rounds."""
    shapes = [(0, 33, 10, 3000), (0, 41, 10, 1200), (5, 36, 170, 900), (70, 40, 160, 4000),
              (70, 33, 2, 600), (70, 64, 256, 700), (400, 50, 20, 2500), (900, 34, 100, 100)]
    return make_trace([(k, 0, float(submit), float(runtime), cpu, mem)
                       for k, (submit, cpu, mem, runtime) in enumerate(shapes)])


def test_with_no_two_tasks_sharing_an_instance_eva_is_task_per_instance_to_the_cent():
    trace = _loners()
    conf = dict(market=ON_DEMAND, seed=3)
    _, eva = replay_recorded(trace, make_scheduler("eva?period=60"), **conf)
    _, tpi = replay_recorded(trace, make_scheduler("task-per-instance"), **conf)
    check_invariants(trace, eva)
    assert round(eva.summary["total_cost_usd"], 2) == round(tpi.summary["total_cost_usd"], 2)
    assert eva.summary["total_cost_usd"] == pytest.approx(tpi.summary["total_cost_usd"],
                                                          abs=1e-9)
    assert eva.summary["migrations"] == 0
    assert eva.summary["instances_acquired"] == tpi.summary["instances_acquired"] == len(trace)
    assert eva.summary["cost_by_type"] == tpi.summary["cost_by_type"]


def _small(n_jobs=4, per_job=6):
    """Small tasks of a few jobs, arriving over an hour: instances are shared."""
    return make_trace([(j, i, 600.0 * j + 30 * i, 1500.0 + 300 * i, 0.5 + (i % 3), 1 + 2 * (i % 2))
                       for j in range(n_jobs) for i in range(per_job)])


@pytest.mark.parametrize("market", [ON_DEMAND, pytest.param(SPOT, marks=pytest.mark.slow)])
def test_eva_packs_small_tasks_and_is_cheaper_than_one_instance_per_task(market):
    trace = _small()
    conf = dict(market=market, seed=1)
    _, eva = replay_recorded(trace, make_scheduler("eva"), **conf)
    _, tpi = replay_recorded(trace, make_scheduler("task-per-instance"), **conf)
    check_invariants(trace, eva)
    assert eva.summary["instances_acquired"] < len(trace)
    assert eva.summary["total_cost_usd"] < tpi.summary["total_cost_usd"]
    assert eva.summary["eva_rounds"] > 0


def test_the_options_are_declared_and_eva_is_a_competitor():
    spec = get_spec("eva")
    assert {k: o.default for k, o in spec.options.items()} == \
        {"period": 300.0, "partial": True, "full": True}
    assert get_spec("eva?partial=false").name == "eva?partial=false"
    with pytest.raises(ConfigError, match="period"):
        get_spec("eva?period=soon")
    from stratus.app.figures import _reference

    assert not get_spec("eva").reference  # a competitor, not a reference, in reports
    assert _reference("eva?partial=false") == ""


@pytest.mark.parametrize("options", ["partial=false", "full=false", "partial=false&full=false"])
def test_each_kind_of_reconfiguration_alone_keeps_the_invariants(options):
    trace = _small(3, 5)
    _, res = replay_recorded(trace, make_scheduler(f"eva?{options}"), market=SPOT, seed=2)
    check_invariants(trace, res)
    full = res.summary["eva_full_rounds"]
    assert (full == res.summary["eva_rounds"]) if options == "partial=false" else full == 0
    if options == "partial=false&full=false":  # no reconfiguration at all
        assert res.summary["migrations"] == 0


def test_a_period_longer_than_the_stall_guard_still_places_tasks_on_an_idle_cluster():
    # the hard case of the option fuzz: a round every 10^6 s, ticks of 10 s; with no
    # instance live the queue is served at once, as the period would otherwise stall it
    trace = make_trace([(0, 0, 0.0, 600.0, 1, 2), (1, 0, 5000.0, 600.0, 1, 2)])
    _, res = replay_recorded(trace, make_scheduler("eva?period=999997"), tick_s=10.0,
                             max_idle_ticks=100, seed=1)
    check_invariants(trace, res)


def test_a_fill_takes_the_same_tasks_with_and_without_runs_of_one_shape(monkeypatch):
    """The pool's shortcut (``Pool._run``: several tasks of one shape in a row) picks what
    the step-by-step ranking picks: many tasks of few shapes, some flagged, some on the
    instance being filled, two price levels."""
    import random

    from stratus.scalers.eva_pool import Pool

    rnd = random.Random(7)
    shapes = [(500, 1024), (1000, 2048), (250, 4096), (2000, 512), (750, 768)]
    items = [(tid, rnd.choice([0.1, 0.2]), rnd.choice(shapes),
              rnd.choice([-1, -1, -1, 3, 4]), rnd.choice([-1, -1, 9]))
             for tid in range(300)]

    def fills(pool):
        cap = (16000, 65536)
        return [pool.fill(cap, cap, iid) for iid in (9, -1, -1, -1)]

    fast = fills(Pool(items, 2))
    monkeypatch.setattr(Pool, "_run", lambda self, *a: 0)
    assert fills(Pool(items, 2)) == fast
    assert max(len(f) for f in fast) > 10


def test_giving_up_on_a_losing_full_plan_chooses_as_drawing_it_whole(monkeypatch):
    """The Full plan's watcher (``Eva._bound``) stops drawing a plan that cannot beat the
    Partial one: the replay is the same as with every Full plan drawn whole, on a trace
    where both kinds win some rounds."""
    from stratus.scalers.eva import Eva

    trace = _small(5, 8)
    conf = dict(market=SPOT, seed=4)
    _, cut = replay_recorded(trace, make_scheduler("eva?period=120"), **conf)
    monkeypatch.setattr(Eva, "_bound", lambda self, *a: None)
    _, whole = replay_recorded(trace, make_scheduler("eva?period=120"), **conf)
    assert cut.summary["eva_rounds"] > cut.summary["eva_full_rounds"] > 0
    assert {k: v for k, v in cut.summary.items() if k != "wall_seconds"} == \
        {k: v for k, v in whole.summary.items() if k != "wall_seconds"}
