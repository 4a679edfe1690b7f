"""Reserved instances inside the engine (issue 23, item 1; stratus.commitments.reserved): up from the
first tick to the end, never released, revoked or crashed, billed for that whole horizon
at their rate; every registered scheduler places on them."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratus.app.registry import make_scheduler, scheduler_names
from stratus.base.errors import ConfigError, DecisionError
from stratus.commitments.addons import gate_of
from stratus.commitments.gate import parse_waiting
from stratus.commitments.reserved import parse_reserved, reserved_rate
from stratus.pricing.catalog import M4
from stratus.pricing.prices import RESERVED
from stratus.replays import engine
from stratus.sim.config import ReplayConfig
from stratus.sim.decisions import Decisions
from stratus.sim.faults import Faults
from tests.helpers.invariants import check_invariants
from tests.helpers.strategies import configs, workloads
from tests.helpers.trace import first_tick, make_trace
from tests.helpers.trace import replay_recorded as replay

pytestmark = pytest.mark.usefixtures("no_integer_bound")

TYPES = [t.name for t in M4]


def check_reserved(trace, e, res, reserved, discount=None) -> None:
    """Reserved instances: one per count, up from the first tick (with or without a
    waiting policy: one clock) to the replay's end, each billed exactly horizon x rate;
    nothing migrated off them by a policy; what ran where as the run segments say."""
    t0 = first_tick(trace, e.cfg.tick_s)
    end = e.now
    insts = [i for i in res.audit["instances"].values() if i.market == RESERVED]
    assert sorted(i.itype.name for i in insts) == sorted(n for n, k in reserved
                                                         for _ in range(k))
    total = 0.0
    for inst in insts:
        assert inst.requested_at == inst.ready_at == t0
        assert inst.released_at == end, "a reserved instance released before the end"
        want = reserved_rate(inst.itype, discount) * (end - t0) / 3600.0
        assert math.isclose(inst.cost, want, rel_tol=1e-12, abs_tol=1e-12), (inst.cost, want)
        total += want
    s = res.summary
    assert s["reserved_instances"] == len(insts)
    assert math.isclose(s["cost_by_market"]["reserved"], total, rel_tol=1e-9, abs_tol=1e-9)
    assert s["instances_acquired"] == len(res.audit["instances"])
    ids = {i.iid for i in insts}
    assert not [m for m in res.audit["migrations"] if m[1] in ids], "moved off a reserved one"
    check_ran_where(res)


def ran_where_from_records(res) -> tuple[dict[int, set], dict]:
    """Per task, the markets of the instances its run segments were on (the instances'
    own records, not the engine's tally), and the counts the summary should give."""
    markets = {i.iid: i.market for i in res.audit["instances"].values()}
    on: dict[int, set] = {}
    for tid, iid, _start, _end in res.audit["segments"]:
        on.setdefault(tid, set()).add("r" if markets[iid] == RESERVED else "c")
    count = {"tasks_ran_on_reserved": sum(v == {"r"} for v in on.values()),
             "tasks_ran_on_cloud": sum(v == {"c"} for v in on.values()),
             "tasks_ran_on_both": sum(v == {"r", "c"} for v in on.values())}
    return on, count


def check_ran_where(res) -> None:
    on, count = ran_where_from_records(res)
    s = res.summary
    assert {k: s[k] for k in count} == count
    used_cloud = count["tasks_ran_on_cloud"] + count["tasks_ran_on_both"]
    assert s["ran_on_cloud_fraction"] == pytest.approx(used_cloud / max(1, len(on)),
                                                       abs=1e-6)


#: no waiting policy (the scheduler fills reserved room first), or one at the door
waitings = st.one_of(st.none(), st.sampled_from([
    "njw", "ajw", "ajw-t:b=300", "sww:b=600", "ljw:t=600", "compound:b=600,t=600",
    "njw:share=off", "ajw-t:b=300,share=off", "compound:b=600,t=600,share=off"]))

reserved_sets = st.lists(st.tuples(st.sampled_from(TYPES), st.integers(1, 2)), min_size=1,
                         max_size=2, unique_by=lambda p: p[0]).map(tuple)


@pytest.mark.slow
@pytest.mark.parametrize("name", scheduler_names())
@settings(max_examples=5, deadline=None)
@given(trace=workloads(), conf=configs, reserved=reserved_sets,
       market=st.sampled_from(["spot", "on-demand"]), waiting=waitings)
def test_every_scheduler_keeps_the_invariants_with_reserved_instances(name, trace, conf,
                                                                      reserved, market,
                                                                      waiting):
    """With or without a waiting policy at the door (stratus.commitments.gate, item 3)."""
    e, res = replay(trace, make_scheduler(name), reserved=reserved, market=market,
                    waiting=parse_waiting(waiting), **conf)
    check_invariants(trace, res)  # capacity, every task once, every bill its integral
    check_reserved(trace, e, res, reserved)
    if waiting is not None:
        w = res.summary["waiting"]
        assert w["gate_started_on_reserved"] + w["gate_turned_away"] == len(trace.frame)
        on, _ = ran_where_from_records(res)
        away = [tid for tid, c in enumerate(gate_of(e).cloud_of) if c]
        assert w["turned_away_ran_on_reserved"] == sum("r" in on.get(t, ()) for t in away)
        kept = set(range(len(trace.frame))) - set(away)  # the gate's: reserved only
        assert all(on.get(t, {"r"}) == {"r"} for t in kept)
        assert not gate_of(e).queue, "a task left in the reserved queue"


@pytest.mark.slow
@settings(max_examples=10, deadline=None)
@given(trace=workloads(), conf=configs, reserved=reserved_sets,
       crash=st.sampled_from([0.5, 5.0]))
def test_reserved_instances_do_not_crash(trace, conf, reserved, crash):
    e, res = replay(trace, make_scheduler("first-fit"), reserved=reserved,
                    faults=Faults(crash_per_hour=crash), max_restarts=10_000, **conf)
    check_reserved(trace, e, res, reserved)
    ids = {i.iid for i in res.audit["instances"].values() if i.market == RESERVED}
    assert not ids & set(res.audit["crashes"])


def small_trace():
    return make_trace([(j, i, 60.0 * j, 900.0 + 60 * i, 2, 4) for j in range(4)
                       for i in range(3)])


@pytest.mark.parametrize("name", ["stratus", "task-per-instance", "hotspot", "scloud",
                                  "fleet", "karpenter", "first-fit"])
def test_a_big_reserved_instance_runs_the_work_and_costs_its_horizon(name):
    trace = small_trace()
    e, res = replay(trace, make_scheduler(name), reserved=(("m4.10xlarge", 1),),
                    market="on-demand")
    check_invariants(trace, res)
    check_reserved(trace, e, res, (("m4.10xlarge", 1),))
    rate = reserved_rate(M4["m4.10xlarge"], None)  # m4 has no catalog rate: 0.4 x on-demand
    horizon = e.now - first_tick(trace, 60.0)
    assert res.summary["total_cost_usd"] >= rate * horizon / 3600.0 - 1e-9
    # 12 tasks of 2 vCPU fit the 40 vCPU instance: it runs all of them, nothing else is had
    (iid,) = [i.iid for i in res.audit["instances"].values() if i.market == RESERVED]
    assert {seg[1] for seg in res.audit["segments"]} == {iid}
    assert res.summary["instances_acquired"] == 1
    assert res.summary["cost_by_market"] == {"reserved": res.summary["total_cost_usd"]}


def test_the_discount_prices_every_type_and_none_takes_the_catalog_rate():
    it = M4["m4.large"]
    assert reserved_rate(it, None) == (it.reserved_hourly or 0.4 * it.ondemand_hourly)
    assert math.isclose(reserved_rate(it, 0.25), 0.75 * it.ondemand_hourly)
    trace = small_trace()
    e, res = replay(trace, make_scheduler("first-fit"), reserved=(("m4.large", 2),),
                    reserved_discount=0.25)
    check_reserved(trace, e, res, (("m4.large", 2),), discount=0.25)


def test_without_reserved_the_summary_has_no_reserved_keys():
    _, res = replay(small_trace(), make_scheduler("stratus"))
    assert not {"reserved", "reserved_instances", "reserved_cost_usd"} & set(res.summary)
    assert "reserved" not in res.summary["cost_by_market"]


def test_idle_reserved_instances_do_not_keep_a_replay_ticking_between_arrivals():
    # two bursts 10 hours apart: the ticks in between are skipped, as without reserved
    trace = make_trace([(0, 0, 0.0, 600.0, 1, 2), (1, 0, 36_000.0, 600.0, 1, 2)])
    a, _ = replay(trace, make_scheduler("first-fit"))
    b, res = replay(trace, make_scheduler("first-fit"), reserved=(("m4.large", 1),))
    assert b.ticks <= a.ticks + 2
    check_reserved(trace, b, res, (("m4.large", 1),))


class Releaser:
    """Releases (or un-keeps) every reserved instance it sees."""

    name = "releaser"

    def __init__(self, how: str) -> None:
        self.how = how
        self.inner = make_scheduler("first-fit")

    def schedule(self, view):
        dec = self.inner.schedule(view) or Decisions()
        for inst in view.reserved_instances:
            if self.how == "release" and not inst.tasks:
                dec.releases.append(inst)
            elif self.how == "keep":
                dec.keep[inst.iid] = False
        return dec


def test_a_policy_cannot_release_a_reserved_instance():
    trace = make_trace([(0, 0, 0.0, 600.0, 64, 8)])  # fits no m4.large: it stays idle
    with pytest.raises(DecisionError, match="reserved instance runs to the end"):
        replay(trace, Releaser("release"), reserved=(("m4.large", 1),))


def test_keep_flags_do_not_matter_for_reserved_instances():
    trace = small_trace()
    e, res = replay(trace, Releaser("keep"), reserved=(("m4.xlarge", 1),))
    check_reserved(trace, e, res, (("m4.xlarge", 1),))


def test_no_policy_acquires_in_the_reserved_market():
    class Buyer:
        name = "buyer"

        def schedule(self, view):
            from stratus.sim.decisions import Acquire

            dec = Decisions()
            for t in view.pending:
                dec.acquisitions.append(Acquire(M4["m4.large"], RESERVED, [t]))
            return dec

    with pytest.raises(DecisionError, match="market 'reserved' is not allowed"):
        replay(small_trace(), Buyer(), reserved=(("m4.large", 1),))


@pytest.mark.parametrize("text, message", [
    ("m4.large", "is not TYPE:COUNT"), ("m4.large:0", "from 1 to"), ("m4.large:-2", "from 1 to"),
    ("m4.large:x", "whole number"), ("m4.large:1.5", "whole number"), (":3", "is not TYPE:COUNT"),
    ("m4.large:1,m4.large:2", "given twice"), ("m4.large:1,,m4.xlarge:1", "is not TYPE:COUNT"),
])
def test_parse_errors_name_the_text(text, message):
    with pytest.raises(ConfigError, match=message):
        parse_reserved(text)


def test_parse_reads_types_and_counts_in_order():
    assert parse_reserved(" m4.xlarge:2 , m4.large:1") == (("m4.xlarge", 2), ("m4.large", 1))
    assert parse_reserved(None) == parse_reserved("") == ()


@pytest.mark.parametrize("conf, message", [
    ({"reserved": (("m4.huge", 1),)}, "unknown instance type 'm4.huge'"),
    ({"reserved": (("m4.large", 0),)}, "from 1 to"),
    ({"reserved": "m4.large:1"}, "tuple of \\(type, count\\) pairs"),
    ({"reserved": (("m4.large", True),)}, "not a \\(type, count\\) pair"),
    ({"reserved_discount": 1.0}, "fraction in \\[0, 1\\)"),
    ({"reserved_discount": -0.1}, "fraction in \\[0, 1\\)"),
])
def test_replay_config_refuses_bad_reserved_values(conf, message):
    with pytest.raises(ConfigError, match=message):
        engine(small_trace(), make_scheduler("stratus"), ReplayConfig(**conf))


@pytest.mark.parametrize("name", ["task-per-instance", "hotspot", "scloud", "stratus",
                                  "karpenter"])
def test_every_composition_fills_reserved_capacity_first(name):
    from stratus.testing import StaticView, task

    v = StaticView(market="on-demand")
    busy = v.add_instance("m4.xlarge", tasks=[(task(0, cpu=1, mem=2), 60.0, 3600.0)])
    r = v.add_instance("m4.2xlarge", market=RESERVED)
    tasks = [v.add_pending(task(i, cpu=2, mem=8)) for i in range(1, 6)]
    dec = v.decide(make_scheduler(name))
    on_reserved = [p.task for p in dec.placements if p.instance is r]
    assert on_reserved == tasks[:4]  # 8 vCPU, 32 GiB: four of them, in arrival order
    assert busy.market == "on-demand"
    placed = {p.task.tid for p in dec.placements} | {t.tid for a in dec.acquisitions
                                                     for t in a.tasks}
    assert tasks[4].tid in placed
    assert not dec.releases and r.iid not in dec.keep


# --- the vector first fit over many reserved instances -----------------------------------

def _fill_case(seed: int, n: int, cordon: bool):
    """A plan over ``n`` reserved instances, some holding (flagged) tasks, one cordoned
    perhaps, one promise already made; and pending tasks of a few jobs, half flagged."""
    import random

    from stratus.policy.compose import Plan
    from stratus.testing import StaticView, task

    rnd = random.Random(seed)
    v = StaticView(market="on-demand")
    insts = []
    for i in range(n):
        itype = rnd.choice(["m4.large", "m4.xlarge", "m4.2xlarge"])
        room, held, flagged = list(M4[itype].capacity), [], set()
        for k in range(rnd.randrange(4)):
            t = task(1000 + 10 * i + k, cpu=rnd.choice([0.5, 1, 2]), mem=rnd.choice([1, 4]),
                     job=rnd.randrange(4), anti_affinity=rnd.random() < 0.4)
            if all(r <= f for r, f in zip(t.req, room)) and not (
                    t.anti_affinity and t.job in flagged):
                room = [f - r for f, r in zip(room, t.req)]
                held.append((t, 0.0, 600.0))
                if t.anti_affinity:
                    flagged.add(t.job)
        insts.append(v.add_instance(itype, market=RESERVED, tasks=held))
    tasks = [task(k, cpu=rnd.choice([0.5, 1, 2, 4, 8]), mem=rnd.choice([1, 2, 8, 16]),
                  job=rnd.randrange(4), anti_affinity=rnd.random() < 0.5)
             for k in range(rnd.randrange(1, 80))]
    plan = Plan(v)
    if cordon:
        plan.cordon(insts[rnd.randrange(n)])
    promise = task(999, cpu=0.5, mem=1, job=tasks[0].job, anti_affinity=True)
    if plan.fits(promise, insts[-1]):
        plan.place(promise, insts[-1])
    return plan, [i for i in insts if i.iid not in plan.cordoned], tasks


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 40), cordon=st.booleans())
def test_the_vector_first_fit_answers_as_the_scan(seed, n, cordon):
    """``first_fit_vector`` (fill_reserved over many reserved instances) against
    ``first_fit``'s scan: the same placements in the same order, the same tasks left."""
    from stratus.policy.compose import first_fit, first_fit_vector

    out = []
    for fit in (first_fit, first_fit_vector):
        plan, live, tasks = _fill_case(seed, n, cordon)
        left = fit(plan, live, tasks)
        out.append(([(p.task.tid, p.instance.iid) for p in plan.decisions.placements],
                    [t.tid for t in left]))
    assert out[0] == out[1]


def test_the_vector_first_fit_case_places_flagged_tasks_and_leaves_some():
    """The property's cases do exercise both answers (one case checked)."""
    from stratus.policy.compose import first_fit_vector

    plan, live, tasks = _fill_case(7, 40, True)
    left = first_fit_vector(plan, live, tasks)
    placed = [p.task for p in plan.decisions.placements[1:]]
    assert any(t.anti_affinity for t in placed) and any(t.anti_affinity for t in left)
    assert len(placed) > 5 and left
