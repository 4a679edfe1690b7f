"""Objects are reusable (issue 20): one config, one scheduler and one estimator replay a
trace any number of times alike. The engine writes nothing into its config, resets the
scheduler at the start of each replay (``reset()``, stratus.policy.compose.Scheduler), and lets
an online estimator learn on its own copy (docs/decisions.md, "Reusable objects")."""

from __future__ import annotations

import pickle
from dataclasses import fields, replace

import pandas as pd
import pytest

from stratus.app.registry import get_spec, make_estimator, make_scheduler, scheduler_names
from stratus.base.errors import ConfigError
from stratus.pricing.catalog import M4
from stratus.pricing.prices import PriceBook, PriceSeries
from stratus.replays import replay
from stratus.sim.engine import Engine, ReplayConfig
from stratus.traces.synthetic import generate
from tests.helpers.trace import make_trace

WALL_CLOCK = {"wall_seconds"}  # the only summary keys that are not a function of the replay
SWING = [0.0, 3600.0, 7200.0, 10800.0]


def swinging_spot() -> PriceBook:
    """Spot at 30% of on-demand, except three types whose prices take turns, so that
    HotSpot hopping (per task, and SCloud's whole instances) has something to act on."""
    series = {(t.name, "spot"): PriceSeries.constant(0.3 * t.ondemand_hourly) for t in M4}
    series[("m4.large", "spot")] = PriceSeries(SWING, [0.08, 0.02, 0.08, 0.02])
    series[("m4.xlarge", "spot")] = PriceSeries(SWING, [0.04, 0.16, 0.04, 0.16])
    series[("m4.4xlarge", "spot")] = PriceSeries(SWING, [0.5, 0.05, 0.5, 0.05])
    return PriceBook.on_demand(M4).with_series(series, name="swinging-spot")


@pytest.fixture(scope="module")
def trace():
    # 44 tasks over 4 h: small, yet every migrator clears, hops or consolidates on it
    return generate("google", scale=0.01, hours=4, seed=3)


@pytest.fixture
def no_integer_bound(monkeypatch):
    """The integer bound is most of a small replay's time and a function of its run
    segments, which the comparisons cover: skipped where many replays run."""
    import stratus.sim.intbound as ib

    monkeypatch.setattr(ib, "ortools_missing", lambda: "skipped (test_reuse)")


def snapshot(cfg: ReplayConfig) -> dict:
    return {f.name: getattr(cfg, f.name) for f in fields(cfg)}


def assert_unchanged(cfg: ReplayConfig, before: dict) -> None:
    for name, value in before.items():
        now = getattr(cfg, name)
        assert now is value or now == value, f"ReplayConfig.{name} changed: {value!r} -> {now!r}"


def assert_same_replay(a, b) -> None:
    sa = {k: v for k, v in a.summary.items() if k not in WALL_CLOCK}
    sb = {k: v for k, v in b.summary.items() if k not in WALL_CLOCK}
    assert sa == sb, {k: (sa.get(k), sb.get(k)) for k in sa.keys() | sb.keys()
                      if sa.get(k) != sb.get(k)}
    for name in ("instances", "tasks", "jobs"):
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name))


def config_for(name: str, **kw) -> ReplayConfig:
    """The scheduler's own estimator (``history`` for Stratus), fresh and unfitted."""
    return ReplayConfig(seed=3, estimator=make_estimator(get_spec(name).estimator or "oracle"), **kw)


@pytest.mark.slow
# and SCloud's clearing with its own packer, which it resets (issue 35)
@pytest.mark.parametrize("name", [*scheduler_names(), "scloud?clear=true"])
def test_one_scheduler_and_one_config_replay_twice_alike(name, trace, no_integer_bound):
    sched = make_scheduler(name)
    cfg = config_for(name, prices=swinging_spot())
    before = snapshot(cfg)
    first = replay(trace, sched, cfg)
    second = replay(trace, sched, cfg)
    assert_same_replay(first, second)
    assert_unchanged(cfg, before)


@pytest.mark.slow
def test_the_trace_exercises_every_kind_of_per_run_state(trace, no_integer_bound):
    """Else the test above would pass for want of anything to carry over."""
    runs = {n: replay(trace, make_scheduler(n), config_for(n, prices=swinging_spot())).summary
            for n in ("stratus", "hotspot", "scloud", "karpenter")}
    assert runs["stratus"]["instances_cleared"] > 0
    assert runs["stratus"]["estimator_error"]["jobs"] > 0
    assert runs["hotspot"]["hops"] > 0 and runs["scloud"]["hops"] > 0
    assert runs["karpenter"]["consolidation_deleted"] > 0
    # fleet-diversified's round-robin cursor: where the first replay left it, the second
    # replay would pay something else
    sched = make_scheduler("fleet-diversified")
    fresh = replay(trace, sched, ReplayConfig(seed=3))["total_cost_usd"]
    sched.scaler.choice.reset = lambda: None  # as before the hook existed
    assert replay(trace, sched, ReplayConfig(seed=3))["total_cost_usd"] != fresh


def test_stratus_with_its_history_estimator_replays_twice_alike(trace):
    # the whole summary, integer bound included
    sched = make_scheduler("stratus")
    cfg = config_for("stratus")
    before = snapshot(cfg)
    first, second = replay(trace, sched, cfg), replay(trace, sched, cfg)
    assert_same_replay(first, second)
    assert_unchanged(cfg, before)
    assert first["estimator_error"]["jobs"] == second["estimator_error"]["jobs"] > 0


def test_replay_overrides_and_resolution_leave_the_config_alone(trace, no_integer_bound):
    cfg = ReplayConfig()
    before = snapshot(cfg)
    res = replay(trace, make_scheduler("first-fit"), cfg, tick_s=120)
    assert res["tick_s"] == 120 and res["estimator"] == "oracle"
    assert cfg.tick_s == 60.0 and cfg.prices is None and cfg.estimator is None
    assert_unchanged(cfg, before)
    eng = Engine(trace, make_scheduler("first-fit"), cfg)  # as stratus.app.runs does
    assert eng.cfg is not cfg and eng.cfg.prices is not None
    eng.run()
    assert_unchanged(cfg, before)
    with pytest.raises(ConfigError, match="unknown replay option 'validate'"):
        replay(trace, make_scheduler("first-fit"), cfg, validate=None)


def test_fargate_leaves_the_config_alone(trace):
    cfg = ReplayConfig(market="on-demand")
    before = snapshot(cfg)
    res = get_spec("fargate").factory().replay(trace, cfg)
    assert res["tasks"] == len(trace)
    assert_unchanged(cfg, before)


def test_an_online_estimator_keeps_its_warm_up_and_learns_per_replay(trace, no_integer_bound):
    est = make_estimator("history").fit(generate("google", scale=0.01, hours=4, seed=4))
    assert est.learns_online and est.warmup_jobs > 0
    state = pickle.dumps(est)
    cfg = ReplayConfig(seed=3, estimator=est)
    first = replay(trace, make_scheduler("stratus"), cfg)
    second = replay(trace, make_scheduler("stratus"), cfg)
    assert pickle.dumps(est) == state  # the caller's object learned nothing
    assert_same_replay(first, second)
    assert first["estimator_warmup_jobs"] == est.warmup_jobs  # the warm-up fit was used
    cold = replay(trace, make_scheduler("stratus"), config_for("stratus"))
    assert cold["estimator_error"] != first["estimator_error"]
    # carrying one replay's learning into the next is the caller's explicit choice
    eng = Engine(trace, make_scheduler("stratus"), cfg)
    eng.run()
    assert eng.estimator is not est
    carried = replay(trace, make_scheduler("stratus"), replace(cfg, estimator=eng.estimator))
    assert carried["estimator_error"]["jobs"] == 2 * first["estimator_error"]["jobs"]


def test_a_scheduler_forgets_its_counts_even_on_an_empty_replay(trace, no_integer_bound):
    sched = make_scheduler("karpenter")
    assert replay(trace, sched, ReplayConfig(seed=3))["tasks_migrated"] > 0
    empty = make_trace([(1, 0, 0.0, 60.0, 1.0, 2.0)]).frame.iloc[:0]
    res = replay(type(trace)(empty, name="empty"), sched, ReplayConfig(seed=3))
    assert res["tasks"] == 0 and res["tasks_migrated"] == 0
