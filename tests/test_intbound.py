"""The integer lower bound: hand-computed cases, validity against every registered scheduler,
and its fallback when OR-Tools is missing."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_trace
from hypothesis import given, settings
from hypothesis import strategies as st
from test_properties import configs, workloads

import stratus.intbound as ib
from pricing.catalog import M4, Catalog, InstanceType
from pricing.prices import ON_DEMAND, SPOT, PriceBook, PriceSeries
from stratus.app.registry import make_scheduler, scheduler_names
from stratus.engine import Engine, ReplayConfig
from stratus.metrics import cheapest_unit_prices, fluid_lower_bound
from stratus.resources import to_units

pytest.importorskip("ortools")


def replay(trace, name, cfg):
    return Engine(trace, make_scheduler(name), cfg).run()

# two types: 2 vCPU/4 GiB at 0.09 $/h and 4 vCPU/8 GiB at 0.20 $/h
SMALL = InstanceType("s", 2, 4, 0.09)
BIG = InstanceType("b", 4, 8, 0.20)


def bounds(segs, catalog, book, markets=(ON_DEMAND,), slot_s=60.0, solver=ib.DEFAULT_SOLVER):
    starts = np.array([s for s, _, _ in segs], dtype=float)
    ends = np.array([e for _, e, _ in segs], dtype=float)
    reqs = np.array([to_units(*r) for _, _, r in segs], dtype=np.int64)
    rt, rho = cheapest_unit_prices(book, catalog, markets, starts.min(), ends.max())
    fluid = fluid_lower_bound(starts, ends, reqs, rt, rho)
    return fluid, ib.integer_lower_bound(starts, ends, reqs, book, catalog, markets, slot_s,
                                         rt, rho, solver=solver)


_init = ib.CoverSolver.__init__


def _no_shortcut_init(self, caps, solver=ib.DEFAULT_SOLVER, shortcut=True):
    _init(self, caps, solver, shortcut=False)


@pytest.mark.parametrize("solver", ib.SOLVERS)
@pytest.mark.parametrize("shortcut", [True, False])
def test_three_vcpu_over_one_slot_two_types(solver, shortcut, monkeypatch):
    if not shortcut:  # every key through the MILP
        monkeypatch.setattr(ib.CoverSolver, "__init__", _no_shortcut_init)
    cat = Catalog([SMALL, BIG])
    fluid, integer = bounds([(0.0, 60.0, (3, 1))], cat, PriceBook.on_demand(cat), solver=solver)
    # fluid: 3 vCPU at 0.045 $/vCPU-h; integer: two small (0.18 $/h) beat one big (0.20)
    # and a small plus a big (0.29)
    assert fluid == pytest.approx(3 * 0.045 * 60 / 3600)
    assert integer == pytest.approx(0.18 * 60 / 3600)
    # a cheaper big type wins alone
    cat2 = Catalog([SMALL, InstanceType("b", 4, 8, 0.17)])
    assert bounds([(0.0, 60.0, (3, 1))], cat2, PriceBook.on_demand(cat2),
                  solver=solver)[1] == pytest.approx(0.17 * 60 / 3600)
    # memory can bind too: 1 vCPU and 6 GiB need two small ones or a big one
    assert bounds([(0.0, 60.0, (1, 6))], cat, PriceBook.on_demand(cat),
                  solver=solver)[1] == pytest.approx(0.18 * 60 / 3600)


def test_a_partial_last_slot_pays_only_while_busy():
    cat = Catalog([SMALL, BIG])
    _, integer = bounds([(0.0, 90.0, (3, 1))], cat, PriceBook.on_demand(cat))
    assert integer == pytest.approx(0.18 * 90 / 3600)


def test_slot_minimum_load_not_peak():
    # a second task runs for 10 s of the slot: the cover of the pair is paid for 10 s only
    cat = Catalog([SMALL, BIG])
    fluid, integer = bounds([(0.0, 60.0, (3, 1)), (0.0, 10.0, (4, 1))], cat,
                            PriceBook.on_demand(cat))
    # slot's least load: 3 vCPU (0.18 $/h); while both run, fluid 7 x 0.045 = 0.315 $/h
    assert integer == pytest.approx((0.315 * 10 + 0.18 * 50) / 3600)
    assert integer >= fluid


def test_peak_load_would_not_be_a_bound():
    """A task that runs 1 s on an instance that boots at once costs 1 s of the instance.
    Covering the slot's *peak* for the whole 60 s slot would charge 60 times that."""
    tr = make_trace([(1, 0, 0.0, 1.0, 1.5, 6.0)])
    res = replay(tr, "task-per-instance", ReplayConfig(spinup_s=(0.0, 0.0), market=ON_DEMAND))
    assert res["total_cost_usd"] == pytest.approx(0.10 / 3600)
    assert res["lower_bound_integer_usd"] == pytest.approx(0.10 / 3600)  # tight here
    assert res["lower_bound_cost_usd"] == pytest.approx(0.075 / 3600)
    assert res["total_cost_usd"] < 60 * 0.10 / 3600  # what a peak-per-slot cover would say


def test_slot_prices_are_the_minimum_in_the_slot():
    # spot halves mid-slot: the integer part prices the slot at its cheapest, the fluid
    # part follows the step, and the bound is the larger instant by instant
    book = PriceBook.on_demand(M4).with_series(
        {(t.name, SPOT): PriceSeries([0.0, 30.0], [t.ondemand_hourly, t.ondemand_hourly / 2])
         for t in M4})
    fluid, integer = bounds([(0.0, 60.0, (2, 8))], M4, book, markets=(SPOT,))
    assert fluid == pytest.approx((0.10 * 30 + 0.05 * 30) / 3600)
    assert integer == pytest.approx(fluid)
    # 1.5 vCPU: an m4.large is the cover; 0.05 $/h in the slot; fluid 0.075 then 0.0375
    fluid, integer = bounds([(0.0, 60.0, (1.5, 1))], M4, book, markets=(SPOT,))
    assert integer == pytest.approx((0.075 * 30 + 0.05 * 30) / 3600)


def test_markets_the_replay_may_use_are_all_priced():
    # on-demand 0.10, "spot" 0.04 for the one type: with both allowed the cover costs 0.04
    cat = Catalog([InstanceType("x", 2, 8, 0.10)])
    book = PriceBook.on_demand(cat).with_series({("x", SPOT): PriceSeries.constant(0.04)})
    assert bounds([(0.0, 60.0, (1, 1))], cat, book, markets=(ON_DEMAND, SPOT))[1] == \
        pytest.approx(0.04 * 60 / 3600)
    assert bounds([(0.0, 60.0, (1, 1))], cat, book, markets=(ON_DEMAND,))[1] == \
        pytest.approx(0.10 * 60 / 3600)


@settings(max_examples=40)
@given(st.lists(st.tuples(st.integers(0, 5000), st.integers(0, 5000)), min_size=1, max_size=4),
       st.lists(st.floats(0.01, 3.0), min_size=6, max_size=6))
def test_cp_sat_and_scip_agree(loads, prices):
    caps = np.array([t.capacity for t in M4])
    a, b = ib.CoverSolver(caps, "cp-sat", shortcut=False), ib.CoverSolver(caps, "scip", shortcut=False)
    c = ib.CoverSolver(caps)  # settles some keys without a solver: exactly as well
    for load in loads:
        want = a(load, tuple(prices))
        assert b(load, tuple(prices)) == pytest.approx(want, rel=1e-9, abs=1e-9)
        assert c(load, tuple(prices)) == pytest.approx(want, rel=1e-9, abs=1e-9)


def test_without_ortools_the_bound_is_null_with_a_reason(monkeypatch):
    monkeypatch.setattr(ib, "ortools_missing", lambda: "OR-Tools is not importable (test)")
    res = replay(make_trace([(1, 0, 0.0, 100.0, 1.0, 2.0)]), "task-per-instance",
                 ReplayConfig(spinup_s=(0.0, 0.0)))
    assert res["lower_bound_integer_usd"] is None
    assert "OR-Tools" in res["lower_bound_integer_note"]
    assert res["lower_bound_cost_usd"] > 0


def check_bound(res):
    s = res.summary
    lo, fluid, cost = s["lower_bound_integer_usd"], s["lower_bound_cost_usd"], s["total_cost_usd"]
    assert lo is not None and lo >= 0
    assert lo >= fluid * (1 - 1e-9) - 1e-12
    assert cost >= lo * (1 - 1e-9) - 1e-12, (s["scheduler"], cost, lo)


# every property replay checks the bound too (tests/invariants.py); this adds on-demand
@pytest.mark.parametrize("name", scheduler_names())
@settings(max_examples=15)
@given(trace=workloads(), conf=configs, market=st.sampled_from([SPOT, ON_DEMAND]))
def test_no_scheduler_pays_less_than_the_integer_bound(name, trace, conf, market):
    res = Engine(trace, make_scheduler(name), ReplayConfig(market=market, **conf)).run()
    check_bound(res)
