"""Waiting policies inside the replay (stratus.commitments.gate, issue 23 items 3-4): the
unified replay agrees with the pool simulator where both model the same thing, and keeps
the engine's invariants where it goes further."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratus.base.errors import ConfigError
from stratus.commitments.addons import addons_for, gate_of
from stratus.commitments.gate import parse_waiting
from stratus.pricing.catalog import M4
from stratus.replays import engine
from stratus.sim.config import ReplayConfig
from stratus.waiting.bill import pool_prices
from stratus.waiting.pool import PoolSpec, WaitingPolicy, simulate, summarize
from tests.helpers.trace import make_trace

SERVER = "m4.2xlarge"  # 8 vCPU, 32 GiB
DISCOUNT = 0.6


def _trace(draw_rows):
    rows = sorted(draw_rows, key=lambda r: r[0])
    return make_trace([(i, 0, s, r, c, m) for i, (s, r, c, m) in enumerate(rows)])


# a crowded hour: queues form, timers fire, forecasts matter
rows = st.lists(st.tuples(st.integers(0, 1800), st.integers(60, 1800),
                          st.sampled_from([0.5, 1.0, 2.0, 4.0, 8.0, 12.0]),
                          st.sampled_from([0.5, 2.0, 8.0, 16.0, 30.0])),
                min_size=15, max_size=60)
policies = st.sampled_from(["njw:share=off", "ajw:share=off", "ajw-t:b=900,share=off",
                            "ljw:t=1800,share=off", "sww:b=900,share=off",
                            "compound:b=900,t=1800,share=off"])


def _unified(trace, servers: int, waiting: str, scheduler: str = "task-per-instance",
             record: bool = False):
    cfg = ReplayConfig(tick_s=1.0, spinup_s=(0.0, 0.0), market="on-demand", seed=0,
                       reserved=((SERVER, servers),), reserved_discount=DISCOUNT,
                       waiting=parse_waiting(waiting), record=record)
    from stratus.app.registry import make_scheduler

    eng = engine(trace, make_scheduler(scheduler), cfg)
    return eng, eng.run()


def _pipeline(trace, servers: int, waiting: str):
    w = parse_waiting(waiting)
    f = trace.frame
    submit = f["submit_s"].to_numpy(np.float64)
    runtime = f["runtime_s"].to_numpy(np.float64)
    cpu = f["cpu"].to_numpy(np.float64)
    mem = f["mem_gib"].to_numpy(np.float64)
    run = simulate(PoolSpec(servers, 8.0, 32.0), WaitingPolicy(w.name, w.b, w.t), submit,
                   runtime, cpu, mem)
    prices = pool_prices(M4, 8.0, 32.0, DISCOUNT, SERVER)
    out = summarize(run, submit, runtime, cpu, prices.server_reserved_hourly, servers,
                    np.zeros(len(submit)), prices.core_hour_ondemand)
    # the reserved bill before summarize rounds it: servers x rate x horizon (000 §5)
    horizon_h = float((run.start + runtime).max() - submit.min()) / 3600.0
    out["reserved_usd"] = servers * prices.server_reserved_hourly * horizon_h
    return run, out


def _agree(trace, servers: int, waiting: str):
    eng, res = _unified(trace, servers, waiting)
    run, out = _pipeline(trace, servers, waiting)
    gate = gate_of(eng)
    assert res.summary["tasks_unfinished"] == 0
    assert list(gate.cloud_of) == run.cloud.astype(int).tolist()
    assert np.allclose(np.array(gate.wait), run.wait, atol=1e-6)
    w = res.summary["waiting"]
    assert w["gate_turned_away"] == int(run.cloud.sum())
    assert w["mean_wait_s"] == pytest.approx(out["mean_wait_s"], abs=1e-3)
    assert res.summary["reserved_cost_usd"] == pytest.approx(out["reserved_usd"], rel=1e-8)
    # share=off: what the gate turned away ran in the cloud, all of it, as in the pool
    assert w["turned_away_ran_on_reserved"] == 0
    assert res.summary["tasks_ran_on_cloud"] == w["gate_turned_away"]
    assert res.summary["ran_on_cloud_fraction"] == w["gate_turned_away_fraction"]
    return w


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=rows, servers=st.integers(1, 2), waiting=policies)
def test_the_unified_replay_agrees_with_the_pool_simulator(rows, servers, waiting):
    """Item 4, for every policy the replay runs: with the reserved servers the policy's
    alone (share=off), one server type, cloud VMs up at once and a one-second tick, each
    task goes where the pool sends it, at the same time, and the reserved bill is the
    same. (The oracle estimator: SWW's and compound's forecast is then the pool's.)"""
    _agree(_trace(rows), servers, waiting)


def _saturated():
    """One 8-core server and about three times the work it can do in the hour the tasks
    arrive (ρ ≈ 3): the queue grows all hour, timers run out, forecasts reach far."""
    rng = np.random.default_rng(7)
    n = 60
    return make_trace([(i, 0, int(s), int(r), float(c), 8.0) for i, (s, r, c) in enumerate(
        zip(np.sort(rng.integers(0, 3600, n)), rng.integers(300, 1500, n),
            rng.choice([2.0, 4.0, 8.0], n)))])


@pytest.mark.slow
@pytest.mark.parametrize("waiting", ["njw:share=off", "ajw:share=off",
                                     "ajw-t:b=900,share=off", "sww:b=900,share=off",
                                     "compound:b=900,t=600,share=off"])
def test_the_unified_replay_agrees_with_the_pool_simulator_when_saturated(waiting):
    """The agreement when the pool is saturated (issue 36, item 4): long queues, not the
    few waits of a random crowded hour."""
    w = _agree(_saturated(), 1, waiting)
    if waiting.startswith("njw"):  # saturated: most find the server full
        assert w["gate_turned_away"] > 30
    else:  # and the others wait long
        assert w["mean_wait_s"] > 100


@pytest.mark.slow
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=rows, servers=st.integers(1, 2), waiting=st.sampled_from(
    ["njw", "ajw-t:b=120", "ljw:t=900", "compound:b=300,t=900"]),
    scheduler=st.sampled_from(["stratus", "first-fit"]))
def test_with_share_on_the_fields_count_what_the_instances_ran(rows, servers, waiting,
                                                               scheduler):
    """share=on (issue 36, item 4): the scheduler may run what the gate turned away on
    reserved room, and Stratus's clearing may move a task there. The fields say what
    ran where as the instances' own run records do: per task, the markets of the
    instances its run segments were on."""
    trace = _trace(rows)
    eng, res = _unified(trace, servers, waiting, scheduler, record=True)
    s, w = res.summary, res.summary["waiting"]
    markets = {i.iid: i.market for i in res.audit["instances"].values()}
    on: dict[int, set] = {}
    for tid, iid, _s, _e in res.audit["segments"]:
        on.setdefault(tid, set()).add(markets[iid] == "reserved")
    assert s["tasks_ran_on_reserved"] == sum(v == {True} for v in on.values())
    assert s["tasks_ran_on_cloud"] == sum(v == {False} for v in on.values())
    assert s["tasks_ran_on_both"] == sum(v == {True, False} for v in on.values())
    away = {tid for tid, c in enumerate(gate_of(eng).cloud_of) if c}
    assert w["gate_turned_away"] == len(away)
    assert w["gate_started_on_reserved"] == len(trace.frame) - len(away)
    assert w["turned_away_ran_on_reserved"] == sum(True in on[t] for t in away)
    # what the gate started on reserved room ran there, all of it; so the identity the
    # reference states (docs/reference/reserved.md)
    assert all(on[t] == {True} for t in on if t not in away)
    assert s["tasks_ran_on_reserved"] == (w["gate_started_on_reserved"]
                                          + w["turned_away_ran_on_reserved"]
                                          - s["tasks_ran_on_both"])


def test_njw_sends_what_reserved_room_cannot_take_now():
    # one 8-core server: a 6-core task, then a 4-core one while it runs, then one after
    trace = make_trace([(0, 0, 0, 600, 6.0, 8.0), (1, 0, 10, 600, 4.0, 8.0),
                        (2, 0, 700, 60, 4.0, 8.0)])
    eng, res = _unified(trace, 1, "njw:share=off")
    assert list(gate_of(eng).cloud_of) == [0, 1, 0]
    w = res.summary["waiting"]
    assert (w["gate_started_on_reserved"], w["gate_turned_away"], w["mean_wait_s"]) == \
        (2, 1, 0.0)


def test_ajw_t_leaves_after_b_and_ajw_waits():
    trace = make_trace([(0, 0, 0, 600, 6.0, 8.0), (1, 0, 10, 600, 4.0, 8.0)])
    eng, res = _unified(trace, 1, "ajw-t:b=100,share=off")
    assert list(gate_of(eng).cloud_of) == [0, 1] and gate_of(eng).wait[1] == 100.0
    assert res.summary["waiting"]["tasks_timed_out"] == 1
    eng, res = _unified(trace, 1, "ajw:share=off")
    assert list(gate_of(eng).cloud_of) == [0, 0] and gate_of(eng).wait[1] == 590.0


def test_shared_reserved_room_takes_what_the_gate_started_alike():
    """share=on (the default): the scheduler may put a cloud task on reserved room the
    queue leaves free. Two 8-core servers; a long 6-core task fills each, a third 6-core
    task goes to the cloud under NJW, and small tasks that arrive later fit the free room
    beside them: NJW starts them there, so nothing extra is rented; with share=off the
    same happens (the gate placed them). The scheduler's own part: the LJW test below."""
    trace = make_trace([(0, 0, 0, 3600, 6.0, 8.0), (1, 0, 0, 3600, 6.0, 8.0),
                        (2, 0, 0, 3600, 6.0, 8.0), (3, 0, 30, 600, 2.0, 8.0)])
    eng, res = _unified(trace, 2, "njw")
    assert list(gate_of(eng).cloud_of) == [0, 0, 1, 0]
    eng2, res2 = _unified(trace, 2, "njw:share=off")
    assert res.summary["total_cost_usd"] == pytest.approx(res2.summary["total_cost_usd"])


def _tick60(trace, waiting):
    cfg = ReplayConfig(tick_s=60.0, spinup_s=(0.0, 0.0), market="on-demand",
                       reserved=((SERVER, 1),), reserved_discount=DISCOUNT,
                       waiting=parse_waiting(waiting))
    from stratus.app.registry import make_scheduler

    eng = engine(trace, make_scheduler("stratus"), cfg)
    return eng, eng.run()


def test_room_freed_between_ticks_goes_to_the_next_ticks_arrivals_through_the_gate():
    """One clock (issue 36, item 4): a task submitted at 10 arrives at the tick at 60, as
    without a waiting policy, and finds the room the reserved task freed at 50. (Decided
    at its submit time, it found the room full and NJW sent it on: the split then
    counted the clock, not the policy.)"""
    trace = make_trace([(0, 0, 0, 50, 8.0, 8.0), (1, 0, 10, 600, 4.0, 8.0)])
    eng, res = _tick60(trace, "njw")
    assert list(gate_of(eng).cloud_of) == [0, 0] and list(gate_of(eng).wait) == [0.0, 0.0]
    assert list(res.tasks["first_start_s"]) == [0.0, 60.0]
    s = res.summary
    assert (s["tasks_ran_on_reserved"], s["tasks_ran_on_cloud"]) == (2, 0)
    assert s["cost_by_market"].get("on-demand", 0.0) == 0.0


def test_share_on_lets_the_scheduler_run_what_the_gate_turned_away_on_reserved_room():
    """LJW sends a short task on even when reserved room is free; with share=on the
    scheduler places it there (the gate's split says cloud, the instances say reserved),
    with share=off it rents."""
    trace = make_trace([(0, 0, 0, 600, 2.0, 8.0)])
    eng, res = _tick60(trace, "ljw:t=1800")
    s, w = res.summary, res.summary["waiting"]
    assert (w["gate_turned_away"], w["turned_away_ran_on_reserved"]) == (1, 1)
    assert (s["tasks_ran_on_reserved"], s["tasks_ran_on_cloud"]) == (1, 0)
    assert s["ran_on_cloud_fraction"] == 0.0 and w["gate_turned_away_fraction"] == 1.0
    assert s["cost_by_market"].get("on-demand", 0.0) == 0.0
    eng, res = _tick60(trace, "ljw:t=1800,share=off")
    s, w = res.summary, res.summary["waiting"]
    assert (w["gate_turned_away"], w["turned_away_ran_on_reserved"]) == (1, 0)
    assert (s["tasks_ran_on_reserved"], s["tasks_ran_on_cloud"]) == (0, 1)
    assert s["cost_by_market"]["on-demand"] > 0


@pytest.mark.parametrize("text, what", [
    ("nope", "unknown waiting policy"), ("ajw-t", "needs b"), ("ljw", "needs t"),
    ("njw:b=5", "takes no b"), ("ajw-t:b=-1", ">= 0"), ("ajw-t:b=x", "number of seconds"),
    ("njw:share=maybe", "on or off"), ("ajw-t:b=1,b=2", "twice"), ("njw:q=1", "is not"),
    ("ljw-spec:t=5", "unknown waiting policy")])
def test_bad_waiting_options_are_one_clear_error(text, what):
    with pytest.raises(ConfigError, match=what):
        parse_waiting(text)


def test_waiting_needs_reserved_instances():
    with pytest.raises(ConfigError, match="needs reserved"):
        addons_for(ReplayConfig(waiting=parse_waiting("njw")))


def test_the_canonical_text_round_trips():
    for text in ("njw", "ajw-t:b=600", "compound:b=600,t=3600,share=off", "ljw:t=60"):
        assert parse_waiting(text).text() == text


def test_the_gate_keeps_flagged_tasks_of_a_job_apart():
    """Anti-affinity holds for the policy's own placements too: two flagged tasks of one
    job never share a reserved instance, even when it has room for both."""
    from tests.helpers.trace import make_trace as mk

    trace = mk([(0, 0, 0, 600, 1.0, 1.0), (0, 1, 0, 600, 1.0, 1.0)])
    trace.frame["anti_affinity"] = True
    eng, res = _unified(trace, 1, "njw:share=off")
    assert list(gate_of(eng).cloud_of) == [0, 1]
    eng, res = _unified(trace, 2, "njw:share=off")
    assert list(gate_of(eng).cloud_of) == [0, 0]
