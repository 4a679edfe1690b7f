"""The cloud's own faults (issue 9, stratus.sim.faults): instance crashes and requests the
provider cannot fill. Properties under any fault mix -- every task completes exactly once,
capacity is never exceeded, a crashed instance is billed to its crash and no further --
plus the option's validation and what the policies see."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratus.app.cli import main
from stratus.app.registry import make_scheduler, scheduler_names
from stratus.base.errors import ConfigError
from stratus.sim.engine import Engine, ReplayConfig
from stratus.sim.faults import Faults, parse_faults
from tests.helpers.chaos import ChaosScheduler
from tests.helpers.invariants import check_invariants, comparable
from tests.helpers.strategies import configs, workloads
from tests.helpers.trace import make_trace

# the integer bound has its own tests (conftest.no_integer_bound)
pytestmark = pytest.mark.usefixtures("no_integer_bound")

# crash rates that let a 4000-s task finish in a few runs (the workloads' longest)
fault_mixes = st.builds(
    Faults,
    crash_per_hour=st.sampled_from([0.0, 0.1, 0.5, 1.0, 2.0]),
    ice_prob=st.sampled_from([0.0, 0.1, 0.3, 0.6, 0.9]),
    ice_window_s=st.sampled_from([0.0, 30.0, 300.0, 1800.0]),
)
SCHEDULERS = ["stratus", "task-per-instance", "karpenter", "hotspot", "first-fit"]


def run(trace, scheduler, conf, faults):
    cfg = ReplayConfig(record=True, faults=faults, **conf)
    return Engine(trace, scheduler, cfg).run()


@pytest.mark.slow
@settings(max_examples=20, deadline=None)
@given(trace=workloads(max_jobs=6), conf=configs, faults=fault_mixes,
       name=st.sampled_from(SCHEDULERS))
def test_every_task_completes_once_under_any_fault_mix(trace, conf, faults, name):
    res = run(trace, make_scheduler(name), conf, faults)
    check_invariants(trace, res)  # includes check_faults: billing stops at each crash
    fault_counts_agree(res)
    f = res.summary["faults"]
    assert (f["ice_failures"] > 0) <= (faults.ice_prob > 0)
    assert (f["crashes"] > 0) <= (faults.crash_per_hour > 0)


@pytest.mark.slow
@settings(max_examples=20, deadline=None)
@given(trace=workloads(max_jobs=8), conf=configs, faults=fault_mixes,
       policy_seed=st.integers(0, 1000))
def test_chaos_policy_keeps_the_invariants_under_faults(trace, conf, faults, policy_seed):
    """Every kind of decision (placements on booting instances, migrations into and out of
    instances that crash or whose request fails, keeps, releases)."""
    check_invariants(trace, run(trace, ChaosScheduler(policy_seed), conf, faults))


@pytest.mark.slow
@settings(max_examples=6, deadline=None)
@given(trace=workloads(), conf=configs, faults=fault_mixes, name=st.sampled_from(SCHEDULERS))
def test_faults_are_deterministic_given_the_seed(trace, conf, faults, name):
    assert comparable(run(trace, make_scheduler(name), conf, faults)) == \
        comparable(run(trace, make_scheduler(name), conf, faults))


@pytest.mark.slow
@settings(max_examples=10, deadline=None)
@given(trace=workloads(), conf=configs, name=st.sampled_from(SCHEDULERS))
def test_zero_faults_change_nothing_but_the_report(trace, conf, name):
    """A separate random stream: asking for no faults draws nothing the replay draws."""
    plain = comparable(run(trace, make_scheduler(name), conf, None))
    zero = run(trace, make_scheduler(name), conf, Faults())
    f = zero.summary.pop("faults")
    assert f["crashes"] == f["ice_failures"] == 0
    assert comparable(zero) == plain


@pytest.mark.slow
@settings(max_examples=15, deadline=None)
@given(trace=workloads(max_jobs=6), conf=configs, policy_seed=st.integers(0, 1000),
       max_hours=st.floats(0.05, 1.0), crash=st.sampled_from([5.0, 50.0]))
def test_a_crash_loop_stopped_by_max_hours_keeps_the_invariants(trace, conf, policy_seed,
                                                                max_hours, crash):
    cfg = ReplayConfig(record=True, max_hours=max_hours, faults=Faults(crash, 0.2, 60.0), **conf)
    res = Engine(trace, ChaosScheduler(policy_seed), cfg).run()
    check_invariants(trace, res, partial=True)


def long_task(runtime_s=3 * 3600.0):
    return make_trace([(0, 0, 0.0, runtime_s, 1, 2)])


def test_a_crash_loop_ends_with_the_task_reported_unfinished():
    res = Engine(long_task(), make_scheduler("stratus"),
                 ReplayConfig(faults=Faults(crash_per_hour=1e4), max_restarts=50)).run()
    s = res.summary
    assert s["tasks_unfinished"] == 1 and "crash loop" in s["ended_early"]
    assert s["faults"]["crashes"] >= 50 and s["faults"]["tasks_restarted"] == 50
    assert s["faults"]["lost_task_seconds"] > 0 and s["faults"]["lost_usd"] > 0


def test_lost_work_is_the_progress_of_crashed_runs_at_the_instance_price():
    """One task, one crash forced: the lost seconds are the run up to the crash and the lost
    dollars those seconds at the instance's price times the task's dominant share."""
    trace = long_task(2 * 3600.0)
    res = Engine(trace, make_scheduler("task-per-instance"),
                 ReplayConfig(record=True, seed=5, spinup_s=(10.0, 10.0),
                              market="on-demand", faults=Faults(crash_per_hour=1.0))).run()
    check_invariants(trace, res)
    f, insts = res.summary["faults"], res.audit["instances"]
    crashed = res.audit["crashes"]
    assert f["crashes"] == len(crashed) >= 1  # seed 5: it crashes at least once
    lost = sum(t - insts[i].ready_at for i, t in crashed.items())
    assert math.isclose(f["lost_task_seconds"], lost, abs_tol=1e-3)
    usd = sum((t - insts[i].ready_at) * insts[i].itype.ondemand_hourly / 3600
              * max(r / c for r, c in zip((1000, 2048), insts[i].itype.capacity))
              for i, t in crashed.items())
    assert math.isclose(f["lost_usd"], usd, rel_tol=1e-6)
    assert f["tasks_restarted"] == f["crashes"]


class Watch:
    """Wraps a policy: at each tick, its acquisitions never name a type the view says is
    known unavailable."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.name = inner.name
        self.seen_short = 0

    def start(self, view):
        if hasattr(self.inner, "start"):
            self.inner.start(view)

    def schedule(self, view):
        short = view.unavailable_types()
        self.seen_short += bool(short)
        assert not short & {t.name for t in view.acquirable_types()}
        dec = self.inner.schedule(view)
        if dec:
            for acq in dec.acquisitions:
                assert acq.itype.name not in short, (acq.itype.name, short)
        return dec

    def __getattr__(self, name):
        return getattr(self.inner, name)


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in scheduler_names() if n != "fargate"])
def test_policies_avoid_a_type_while_it_is_known_unavailable(name):
    from stratus.traces.synthetic import from_spec

    trace = from_spec("synthetic:google?hours=1&seed=2&scale=0.02")
    watch = Watch(make_scheduler(name))
    cfg = ReplayConfig(seed=1, faults=Faults(ice_prob=0.5, ice_window_s=900.0))
    res = Engine(trace, watch, cfg).run()
    assert res.summary["tasks_completed"] == len(trace)
    assert res.summary["faults"]["ice_failures"] > 0 and watch.seen_short > 0


def draws(seed: int, n: int) -> list[float]:
    """The fault stream's first ``n`` draws in a replay seeded ``seed`` (stratus.sim.cloud)."""
    import numpy as np

    return np.random.default_rng([seed, 0xFA175]).random(n).tolist()


def seed_where(pred, n: int) -> int:
    """The first seed whose first ``n`` fault draws satisfy ``pred``."""
    return next(s for s in range(10_000) if pred(draws(s, n)))


class Asker:
    """At every tick, one acquisition of type ``want`` per pending task (None: the first
    acquirable type); with ``polite``, nothing while ``want`` is known short. Logs what it
    sees: (now, pending tids, failed requests, unavailable types, live instances)."""

    name = "asker"

    def __init__(self, want: str | None = "m4.large", polite: bool = False):
        self.want, self.polite, self.log = want, polite, []

    def schedule(self, view):
        from stratus.sim.decisions import Acquire, Decisions

        pending, short = list(view.pending), view.unavailable_types()
        self.log.append((view.now, [t.tid for t in pending], view.failed_requests(), short,
                         len(view.instances)))
        if not pending or (self.polite and self.want in short):
            return None
        itype = view.catalog[self.want] if self.want else view.acquirable_types()[0]
        return Decisions(acquisitions=[Acquire(itype, view.market, [t]) for t in pending])


def fault_counts_agree(res) -> None:
    """The summary's ICE fields agree with each other (and, recorded, with the audit)."""
    f = res.summary["faults"]
    assert f["ice_failures"] == sum(f["ice_types_failed"].values())
    assert f["ice_shortages"] <= f["ice_failures"]
    assert (f["ice_failures"] > 0) == (f["ice_shortages"] > 0)
    if res.audit is not None:  # a refused request is no instance: nothing of it recorded
        assert res.summary["instances_acquired"] == len(res.audit["instances"])


def test_a_refused_request_is_known_at_once_and_its_task_is_pending_at_the_next_tick():
    """EC2 answers a launch with InsufficientInstanceCapacity: nothing waits a spin-up."""
    seed = seed_where(lambda d: d[0] < 0.5 <= d[1], 2)  # refused, then granted
    pol = Asker(polite=True)
    trace = make_trace([(0, 0, 0.0, 600.0, 1, 2)])
    cfg = ReplayConfig(seed=seed, spinup_s=(90.0, 90.0), record=True,
                       faults=Faults(ice_prob=0.5, ice_window_s=300.0))
    res = Engine(trace, pol, cfg).run()
    s, f = res.summary, res.summary["faults"]
    assert s["tasks_completed"] == 1 and f["ice_failures"] == f["ice_shortages"] == 1
    assert f["ice_tasks_returned"] == 1 and f["ice_types_failed"] == {"m4.large": 1}
    # tick 0: asked and refused. Tick 60, before a spin-up could have ended: the task is
    # pending again, the refusal is in the view, dated 0, and the type short till 0 + 300
    assert pol.log[0][:3] == (0.0, [0], [])
    assert pol.log[1] == (60.0, [0], [(0.0, "m4.large", cfg.market)], {"m4.large"}, 0)
    assert [r[3] for r in pol.log if r[0] < 300.0] == [frozenset()] + [{"m4.large"}] * 4
    # at 300 the shortage is over: asked again, granted, up 90 s later, billed from 300
    assert pol.log[5][0] == 300.0 and pol.log[5][3] == frozenset()
    assert res.instances["requested_s"].tolist() == [300.0]
    assert res.instances["ready_s"].tolist() == [390.0] and s["total_cost_usd"] > 0
    assert res.audit["holds"][0][2] == 300.0  # the task held nothing before it was granted
    fault_counts_agree(res)


def test_requests_for_a_short_type_are_refused_without_a_draw_until_the_window_ends():
    seed = seed_where(lambda d: d[0] < 0.5 <= d[1], 2)
    pol = Asker()  # ignores the view: asks for m4.large at every tick
    trace = make_trace([(0, 0, 0.0, 60.0, 1, 2)])
    res = Engine(trace, pol, ReplayConfig(seed=seed, spinup_s=(30.0, 30.0), record=True,
                                          faults=Faults(ice_prob=0.5, ice_window_s=300.0))).run()
    f = res.summary["faults"]
    # refused at 0 (a draw) and at 60..240 (in the window: no draw); at 300 the window is
    # over and the second draw grants it -- had the window's requests drawn, it would not
    assert [r[0] for r in pol.log[-1][2]] == [0.0, 60.0, 120.0, 180.0, 240.0]
    assert f["ice_failures"] == 5 and f["ice_shortages"] == 1
    assert res.instances["requested_s"].tolist() == [300.0]
    # asked once per tick: refusals never bring the policy back within an instant
    times = [r[0] for r in pol.log]
    assert times == [60.0 * i for i in range(len(times))]
    fault_counts_agree(res)


def test_a_ticks_requests_for_a_type_are_one_launch_call_with_one_answer():
    """All or nothing, as RunInstances with MinCount = the count: a refused call refuses
    every request in it (each counted, one shortage), a granted one grants them all; one
    draw either way. The tasks are pending at the next tick in their order, and the policy,
    asked once there, takes another type."""
    k = 12
    seed = seed_where(lambda d: d[0] < 0.2 <= d[1], 2)
    pol = Asker(want=None)  # the first acquirable type: m4.large, then the next one
    trace = make_trace([(j, 0, 0.0, 300.0, 1, 2) for j in range(k)])
    eng = Engine(trace, pol, ReplayConfig(seed=seed, spinup_s=(30.0, 30.0), record=True,
                                          faults=Faults(ice_prob=0.2, ice_window_s=600.0)))
    res = eng.run()
    f = res.summary["faults"]
    assert f["ice_failures"] == k and f["ice_shortages"] == 1 and f["ice_tasks_returned"] == k
    assert f["ice_types_failed"] == {"m4.large": k}
    assert pol.log[1][0] == 60.0 and pol.log[1][1] == list(range(k))  # the same order
    assert pol.log[1][3] == {"m4.large"}
    insts = res.instances
    assert len(insts) == k and set(insts["requested_s"]) == {60.0}
    assert "m4.large" not in set(insts["type"])
    assert res.summary["tasks_completed"] == k
    # two calls, two draws: the fault stream is where two draws leave it
    import numpy as np

    rng = np.random.default_rng([seed, 0xFA175])
    rng.random(2)
    assert eng.cloud._frng.bit_generator.state == rng.bit_generator.state
    fault_counts_agree(res)


def test_how_many_a_policy_asks_for_at_once_does_not_change_its_odds():
    """The same seed, one task or forty at each tick: the same ticks are refused."""
    def refused_ticks(k):
        pol = Asker(want=None)
        trace = make_trace([(j, 0, 0.0, 60.0, 1, 2) for j in range(k)])
        res = Engine(trace, pol, ReplayConfig(seed=4, faults=Faults(ice_prob=0.5))).run()
        f = res.summary["faults"]
        assert f["ice_failures"] == k * f["ice_shortages"]
        return sorted({t for t, _, _ in pol.log[-1][2]})

    assert refused_ticks(1) == refused_ticks(40) != []


def test_a_batch_cannot_reuse_the_tasks_of_a_refused_acquisition():
    """A refused acquisition's tasks stay claimed till the batch is applied: a decision
    valid only if the cloud refuses is refused whatever the cloud does."""
    from stratus.base.errors import DecisionError
    from stratus.sim.decisions import Acquire, Decisions

    class Twice:
        name = "twice"

        def schedule(self, view):
            task = view.pending[0]
            t = view.catalog["m4.large"]
            return Decisions(acquisitions=[Acquire(t, view.market, [task]),
                                           Acquire(t, view.market, [task])])

    cfg = ReplayConfig(seed=0, faults=Faults(ice_prob=1.0))
    with pytest.raises(DecisionError, match="not pending"):
        Engine(make_trace([(0, 0, 0.0, 60.0, 1, 2)]), Twice(), cfg).run()


def shortage_walk(failed, window_s):
    """Walk refusals (time, type, market) in order: per type, a refusal at or after the end
    of the type's last shortage starts one. Returns (shortages, refusals inside a shortage
    but not at its first instant)."""
    start: dict[str, float] = {}
    shortages = late = 0
    for t, name, _ in failed:
        w = start.get(name)
        if w is None or t >= w + window_s:
            start[name] = t
            shortages += 1
        elif t != w:
            late += 1
    return shortages, late


@pytest.mark.slow
@pytest.mark.parametrize("name", ["task-per-instance", "stratus", "first-fit"])
def test_refusals_do_not_multiply_on_a_busy_trace(name):
    """A policy that reads the view asks for a short type only in the call that found it
    short: every refusal is a drawn one or one of the same instant's call, so refusals are
    bounded by the requests of the calls that started shortages, and stay below one per
    task. (When a refusal was known only after the spin-up, every request between it and
    its report failed too: 957,947 refusals on a 10,521-task day under task-per-instance;
    with one draw per request instead of per call, 12,190 on this 730-task hour at
    ice:0.05, against 1 with one per call.)"""
    from stratus.traces.synthetic import from_spec

    trace = from_spec("synthetic:google?hours=1&seed=3&scale=0.05")
    eng = Engine(trace, Watch(make_scheduler(name)),
                 ReplayConfig(seed=1, record=True, faults=Faults(ice_prob=0.3, ice_window_s=300.0)))
    res = eng.run()
    f = res.summary["faults"]
    assert res.summary["tasks_completed"] == len(trace)
    assert f["ice_shortages"] >= 3
    shortages, late = shortage_walk(eng.cloud.failed_requests, 300.0)
    assert shortages == f["ice_shortages"] and late == 0
    assert f["ice_failures"] < len(trace) // 4
    fault_counts_agree(res)


# --- the option ------------------------------------------------------------------------

@pytest.mark.parametrize("spec, needle", [
    ("crash:-1", "crash takes a rate"), ("crash:nan", "crash takes a rate"),
    ("crash:inf", "crash takes a rate"), ("ice:1.5", "ice takes a probability"),
    ("ice:-0.1", "ice takes a probability"), ("ice:nan", "ice takes a probability"),
    ("nosuch:1", "unknown fault 'nosuch'"), ("crash:1,crash:2", "'crash' given twice"),
    ("ice:0.1,ice-window:0", "ice-window takes a number of seconds > 0"),
    ("ice:0.1,ice-window:-5", "ice-window takes"), ("ice:0.1,ice-window:inf", "ice-window takes"),
    ("ice-window:60", "ice-window needs ice"), ("crash", "is not KEY:VALUE"),
    ("", "is empty"), ("crash:x", "crash takes a number, got 'x'"),
])
def test_bad_fault_specs_are_one_line_naming_the_part(spec, needle):
    with pytest.raises(ConfigError, match="--faults") as err:
        parse_faults(spec)
    assert needle in str(err.value)


def test_good_fault_specs():
    assert parse_faults(None) is None
    assert parse_faults("crash:0.05") == Faults(0.05, 0.0, 0.0)
    assert parse_faults(" ICE:1 , crash:0 ,ice-window:30") == Faults(0.0, 1.0, 30.0)
    assert parse_faults("crash:0.5,ice:0.1,ice-window:600").spec() == \
        "crash:0.5,ice:0.1,ice-window:600"


@pytest.mark.parametrize("cmd", [["replay"], ["compare", "--schedulers", "stratus"],
                                 ["sensitivity"]])
def test_the_cli_refuses_a_bad_fault_spec_before_loading_the_trace(capsys, monkeypatch, cmd):
    import stratus.app.session as cli_session

    def loaded(*a, **k):
        raise AssertionError("the trace was loaded before --faults was checked")

    monkeypatch.setattr(cli_session, "Session", loaded)
    code = main([*cmd, "--trace", "synthetic:google", "--faults", "ice:2"])
    out = capsys.readouterr()
    assert code == 2 and out.out == "" and out.err.count("\n") == 1
    assert "--faults: ice takes a probability in [0, 1], got '2'" in out.err


@pytest.mark.slow
def test_replay_and_compare_report_the_faults(capsys):
    base = ["--trace", "synthetic:google?scale=0.02", "--hours", "1", "--seed", "1", "--json",
            "--faults", "crash:4,ice:0.2,ice-window:300"]
    assert main(["replay", *base]) == 0
    doc = json.loads(capsys.readouterr().out)
    f = doc["faults"]
    assert f["spec"] == "crash:4,ice:0.2,ice-window:300" and f["crashes"] > 0
    assert doc["tasks_completed"] == doc["tasks"]
    assert main(["compare", "--schedulers", "stratus,task-per-instance,fargate", "--jobs", "1",
                 *base]) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert [r["faults"]["spec"] for r in runs] == [f["spec"]] * 3
    assert runs[0]["faults"] == f  # the same replay as above
    assert "not modelled" in runs[2]["faults"]["note"]
    assert main(["replay", *base[:-2]]) == 0  # without --faults: no faults key at all
    assert "faults" not in json.loads(capsys.readouterr().out)
    assert main(["replay", *(a for a in base if a != "--json")]) == 0  # the table shows them
    table = capsys.readouterr().out
    assert "crashes (tasks restarted)" in table and "failed requests (ICE)" in table


def test_slices_and_sensitivity_spread_the_fault_counts_only_under_faults():
    from stratus.app.comparison import aggregate, sensitivity

    def run(name, cost, crashes=None):
        r = {"scheduler": name, "total_cost_usd": cost, "instances_acquired": 1,
             "latency": {"p50": 1.0, "p95": 2.0}, "utilization": {"constraining": 0.5}}
        if crashes is not None:
            r["faults"] = {"crashes": crashes, "tasks_restarted": 2 * crashes,
                           "lost_task_seconds": 10.0 * crashes, "lost_usd": 0.5 * crashes,
                           "ice_failures": 0}
        return r

    plain = aggregate([[run("a", 1.0)], [run("a", 3.0)]])[0]
    assert not [k for k in plain if k.startswith("fault_")]
    agg = aggregate([[run("a", 1.0, 2)], [run("a", 3.0, 4)]])[0]
    assert agg["fault_crashes"]["mean"] == 3.0 and agg["fault_lost_usd"]["max"] == 2.0
    doc = sensitivity([(1.0, [run("a", 1.0, 1)]), (10.0, [run("a", 2.0, 5)])])
    assert [p["fault_crashes"]["mean"] for p in doc["points"]] == [1.0, 5.0]
    assert "fault_crashes" not in sensitivity([(1.0, [run("a", 1.0)])])["points"][0]


def test_the_crash_loop_guard_spares_a_long_task_that_can_finish():
    """0.2 crashes per hour and a 13.8-hour task: about 16 runs on average, with a long
    tail; the guard must not stop it (seed 7 takes more than max_restarts runs here)."""
    trace = long_task(49727.2)
    res = Engine(trace, make_scheduler("task-per-instance"),
                 ReplayConfig(seed=7, max_restarts=5, faults=Faults(crash_per_hour=0.2))).run()
    assert res.summary["tasks_completed"] == 1 and res.summary["ended_early"] is None
    assert res.summary["faults"]["tasks_restarted"] >= 5
