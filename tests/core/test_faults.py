"""The cloud's own faults (issue 9, stratus.faults): instance crashes and requests the
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
from stratus.engine import Engine, ReplayConfig
from stratus.faults import Faults, parse_faults
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
@settings(max_examples=10, deadline=None)
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


def test_a_failed_request_is_reported_after_its_delay_and_billed_nothing():
    seen = []

    class Once:
        name = "once"

        def schedule(self, view):
            from stratus.decisions import Acquire, Decisions

            seen.append((view.now, view.failed_requests(), view.unavailable_types()))
            if view.pending:
                t = view.catalog["m4.large"]
                return Decisions(acquisitions=[Acquire(t, view.market, list(view.pending))])
            return None

    trace = make_trace([(0, 0, 0.0, 600.0, 1, 2)])
    cfg = ReplayConfig(seed=0, spinup_s=(90.0, 90.0), record=True,
                       faults=Faults(ice_prob=1.0, ice_window_s=300.0))
    res = Engine(trace, Once(), cfg).run()
    s = res.summary
    assert s["total_cost_usd"] == 0 and s["instances_acquired"] == 0
    assert s["tasks_unfinished"] == 1 and "ice:1" in s["ended_early"]
    assert s["faults"]["ice_failures"] == 1 and s["faults"]["ice_tasks_returned"] == 1
    # asked at t=0; failure known at t=90 and the type unavailable till 90 + 300
    assert seen[0][1] == [] and seen[1][0] == 60.0 and seen[1][1] == []
    assert res.audit["holds"] == []


def test_an_ice_window_makes_requests_fail_and_then_lets_them_through():
    class Always:
        name = "always"

        def __init__(self):
            self.log = []

        def schedule(self, view):
            from stratus.decisions import Acquire, Decisions

            self.log.append((view.now, sorted(view.unavailable_types())))
            if view.pending:  # ignores what it is told: the window makes requests fail
                t = view.catalog["m4.large"]
                return Decisions(acquisitions=[Acquire(t, view.market, list(view.pending))])
            return None

    trace = make_trace([(0, 0, 0.0, 60.0, 1, 2)])
    pol = Always()
    # seed 3: the first request fails (p = 0.5), later fresh draws decide the rest
    res = Engine(trace, pol, ReplayConfig(seed=3, spinup_s=(30.0, 30.0), record=True,
                                          faults=Faults(ice_prob=0.5, ice_window_s=600.0))).run()
    s = res.summary
    assert s["tasks_completed"] == 1
    fails = s["faults"]["ice_failures"]
    assert fails >= 1
    short = [t for t, names in pol.log if names]
    assert short and min(short) >= 30.0  # known only once reported
    # every request inside the first window failed: none succeeded before it ended
    ready = res.instances["ready_s"].min()
    assert ready >= 30.0 + 600.0


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
