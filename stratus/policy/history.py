"""A JVuPredict-like runtime estimator (Tumanov et al. 2016, as modified in Stratus §3.4).

For each incoming job it looks up groups of similar *completed* jobs by attributes (same
user; same job name; same user and job name; same user and hour of day; same job name and
hour of day; same user and request shape), applies candidate statistics to the groups'
average task runtimes (mean, median, most recent), and uses the attribute–statistic pair
whose estimates have had the lowest median normalized absolute error so far. It predicts
the job's *average task runtime* (the Stratus modification) and learns online: every
completed job scores the estimates each pair made for it at arrival, then joins its groups.

Before a pair has been scored it is ranked behind scored pairs, most specific attribute
first; with no similar job at all the estimate is the median of recent jobs cluster-wide,
and before any job has finished, ``default_s``.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable, Sequence
from operator import attrgetter

from stratus.policy.estimators import error_distribution, online_pass
from stratus.policy.windows import Window
from stratus.sim.estimate import MIN_ESTIMATE_S, Estimator
from stratus.sim.model import Task

Key = tuple


def _hour(t: Task) -> int:
    return int(t.submit // 3600) % 24


# attribute name -> key function; listed from most to least specific
ATTRIBUTES: dict[str, Callable[[Task], Key]] = {
    "user+job_name": lambda t: (t.user, t.job_name),
    "job_name+hour": lambda t: (t.job_name, _hour(t)),
    "user+shape": lambda t: (t.user, t.req),
    "job_name": lambda t: (t.job_name,),
    "user+hour": lambda t: (t.user, _hour(t)),
    "user": lambda t: (t.user,),
}
STATISTICS: dict[str, Callable[[Window], float]] = {
    "mean": Window.mean,
    "median": Window.median,
    "recent": Window.recent,
}
_KEYS = tuple(ATTRIBUTES.values())
_runtime = attrgetter("runtime")


class _Group(Window):
    """The last jobs of one group and, once asked, their statistics (STATISTICS order),
    kept until the next job joins."""

    __slots__ = ("stats",)

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.stats: tuple[float, ...] | None = None

    def __deepcopy__(self, memo: dict) -> _Group:
        new = super().__deepcopy__(memo)
        new.stats = self.stats  # a tuple of floats
        return new

    def statistics(self) -> tuple[float, ...]:
        if self.stats is None:
            self.stats = tuple(f(self) for f in STATISTICS.values())
        return self.stats


class HistoryEstimator(Estimator):
    name = "history"
    learns_online = True

    def __init__(self, window: int = 20, error_window: int = 200, default_s: float = 300.0) -> None:
        self.window = window
        self.error_window = error_window
        self.default_s = default_s
        self.pairs = [(a, s) for a in ATTRIBUTES for s in STATISTICS]
        self._names = [f"{a}/{s}" for a, s in self.pairs]
        nstat = len(STATISTICS)
        self._pair_ids = [range(a * nstat, (a + 1) * nstat) for a in range(len(ATTRIBUTES))]
        # per attribute (ATTRIBUTES order): group key -> the group's last jobs
        self.groups: list[dict[Key, _Group]] = [{} for _ in ATTRIBUTES]
        # per pair (self.pairs order): its errors over the last scored jobs, how many jobs
        # it has scored, its median error as last refreshed (None: not scored yet), and its
        # rank: scored pairs by median error, then unscored ones; ties to the most specific
        self.errors = [Window(error_window) for _ in self.pairs]
        self._err_count = [0] * len(self.pairs)
        self._err_median: list[float | None] = [None] * len(self.pairs)
        self._rank: list[tuple] = [(1, i) for i in range(len(self.pairs))]
        self.recent = Window(200)  # cluster-wide fallback
        self._job_est: dict[int, float] = {}
        self._job_cands: dict[int, tuple[list[int], list[float]]] = {}
        self.log: list[tuple[float, float]] = []  # (estimate, actual mean task runtime) per job
        self.chosen: dict[str, int] = {}
        self.warmup_jobs = 0

    def fit(self, history) -> HistoryEstimator:
        """Warm up on past jobs (a Trace or canonical frame), replayed online: each job is
        predicted at its submit time and learned from at its end, so the attribute-statistic
        pairs arrive already scored. Stratus's JVuPredict had the trace's earlier history
        (§3.4, §4.2)."""
        frame = getattr(history, "frame", history)
        if frame is None or not len(frame):
            return self
        n = len(online_pass(self, frame))
        self.log.clear()  # report on the replay, not the warm-up
        self.chosen.clear()
        self.warmup_jobs += n
        return self

    # --- prediction ----------------------------------------------------------------------
    def _predict_job(self, t: Task) -> float:
        ids: list[int] = []  # candidate pairs and their estimates
        ests: list[float] = []
        for groups, keyf, pair_ids in zip(self.groups, _KEYS, self._pair_ids):
            w = groups.get(keyf(t))
            if w is not None:
                ids.extend(pair_ids)
                ests.extend(w.stats or w.statistics())
        self._job_cands[t.job] = (ids, ests)
        if ids:
            # rank keys are unique (they end with the pair's index), so this is the first
            # best candidate in pair order, as a min over (rank, candidate) would pick
            best = min(ids, key=self._rank.__getitem__)
            est = ests[ids.index(best)]
            name = self._names[best]
        elif self.recent:
            est = self.recent.median()
            name = "cluster"
        else:
            est = self.default_s
            name = "default"
        self.chosen[name] = self.chosen.get(name, 0) + 1
        return max(est, MIN_ESTIMATE_S)

    def predict(self, tasks: Sequence[Task]) -> list[float]:
        out = []
        cache = self._job_est
        for t in tasks:
            est = cache.get(t.job)
            if est is None:
                est = cache[t.job] = self._predict_job(t)
            out.append(est)
        return out

    # --- learning ------------------------------------------------------------------------
    def _learn(self, t: Task, actual: float) -> None:
        for groups, keyf in zip(self.groups, _KEYS):
            k = keyf(t)
            w = groups.get(k)
            if w is None:
                w = groups[k] = _Group(self.window)
            w.append(actual)
            w.stats = None
        self.recent.append(actual)

    def observe(self, tasks: Sequence[Task], now: float) -> None:
        actual = sum(map(_runtime, tasks)) / len(tasks)  # in task order, as sum(genexpr)
        first = tasks[0]
        job = first.job
        est = self._job_est.pop(job, None)
        if est is not None:
            self.log.append((est, actual))
        ids, ests = self._job_cands.pop(job, ((), ()))
        errors, count, med, size = self.errors, self._err_count, self._err_median, self.error_window
        for i, e in zip(ids, ests):
            x = abs(e - actual) / actual
            w = errors[i]  # Window.append, inlined: it runs for every pair of every job
            values, ordered = w.values, w.ordered
            if len(values) == size:
                del ordered[bisect_left(ordered, values.popleft())]
            values.append(x)
            insort(ordered, x)
            n = count[i] = count[i] + 1
            # the median of a 200-job window moves slowly: refresh it every few jobs
            if n < 16 or n % 8 == 0:
                k = len(ordered)
                m = ordered[k // 2] if k % 2 else (ordered[k // 2 - 1] + ordered[k // 2]) / 2
                if m != med[i]:
                    med[i] = m
                    self._rank[i] = (0, m, i)
        self._learn(first, actual)

    # --- reporting ---------------------------------------------------------------------
    def error_summary(self) -> dict:
        """Error distribution over the jobs completed in the replay, and the pairs chosen."""
        out = error_distribution(self.log)
        out["chosen"] = dict(sorted(self.chosen.items(), key=lambda kv: -kv[1]))
        return out
