"""Incremental window statistics, and the history estimator built on them, are bit-identical
to recomputing with ``statistics`` on every call (the estimator as it was before)."""

from __future__ import annotations

import struct
from collections import deque
from statistics import median

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratus.policy.history import ATTRIBUTES, HistoryEstimator
from stratus.policy.windows import Window
from stratus.sim.model import Task


def bits(x: float) -> bytes:
    return struct.pack("<d", x)  # tells 0.0 from -0.0


values = st.one_of(st.sampled_from([0.0, -0.0, 1.0, 2.5, 3.0]),
                   st.floats(min_value=-1e12, max_value=1e12, allow_nan=False),
                   st.integers(0, 5).map(float))


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(st.integers(1, 25), st.lists(values, max_size=120))
def test_window_matches_statistics(size, xs):
    w, ref = Window(size), deque(maxlen=size)
    for x in xs:
        w.append(x)
        ref.append(x)
        assert list(map(bits, w)) == list(map(bits, ref))
        assert list(map(bits, w.ordered)) == list(map(bits, sorted(ref)))
        assert bits(w.median()) == bits(median(ref))
        assert bits(w.mean()) == bits(sum(ref) / len(ref))
        assert bits(w.recent()) == bits(ref[-1])


class Reference:
    """The estimator as it was: every statistic recomputed on every call."""

    def __init__(self, window=20, error_window=200, default_s=300.0):
        self.window, self.default_s = window, default_s
        stats = {"mean": lambda w: sum(w) / len(w), "median": median, "recent": lambda w: w[-1]}
        self.stats = stats
        self.pairs = [(a, s) for a in ATTRIBUTES for s in stats]
        self.spec = {p: i for i, p in enumerate(self.pairs)}
        self.groups, self.err_median, self.err_count = {}, {}, {}
        self.errors = {p: deque(maxlen=error_window) for p in self.pairs}
        self.recent = deque(maxlen=200)
        self.job_est, self.job_cands, self.log, self.chosen = {}, {}, [], {}

    def rank(self, pair):
        m = self.err_median.get(pair)
        return (0, m) if m is not None else (1, self.spec[pair])

    def predict_job(self, t):
        cands = []
        for attr, keyf in ATTRIBUTES.items():
            w = self.groups.get((attr, keyf(t)))
            if w:
                for s, f in self.stats.items():
                    cands.append(((attr, s), f(w)))
        self.job_cands[t.job] = cands
        if cands:
            pair, est = min(cands, key=lambda c: self.rank(c[0]))
            name = f"{pair[0]}/{pair[1]}"
        elif self.recent:
            est, name = median(self.recent), "cluster"
        else:
            est, name = self.default_s, "default"
        self.chosen[name] = self.chosen.get(name, 0) + 1
        return max(est, 1.0)

    def predict(self, tasks):
        for t in tasks:
            if t.job not in self.job_est:
                self.job_est[t.job] = self.predict_job(t)
        return [self.job_est[t.job] for t in tasks]

    def observe(self, tasks, now):
        actual = sum(t.runtime for t in tasks) / len(tasks)
        est = self.job_est.pop(tasks[0].job, None)
        if est is not None:
            self.log.append((est, actual))
        for pair, e in self.job_cands.pop(tasks[0].job, ()):
            errs = self.errors[pair]
            errs.append(abs(e - actual) / actual)
            n = self.err_count[pair] = self.err_count.get(pair, 0) + 1
            if n < 16 or n % 8 == 0:
                self.err_median[pair] = median(errs)
        for attr, keyf in ATTRIBUTES.items():
            self.groups.setdefault((attr, keyf(tasks[0])), deque(maxlen=self.window)).append(actual)
        self.recent.append(actual)


# a job: user, name, submit hour, shape, task runtimes (few distinct values: ties matter)
job = st.tuples(st.sampled_from("abc"), st.sampled_from(["x", "y", "z", "w"]),
                st.integers(0, 3), st.sampled_from([(500, 1024), (1000, 2048)]),
                st.lists(st.sampled_from([1.0, 2.0, 7.5, 60.0, 300.0, 0.25]), min_size=1,
                         max_size=3))


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(job, st.integers(0, 4)), max_size=200),
       st.sampled_from([(20, 200), (3, 5), (1, 1)]))
def test_history_estimator_is_unchanged(jobs, windows):
    """Jobs arrive in order and each completes some arrivals later; the estimator predicts
    and learns exactly as the recompute-everything reference."""
    new, ref = HistoryEstimator(*windows), Reference(*windows)
    running = []
    tid = 0
    for j, ((user, name, hour, shape, rts), delay) in enumerate(jobs):
        tasks = [Task(tid + k, j, k, hour * 3600.0 + k, rt, shape, user, name)
                 for k, rt in enumerate(rts)]
        tid += len(tasks)
        assert list(map(bits, new.predict(tasks))) == list(map(bits, ref.predict(tasks)))
        running.append((j + delay, tasks))
        for done in [r for r in running if r[0] <= j]:
            running.remove(done)
            new.observe(done[1], 0.0)
            ref.observe(done[1], 0.0)
    assert new.chosen == ref.chosen
    assert [tuple(map(bits, p)) for p in new.log] == [tuple(map(bits, p)) for p in ref.log]


@pytest.mark.slow
def test_history_estimator_is_unchanged_on_a_synthetic_day():
    """Thousands of jobs: pairs scored past the refresh schedule's first 16 jobs."""
    from stratus.policy.estimators import online_pass
    from stratus.traces.synthetic import generate

    frame = generate("google", scale=0.05, hours=24, seed=3).frame
    new, ref = HistoryEstimator(), Reference()
    ref.learns_online = True
    got, want = online_pass(new, frame), online_pass(ref, frame)
    assert len(got) > 500
    assert [tuple(map(bits, p)) for p in got] == [tuple(map(bits, p)) for p in want]
    assert new.chosen == ref.chosen
