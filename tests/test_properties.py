"""Engine invariants as properties over random small workloads, for every registered
scheduler and for a chaos policy that uses every kind of decision."""

from __future__ import annotations

import pytest
from chaos import ChaosScheduler
from conftest import make_trace
from hypothesis import given, settings
from hypothesis import strategies as st
from invariants import check_invariants, comparable

from stratus.app.registry import make_scheduler, scheduler_names
from stratus.engine import Engine, ReplayConfig

# the integer bound has its own tests (conftest.no_integer_bound)
pytestmark = pytest.mark.usefixtures("no_integer_bound")

CPUS = [0.1, 0.25, 0.5, 1, 2, 3.5, 4, 8, 16, 40, 64]
MEMS = [0.2, 0.5, 1, 2, 7.5, 8, 16, 64, 160, 256]


# multiples of 60 make arrivals coincide with ticks; floats make them fall between. Built
# once: a strategy made inside workloads' loops would be validated anew at every draw (a
# third of a small example's time)
SUBMITS = st.one_of(st.integers(0, 40).map(lambda k: 60.0 * k), st.floats(0, 2400, allow_nan=False))
RUNTIMES = st.one_of(st.integers(1, 40).map(lambda k: 60.0 * k),
                     st.floats(0.5, 4000, allow_nan=False))


@st.composite
def workloads(draw, max_jobs: int = 8, max_tasks: int = 5):
    rows = []
    for j in range(draw(st.integers(1, max_jobs))):
        submit = draw(SUBMITS)
        cpu, mem = draw(st.sampled_from(CPUS)), draw(st.sampled_from(MEMS))
        for i in range(draw(st.integers(1, max_tasks))):
            rows.append((j, i, submit, draw(RUNTIMES), cpu, mem))
    return make_trace(rows)


configs = st.fixed_dictionaries({
    "tick_s": st.sampled_from([7.0, 30.0, 60.0, 300.0]),
    "spinup_s": st.sampled_from([(0.0, 0.0), (5.0, 5.0), (30.0, 160.0)]),
    "seed": st.integers(0, 2**16),
})


def run(trace, scheduler, conf, prices=None):
    cfg = ReplayConfig(record=True, prices=prices, **conf)
    return Engine(trace, scheduler, cfg).run()


# per scheduler (17 of them): enough to cover tick/arrival coincidences and spin-ups; the
# chaos policy below, which uses every kind of decision, gets the long run. The examples
# are new at every run (not derandomized), so the runs add up; the counts keep `make test`
# inside its five minutes
@pytest.mark.parametrize("name", scheduler_names())
@settings(max_examples=25)
@given(trace=workloads(), conf=configs)
def test_registered_scheduler_invariants(name, trace, conf):
    res = run(trace, make_scheduler(name), conf)
    check_invariants(trace, res)


@pytest.mark.parametrize("name", scheduler_names())
@settings(max_examples=10)
@given(trace=workloads(), conf=configs)
def test_registered_scheduler_is_deterministic(name, trace, conf):
    a = run(trace, make_scheduler(name), conf)
    b = run(trace, make_scheduler(name), conf)
    assert comparable(a) == comparable(b)


@pytest.mark.slow
@settings(max_examples=100)
@given(trace=workloads(max_jobs=10), conf=configs, policy_seed=st.integers(0, 1000))
def test_chaos_policy_invariants(trace, conf, policy_seed):
    res = run(trace, ChaosScheduler(policy_seed), conf)
    check_invariants(trace, res)


@pytest.mark.slow
@settings(max_examples=15)
@given(trace=workloads(), conf=configs, policy_seed=st.integers(0, 1000))
def test_chaos_policy_is_deterministic(trace, conf, policy_seed):
    assert comparable(run(trace, ChaosScheduler(policy_seed), conf)) == \
        comparable(run(trace, ChaosScheduler(policy_seed), conf))


@settings(max_examples=60)
@given(trace=workloads(max_jobs=10), conf=configs, policy_seed=st.integers(0, 1000),
       max_hours=st.floats(0.01, 1.5))
def test_a_replay_stopped_by_the_max_hours_guard_keeps_the_invariants(trace, conf,
                                                                      policy_seed, max_hours):
    cfg = ReplayConfig(record=True, max_hours=max_hours, **conf)
    res = Engine(trace, ChaosScheduler(policy_seed), cfg).run()
    check_invariants(trace, res, partial=True)
    limit = max(i.released_at for i in res.audit["instances"].values()) \
        if res.audit["instances"] else 0.0
    assert limit <= (trace.column("submit_s").min() // conf["tick_s"] + 1) * conf["tick_s"] \
        + max_hours * 3600.0 + 1e-6  # nothing is billed past the guard
