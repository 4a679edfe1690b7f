"""Spot Fleet + ECS (Stratus §4.3 "Fleet"), its diversified and memory variants, Karpenter,
and Stratus with best-fit scale-out (§5.1 ablation): the parts that make them."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratus.app.registry import get_spec, make_estimator, make_scheduler
from stratus.base.resources import fits, to_units
from stratus.packers.binpack import Binpack, BinpackIndex
from stratus.policy.compose import Plan
from stratus.pricing.catalog import M4
from stratus.scalers.karpenter import KarpenterConsolidation, KarpenterProvisioner
from stratus.scalers.per_task import BestFit, Diversified, LowestPrice, PerTaskScaler
from stratus.sim.engine import Engine, ReplayConfig
from stratus.sim.model import READY, Instance, Task
from stratus.sim.view import EngineView
from tests.helpers import views
from tests.helpers.invariants import check_invariants, comparable
from tests.helpers.trace import make_trace

# the integer bound has its own tests (conftest.no_integer_bound)
pytestmark = pytest.mark.usefixtures("no_integer_bound")


class FakeView(views.FakeView):
    """A view of hand-made instances, priced by type name."""

    def __init__(self, instances=(), prices=None, catalog=M4):
        super().__init__(instances, catalog=catalog, prices=prices)


def instance(iid, name, free_cpu, free_mem):
    inst = Instance(iid, M4[name], "on-demand", None, 0.0)
    inst.state = READY
    inst.free = to_units(free_cpu, free_mem)
    return inst


def task(tid, cpu, mem):
    return Task(tid, tid, 0, 0.0, 100.0, to_units(cpu, mem))


# --- ECS binpack ---------------------------------------------------------------------------


def test_binpack_picks_the_least_remaining_cpu_that_fits():
    insts = [instance(0, "m4.4xlarge", 3.0, 40), instance(1, "m4.4xlarge", 1.0, 40),
             instance(2, "m4.4xlarge", 0.5, 40), instance(3, "m4.4xlarge", 1.2, 1)]
    view = FakeView(insts)
    plan = Plan(view)
    # 0.5 free is too little; 1.0 is the least CPU that fits (1.2 has too little memory)
    assert Binpack(0).pack(view, plan, [task(10, 0.8, 2)]) == []
    assert plan.decisions.placements[0].instance.iid == 1
    # binpack on memory: the least remaining memory that still fits
    plan = Plan(view)
    Binpack(1).pack(view, plan, [task(11, 0.2, 1)])
    assert plan.decisions.placements[0].instance.iid == 3


def test_binpack_follows_its_own_placements_within_a_tick():
    insts = [instance(0, "m4.xlarge", 4.0, 16), instance(1, "m4.xlarge", 2.0, 16)]
    view = FakeView(insts)
    plan = Plan(view)
    tasks = [task(i, 1.0, 1) for i in range(5)]
    left = Binpack(0).pack(view, plan, tasks)
    # 2 on the fuller instance first, then the other takes 3 (its 4 vCPU beat nothing)
    assert [p.instance.iid for p in plan.decisions.placements] == [1, 1, 0, 0, 0]
    assert [t.tid for t in left] == []


@pytest.mark.slow
@settings(max_examples=200)
@given(st.lists(st.tuples(st.integers(0, 64), st.integers(0, 64)), min_size=0, max_size=30),
       st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)), min_size=1, max_size=15),
       st.sampled_from([0, 1]))
def test_binpack_index_matches_a_scan(frees, reqs, dim):
    idx = BinpackIndex(64, dim)
    items = dict(enumerate(frees))
    for k, f in items.items():
        idx.add(k, f)
    other = 1 - dim
    for n, req in enumerate(reqs):
        fit = [(f[dim], f[other], k) for k, f in items.items() if fits(req, f)]
        got = idx.best(req)
        assert got == (min(fit)[2] if fit else None)
        if got is not None:  # take it, as a placement would
            items[got] = tuple(f - r for f, r in zip(items[got], req))
            idx.update(got, items[got])
        if n % 3 == 2 and items:  # and drop one now and then
            k = next(iter(items))
            del items[k]
            idx.remove(k)
    idx.clear()
    assert idx.best((0, 0)) is None and len(idx) == 0


# --- Spot Fleet acquisition ----------------------------------------------------------------


def test_lowest_price_takes_the_cheapest_fitting_type():
    prices = {t.name: t.ondemand_hourly for t in M4}
    prices["m4.2xlarge"] = 0.01  # a spot dip: the bigger type is cheapest now
    view = FakeView(prices=prices)
    choice = LowestPrice()
    choice.begin(view)
    assert choice.choose(to_units(1, 1)).name == "m4.2xlarge"
    assert choice.choose(to_units(20, 1)).name == "m4.10xlarge"


def test_diversified_spreads_acquisitions_over_the_fitting_types():
    view = FakeView()
    choice = Diversified()
    choice.begin(view)
    small = [choice.choose(to_units(1, 1)).name for _ in range(8)]
    assert small == [t.name for t in M4] + [M4.types[0].name, M4.types[1].name]
    # a big task skips the pools it does not fit; the rotation goes on from there
    assert choice.choose(to_units(20, 1)).name == "m4.10xlarge"
    assert choice.choose(to_units(1, 1)).name == "m4.16xlarge"
    plan = Plan(view)
    PerTaskScaler(Diversified()).scale(view, plan, [task(i, 1, 1) for i in range(6)])
    assert sorted(a.itype.name for a in plan.decisions.acquisitions) == sorted(t.name for t in M4)


def test_fleet_copacks_a_ticks_tasks_onto_its_new_instances():
    view = FakeView()
    plan = Plan(view)
    PerTaskScaler(LowestPrice(), copack=0).scale(view, plan, [task(i, 0.5, 1) for i in range(9)])
    acq = plan.decisions.acquisitions
    # m4.large (2 vCPU) is the cheapest fit; four tasks fill one before the next is rented
    assert [a.itype.name for a in acq] == ["m4.large"] * 3
    assert [len(a.tasks) for a in acq] == [4, 4, 1]
    plan = Plan(view)
    PerTaskScaler(LowestPrice()).scale(view, plan, [task(i, 0.5, 1) for i in range(3)])
    assert [len(a.tasks) for a in plan.decisions.acquisitions] == [1, 1, 1]


def test_best_fit_takes_the_tightest_type_even_when_a_bigger_one_is_cheaper():
    prices = {t.name: t.ondemand_hourly for t in M4}
    prices["m4.2xlarge"] = 0.01
    view = FakeView(prices=prices)
    bf, lp = BestFit(), LowestPrice()
    bf.begin(view)
    lp.begin(view)
    assert bf.choose(to_units(3, 1)).name == "m4.xlarge"
    assert lp.choose(to_units(3, 1)).name == "m4.2xlarge"
    assert bf.choose(to_units(1, 20)).name == "m4.2xlarge"  # memory binds: 32 GiB
    assert bf.choose(to_units(65, 1)) is None


def test_bestfit_is_stratus_with_only_the_scaler_changed():
    a, b = make_scheduler("stratus"), make_scheduler("stratus-bestfit")
    assert type(a.packer) is type(b.packer) and type(a.migrator) is type(b.migrator)
    assert isinstance(b.scaler, PerTaskScaler) and isinstance(b.scaler.choice, BestFit)
    assert get_spec("stratus-bestfit").estimator == get_spec("stratus").estimator == "history"


# --- Karpenter ---------------------------------------------------------------------------------


def test_karpenter_provisions_a_batch_first_fit_decreasing_on_the_cheapest_types():
    view = FakeView()
    plan = Plan(view)
    tasks = [task(i, 8, 8) for i in range(10)] + [task(10, 1, 1)]
    KarpenterProvisioner().scale(view, plan, tasks[::-1])
    acq = plan.decisions.acquisitions
    assert [a.itype.name for a in acq] == ["m4.16xlarge", "m4.10xlarge"]
    assert [len(a.tasks) for a in acq] == [8, 3] and all(a.keep for a in acq)
    assert [t.tid for t in acq[1].tasks] == [8, 9, 10]  # largest first


def _consolidation_trace():
    # node 1 (m4.2xlarge): a1 6 vCPU for 2 h and a2 2 vCPU for 5 min, from t=0;
    # node 2 (m4.xlarge): b1 3 vCPU for 10 min and b2 1 vCPU for 2 h, from t=60.
    # Once b1 ends (t=720) node 2 holds b2 alone, which fits the room a2 left on node 1.
    return make_trace([(0, 0, 0.0, 7200.0, 6, 8), (0, 1, 0.0, 300.0, 2, 8),
                       (1, 0, 60.0, 600.0, 3, 4), (1, 1, 60.0, 7200.0, 1, 4)])


class Moves:
    """Records when migrations are decided and checks they empty their source."""

    def __init__(self, inner):
        self.inner, self.name, self.at, self.partial = inner, inner.name, [], 0

    def stats(self):
        return self.inner.stats()

    def schedule(self, view):
        dec = self.inner.schedule(view)
        moved = {}
        for m in dec.migrations:
            moved.setdefault(view.location(m.task).iid, set()).add(m.task.tid)
        for a in dec.acquisitions:
            for t in a.migrate:
                moved.setdefault(view.location(t).iid, set()).add(t.tid)
        for iid, tids in moved.items():
            self.at.append(view.now)
            if set(view.instance(iid).tasks) != tids:
                self.partial += 1
        return dec


@pytest.mark.parametrize("settle", [300.0, 600.0])
def test_karpenter_deletes_an_underutilized_node_only_after_the_settle_time(settle):
    sched = make_scheduler("karpenter")
    sched.migrator.consolidate_after = settle
    rec = Moves(sched)
    res = Engine(_consolidation_trace(), rec,
                 ReplayConfig(market="on-demand", spinup_s=(60.0, 60.0), record=True)).run()
    check_invariants(_consolidation_trace(), res)
    assert res["migrations"] == 1 and rec.partial == 0
    assert rec.at == [720.0 + settle]  # b1 ended at 720; not a tick earlier
    assert sched.stats()["consolidation_deleted"] == 1
    types = res.instances.sort_values("requested_s").type.tolist()
    assert types == ["m4.2xlarge", "m4.xlarge"]  # deleted, not replaced


def test_karpenter_replaces_a_node_with_a_cheaper_one_when_nothing_else_has_room():
    # one m4.2xlarge batch; 7 of its 8 one-vCPU tasks end at 10 min; the last runs 3 h and
    # fits nowhere else: it moves to a new m4.large once the node has settled
    rows = [(0, i, 0.0, 600.0, 1, 1) for i in range(7)] + [(0, 7, 0.0, 3 * 3600.0, 1, 1)]
    sched = make_scheduler("karpenter")
    res = Engine(make_trace(rows), sched, ReplayConfig(market="on-demand", spinup_s=(60.0, 60.0))).run()
    assert res["migrations"] == 1 and sched.stats()["consolidation_replaced"] == 1
    assert res.instances.sort_values("requested_s").type.tolist() == ["m4.2xlarge", "m4.large"]


@pytest.mark.slow
@settings(max_examples=15)
@given(st.lists(st.tuples(st.integers(0, 30), st.sampled_from([0.5, 1, 2, 4, 8]),
                          st.sampled_from([0.5, 2, 8, 30]), st.floats(30, 8000)),
                min_size=1, max_size=25))
def test_karpenter_never_reads_a_runtime_estimate(jobs):
    rows = [(j, 0, 60.0 * s, rt, c, m) for j, (s, c, m, rt) in enumerate(jobs)]
    trace = make_trace(rows)
    runs = [Engine(trace, make_scheduler("karpenter"),
                   ReplayConfig(seed=3, estimator=make_estimator(est, 3),
                                spinup_s=(30.0, 160.0))).run()
            for est in ("oracle", "noisy:100")]
    for r in runs:  # what the estimator said (the tasks table records it), not what it did
        assert (r.tasks.pop("migrations_past_estimate") <= r.tasks["migrations"]).all()
        r.tasks.pop("estimate_s")
    a, b = (comparable(r) for r in runs)
    assert a[0].pop("estimator") == "oracle" and b[0].pop("estimator") == "noisy:100"
    assert a == b


def test_karpenter_view_has_no_estimates(monkeypatch):
    def boom(*_a, **_k):
        raise AssertionError("karpenter read a runtime estimate")

    for name in ("estimate", "remaining", "instance_remaining", "instances_remaining"):
        monkeypatch.setattr(EngineView, name, boom)
    rows = [(j, i, 60.0 * (j % 7), 100.0 + 500 * ((j * 7 + i) % 11), 0.5 + (i % 3), 1 + 2 * (j % 4))
            for j in range(30) for i in range(4)]
    trace = make_trace(rows)
    res = Engine(trace, make_scheduler("karpenter"), ReplayConfig(seed=1, record=True)).run()
    check_invariants(trace, res)


def test_karpenter_parts():
    s = make_scheduler("karpenter")
    assert isinstance(s.scaler, KarpenterProvisioner)
    assert isinstance(s.migrator, KarpenterConsolidation) and s.migrator.packer is s.packer
    assert get_spec("karpenter").estimator is None
