"""HSpot and SCloud (Stratus §4.3) and the parts of the Fig. 6 chain (§5.2): HotSpot
hopping, SuperCloud-Spot's greedy scaler, the dot-product packer."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratus.app.registry import get_spec, make_scheduler
from stratus.base.resources import to_units
from stratus.packers.dot_product import DotProductPacker, dot_score
from stratus.policy.compose import Plan
from stratus.pricing.catalog import M4
from stratus.pricing.prices import PriceBook, PriceSeries
from stratus.scalers.hotspot_migration import PriceHopping, hop_gain
from stratus.scalers.scloud import GreedyConstrainedScaler, constrained_dim, greedy_fill
from stratus.sim.engine import Engine, ReplayConfig
from tests.helpers.invariants import check_invariants
from tests.helpers.trace import make_trace
from tests.helpers.views import FakeView, instance, task

# the integer bound has its own tests (conftest.no_integer_bound)
pytestmark = pytest.mark.usefixtures("no_integer_bound")


def spot_book(overrides: dict[str, PriceSeries]) -> PriceBook:
    """Spot at 30% of on-demand for every m4 type, except the given series."""
    series = {(t.name, "spot"): overrides.get(t.name, PriceSeries.constant(0.3 * t.ondemand_hourly))
              for t in M4}
    return PriceBook.on_demand(M4).with_series(series, name="test-spot")


def run(rows, name, book, spinup=60.0):
    return Engine(make_trace(rows), make_scheduler(name),
                  ReplayConfig(prices=book, spinup_s=(spinup, spinup), record=True)).run()


# --- HSpot -------------------------------------------------------------------------------------
# m4.large costs more than an m4.xlarge (0.06) until t=600, then drops to 0.03
LARGE_DROPS = {"m4.large": PriceSeries([0.0, 600.0], [0.5, 0.03])}


def test_hotspot_hops_to_a_type_that_became_cheaper():
    res = run([(1, 0, 0.0, 10 * 3600.0, 1.0, 2.0)], "hotspot", spot_book(LARGE_DROPS))
    assert res["hops"] == 1 and res["migrations"] == 1
    assert res.instances.sort_values("requested_s").type.tolist() == ["m4.xlarge", "m4.large"]
    stay = run([(1, 0, 0.0, 10 * 3600.0, 1.0, 2.0)], "task-per-instance", spot_book(LARGE_DROPS))
    assert stay["migrations"] == 0
    assert res["total_cost_usd"] < stay["total_cost_usd"]


# m4.large and m4.xlarge cross twice, both below on-demand (no spike: task-per-instance is
# never revoked, so the difference is the hops alone): the large costs 0.09 $/h (above the
# xlarge's 0.06) until t=3600, 0.02 until t=7200, then 0.09 again
CROSSING = {"m4.large": PriceSeries([0.0, 3600.0, 7200.0], [0.09, 0.02, 0.09])}


def test_hotspot_hops_pay_when_prices_cross_and_it_costs_less_than_task_per_instance():
    """Issue 36: hops where prices cross, at a lower cost than task-per-instance's. Three
    1-vCPU tasks start on m4.xlarge (the cheaper then; spin-up 60 s). At t=3600 the 4-h
    task (3 h left) and the 1.5-h one (41 min left) hop to m4.large; the 10-min one (60 s
    left) does not: its saving, (0.06 - 0.02) x (60 - 60), cannot pay for the move. The
    1.5-h task ends on m4.large; at t=7200 the 4-h task hops back to m4.xlarge."""
    rows = [(1, 0, 0.0, 4 * 3600.0, 1.0, 2.0), (2, 0, 600.0, 1.5 * 3600.0, 1.0, 2.0),
            (3, 0, 3000.0, 600.0, 1.0, 2.0)]
    book = spot_book(CROSSING)
    hs = run_recorded(rows, "hotspot", book)
    tpi = run_recorded(rows, "task-per-instance", book)
    for res in (hs, tpi):
        check_invariants(make_trace(rows), res)
        assert res["revocations"] == 0
    assert (hs["hops"], hs["tasks_hopped"], hs["migrations"]) == (3, 3, 3)
    assert hs["hops_weighed"] > hs["hops"]  # the 10-min task's move was weighed too
    assert tpi["migrations"] == 0
    assert hs["total_cost_usd"] < tpi["total_cost_usd"]
    hopped = hs.instances.sort_values("requested_s").type.tolist()
    assert hopped == ["m4.xlarge", "m4.xlarge", "m4.xlarge", "m4.large", "m4.large",
                      "m4.xlarge"]
    assert hs.tasks.migrations.tolist() == [2, 1, 0]


def run_recorded(rows, name, book):
    return Engine(make_trace(rows), make_scheduler(name),
                  ReplayConfig(prices=book, spinup_s=(60.0, 60.0), record=True)).run()


def test_hotspot_stays_when_the_remaining_runtime_is_too_short():
    # at the first tick after the drop (t=600) about 200 s are left: the saving (0.03 $/h
    # over ~140 s after spin-up) is below the cost of the move (spin-up and a ~107 s
    # transfer of 2 GiB at 160 Mbit/s)
    res = run([(1, 0, 0.0, 860.0, 1.0, 2.0)], "hotspot", spot_book(LARGE_DROPS))
    assert res["hops"] == 0 and res["migrations"] == 0
    assert res["hops_weighed"] >= 1  # the cheaper m4.large was weighed, and did not pay
    assert res.instances.type.tolist() == ["m4.xlarge"]


def test_hop_gain_is_the_per_second_bill_difference():
    # stay: 0.06 x 1000; hop: 0.06 x (60 + 100) + 0.03 x (60 + 100 + 940)
    assert hop_gain(0.06, 0.03, 1000.0, 60.0, 100.0) == pytest.approx(
        0.06 * 1000 - (0.06 * 160 + 0.03 * 1100))
    assert hop_gain(0.06, 0.03, 100.0, 60.0, 100.0) < 0


def test_hotspot_bids_above_on_demand_and_hops_instead_of_being_revoked():
    # m4.large spikes to twice its on-demand price for 20 minutes
    spike = {"m4.large": PriceSeries([0.0, 1800.0, 3000.0], [0.03, 0.2, 0.03])}
    rows = [(1, 0, 0.0, 4 * 3600.0, 1.0, 2.0)]
    tpi = run(rows, "task-per-instance", spot_book(spike))
    assert tpi["revocations"] == 1  # bid on-demand: revoked, restarted
    rec = Recorder(make_scheduler("hotspot"))
    hs = Engine(make_trace(rows), rec,
                ReplayConfig(prices=spot_book(spike), spinup_s=(60.0, 60.0))).run()
    assert hs["revocations"] == 0
    assert hs["hops"] >= 1  # to an m4.xlarge during the spike (and back after)
    bids = [(a.itype.name, a.bid) for d in rec.log for a in d.acquisitions]
    assert bids and all(b == pytest.approx(10 * M4[n].ondemand_hourly) for n, b in bids)


def test_registered_estimators():
    for name in ("hotspot", "scloud", "scloud+pack", "scloud+pack+scale",
                 "scloud+pack+scale+clear"):
        assert get_spec(name).estimator == "oracle"
    assert make_scheduler("task-per-instance").migrator is None


# --- SCloud ------------------------------------------------------------------------------------
class Recorder:
    """Wraps a scheduler and keeps every tick's decisions."""

    def __init__(self, inner):
        self.inner = inner
        self.name = inner.name
        self.log = []

    def start(self, view):
        self.inner.start(view)

    def schedule(self, view):
        dec = self.inner.schedule(view)
        self.log.append(dec)
        return dec

    def stats(self):
        return self.inner.stats()


def test_scloud_never_places_a_new_task_on_a_running_instance():
    # an m4.large runs a 1-vCPU task for an hour; a second 0.5-vCPU task arrives at 10 min
    # and would fit beside it: SCloud acquires a new instance for it, scloud+pack does not
    rows = [(1, 0, 0.0, 3600.0, 1.0, 2.0), (2, 0, 600.0, 600.0, 0.5, 1.0)]
    book = spot_book({})
    rec = Recorder(make_scheduler("scloud"))
    res = Engine(make_trace(rows), rec, ReplayConfig(prices=book)).run()
    assert all(not d.placements for d in rec.log)
    assert res["instances_acquired"] == 2
    packed = run(rows, "scloud+pack", book)
    assert packed["instances_acquired"] == 1


@pytest.mark.slow
@settings(max_examples=25)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(1, 8), st.integers(1, 32)),
                min_size=1, max_size=25))
def test_scloud_never_places_on_live_instances_in_random_workloads(jobs):
    rows = []
    for j, (minute, cpu, mem) in enumerate(jobs):
        rows.append((j, 0, 60.0 * minute, 300.0 + 97.0 * j, cpu / 2, mem / 2))
    rec = Recorder(make_scheduler("scloud"))
    Engine(make_trace(rows), rec, ReplayConfig(seed=1)).run()
    assert all(not d.placements and not d.migrations for d in rec.log)


def test_scloud_greedy_fills_the_largest_type_on_ties():
    # on-demand m4 prices are equal per vCPU: 32 tasks of 2 vCPU / 8 GiB fill one
    # m4.16xlarge as cost-efficiently as 32 m4.large; SCloud favours the large instance
    tasks = [task(i, 2, 8) for i in range(32)]
    view = FakeView()
    plan = Plan(view)
    GreedyConstrainedScaler().scale(view, plan, tasks)
    acq = plan.decisions.acquisitions
    assert [a.itype.name for a in acq] == ["m4.16xlarge"] and len(acq[0].tasks) == 32


def test_scloud_greedy_packs_decreasing_on_the_constrained_resource():
    # memory constrains (48 GiB of 256 vs 6 vCPU of 64): largest memory first
    tasks = [task(0, 1, 4), task(1, 2, 40), task(2, 3, 4)]
    largest = M4.max_capacity
    assert constrained_dim(tasks, largest) == 1
    view = FakeView()
    plan = Plan(view)
    GreedyConstrainedScaler().scale(view, plan, tasks)
    acq = plan.decisions.acquisitions
    # one m4.4xlarge would hold all three (48 GiB of 64: 6 smallest-type units for $0.8,
    # 7.5 per $); an m4.xlarge filled with the two 4-GiB tasks (4 of 4 vCPU: 2 units for
    # $0.2, 10 per $) is better; the 40-GiB task then goes on an m4.4xlarge of its own
    assert [(a.itype.name, [t.tid for t in a.tasks]) for a in acq] == [
        ("m4.xlarge", [2, 0]), ("m4.4xlarge", [1])]


def test_greedy_fill_counts():
    groups = [(to_units(4, 16), 5), (to_units(1, 1), 10)]
    assert greedy_fill(groups, to_units(8, 32)) == [2, 0]
    assert greedy_fill(groups, to_units(10, 40)) == [2, 2]


def test_scloud_hops_whole_instances_only_for_price():
    # SCloud hops an instance as a whole (unit "capacity"): its load shrinking is no reason
    hop = PriceHopping(unit="capacity")
    big = instance(0, M4["m4.16xlarge"], free=to_units(63, 250))
    assert hop._fit_key(big, [t.capacity for t in M4])[2] == 1 << 5  # only m4.16xlarge holds it
    load = PriceHopping(unit="load")
    assert load._fit_key(big, [t.capacity for t in M4])[2] == 0b111111


# --- dot product -------------------------------------------------------------------------------
class PackView(FakeView):
    def instance(self, iid):
        for i in self._instances:
            if i.iid == iid:
                return i
        raise KeyError(iid)


def test_dot_product_picks_the_largest_dot_product():
    a = instance(0, M4["m4.large"], free=to_units(1.5, 1))
    b = instance(1, M4["m4.large"], free=to_units(1, 6))
    c = instance(2, M4["m4.xlarge"], free=to_units(2, 8))
    t = task(10, 0.5, 0.5)
    scores = [dot_score(t.req, i.free, i.itype.capacity) for i in (a, b, c)]
    assert scores[0] > scores[1] > scores[2]
    view = PackView([a, b, c])
    plan = Plan(view)
    assert DotProductPacker().pack(view, plan, [t]) == []
    assert plan.decisions.placements[0].instance is a
    # a memory-heavy task does not fit a; b has the larger product
    plan = Plan(view)
    DotProductPacker().pack(view, plan, [task(11, 0.5, 4)])
    assert plan.decisions.placements[0].instance is b


@pytest.mark.slow
@settings(max_examples=60)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 100), st.integers(0, 100)),
                min_size=1, max_size=40),
       st.lists(st.tuples(st.sampled_from([0.1, 0.5, 1, 2, 4]), st.sampled_from([0.5, 1, 4, 16])),
                min_size=1, max_size=15))
def test_dot_product_matches_a_brute_force_scan(insts, reqs):
    types = list(M4)
    live = []
    for iid, (ti, p0, p1) in enumerate(insts):
        cap = types[ti].capacity
        live.append(instance(iid, types[ti], free=(cap[0] * p0 // 100, cap[1] * p1 // 100)))
    view = PackView(live)
    plan = Plan(view)
    tasks = [task(100 + k, c, m) for k, (c, m) in enumerate(reqs)]
    free = {i.iid: i.free for i in live}
    DotProductPacker().pack(view, plan, tasks)
    placed = {p.task.tid: p.instance for p in plan.decisions.placements}
    for t in tasks:  # replay the brute force in the same order
        fitting = [i for i in live if all(r <= f for r, f in zip(t.req, free[i.iid]))]
        if not fitting:
            assert t.tid not in placed
            continue
        best = max(dot_score(t.req, free[i.iid], i.itype.capacity) for i in fitting)
        ties = [i for i in fitting if dot_score(t.req, free[i.iid], i.itype.capacity) == best]
        got = placed[t.tid]
        assert got is min(ties, key=lambda i: i.iid)
        free[got.iid] = tuple(f - r for f, r in zip(free[got.iid], t.req))
