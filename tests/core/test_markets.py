"""Spot markets in the engine: per-second billing at the prevailing price, bids at the
on-demand price (Stratus §3.3), revocation two minutes after the price passes the bid."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratus.app.cli import main
from stratus.app.registry import make_estimator, make_scheduler, scheduler_names
from stratus.pricing.catalog import M4
from stratus.pricing.prices import PriceBook, PriceSeries
from stratus.replays import replay
from stratus.sim.engine import Engine, ReplayConfig
from tests.helpers.chaos import ChaosScheduler
from tests.helpers.invariants import check_invariants
from tests.helpers.trace import make_trace


def spot_book(overrides: dict[str, PriceSeries]) -> PriceBook:
    """Spot at 30% of on-demand for every m4 type, except the given series."""
    series = {(t.name, "spot"): overrides.get(t.name, PriceSeries.constant(0.3 * t.ondemand_hourly))
              for t in M4}
    return PriceBook.on_demand(M4).with_series(series, name="test-spot")


def test_two_step_spot_trace_is_billed_to_the_cent():
    # one 64-vCPU task fills an m4.16xlarge: requested at 0, ready at 100, done at 3600.
    # Spot is $1.00/h until t=1800, then $0.80/h: 0.5 h x 1.00 + 0.5 h x 0.80 = $0.90
    book = spot_book({"m4.16xlarge": PriceSeries([0.0, 1800.0], [1.00, 0.80])})
    tr = make_trace([(1, 0, 0.0, 3500.0, 64.0, 200.0)])
    res = replay(tr, make_scheduler("task-per-instance"), ReplayConfig(prices=book, spinup_s=(100.0, 100.0)))
    assert res["instances_acquired"] == 1 and res["cost_by_market"] == {"spot": pytest.approx(0.90)}
    assert round(res["total_cost_usd"], 2) == 0.90
    assert res["total_cost_usd"] == pytest.approx(0.90, abs=1e-9)
    assert res["revocations"] == 0


def test_spike_above_the_bid_revokes_and_the_task_finishes_elsewhere():
    # m4.large spot 0.03 spikes to 0.50 (> its 0.10 on-demand bid) at t=600 for 10 min
    book = spot_book({"m4.large": PriceSeries([0.0, 600.0, 1200.0], [0.03, 0.50, 0.03])})
    tr = make_trace([(1, 0, 0.0, 3000.0, 1.0, 2.0)])
    res = replay(tr, make_scheduler("task-per-instance"),
                 ReplayConfig(prices=book, spinup_s=(100.0, 100.0), record=True))
    assert res["revocations"] == 1 and res["tasks_revoked"] == 1
    first, second = res.instances.sort_values("requested_s").itertuples()
    # warning at 600, revoked at 720: the 620 s of progress are lost
    assert (first.type, first.released_s) == ("m4.large", 720.0)
    # the tick at that same instant (revocations run first) picks the cheapest type then,
    # no longer the spiked m4.large
    assert (second.type, second.requested_s) == ("m4.xlarge", 720.0)
    assert res.tasks.finish_s[0] == 720.0 + 100.0 + 3000.0
    assert first.cost_usd == pytest.approx((0.03 * 600 + 0.50 * 120) / 3600)
    check_invariants(tr, res)


def test_acquiring_while_above_the_bid_is_revoked_two_minutes_later():
    # a policy that acquires regardless of price: every type is always above its bid,
    # so each instance is revoked 120 s after it is requested and the task never finishes
    book = spot_book({t.name: PriceSeries.constant(2 * t.ondemand_hourly) for t in M4})
    tr = make_trace([(1, 0, 0.0, 1000.0, 1.0, 1.0)])

    class Stubborn:
        name = "stubborn"

        def schedule(self, view):
            from stratus.policy.compose import Plan

            plan = Plan(view)
            for task in view.pending:
                plan.acquire(M4["m4.large"], [task])
            return plan.decisions

    res = replay(tr, Stubborn(), ReplayConfig(prices=book, max_idle_ticks=30))
    assert res["tasks_unfinished"] == 1 and "no task finished" in res["ended_early"]
    assert res["revocations"] >= 10 and res["total_cost_usd"] > 0  # billed to each revocation
    # the registered policies do not bid below the price: they wait; with prices that never
    # change the engine sees capacity can never be had, and ends at once
    res = replay(tr, make_scheduler("task-per-instance"),
                 ReplayConfig(prices=book, max_idle_ticks=30))
    assert res["tasks_unfinished"] == 1 and "capacity can never be had" in res["ended_early"]
    assert res["total_cost_usd"] == 0 and res["instances_acquired"] == 0


def test_on_demand_market_has_no_revocations_and_costs_more():
    tr = make_trace([(j, 0, 60.0 * j, 900.0, 2.0, 4.0) for j in range(20)])
    spot = replay(tr, make_scheduler("first-fit"), ReplayConfig(market="spot"))
    od = replay(tr, make_scheduler("first-fit"), ReplayConfig(market="on-demand"))
    assert spot["cost_by_market"].keys() == {"spot"} and od["cost_by_market"].keys() == {"on-demand"}
    assert spot["total_cost_usd"] < 0.5 * od["total_cost_usd"]  # spot ~75% below on-demand


@st.composite
def spiky_books(draw):
    series = {}
    for t in M4:
        n = draw(st.integers(1, 6))
        times = sorted(draw(st.sets(st.floats(1, 8000), min_size=n, max_size=n)))
        prices = [t.ondemand_hourly * draw(st.sampled_from([0.2, 0.25, 0.3, 0.9, 1.5, 3.0]))
                  for _ in times]
        # spikes come and go; the trace ends at a normal price so work can finish
        series[t.name] = PriceSeries([0.0] + times + [9000.0],
                                     [0.3 * t.ondemand_hourly] + prices + [0.3 * t.ondemand_hourly])
    return spot_book(series)


@st.composite
def small_workloads(draw):
    rows = []
    for j in range(draw(st.integers(1, 8))):
        submit = draw(st.floats(0, 3000))
        cpu, mem = draw(st.sampled_from([0.5, 1, 2, 8])), draw(st.sampled_from([1, 2, 8, 30]))
        for i in range(draw(st.integers(1, 4))):
            rows.append((j, i, submit, draw(st.floats(10, 3000)), cpu, mem))
    return make_trace(rows)


@pytest.mark.slow
@pytest.mark.parametrize("name", [*scheduler_names(), "chaos"])
@settings(max_examples=5)  # x 16 policies, new every run
@given(trace=small_workloads(), book=spiky_books(), seed=st.integers(0, 1000))
def test_invariants_hold_through_spikes_and_revocations(name, trace, book, seed):
    sched = ChaosScheduler(seed) if name == "chaos" else make_scheduler(name)
    res = Engine(trace, sched, ReplayConfig(prices=book, seed=seed, record=True,
                                            estimator=make_estimator("noisy:0.3"), max_idle_ticks=2000)).run()
    check_invariants(trace, res)


def test_cli_spot_options(tmp_path, capsys):
    # a complete AWS describe-spot-price-history document for the six m4 types
    recs = [{"AvailabilityZone": "us-west-2a", "InstanceType": t.name, "ProductDescription": "Linux/UNIX",
             "SpotPrice": f"{0.3 * t.ondemand_hourly:.6f}", "Timestamp": "2017-06-05T00:00:00Z"}
            for t in M4]
    path = tmp_path / "spot.json"
    path.write_text(json.dumps({"SpotPriceHistory": recs}))
    argv = ["replay", "--trace", "synthetic:google?scale=0.05", "--hours", "1", "--json"]
    assert main([*argv, "--spot-prices", str(path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["market"] == "spot" and doc["cost_by_market"].keys() == {"spot"}
    assert main([*argv, "--market", "on-demand"]) == 0
    od = json.loads(capsys.readouterr().out)
    assert od["total_cost_usd"] > 2 * doc["total_cost_usd"]
    assert main([*argv, "--market", "on-demand", "--spot-prices", str(path)]) == 2
    assert "--spot-prices given with --market on-demand" in capsys.readouterr().err
