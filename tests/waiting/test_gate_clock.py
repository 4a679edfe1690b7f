"""One clock for every replay (issue 36, item 4): a waiting policy changes a replay's
latencies only through what the policy decides, never through when the replay looks.
Where the policy has nothing to decide, the latencies are those of the same replay
without it, to the second."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratus.app.registry import make_scheduler
from stratus.commitments.gate import parse_waiting
from stratus.replays import engine
from stratus.sim.config import ReplayConfig
from tests.helpers.trace import make_trace

# jobs of one to three tasks over an hour, at any second (off the 60-s grid)
jobs = st.lists(st.tuples(st.integers(0, 3600), st.integers(1, 3), st.integers(30, 2400),
                          st.sampled_from([4.0, 8.0, 16.0]), st.sampled_from([4.0, 16.0])),
                min_size=2, max_size=10)
POLICIES = ["njw", "ajw", "ajw-t:b=300", "sww:b=600", "ljw:t=600", "compound:b=600,t=600"]


def _trace(rows, cpu_scale: float):
    out = []
    for j, (s, k, r, c, m) in enumerate(sorted(rows)):
        out += [(j, i, s, r + 7 * i, c * cpu_scale, m * cpu_scale) for i in range(k)]
    return make_trace(out)


def _replay(trace, reserved, waiting, scheduler, market):
    cfg = ReplayConfig(tick_s=60.0, market=market, seed=5, reserved=reserved,
                       waiting=parse_waiting(waiting))
    return engine(trace, make_scheduler(scheduler), cfg).run()


def _latencies(res):
    return (res.jobs["end_s"].tolist(), res.tasks["first_start_s"].tolist(),
            res.summary["latency"])


@pytest.mark.slow
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=jobs, policy=st.sampled_from(POLICIES), share=st.booleans(),
       scheduler=st.sampled_from(["stratus", "first-fit"]),
       market=st.sampled_from(["spot", "on-demand"]))
def test_a_pool_too_small_to_take_any_task_changes_no_latency(rows, policy, share,
                                                              scheduler, market):
    """Every task asks more than an m4.large has (2 vCPUs, 8 GiB): the gate sends each on
    at the tick it arrives at, and the scheduler places it then, as without a policy. The
    latencies and the rented bill are the plain replay's."""
    trace = _trace(rows, 1.0)
    reserved = (("m4.large", 1),)
    plain = _replay(trace, reserved, None, scheduler, market)
    waiting = policy + ("" if share else (",share=off" if ":" in policy else ":share=off"))
    gated = _replay(trace, reserved, waiting, scheduler, market)
    assert gated.summary["waiting"]["tasks_unfit_reserved"] == len(trace.frame)
    assert _latencies(gated) == _latencies(plain)
    assert gated.summary["cost_by_market"] == plain.summary["cost_by_market"]


@pytest.mark.slow
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=jobs, policy=st.sampled_from(POLICIES),
       scheduler=st.sampled_from(["stratus", "first-fit"]))
def test_a_pool_that_takes_every_task_at_once_changes_no_latency(rows, policy, scheduler):
    """The other end: reserved room for every task at once (the tasks are small, the
    pool large). Each starts at the tick it arrives at, whether the gate starts it (any
    policy) or the scheduler's reserved-first pass (no policy; LJW's short tasks, sent on
    with share=on): the same latencies. (Decided at the submit time, the gate started
    them up to a tick earlier: the clock, not the policy, lowered the latency.)"""
    trace = _trace(rows, 1 / 16)
    reserved = (("m4.16xlarge", 2),)  # 128 vCPUs: more than 30 tasks of 1 vCPU at most
    plain = _replay(trace, reserved, None, scheduler, "on-demand")
    gated = _replay(trace, reserved, policy, scheduler, "on-demand")
    assert gated.summary["tasks_ran_on_cloud"] == plain.summary["tasks_ran_on_cloud"] == 0
    assert _latencies(gated) == _latencies(plain)
    ticks = np.ceil(np.asarray(trace.column("submit_s")) / 60.0) * 60.0
    assert gated.tasks["first_start_s"].tolist() == ticks.tolist()
