"""Every scheduler that buys instances prices an acquisition at its marginal cost under a
savings plan (issue 36, item 3; scalers.marginal): no spot instance is bought while the
plan's unused coverage would make the same type on demand cheaper at the margin."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratus.app.registry import make_scheduler, scheduler_names
from stratus.commitments.savings import SavingsPlan, marginal_price
from stratus.policy.compose import Plan
from stratus.pricing.prices import ON_DEMAND, SPOT
from stratus.testing import StaticView, task
from tests.helpers.strategies import configs, workloads
from tests.helpers.trace import make_trace
from tests.helpers.trace import replay_recorded as replay

pytestmark = pytest.mark.usefixtures("no_integer_bound")


def spot_buys_over_coverage(trace, name: str, plan: SavingsPlan, **conf):
    """(violations, acquisitions by market) of a spot replay under ``plan``: a violation is
    a spot acquisition of a type whose on-demand marginal price (``Plan.savings_headroom``
    at that moment, this tick's earlier acquisitions taken) is below its spot price."""
    bad: list[tuple] = []
    bought = {SPOT: 0, ON_DEMAND: 0}
    acquire = Plan.acquire

    def recording(self, itype, tasks=(), market=None, migrate=(), bid=None, keep=False):
        view = self.view
        m = market or view.market
        bought[m] = bought.get(m, 0) + 1
        if m == SPOT and itype.name not in view.unavailable_types():
            h = self.savings_headroom()
            od = marginal_price(view.price(itype, ON_DEMAND), h, plan.discount)
            if od < view.price(itype, SPOT) * (1 - 1e-9):
                bad.append((view.now, itype.name, h, od, view.price(itype, SPOT)))
        return acquire(self, itype, tasks, market, migrate, bid, keep)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Plan, "acquire", recording)
        replay(trace, make_scheduler(name), savings_plan=plan, market=SPOT, **conf)
    return bad, bought


plans = st.builds(SavingsPlan, st.floats(0.05, 4.0), st.sampled_from([0.3, 0.5]))


@pytest.mark.slow
@pytest.mark.parametrize("name", scheduler_names())
@settings(max_examples=3, deadline=None)
@given(trace=workloads(max_jobs=4, max_tasks=3), conf=configs, plan=plans)
def test_no_scheduler_buys_spot_while_coverage_is_cheaper_at_the_margin(name, trace, conf,
                                                                        plan):
    bad, _ = spot_buys_over_coverage(trace, name, plan, **conf)
    assert not bad, f"{name} bought spot over unused coverage: {bad[:3]}"


@pytest.mark.parametrize("name", scheduler_names())
def test_a_roomy_plan_takes_every_scheduler_on_demand(name):
    # the hard case: a plan that covers the whole load; the spot market is cheaper at list
    # prices, so a scheduler pricing at list prices buys spot only
    trace = make_trace([(j, i, 300.0 * j, 1800.0, 2, 8) for j in range(3) for i in range(2)])
    bad, bought = spot_buys_over_coverage(trace, name, SavingsPlan(2.0, 0.5))
    assert not bad and bought[ON_DEMAND] > 0, (bad[:3], bought)


def per_task_decisions(name: str, plan, pending: int = 3):
    v = StaticView(market=SPOT, savings_plan=plan)
    for i in range(pending):
        v.add_pending(task(i, cpu=2, mem=8, runtime=3600.0 + i))
    return v.decide(make_scheduler(name)).acquisitions


@pytest.mark.parametrize("name", ["fleet", "first-fit", "scloud"])
def test_covered_capacity_first_then_spot(name):
    # C = $0.05/h at d = 0.5 covers one m4.large ($0.10/h on demand): one on demand, the
    # rest on spot (spot is 0.3 x on-demand, below a partly covered on-demand type)
    acq = per_task_decisions(name, SavingsPlan(0.05, 0.5))
    od = [a for a in acq if a.market == ON_DEMAND]
    assert [a.itype.name for a in od] == ["m4.large"]
    assert sum(len(a.tasks) for a in od) == 1
    assert sorted(t.tid for a in acq for t in a.tasks) == [0, 1, 2]
    assert all(a.market == SPOT for a in acq if a not in od)


@pytest.mark.parametrize("name", ["fleet", "first-fit", "karpenter", "scloud"])
def test_without_a_plan_spot_only(name):
    assert {a.market for a in per_task_decisions(name, None)} == {SPOT}


def test_karpenter_prices_its_packed_node_at_the_margin():
    # Karpenter packs the three tasks into one node first (6 vCPU: an m4.2xlarge, $0.40/h on
    # demand, $0.20/h of commitment at d = 0.5); covered, it goes on demand
    acq = per_task_decisions("karpenter", SavingsPlan(0.2, 0.5))
    assert [(a.itype.name, a.market, len(a.tasks)) for a in acq] == [
        ("m4.2xlarge", ON_DEMAND, 3)]
    # a quarter covered: $0.30/h at the margin against $0.12/h on spot
    acq = per_task_decisions("karpenter", SavingsPlan(0.05, 0.5))
    assert [(a.itype.name, a.market) for a in acq] == [("m4.2xlarge", SPOT)]


def test_hopping_moves_spot_load_into_covered_capacity():
    # HotSpot's hop (Stratus §4.3): a covered on-demand type costs nothing at the margin,
    # so a long task on spot hops there; without the plan it stays
    v = StaticView(market=SPOT, savings_plan=SavingsPlan(0.05, 0.5))
    v.add_instance("m4.large", market=SPOT, tasks=[(task(0, cpu=2, mem=8), 60.0, 36000.0)])
    acq = v.decide(make_scheduler("hotspot")).acquisitions
    assert [(a.itype.name, a.market, len(a.migrate)) for a in acq] == [
        ("m4.large", ON_DEMAND, 1)]
    v = StaticView(market=SPOT)
    v.add_instance("m4.large", market=SPOT, tasks=[(task(0, cpu=2, mem=8), 60.0, 36000.0)])
    assert v.decide(make_scheduler("hotspot")).acquisitions == []
    assert math.isclose(v.price("m4.large", ON_DEMAND), 0.1)
