"""Stratus (SoCC'18 §3): runtime binning, cost-efficiency scale-out, instance clearing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratus.app.registry import make_estimator, make_scheduler
from stratus.base.resources import to_units
from stratus.packers.binning import BinIndex, RuntimeBinPacker, availability, bin_of
from stratus.policy.compose import Plan
from stratus.pricing.catalog import M4, Catalog, InstanceType
from stratus.scalers.cost_efficiency import (
    CostEfficiencyScaler,
    best_group,
    normalized_used_constraining,
)
from stratus.sim.engine import Engine, ReplayConfig
from stratus.sim.estimate import Estimator
from tests.helpers.invariants import check_invariants
from tests.helpers.trace import make_trace
from tests.helpers.views import FakeView, instance, task

# the integer bound has its own tests (conftest.no_integer_bound)
pytestmark = pytest.mark.usefixtures("no_integer_bound")


# --- §3.3 worked example and bins ---------------------------------------------------------------
def test_worked_example_of_section_3_3():
    # 4 vCPU / 1 GiB on an 8 vCPU / 16 GiB type, smallest type 2 vCPU: VCores constrain
    # (4/8 > 1/16), 4 VCores used, normalized by 2 VCores -> 2.0
    group, cap, smallest = to_units(4, 1), to_units(8, 16), to_units(2, 8)
    assert normalized_used_constraining(group, cap, smallest) == 2.0
    # memory constrains when it is the larger share: 1 vCPU / 12 GiB on 8/16 -> 12/8 = 1.5
    assert normalized_used_constraining(to_units(1, 12), cap, smallest) == 1.5


@pytest.mark.parametrize("seconds, expected", [
    (0.0, 0), (0.99, 0), (1.0, 1), (1.99, 1), (2.0, 2), (3.9, 2), (4.0, 3),
    (1023.9, 10), (1024.0, 11), (86400.0, 17)])
def test_exponential_bins(seconds, expected):
    assert bin_of(seconds) == expected  # bin i holds [2^(i-1), 2^i)
    assert bin_of(seconds * 60, unit_s=60.0) == expected


def test_most_available_resources_is_min_share_of_largest_type():
    ref = M4.max_capacity
    half_big = tuple(c // 2 for c in M4["m4.16xlarge"].capacity)
    empty_small = M4["m4.large"].capacity
    assert availability(half_big, ref) > availability(empty_small, ref)
    # the scarce dimension decides: lots of CPU but no memory is little room
    assert availability((64_000, 1024), ref) < availability((8_000, 32_768), ref)


# --- Fig. 2: runtime binning on one instance over time ---------------------------------------------
def test_fig2_toy_sequence_on_one_instance():
    """One instance holding four equal tasks; its first task sits in bin [16, 32)."""
    itype = InstanceType("toy", 4, 16, 1.0)
    cat = Catalog([itype], name="toy")
    inst = instance(0, itype, free=(3000, 12 * 1024))  # one task of 1 vCPU running, rem 20
    view = FakeView([inst], remaining={0: 20.0}, catalog=cat)
    plan = Plan(view)
    idx = BinIndex(view, plan, [inst])
    assert idx.entries[0].bin == bin_of(20.0) == 5  # [16, 32)
    # (a) a task of the same bin goes on it
    e = idx.choose(to_units(1, 4), 24.0)
    assert e.iid == 0 and e.bin == 5
    idx.take(e, to_units(1, 4), 24.0)
    # (b) a shorter task ([8, 16)) finds no instance in its own bin: up-packed, no promotion
    e = idx.choose(to_units(1, 4), 10.0)
    assert e.iid == 0
    idx.take(e, to_units(1, 4), 10.0)
    assert idx.entries[0].bin == 5 and idx.rem_of(idx.entries[0]) == 24.0
    # (c) a longer task ([32, 64)) is down-packed and promotes the instance to its bin
    e = idx.choose(to_units(1, 4), 40.0)
    assert e.iid == 0
    idx.take(e, to_units(1, 4), 40.0)
    assert idx.entries[0].bin == bin_of(40.0) == 6 and idx.entries[0].free == (0, 0)
    # (d) full: the next task fits nowhere and is left to the scaler
    assert idx.choose(to_units(1, 4), 10.0) is None


# --- packer properties ---------------------------------------------------------------------------------
TYPES = list(M4)


@st.composite
def packing_state(draw):
    n = draw(st.integers(1, 12))
    insts, rem = [], {}
    for i in range(n):
        itype = draw(st.sampled_from(TYPES))
        frac = draw(st.floats(0, 1))
        free = tuple(int(c * frac) for c in itype.capacity)
        insts.append(instance(i, itype, free=free))
        rem[i] = draw(st.sampled_from([0.5, 3.0, 5.0, 12.0, 20.0, 33.0, 100.0, 900.0, 5000.0]))
    req = to_units(draw(st.sampled_from([0.25, 1, 2, 4, 16])), draw(st.sampled_from([0.5, 2, 8, 30])))
    r = draw(st.sampled_from([0.5, 3.0, 6.0, 14.0, 25.0, 60.0, 1000.0, 4000.0]))
    return insts, rem, req, r


def fits(req, free):
    return all(a <= b for a, b in zip(req, free))


@pytest.mark.slow
@settings(max_examples=150)
@given(packing_state())
def test_up_packing_down_packing_and_closest_runtime(state):
    insts, rem, req, r = state
    view = FakeView(insts, remaining=rem)
    idx = BinIndex(view, Plan(view), insts)
    chosen = idx.choose(req, r)
    b = bin_of(r)
    fitting = [(bin_of(rem[i.iid]), i) for i in insts if fits(req, i.free)]
    if not fitting:
        assert chosen is None
        return
    assert chosen is not None and fits(req, chosen.inst.free)
    cb = bin_of(rem[chosen.iid])
    same = [i for bb, i in fitting if bb == b]
    greater = [bb for bb, _ in fitting if bb > b]
    if same:  # own bin first, closest remaining runtime
        assert cb == b
        assert abs(rem[chosen.iid] - r) == min(abs(rem[i.iid] - r) for i in same)
    elif greater:  # never a lesser bin while a greater one fits; the least greater bin
        assert cb == min(greater)
    else:  # down-packing: the greatest lesser bin
        assert cb == max(bb for bb, _ in fitting)
    if cb != b:  # most available resources within the bin
        best = max(availability(i.free, M4.max_capacity) for bb, i in fitting if bb == cb)
        assert availability(chosen.inst.free, M4.max_capacity) == best


@pytest.mark.slow
@settings(max_examples=150)
@given(st.lists(st.tuples(st.sampled_from([0.25, 0.5, 1, 2, 3, 8, 20]),
                          st.sampled_from([0.5, 1, 4, 8, 24, 60]),
                          st.sampled_from([3.0, 5.0, 40.0, 50.0, 700.0, 3000.0])),
                min_size=1, max_size=25),
       st.lists(st.floats(0.5, 1.5), min_size=6, max_size=6))
def test_scaler_picks_the_maximal_score_among_its_candidates(rows, price_factors):
    tasks = [task(i, c, m, est=e) for i, (c, m, e) in enumerate(rows)]
    prices = {t.name: t.ondemand_hourly * f for t, f in zip(M4, price_factors)}
    view = FakeView(estimates={t.tid: t.runtime for t in tasks}, prices=prices)
    plan = Plan(view)
    CostEfficiencyScaler().scale(view, plan, tasks)
    acqs = plan.decisions.acquisitions
    assert sorted(t.tid for a in acqs for t in a.tasks) == list(range(len(tasks)))
    # brute force over every candidate the first iteration builds
    by_bin = {}
    for t in sorted(tasks, key=lambda t: (-t.runtime, t.tid)):
        by_bin.setdefault(bin_of(t.runtime), []).append(t)
    smallest, largest = M4.smallest.capacity, M4.max_capacity
    scores = []
    for group in by_bin.values():
        agg = [0, 0]
        for t in group:
            agg = [a + r for a, r in zip(agg, t.req)]
            if not fits(agg, largest):
                break
            for it in M4:
                if fits(agg, it.capacity):
                    scores.append(normalized_used_constraining(agg, it.capacity, smallest) / prices[it.name])
    first = acqs[0]
    agg = [sum(t.req[d] for t in first.tasks) for d in range(2)]
    got = normalized_used_constraining(agg, first.itype.capacity, smallest) / prices[first.itype.name]
    assert got == pytest.approx(max(scores), rel=1e-9)
    for a in acqs:  # every group fits its type and comes from one bin
        assert fits([sum(t.req[d] for t in a.tasks) for d in range(2)], a.itype.capacity)
        assert len({bin_of(t.runtime) for t in a.tasks}) == 1


def test_best_group_prefers_a_full_instance():
    # eight 1-vCPU tasks: filling an m4.2xlarge (8 vCPU) beats anything half empty
    tasks = [task(i, 1, 1) for i in range(8)]
    caps = [t.capacity for t in M4]
    prices = [t.ondemand_hourly for t in M4]
    score, k, ti = best_group(tasks, caps, prices, M4.smallest.capacity, M4.max_capacity)
    assert (k, M4.types[ti].name) == (8, "m4.2xlarge")
    assert score == pytest.approx((8 / 2) / 0.40)


# --- clearing: all or none, and engine invariants with clearing on ------------------------------------
class Recorder:
    """Wraps a scheduler and records, per tick, what each migration source held."""

    def __init__(self, inner):
        self.inner = inner
        self.name = inner.name
        self.checks = []

    def start(self, view):
        self.inner.start(view)

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
            held = {t.tid for t in view.instance(iid).tasks.values() if view.location(t).iid == iid}
            self.checks.append((held, tids))
        return dec


@st.composite
def clearing_workloads(draw):
    rows = []
    for j in range(draw(st.integers(2, 10))):
        submit = 60.0 * draw(st.integers(0, 30))
        cpu, mem = draw(st.sampled_from([0.5, 1, 2, 4])), draw(st.sampled_from([0.5, 1, 2, 6]))
        for i in range(draw(st.integers(1, 6))):
            rows.append((j, i, submit, draw(st.floats(30, 6000)), cpu, mem))
    return make_trace(rows)


@pytest.mark.slow
@settings(max_examples=25)
@given(clearing_workloads(), st.sampled_from(["noisy:0.05", "noisy:0.3", "noisy:20", "oracle"]),
       st.integers(0, 100))
def test_clearing_is_all_or_none_and_invariants_hold(trace, estimator, seed):
    rec = Recorder(make_scheduler("stratus"))
    res = Engine(trace, rec, ReplayConfig(seed=seed, estimator=make_estimator(estimator, seed), record=True,
                                          spinup_s=(30.0, 160.0))).run()
    check_invariants(trace, res)
    for held, moved in rec.checks:
        assert held == moved, "an instance was left partly migrated"
    assert res["tasks_migrated"] >= res["instances_cleared"]


def test_clearing_moves_tasks_off_a_mostly_idle_instance():
    # a 16-vCPU group runs together; 15 of the tasks end at 10 min, one is underestimated
    # and runs 3 h: the instance is < 50% used for > 3 ticks and its last task migrates to
    # a smaller, cheaper instance
    rows = [(1, i, 0.0, 600.0, 1.0, 1.0) for i in range(15)] + [(1, 15, 0.0, 3 * 3600.0, 1.0, 1.0)]
    trace = make_trace(rows)

    class Underestimate(Estimator):
        name = "under"

        def predict(self, tasks):
            return [600.0 for _ in tasks]

    res = Engine(trace, make_scheduler("stratus"),
                 ReplayConfig(seed=0, estimator=Underestimate(), spinup_s=(60.0, 60.0))).run()
    assert res["instances_cleared"] == 1 and res["tasks_migrated"] == 1 and res["migrations"] == 1
    types = res.instances.sort_values("requested_s").type.tolist()
    assert types[0] == "m4.4xlarge" and types[1] == "m4.large"
    no = Engine(trace, make_scheduler("stratus-noclear"),
                ReplayConfig(seed=0, estimator=Underestimate(), spinup_s=(60.0, 60.0))).run()
    assert res["total_cost_usd"] < 0.5 * no["total_cost_usd"]


def test_stratus_registry_names_and_stats():
    for name, clearing in [("stratus", True), ("stratus-noclear", False), ("stratus-oracle", True)]:
        s = make_scheduler(name)
        assert s.name == name and isinstance(s.packer, RuntimeBinPacker)
        assert (s.migrator is not None) == clearing
    from stratus.app.registry import get_spec

    assert get_spec("stratus").estimator == "history"
    assert get_spec("stratus-oracle").estimator == "oracle"


@pytest.mark.slow
def test_every_migration_clearing_decides_is_carried_out_or_cancelled(capsys):
    """What clearing decides (tasks_migrated) is what the engine transferred plus what
    became void before its transfer began (the task ended first, or an end was revoked)."""
    import json

    from stratus.app.cli import main

    assert main(["replay", "--trace", "synthetic:google?scale=0.02", "--hours", "12", "--seed",
                 "1", "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["tasks_migrated"] > 0
    assert s["tasks_migrated"] == s["migrations"] + s["migrations_cancelled"]
