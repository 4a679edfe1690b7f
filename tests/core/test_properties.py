"""Engine invariants as properties over random small workloads, for every registered
scheduler and for a chaos policy that uses every kind of decision."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratus.app.registry import make_scheduler, scheduler_names
from stratus.sim.engine import Engine, ReplayConfig
from tests.helpers.chaos import ChaosScheduler
from tests.helpers.invariants import check_invariants, comparable
from tests.helpers.strategies import configs, workloads

# the integer bound has its own tests (conftest.no_integer_bound)
pytestmark = pytest.mark.usefixtures("no_integer_bound")


def run(trace, scheduler, conf, prices=None):
    cfg = ReplayConfig(record=True, prices=prices, **conf)
    return Engine(trace, scheduler, cfg).run()


# per scheduler (17 of them): enough to cover tick/arrival coincidences and spin-ups; the
# chaos policy below, which uses every kind of decision, gets the long run. The examples
# are new at every run (not derandomized), so the runs add up; the counts keep `make test`
# inside its five minutes. Each scheduler's invariants hold on 18 workloads a run: these 8
# and the 10 of the determinism test, which checks its first replay too
@pytest.mark.slow
@pytest.mark.parametrize("name", scheduler_names())
@settings(max_examples=5)
@given(trace=workloads(), conf=configs)
def test_registered_scheduler_invariants(name, trace, conf):
    res = run(trace, make_scheduler(name), conf)
    check_invariants(trace, res)


@pytest.mark.slow
@pytest.mark.parametrize("name", scheduler_names())
@settings(max_examples=4)
@given(trace=workloads(), conf=configs)
def test_registered_scheduler_is_deterministic(name, trace, conf):
    a = run(trace, make_scheduler(name), conf)
    check_invariants(trace, a)
    b = run(trace, make_scheduler(name), conf)
    assert comparable(a) == comparable(b)


# the chaos policy's invariants: on 100 workloads a run, these 85 and the 15 of the
# determinism test below
@pytest.mark.slow
@settings(max_examples=30)
@given(trace=workloads(max_jobs=10), conf=configs, policy_seed=st.integers(0, 1000))
def test_chaos_policy_invariants(trace, conf, policy_seed):
    res = run(trace, ChaosScheduler(policy_seed), conf)
    check_invariants(trace, res)


@pytest.mark.slow
@settings(max_examples=15)
@given(trace=workloads(), conf=configs, policy_seed=st.integers(0, 1000))
def test_chaos_policy_is_deterministic(trace, conf, policy_seed):
    a = run(trace, ChaosScheduler(policy_seed), conf)
    check_invariants(trace, a)
    assert comparable(a) == comparable(run(trace, ChaosScheduler(policy_seed), conf))


@pytest.mark.slow
@settings(max_examples=30)
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
