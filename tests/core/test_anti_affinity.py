"""Anti-affinity (Stratus §4.2 assumption 2; the Google trace's ``different_machine``): no
two flagged tasks of one job hold resources on one instance at once. The engine refuses a
decision that would; every registered scheduler avoids making one."""

from __future__ import annotations

from collections import defaultdict

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratus.app.registry import make_scheduler, scheduler_names
from stratus.base.errors import DecisionError
from stratus.packers.binning import BinIndex
from stratus.policy.compose import Plan
from stratus.pricing.catalog import M4
from stratus.replays import replay
from stratus.sim.decisions import Acquire, Migrate, Place
from stratus.sim.engine import Engine, ReplayConfig
from stratus.sim.model import READY, Instance
from stratus.traces.schema import Trace, validate_frame
from tests.helpers import views
from tests.helpers.invariants import check_invariants

# the integer bound has its own tests (conftest.no_integer_bound)
pytestmark = pytest.mark.usefixtures("no_integer_bound")

CPUS = [0.25, 0.5, 1, 2, 4, 8]
MEMS = [0.5, 1, 2, 8, 16]


def flagged_trace(rows, flagged, name="aa") -> Trace:
    """rows: (job, task, submit, runtime, cpu, mem); ``flagged``: the (job, task) pairs
    that carry the anti_affinity flag. The column is added after validation, so this works
    whether or not the canonical schema lists it."""
    df = pd.DataFrame(rows, columns=["job_id", "task_id", "submit_s", "runtime_s", "cpu",
                                     "mem_gib"])
    df["user"], df["job_name"], df["priority"] = "u", "j" + df["job_id"].astype(str), 0
    out = validate_frame(df, name)
    keys = zip(out["job_id"].tolist(), out["task_id"].tolist())
    out["anti_affinity"] = [k in flagged for k in keys]
    return Trace(out, name=name, validated=True)


def violations(res) -> list[tuple]:
    """(instance, job, task, task) for every pair of flagged tasks of one job whose holds on
    one instance overlap in time, from the recorded holds."""
    a = res.audit
    flag = a["flagged"]
    by = defaultdict(list)
    for iid, tid, s, e in a["holds"]:
        if flag[tid]:
            by[(iid, a["job"][tid])].append((s, e, tid))
    bad = []
    for (iid, job), hs in by.items():
        hs.sort()
        end, last = -1.0, -1
        for s, e, tid in hs:
            if s < end:  # a hold that ends at s and one that starts at s do not overlap
                bad.append((iid, job, last, tid))
            if e > end:
                end, last = e, tid
    return bad


def replay_recorded(trace, scheduler, **kw) -> object:
    cfg = ReplayConfig(record=True, **kw)
    res = Engine(trace, scheduler, cfg).run()
    res.audit["flagged"] = trace.column("anti_affinity").tolist()
    res.audit["job"] = trace.column("job_id").tolist()
    return res


# built once, not at every draw (test_properties.SUBMITS says why)
SUBMITS = st.one_of(st.integers(0, 20).map(lambda k: 60.0 * k), st.floats(0, 1200, allow_nan=False))
RUNTIMES = st.one_of(st.integers(1, 30).map(lambda k: 60.0 * k),
                     st.floats(0.5, 3000, allow_nan=False))


@st.composite
def flagged_workloads(draw, max_jobs: int = 6, max_tasks: int = 6):
    rows, flagged = [], set()
    for j in range(draw(st.integers(1, max_jobs))):
        submit = draw(SUBMITS)
        cpu, mem = draw(st.sampled_from(CPUS)), draw(st.sampled_from(MEMS))
        share = draw(st.sampled_from([0.0, 0.5, 1.0]))  # some jobs all flagged, some mixed
        alike = draw(st.booleans())  # one request for the job, or one per task
        for i in range(draw(st.integers(1, max_tasks))):
            if not alike:
                cpu, mem = draw(st.sampled_from(CPUS)), draw(st.sampled_from(MEMS))
            runtime = draw(RUNTIMES)
            rows.append((j, i, submit, runtime, cpu, mem))
            if share and draw(st.floats(0, 1)) < share:
                flagged.add((j, i))
    return flagged_trace(rows, flagged)


configs = st.fixed_dictionaries({
    "tick_s": st.sampled_from([30.0, 60.0, 300.0]),
    "spinup_s": st.sampled_from([(0.0, 0.0), (30.0, 160.0)]),
    "seed": st.integers(0, 2**16),
})


@pytest.mark.slow
@pytest.mark.parametrize("name", scheduler_names())
@settings(max_examples=5, deadline=None)
@given(trace=flagged_workloads(), conf=configs)
def test_every_scheduler_keeps_flagged_tasks_of_a_job_apart(name, trace, conf):
    res = replay_recorded(trace, make_scheduler(name), **conf)
    check_invariants(trace, res)  # capacity, every task once, billing exact
    assert violations(res) == []
    aa = res.summary["anti_affinity"]
    assert aa["honoured"] and aa["flagged_tasks"] == int(trace.column("anti_affinity").sum())


def _packed_job(n=6, flagged=True):
    """One job of ``n`` small identical tasks at t=0: every packer would stack them."""
    rows = [(1, i, 0.0, 600.0, 0.25, 0.5) for i in range(n)]
    return flagged_trace(rows, {(1, i) for i in range(n)} if flagged else set())


def test_checker_sees_a_violation_when_the_rule_is_off():
    # the same job, flags ignored (--anti-affinity off): tasks share instances, which the
    # checker reports; with the rule on, each flagged task gets its own instance
    tr = _packed_job()
    off = replay_recorded(tr, make_scheduler("stratus"), market="on-demand", anti_affinity=False)
    assert violations(off) and off.summary["anti_affinity"]["honoured"] is False
    on = replay_recorded(tr, make_scheduler("stratus"), market="on-demand")
    assert violations(on) == [] and on.summary["instances_acquired"] == 6
    assert on.summary["anti_affinity"] == {"honoured": True, "flagged_tasks": 6, "flagged_jobs": 1}


def test_unflagged_tasks_of_the_job_share_with_a_flagged_one():
    rows = [(1, i, 0.0, 600.0, 0.25, 0.5) for i in range(4)]
    res = replay_recorded(flagged_trace(rows, {(1, 0)}), make_scheduler("stratus"),
                          market="on-demand")
    assert res.summary["instances_acquired"] == 1 and violations(res) == []


class Scripted:
    name = "scripted"

    def __init__(self, script):
        self.script = script

    def schedule(self, view):
        plan = Plan(view)
        fn = self.script.get(view.now)
        if fn:
            fn(view, plan)
        return plan.decisions


def _cfg():
    return ReplayConfig(spinup_s=(40.0, 40.0), tick_s=60.0, market="on-demand")


def test_engine_refuses_two_flagged_tasks_of_a_job_in_one_acquisition():
    def first(view, plan):
        plan.decisions.acquisitions.append(Acquire(M4["m4.xlarge"], "on-demand",
                                                   list(view.pending)))

    with pytest.raises(DecisionError, match="anti-affinity.*two flagged tasks of job 1"):
        replay(_packed_job(2), Scripted({0.0: first}), _cfg())


def test_plan_refuses_it_first():
    def first(view, plan):
        plan.acquire(M4["m4.xlarge"], view.pending)

    with pytest.raises(DecisionError, match="plan: anti-affinity"):
        replay(_packed_job(2), Scripted({0.0: first}), _cfg())


@pytest.mark.parametrize("batch", [False, True])
def test_engine_refuses_a_conflicting_placement(batch):
    # task 0 on an instance at t=0; task 1 placed onto it at t=60, or both placed in the
    # same batch of placements at t=60 onto a kept empty instance
    def first(view, plan):
        t0 = view.pending[0]
        if batch:
            plan.acquire(M4["m4.xlarge"], keep=True)
        else:
            plan.acquire(M4["m4.xlarge"], [t0])

    def second(view, plan):
        (inst,) = view.instances
        for t in view.pending:
            plan.decisions.placements.append(Place(t, inst))

    rows = [(1, 0, 0.0, 600.0, 0.25, 0.5), (1, 1, 0.0 if batch else 30.0, 600.0, 0.25, 0.5)]
    tr = flagged_trace(rows, {(1, 0), (1, 1)})
    with pytest.raises(DecisionError, match="t=60.*anti-affinity.*job 1"):
        replay(tr, Scripted({0.0: first, 60.0: second}), _cfg())
    tr = flagged_trace(rows, {(1, 0)})  # one flagged: allowed
    res = replay(tr, Scripted({0.0: first, 60.0: second}), _cfg())
    assert res.summary["tasks_completed"] == 2 and res.summary["instances_acquired"] == 1


def test_engine_refuses_a_conflicting_migration():
    # two flagged tasks of job 1 on two instances; moving one onto the other is refused,
    # and so is moving it onto an instance still holding the other as it migrates away
    st_ = {}

    def first(view, plan):
        a, b = view.pending
        plan.acquire(M4["m4.xlarge"], [a])
        plan.acquire(M4["m4.xlarge"], [b])

    def second(view, plan):
        i0, i1 = view.instances
        t0 = next(iter(i0.tasks.values()))
        st_["t0"] = t0
        plan.decisions.migrations.append(Migrate(t0, i1))

    rows = [(1, 0, 0.0, 600.0, 0.25, 0.5), (1, 1, 0.0, 600.0, 0.25, 0.5)]
    tr = flagged_trace(rows, {(1, 0), (1, 1)})
    with pytest.raises(DecisionError, match="t=120.*anti-affinity.*job 1"):
        replay(tr, Scripted({0.0: first, 120.0: second}), _cfg())
    # plan.migrate refuses it before the engine sees it
    with pytest.raises(DecisionError, match="plan: anti-affinity"):
        replay(tr, Scripted({0.0: first, 120.0: lambda v, p: p.migrate(
            next(iter(list(v.instances)[0].tasks.values())), list(v.instances)[1])}), _cfg())


def test_flags_ignored_without_the_column_and_with_the_rule_off():
    tr = _packed_job(flagged=False)
    plain = Trace(tr.frame.drop(columns=["anti_affinity"]), name="aa", validated=True)
    a = replay(plain, make_scheduler("stratus"), _cfg())
    b = replay(_packed_job(), make_scheduler("stratus"), _cfg(), anti_affinity=False)
    assert "anti_affinity" not in a.summary
    assert (a.summary["total_cost_usd"], a.summary["instances_acquired"]) == \
        (b.summary["total_cost_usd"], b.summary["instances_acquired"]) == \
        (a.summary["total_cost_usd"], 1)


# --- runtime binning's failure memo under anti-affinity ---------------------------------------
class FakeView(views.FakeView):
    """Hand-made instances with remaining runtimes by id."""

    def __init__(self, instances, remaining):
        super().__init__(instances, remaining=remaining)


def instance(iid, itype, free):
    inst = Instance(iid, itype, "on-demand", None, 0.0)
    inst.state, inst.free = READY, tuple(free)
    return inst


@st.composite
def binning_runs(draw):
    """Live m4 instances with random free room and remaining runtimes, then a sequence of
    requests: unflagged, or flagged tasks of one of two jobs whose avoid sets start as
    random subsets of the instances and grow with each placement (as in a tick)."""
    types = list(M4)
    n = draw(st.integers(1, 8))
    insts = []
    for iid in range(n):
        t = draw(st.sampled_from(types))
        free = tuple(draw(st.integers(0, c // 250)) * 250 for c in t.capacity)
        insts.append((iid, t, free, draw(st.sampled_from([0.5, 3.0, 20.0, 100.0, 700.0]))))
    avoid0 = {j: set(draw(st.sets(st.integers(0, n - 1)))) for j in (1, 2)}
    # job 0: undo the last placement (a failed re-pack's restore: the bin gains room)
    reqs = draw(st.lists(st.tuples(st.sampled_from([None, 1, 2, 0]),
                                   st.sampled_from([(250, 512), (500, 2048), (1000, 1024),
                                                    (2000, 8192), (4000, 4096)]),
                                   st.sampled_from([1.0, 3.0, 20.0, 100.0, 700.0])),
                         min_size=1, max_size=12))
    return insts, avoid0, reqs


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(binning_runs())
def test_binning_memo_is_not_poisoned_by_anti_affinity(run):
    insts, avoid, reqs = run
    objs = [instance(iid, t, free=free) for iid, t, free, _ in insts]
    view = FakeView(objs, remaining={iid: r for iid, _, _, r in insts})
    idx = BinIndex(view, Plan(view), objs)
    taken = []
    for job, req, rem in reqs:
        if job == 0:
            if taken:
                idx.restore(*taken.pop())
            continue
        ban = avoid[job] if job else ()
        got = idx.choose(req, rem, avoid=ban, job=job)
        # reference: a fresh index (no memo) over the same state without the banned ones
        ents = [e for e in idx.entries.values() if e.iid not in ban]
        fresh = [instance(e.iid, e.inst.itype, free=e.free) for e in ents]
        ref_view = FakeView(fresh, remaining={e.iid: idx.rem_of(e) for e in ents})
        want = BinIndex(ref_view, Plan(ref_view), fresh).choose(req, rem)
        assert (got and got.iid) == (want and want.iid)
        if got is not None:
            taken.append((got, idx.snapshot(got)))
            idx.take(got, req, rem)
            if job:
                avoid[job].add(got.iid)
