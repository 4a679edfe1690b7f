"""Savings plans inside the engine (issue 23, item 2; stratus.commitments.savings): an hourly commitment
paid from the first tick to the end, on-demand usage up to it at (1 - d) x on-demand and
beyond it at on-demand; the view's marginal price; Stratus's scaler preferring covered
on-demand capacity."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratus.app.registry import make_scheduler, scheduler_names
from stratus.base.errors import ConfigError
from stratus.commitments.savings import (
    DEFAULT_DISCOUNT,
    SavingsPlan,
    bound,
    hourly_usage,
    marginal_price,
    parse_savings_plan,
    plan_bill,
)
from stratus.pricing.catalog import M4
from stratus.pricing.prices import ON_DEMAND, SPOT
from stratus.replays import engine
from stratus.sim.config import ReplayConfig
from stratus.testing import StaticView, task
from tests.helpers.invariants import check_invariants, savings_plan_per_second
from tests.helpers.strategies import configs, workloads
from tests.helpers.trace import first_tick, make_trace
from tests.helpers.trace import replay_recorded as replay

pytestmark = pytest.mark.usefixtures("no_integer_bound")

TYPES = [t.name for t in M4]


def check_plan(trace, e, res, plan: SavingsPlan) -> None:
    """The plan's keys, its commitment over the horizon (first tick to the end), the bill
    recomputed second by second (also inside check_invariants)."""
    s = res.summary
    assert s["savings_plan"] == plan.text()
    assert s["savings_plan_usd_per_hour"] == plan.hourly_usd
    assert s["savings_plan_discount"] == plan.discount
    horizon = e.now - first_tick(trace, e.cfg.tick_s)
    assert math.isclose(s["savings_plan_commitment_usd"], plan.hourly_usd * horizon / 3600.0,
                        rel_tol=1e-9, abs_tol=1e-9)
    brute = savings_plan_per_second(res)
    assert s["savings_plan_unused_usd"] >= -1e-9 and s["savings_plan_covered_usd"] >= -1e-9
    assert s["total_cost_usd"] >= s["savings_plan_commitment_usd"] - 1e-9
    od = [i for i in res.audit["instances"].values() if i.market == ON_DEMAND]
    assert math.isclose(brute["usage"], sum(i.cost for i in od), rel_tol=1e-9, abs_tol=1e-9)
    assert ON_DEMAND in e.cloud.markets  # what the plan covers is always allowed


def _stretched(pair):
    """A workload with its runtimes times ``k``: with k = 4, instances span several of the
    plan's hours (whole hours between the first and the last piece)."""
    from stratus.traces.schema import Trace

    trace, k = pair
    if k == 1:
        return trace
    df = trace.frame.copy()
    df["runtime_s"] = df["runtime_s"] * k
    return Trace(df, name=trace.name)


long_workloads = st.tuples(workloads(), st.sampled_from([1, 4])).map(_stretched)
plans = st.builds(SavingsPlan, st.floats(0.01, 3.0),
                  st.one_of(st.sampled_from([0.0, 0.5, 0.9]), st.floats(0.0, 0.95)))
reserved_sets = st.one_of(st.just(()), st.lists(
    st.tuples(st.sampled_from(TYPES[:3]), st.integers(1, 2)), min_size=1, max_size=2,
    unique_by=lambda p: p[0]).map(tuple))


@pytest.mark.slow
@pytest.mark.parametrize("name", scheduler_names())
@settings(max_examples=5, deadline=None)
@given(trace=long_workloads, conf=configs, plan=plans, reserved=reserved_sets,
       market=st.sampled_from([SPOT, ON_DEMAND]))
def test_every_scheduler_keeps_the_invariants_and_the_bill_under_a_plan(name, trace, conf,
                                                                        plan, reserved, market):
    e, res = replay(trace, make_scheduler(name), savings_plan=plan, reserved=reserved,
                    market=market, **conf)
    # capacity, every task once, every instance's integral, and the total against the
    # plan's bill recomputed second by second from the instance log
    check_invariants(trace, res)
    check_plan(trace, e, res, plan)


# --- the bill, by hand ------------------------------------------------------------------------
def one_task(runtime: float, cpu: float = 2, mem: float = 8):
    return make_trace([(0, 0, 0.0, runtime, cpu, mem)])


def od_replay(trace, plan, **conf):
    """First fit on demand with no spin-up: one m4.large ($0.10/h) from 0 to the end."""
    return replay(trace, make_scheduler("first-fit"), market=ON_DEMAND, spinup_s=(0.0, 0.0),
                  savings_plan=plan, **conf)


def test_one_instance_over_an_hour_boundary_and_a_partial_last_hour():
    # m4.large from 0 to 5400 s: $0.10 in hour 0, $0.05 in the half hour 1 (1800 s).
    # C = $0.04/h, d = 0.5: hour 0 covers $0.08 of usage, $0.02 beyond at on-demand; hour 1
    # commits $0.02 (prorated), covers $0.04, $0.01 beyond. Bill 0.04+0.02 + 0.02+0.01.
    trace = one_task(5400.0)
    e, res = od_replay(trace, SavingsPlan(0.04, 0.5))
    s = res.summary
    assert e.now == 5400.0 and s["instances_acquired"] == 1
    assert math.isclose(s["total_cost_usd"], 0.09, rel_tol=1e-9)
    assert math.isclose(s["savings_plan_commitment_usd"], 0.06, rel_tol=1e-9)
    assert math.isclose(s["savings_plan_covered_usd"], 0.12, rel_tol=1e-9)
    assert abs(s["savings_plan_unused_usd"]) < 1e-12
    assert s["cost_by_market"] == {"on-demand": pytest.approx(0.03),
                                   "savings-plan": pytest.approx(0.06)}
    # the instance's own row keeps its on-demand cost
    assert math.isclose(res.instances["cost_usd"].sum(), 0.15, rel_tol=1e-9)
    check_invariants(trace, res)


@pytest.mark.parametrize("rate, bill, covered, unused", [
    (0.30, 0.30, 0.10, 0.25),   # usage $0.10 below: C paid, 0.30 - 0.5 x 0.10 unused
    (0.05, 0.05, 0.10, 0.0),    # usage equal to C / (1 - d): all covered, none unused
    (0.02, 0.08, 0.04, 0.0),    # above: 0.02 + (0.10 - 0.04) at on-demand
])
def test_usage_below_equal_and_above_the_commitment(rate, bill, covered, unused):
    trace = one_task(3600.0)  # one hour of m4.large: $0.10 of usage
    _, res = od_replay(trace, SavingsPlan(rate, 0.5))
    s = res.summary
    assert math.isclose(s["total_cost_usd"], bill, rel_tol=1e-9)
    assert math.isclose(s["savings_plan_covered_usd"], covered, rel_tol=1e-9)
    assert math.isclose(s["savings_plan_unused_usd"], unused, rel_tol=1e-9, abs_tol=1e-12)
    check_invariants(trace, res)


def test_hourly_usage_splits_intervals_at_the_hour_boundaries():
    # origin 100: hours [100, 3700), [3700, 7300), [7300, 10900)
    starts = np.array([100.0, 1900.0, 3700.0, 200.0])
    ends = np.array([1900.0, 9100.0, 3700.0, 10900.0])
    rates = np.array([3.6, 0.36, 1.0, 0.036])
    got = hourly_usage(starts, ends, rates, 100.0, 3)
    want = [3.6 * 0.5 + 0.36 * 0.5 + 0.036 * 3500 / 3600, 0.36 + 0.036, 0.36 * 0.5 + 0.036]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_plan_bill_formula_and_prorated_commitment():
    b = plan_bill(SavingsPlan(1.0, 0.2), np.array([0.5, 2.0, 1.0]), 0.0, 9000.0)
    # C_h = 1, 1, 0.5; caps 1.25, 1.25, 0.625; covered 0.5, 1.25, 0.625
    assert math.isclose(b.commitment, 2.5)
    assert math.isclose(b.covered, 2.375)
    assert math.isclose(b.uncovered, 0.75 + 0.375)
    assert math.isclose(b.unused, (1 - 0.4) + 0 + 0)
    assert math.isclose(b.total, 2.5 + 1.125)


def test_the_bound_stays_below_the_bill():
    # any usage U >= x: C + max(0, U - C / (1 - d)) >= bound(x)
    for x, u in ((0.0, 0.0), (1.0, 1.0), (3.0, 5.0), (10.0, 10.0)):
        bill = plan_bill(SavingsPlan(1.0, 0.5), np.array([u]), 0.0, 3600.0).total
        assert bound(x, 1.0, 0.5) <= bill + 1e-12
    assert bound(None, 1.0, 0.5) is None


def test_without_a_plan_the_summary_has_no_plan_keys():
    trace = one_task(600.0)
    e, res = replay(trace, make_scheduler("stratus"))
    assert not [k for k in res.summary if k.startswith("savings_plan")]
    assert "savings-plan" not in res.summary["cost_by_market"]
    assert e.cloud.markets == (SPOT,) and e.cloud.od_live is None


# --- marginal prices -------------------------------------------------------------------------
def test_marginal_price_is_zero_covered_full_without_headroom_and_the_rest_between():
    p, d = 0.4, 0.5  # needs 0.2 of headroom
    assert marginal_price(p, 0.25, d) == 0.0
    assert marginal_price(p, 0.2, d) == 0.0
    assert marginal_price(p, 0.0, d) == p
    assert marginal_price(p, -1.0, d) == p
    assert math.isclose(marginal_price(p, 0.05, d), (1 - 0.05 / 0.2) * p)
    assert math.isclose(marginal_price(p, 0.1, 0.0), 0.3)


def test_static_view_headroom_counts_live_on_demand_instances_only():
    v = StaticView(market=SPOT, savings_plan=SavingsPlan(0.3, 0.5))
    v.add_instance("m4.xlarge", market=ON_DEMAND)      # $0.20/h: takes 0.10
    v.add_instance("m4.2xlarge", market=SPOT)          # spot: takes nothing
    assert math.isclose(v.savings_headroom(), 0.2)
    assert v.marginal_price("m4.2xlarge", ON_DEMAND) == 0.0       # needs 0.20
    assert math.isclose(v.marginal_price("m4.4xlarge", ON_DEMAND), 0.8 * (1 - 0.2 / 0.4))
    assert v.marginal_price("m4.large", SPOT) == v.price("m4.large", SPOT)
    assert StaticView().marginal_price("m4.large") == 0.1  # no plan: the price


class Recorder:
    """First fit, recording the view's plan figures at every tick."""

    name = "recorder"

    def __init__(self) -> None:
        self.inner = make_scheduler("first-fit")
        self.seen: list[tuple] = []

    def schedule(self, view):
        od = sum(view.price(i.itype, ON_DEMAND) for i in view.instances
                 if i.market == ON_DEMAND)
        self.seen.append((od, view.savings_headroom(),
                          {t.name: (view.marginal_price(t, ON_DEMAND), view.price(t, ON_DEMAND))
                           for t in view.catalog},
                          view.marginal_price("m4.large"), view.price("m4.large")))
        return self.inner.schedule(view)


def test_the_engine_view_prices_on_demand_at_the_margin():
    trace = make_trace([(j, 0, 300.0 * j, 3000.0, 2, 8) for j in range(6)])
    plan = SavingsPlan(0.15, 0.5)  # covers three m4.large ($0.05/h each when discounted)
    rec = Recorder()
    replay(trace, rec, savings_plan=plan, market=ON_DEMAND)
    assert max(od for od, *_ in rec.seen) >= 0.4  # up to four m4.large: beyond the plan
    for od, headroom, marg, _, _ in rec.seen:
        assert math.isclose(headroom, 0.15 - 0.5 * od, abs_tol=1e-12)
        for t in M4:
            assert math.isclose(marg[t.name][0],
                                marginal_price(t.ondemand_hourly, headroom, 0.5))
    large = [m["m4.large"][0] for _, _, m, *_ in rec.seen]
    assert 0.0 in large and 0.1 in large
    # a spot replay: spot at its price; on demand still at the margin (first fit rents the
    # covered on-demand capacity first, issue 36: scalers.marginal)
    rec = Recorder()
    replay(trace, rec, savings_plan=plan)
    for od, headroom, marg, spot_marg, spot in rec.seen:
        assert spot_marg == spot
        assert math.isclose(headroom, 0.15 - 0.5 * od, abs_tol=1e-12)
        assert math.isclose(marg["m4.large"][0], marginal_price(0.1, headroom, 0.5))
    assert max(od for od, *_ in rec.seen) >= 0.3  # the plan's three m4.large


def test_without_a_plan_marginal_price_is_the_price():
    rec = Recorder()
    replay(make_trace([(j, 0, 300.0 * j, 3000.0, 2, 8) for j in range(3)]), rec,
           market=ON_DEMAND)
    for _, headroom, marg, spot_marg, spot in rec.seen:
        assert headroom is None and spot_marg == spot
        assert all(m == p for m, p in marg.values())
    v = StaticView(market=SPOT)
    assert v.marginal_price("m4.large", ON_DEMAND) == v.price("m4.large", ON_DEMAND)
    assert v.savings_headroom() is None


# --- Stratus's scaler ------------------------------------------------------------------------
def stratus_decisions(plan, pending: int = 3, **kw):
    v = StaticView(market=SPOT, savings_plan=plan, **kw)
    tasks = [v.add_pending(task(i, cpu=2, mem=8, runtime=3600.0 + i)) for i in range(pending)]
    return v, tasks, v.decide(make_scheduler("stratus"))


def test_the_scaler_takes_covered_on_demand_before_cheaper_spot_then_spot():
    # spot is 0.3 x on-demand; C = $0.05/h at d = 0.5 covers exactly one m4.large
    _, tasks, dec = stratus_decisions(SavingsPlan(0.05, 0.5))
    acq = dec.acquisitions
    assert (acq[0].itype.name, acq[0].market, acq[0].tasks) == ("m4.large", ON_DEMAND,
                                                                [tasks[2]])
    assert [a.market for a in acq[1:]] and all(a.market == SPOT for a in acq[1:])
    assert sorted(t.tid for a in acq for t in a.tasks) == [0, 1, 2]


def test_a_bigger_plan_covers_every_task_on_demand_with_full_instances():
    _, tasks, dec = stratus_decisions(SavingsPlan(1.0, 0.5))
    assert {a.market for a in dec.acquisitions} == {ON_DEMAND}
    assert sorted(t.tid for a in dec.acquisitions for t in a.tasks) == [0, 1, 2]
    # covered types ranked by used capacity per dollar of commitment: full instances (an
    # xlarge and a large), not a three-quarters full 2xlarge
    assert sorted(a.itype.name for a in dec.acquisitions) == ["m4.large", "m4.xlarge"]


def test_partly_covered_on_demand_dearer_than_spot_goes_to_spot():
    # headroom 0.025 covers half an m4.large: its marginal $0.05/h > spot $0.03/h
    _, _, dec = stratus_decisions(SavingsPlan(0.025, 0.5), pending=1)
    assert [a.market for a in dec.acquisitions] == [SPOT]
    # spot dearer than that half: the partly covered on-demand one wins
    _, _, dec = stratus_decisions(SavingsPlan(0.025, 0.5), pending=1,
                                  prices={(t.name, SPOT): t.ondemand_hourly * 0.9 for t in M4})
    assert [(a.itype.name, a.market) for a in dec.acquisitions] == [("m4.large", ON_DEMAND)]


def test_live_on_demand_instances_use_the_headroom_first():
    v = StaticView(market=SPOT, savings_plan=SavingsPlan(0.05, 0.5))
    v.add_instance("m4.large", market=ON_DEMAND,
                   tasks=[(task(9, cpu=2, mem=8), 60.0, 3600.0)])  # full: takes it all
    v.add_pending(task(0, cpu=2, mem=8))
    dec = v.decide(make_scheduler("stratus"))
    assert [a.market for a in dec.acquisitions] == [SPOT]


def test_without_a_plan_the_scaler_rents_spot_only():
    _, _, dec = stratus_decisions(None)
    assert {a.market for a in dec.acquisitions} == {SPOT}


def test_a_spot_replay_under_a_roomy_plan_rents_only_covered_on_demand():
    trace = make_trace([(j, i, 600.0 * j, 1800.0, 2, 8) for j in range(4) for i in range(2)])
    plan = SavingsPlan(0.4, 0.5)  # room for all eight tasks' m4.large at once
    e, res = replay(trace, make_scheduler("stratus"), savings_plan=plan)
    check_invariants(trace, res)
    check_plan(trace, e, res, plan)
    markets = set(res.instances["market"])
    assert ON_DEMAND in markets
    # everything fits the plan: nothing beyond it at on-demand, no spot bill
    assert res.summary["cost_by_market"].get("spot", 0.0) == 0.0
    assert math.isclose(res.summary["total_cost_usd"], res.summary["savings_plan_commitment_usd"])


# --- configuration ---------------------------------------------------------------------------
@pytest.mark.parametrize("text, message", [
    ("abc", "takes USD_PER_HOUR"), ("-1", "commitment must be"), ("0", "commitment must be"),
    ("nan", "commitment must be"), ("1e308", "commitment must be"), ("5:1", "discount must be"),
    ("5:-0.1", "discount must be"),
    ("5:x", "takes USD_PER_HOUR"), (":0.3", "takes USD_PER_HOUR"), ("1:2:3", "takes USD"),
])
def test_parse_errors_name_the_option(text, message):
    with pytest.raises(ConfigError, match=f"^--savings-plan.*{message}"):
        parse_savings_plan(text)


def test_parse_reads_rate_and_discount():
    assert parse_savings_plan("5") == SavingsPlan(5.0, DEFAULT_DISCOUNT)
    assert parse_savings_plan(" 2.5:0.3 ") == SavingsPlan(2.5, 0.3)
    assert parse_savings_plan(3) == SavingsPlan(3.0)
    assert parse_savings_plan(None) is None and parse_savings_plan("") is None
    assert SavingsPlan(2.5, 0.3).text() == "2.5:0.3" and SavingsPlan(5).text() == "5:0.5"


@pytest.mark.parametrize("plan, message", [
    ("5:0.3", "takes a SavingsPlan"), (5.0, "takes a SavingsPlan"),
])
def test_replay_config_refuses_a_plan_that_is_not_a_savings_plan(plan, message):
    with pytest.raises(ConfigError, match=message):
        engine(one_task(60.0), make_scheduler("stratus"), ReplayConfig(savings_plan=plan))


@pytest.mark.parametrize("args, message", [
    ((-1.0,), "commitment must be"), ((True,), "commitment must be"),
    ((1.0, 1.0), "discount must be"), ((1.0, float("nan")), "discount must be"),
])
def test_a_savings_plan_checks_itself(args, message):
    with pytest.raises(ConfigError, match=message):
        SavingsPlan(*args)
