"""The history estimator's options where Stratus §3.4 is silent (stratus.policy.history_options):
censoring-aware learning, a cold start from the running jobs, the requested runtime."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratus.app.registry import make_estimator
from stratus.base.errors import ConfigError
from stratus.policy.estimators import online_pass
from stratus.policy.history_options import km_mean_median, km_points

# one program (one user, one name) run every minute for two hours; its runtimes cycle from a
# minute to four hours: a two-hour window is shorter than its longest jobs
CYCLE = (60.0, 300.0, 1800.0, 7200.0, 14400.0)


def frame(n_jobs: int = 120, every_s: float = 60.0, estimate: bool = False) -> pd.DataFrame:
    rt = [CYCLE[i % len(CYCLE)] for i in range(n_jobs)]
    f = pd.DataFrame({"job_id": np.arange(n_jobs), "task_id": 0,
                      "submit_s": np.arange(n_jobs) * every_s, "runtime_s": rt,
                      "cpu": 0.1, "mem_gib": 0.5, "user": "u", "job_name": "prog",
                      "priority": 0})
    if estimate:
        f["estimate_s"] = 4.0 * f["runtime_s"]
    return f


def bias(est_name: str, f: pd.DataFrame) -> float:
    """Mean log(estimate / actual) over the jobs, each estimated at its submission."""
    pairs = online_pass(make_estimator(est_name), f)
    logs = [math.log(e / a) for e, a in pairs]
    return float(np.mean(logs))


def test_km_without_running_jobs_is_the_plain_mean_and_median():
    done = [5.0, 1.0, 3.0, 2.0]
    mean, med = km_mean_median(done, [])
    assert mean == pytest.approx(np.mean(done))
    assert med == 2.0  # the lower middle, where the mass reaches one half


times = st.lists(st.floats(1.0, 1e5), max_size=25)


@pytest.mark.slow
@settings(max_examples=30, deadline=None)
@given(times, times)
def test_km_is_a_distribution_over_finished_runtimes_and_doubled_bounds(done, bounds):
    if not done and not bounds:
        return
    pts = km_points(done, bounds)
    assert sum(w for _, w in pts) == pytest.approx(1.0)
    assert all(w > 0 for _, w in pts)
    assert all(v in done or v / 2 in bounds for v, _ in pts)
    mean, med = km_mean_median(done, bounds)
    values = [v for v, _ in pts]
    assert min(values) <= med <= max(values) and min(values) <= mean <= max(values) * (1 + 1e-12)


def test_km_moves_a_running_jobs_mass_to_longer_ones():
    # running for 2 s: its mass goes to the finished job of 10 s, none to the 1 s one
    pts = dict(km_points([1.0, 10.0], [2.0]))
    assert pts == pytest.approx({1.0: 1 / 3, 10.0: 2 / 3})
    # running longer than every finished job: kept at twice its bound
    pts = dict(km_points([1.0], [50.0]))
    assert pts == pytest.approx({1.0: 0.5, 100.0: 0.5})


def test_a_finished_only_learner_is_biased_short_and_the_censoring_aware_one_is_not():
    """The hard case: a window shorter than its longest jobs. Every job's estimate is made at
    its submission from what finished before; the long jobs have not, so the finished-only
    learner's estimates are short; counting the running jobs as lower bounds undoes most of
    it."""
    f = frame()
    plain, censored = bias("history", f), bias("history:censored", f)
    assert plain < -1.0  # short by a factor e and more, on average
    assert abs(censored) < abs(plain) / 2, (plain, censored)


def test_the_cold_start_counts_running_jobs_when_nothing_similar_finished():
    """A cold window whose first jobs all run for hours: nothing has finished, so the plain
    fallback guesses 300 s for every job; the cold start sees hour-old jobs still running."""
    f = frame(60, 60.0).assign(runtime_s=20000.0)
    new = f.iloc[:1].assign(job_id=999, submit_s=3599.0, job_name="other", user="v")
    f = pd.concat([f, new], ignore_index=True)
    got = {}
    for name in ("history", "history:cold"):
        e = make_estimator(name)
        pairs = online_pass(e, f)
        assert e.chosen == {"default": 61}  # no job finished before the last arrival
        got[name] = [p for p, _ in pairs]
    assert set(got["history"]) == {300.0}
    assert got["history:cold"][0] == 300.0  # the first job: nothing running yet
    assert max(got["history:cold"]) > 3600.0  # at least twice the oldest job's hour


def test_the_requested_runtime_is_a_prior_learned_as_a_ratio():
    f = frame(estimate=True)
    req = online_pass(make_estimator("requested"), f)
    assert all(p == pytest.approx(4 * a) for p, a in req)  # as the user asked: 4x long
    prior = make_estimator("history:requested")
    pairs = online_pass(prior, f)
    # the requested/ratio candidate learns actual/requested = 1/4 and wins the ranking
    assert prior.chosen.get("requested/ratio", 0) > len(pairs) // 2
    assert abs(bias("history:requested", f)) < 0.1 < abs(bias("history", f))


def test_options_are_checked():
    with pytest.raises(ConfigError, match="censored, cold, requested"):
        make_estimator("history:censord")
    with pytest.raises(ConfigError, match="estimate_s"):
        from stratus.traces.schema import Trace

        make_estimator("requested").bind(Trace(frame()))
