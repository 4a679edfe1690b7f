"""SWW's forecast at the replay's reserved instances (stratus.commitments.forecast, issue 35 item
6): the incremental ``Forecast`` of an arrival instant gives every answer the reference
simulation (``reference_wait``, one whole run per task) gives, as a burst of tasks joins
the queue; and a replay under SWW decides and bills the same with either."""

from __future__ import annotations

import math
from types import SimpleNamespace
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stratus.commitments.gate as gate_mod
from stratus.commitments.addons import gate_of
from stratus.commitments.forecast import Forecast, ReferenceForecast, reference_wait
from tests.helpers.trace import make_trace

T0 = 1000.0  # the instant asked about
# small integer sizes and times on a coarse grid: equal ends, zero and overrun estimates,
# tasks that fit one instance type and not the other; two dimensions, or three (GPUs)
times = st.sampled_from([0, 0, 10, 20, 30, 60, 100, 150, 300, 600])
CAPS = [(4, 6, 0), (4, 8, 1), (6, 6, 2), (2, 4, 0)]


def _reqs(dims):
    return st.tuples(st.integers(0, 4), st.integers(0, 6), st.integers(0, 1)).map(
        lambda r: r[:dims]).filter(any)


def _task(tid, req):
    return SimpleNamespace(tid=tid, req=tuple(req))


@st.composite
def pools(draw):
    """A gate's view at T0: reserved instances part full of running tasks (estimated
    remaining times on a grid, some past their estimate), a queue, a burst to come."""
    dims = draw(st.sampled_from([2, 2, 3]))
    reqs = _reqs(dims)
    caps = [c[:dims] for c in draw(st.lists(st.sampled_from(CAPS), min_size=1, max_size=4))]
    est, done, start = [], [], []
    reserved, free = [], []
    tid = 0
    for cap in caps:
        room = list(cap)
        tasks = {}
        for req in draw(st.lists(reqs, max_size=4)):
            if all(r <= f for r, f in zip(req, room)):
                room = [f - r for f, r in zip(room, req)]
                tasks[tid] = _task(tid, req)
                ran = draw(st.sampled_from([math.nan, 0.0, 50.0]))  # nan: not started
                est.append(float(draw(times)) + (0.0 if ran != ran else ran - 20.0))
                done.append(float(draw(st.sampled_from([0, 0, 10]))))
                start.append(T0 - ran if ran == ran else math.nan)
                tid += 1
        reserved.append(SimpleNamespace(tasks=tasks))
        free.append(room)
    queue = {}
    for req in draw(st.lists(reqs, max_size=8)):
        queue[tid] = _task(tid, req)
        est.append(float(draw(times)))
        done.append(0.0)
        start.append(math.nan)
        tid += 1
    burst = []
    for req in draw(st.lists(reqs, min_size=1, max_size=12)):
        burst.append(_task(tid, req))
        est.append(float(draw(times)))
        done.append(0.0)
        start.append(math.nan)
        tid += 1
    book = SimpleNamespace(est=est, done=done, run_start=start)
    gate = SimpleNamespace(free=np.array(free, dtype=np.int64).reshape(len(caps), dims),
                           reserved=reserved, book=book, queue=queue)
    return gate, burst


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=pools(), limit=st.sampled_from([0.0, 25.0, 100.0, 300.0, 1e9]),
       joins=st.lists(st.booleans(), min_size=12, max_size=12),
       tick=st.sampled_from([0.0, 0.0, 25.0, 60.0]))
def test_the_incremental_forecast_is_the_reference_simulation(case, limit, joins, tick):
    """Each task of a burst in turn: the same wait as a whole simulation with the queue as
    it is then; the tasks with a finite wait join the queue (or, at random, are sent
    away: a forecast left without ``joined`` is dropped, as the gate drops it); and what
    the forecast holds is what one built anew with that queue holds. With a tick (room
    offered at the tick at or after an end, the replay's clock) or without."""
    gate, burst = case
    fc = Forecast(gate, T0, limit, tick)
    for task, join in zip(burst, joins):
        want = reference_wait(gate, task, T0, limit, tick)
        assert fc.wait(task) == want
        if want <= limit and join:
            gate.queue[task.tid] = task
            fc.joined(task)
            assert _state(fc) == _state(_whole(gate, T0, limit, tick), fc.valid)  # anew
        elif want <= limit:
            fc = Forecast(gate, T0, limit, tick)  # asked, then sent on: starts over


def _whole(gate, t, limit, tick=0.0):
    """A forecast simulated to its end at once (it simulates only as far as asked)."""
    fc = Forecast(gate, t, limit, tick)
    fc._simulate(0)
    return fc


def _state(fc, upto=None):
    """What a forecast holds of its first ``upto`` instants (default: those it knows):
    each one's time, room before and after its pass and count still waiting, and the
    queued tasks that start at one of them: start instant, end, instance and that
    instance's free cores then; and the time and room of the instant after, if known."""
    v = fc.valid if upto is None else upto
    started = fc.start < v
    nxt = (fc.at[v], fc.before[v].tolist()) if v < len(fc.at) else None
    return (fc.at[:v], fc.before[:v].tolist(), fc.after[:v].tolist(), fc.waiting[:v].tolist(),
            nxt, [(q.tid, *map(float, (fc.start[x], fc.end[x], fc.row[x], fc.cores[x])))
                  for x, q in enumerate(fc.queue) if started[x]])


@pytest.mark.parametrize("x_cores", [2, 1])
def test_a_task_that_passes_the_queue_can_move_a_later_best_fit(x_cores):
    """X (2 cores) passes w (4 cores) at once, on instance 0. When both instances empty
    50 s later, w would have gone to instance 1 (7 free cores against 8), but with X's 2
    on instance 0 that has 6, the best fit: w goes there, and a 7-core task after X now
    fits instance 1 at 50 s (X's update alone would have left it no room there). With
    X of 1 core the two have 7 each, and the first of equals, instance 0, wins. Between
    the two, a task that starts at once and runs past 50 s joins while what follows the
    first instant is still to be simulated again."""
    a, b = _task(0, (6, 1)), _task(1, (5, 1))
    w, x, y = _task(2, (4, 1)), _task(3, (x_cores, 1)), _task(4, (7, 1))
    gate = SimpleNamespace(free=np.array([[2, 7], [2, 7]], dtype=np.int64),
                           reserved=[SimpleNamespace(tasks={0: a}),
                                     SimpleNamespace(tasks={1: b})],
                           book=SimpleNamespace(est=[50.0, 50.0, 100.0, 100.0, 10.0, 300.0,
                                                     10.0],
                                                done=[0.0] * 7, run_start=[math.nan] * 7),
                           queue={2: w})
    fc = Forecast(gate, T0, 300.0)
    too_big = _task(6, (9, 1))
    assert fc.wait(too_big) == math.inf  # (sent on) the whole simulation is known
    assert fc.wait(x) == 0.0
    gate.queue[3] = x
    fc.joined(x)
    assert fc.valid == 1  # what follows instant 0 is to be simulated again
    assert _state(fc) == _state(_whole(gate, T0, 300.0), fc.valid)
    assert _whole(gate, T0, 300.0).wait(y) == reference_wait(gate, y, T0, 300.0) == 50.0
    # a 1-core task fits instance 1 at once, and still runs when instant 1 comes
    z = _task(5, (1, 1))
    assert fc.wait(z) == 0.0
    gate.queue[5] = z
    fc.joined(z)
    assert _state(fc) == _state(_whole(gate, T0, 300.0), fc.valid)
    assert fc.wait(y) == reference_wait(gate, y, T0, 300.0)


def test_joined_refuses_a_task_it_was_not_asked_about():
    gate = SimpleNamespace(free=np.array([[0, 0]], dtype=np.int64),
                           reserved=[SimpleNamespace(tasks={0: _task(0, (2, 2))})],
                           book=SimpleNamespace(est=[10.0, 5.0, 5.0], done=[0.0] * 3,
                                                run_start=[T0, math.nan, math.nan]),
                           queue={})
    fc = Forecast(gate, T0, 100.0)
    a, b = _task(1, (1, 1)), _task(2, (1, 1))
    assert fc.wait(a) == 10.0
    with pytest.raises(AssertionError, match="not the task last asked"):
        fc.joined(b)


def _bursts(draw_rows):
    """Jobs of several equal tasks sharing a submit time (as the Google trace's)."""
    rows, tid = [], 0
    for job, (submit, n, runtime, cpu, mem) in enumerate(sorted(draw_rows)):
        for i in range(n):
            rows.append((job, i, submit, runtime * (1 + 0.1 * (i % 3)), cpu, mem))
            tid += 1
    return make_trace(rows)


jobs = st.lists(st.tuples(st.integers(0, 3600), st.integers(1, 25), st.integers(30, 2400),
                          st.sampled_from([0.5, 1.0, 2.0, 4.0, 8.0]),
                          st.sampled_from([0.5, 2.0, 8.0, 16.0])), min_size=3, max_size=12)


@pytest.mark.slow
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=jobs, waiting=st.sampled_from(["sww:b=600", "sww:b=600,share=off",
                                           "compound:b=900,t=300", "sww:b=0"]),
       servers=st.integers(1, 3), estimator=st.sampled_from(["oracle", "noisy:1", "history"]))
def test_a_replay_decides_and_bills_the_same_with_either_forecast(rows, waiting, servers,
                                                                  estimator):
    """The whole replay, the incremental forecast against the reference: every task's
    decision and wait, and the summary (the bill) to the bit, wall time aside."""
    from stratus.app.registry import make_estimator, make_scheduler
    from stratus.commitments.gate import parse_waiting
    from stratus.replays import engine
    from stratus.sim.config import ReplayConfig

    trace = _bursts(rows)

    def run(forecast):
        cfg = ReplayConfig(tick_s=60.0, spinup_s=(30.0, 60.0), market="on-demand", seed=3,
                           reserved=(("m4.2xlarge", servers),), reserved_discount=0.6,
                           waiting=parse_waiting(waiting),
                           estimator=make_estimator(estimator, seed=3))
        with mock.patch.object(gate_mod, "Forecast", forecast):
            eng = engine(trace, make_scheduler("stratus"), cfg)
            res = eng.run()
        s = dict(res.summary)
        s.pop("wall_seconds")
        return list(gate_of(eng).cloud_of), list(gate_of(eng).wait), s

    assert run(Forecast) == run(ReferenceForecast)


def test_a_burst_is_answered_from_one_simulation():
    """Issue 35 item 6 (SWW was quadratic): a job of 200 tasks arriving at once while
    reserved room is full is answered from one simulation (one Forecast, built once),
    not one per task; and every task goes where the reference forecast sends it."""
    from stratus.app.registry import make_scheduler
    from stratus.commitments.gate import parse_waiting
    from stratus.replays import engine
    from stratus.sim.config import ReplayConfig

    rows = [(0, i, 0, 3600, 1.0, 1.0) for i in range(8)]  # fill the 8 cores for an hour
    rows += [(1, i, 60, 300 + 7 * i, 1.0, 1.0) for i in range(200)]
    trace = make_trace(rows)
    built, simulated = [], []

    class Counted(Forecast):
        def __init__(self, *a):
            built.append(1)
            super().__init__(*a)

        def _state(self, p):
            simulated.append(p)
            return super()._state(p)

    def run(forecast):
        cfg = ReplayConfig(tick_s=60.0, spinup_s=(0.0, 0.0), market="on-demand",
                           reserved=(("m4.2xlarge", 1),), reserved_discount=0.6,
                           waiting=parse_waiting("sww:b=4000,share=off"))
        with mock.patch.object(gate_mod, "Forecast", forecast):
            eng = engine(trace, make_scheduler("task-per-instance"), cfg)
            eng.run()
        return list(gate_of(eng).cloud_of), list(gate_of(eng).wait)

    got = run(Counted)
    assert (len(built), simulated) == (1, [0])
    assert got == run(ReferenceForecast)
    assert sum(got[0]) > 0 and sum(got[0]) < 200  # some wait, some go on


def test_sww_predicts_the_wait_on_the_replays_clock():
    """Issue 36, item 4: room freed at 100 is offered at the tick at 120, so a task that
    arrives at the tick at 60 waits 60 s, not 40. SWW with b = 50 sends it on; with b = 60
    it waits, and waits exactly what it was told."""
    from stratus.app.registry import make_scheduler
    from stratus.commitments.gate import parse_waiting
    from stratus.replays import engine
    from stratus.sim.config import ReplayConfig

    trace = make_trace([(0, 0, 0, 100, 8.0, 8.0), (1, 0, 10, 600, 8.0, 8.0)])

    def gate(waiting):
        cfg = ReplayConfig(tick_s=60.0, spinup_s=(0.0, 0.0), market="on-demand",
                           reserved=(("m4.2xlarge", 1),), reserved_discount=0.6,
                           waiting=parse_waiting(waiting))
        eng = engine(trace, make_scheduler("task-per-instance"), cfg)
        eng.run()
        return list(gate_of(eng).cloud_of), list(gate_of(eng).wait)

    assert gate("sww:b=50,share=off") == ([0, 1], [0.0, 0.0])
    assert gate("sww:b=60,share=off") == ([0, 0], [0.0, 60.0])
