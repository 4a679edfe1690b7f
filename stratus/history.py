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

from collections import deque
from collections.abc import Callable, Sequence
from statistics import median

from stratus.estimators import MIN_ESTIMATE_S, Estimator, error_distribution, online_pass
from stratus.model import Task

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
STATISTICS: dict[str, Callable[[deque], float]] = {
    "mean": lambda w: sum(w) / len(w),
    "median": median,
    "recent": lambda w: w[-1],
}


class HistoryEstimator(Estimator):
    name = "history"
    learns_online = True

    def __init__(self, window: int = 20, error_window: int = 200, default_s: float = 300.0) -> None:
        self.window = window
        self.error_window = error_window
        self.default_s = default_s
        self.pairs = [(a, s) for a in ATTRIBUTES for s in STATISTICS]
        self._specificity = {p: i for i, p in enumerate(self.pairs)}
        self.groups: dict[tuple[str, Key], deque] = {}
        self.errors: dict[tuple[str, str], deque] = {p: deque(maxlen=error_window) for p in self.pairs}
        self._err_median: dict[tuple[str, str], float] = {}
        self._err_count: dict[tuple[str, str], int] = {}
        self.recent: deque = deque(maxlen=200)  # cluster-wide fallback
        self._job_est: dict[int, float] = {}
        self._job_cands: dict[int, list[tuple[tuple[str, str], float]]] = {}
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
    def _rank(self, pair) -> tuple:
        m = self._err_median.get(pair)
        return (0, m) if m is not None else (1, self._specificity[pair])

    def _predict_job(self, t: Task) -> float:
        cands = []
        for attr, keyf in ATTRIBUTES.items():
            w = self.groups.get((attr, keyf(t)))
            if w:
                for s, f in STATISTICS.items():
                    cands.append(((attr, s), f(w)))
        self._job_cands[t.job] = cands
        if cands:
            pair, est = min(cands, key=lambda c: self._rank(c[0]))
            self.chosen[f"{pair[0]}/{pair[1]}"] = self.chosen.get(f"{pair[0]}/{pair[1]}", 0) + 1
        elif self.recent:
            est = median(self.recent)
            self.chosen["cluster"] = self.chosen.get("cluster", 0) + 1
        else:
            est = self.default_s
            self.chosen["default"] = self.chosen.get("default", 0) + 1
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
        for attr, keyf in ATTRIBUTES.items():
            k = (attr, keyf(t))
            w = self.groups.get(k)
            if w is None:
                w = self.groups[k] = deque(maxlen=self.window)
            w.append(actual)
        self.recent.append(actual)

    def observe(self, tasks: Sequence[Task], now: float) -> None:
        actual = sum(t.runtime for t in tasks) / len(tasks)
        first = tasks[0]
        job = first.job
        est = self._job_est.pop(job, None)
        if est is not None:
            self.log.append((est, actual))
        for pair, e in self._job_cands.pop(job, ()):
            errs = self.errors[pair]
            errs.append(abs(e - actual) / actual)
            n = self._err_count[pair] = self._err_count.get(pair, 0) + 1
            # the median of a 200-job window moves slowly: refresh it every few jobs
            if n < 16 or n % 8 == 0:
                self._err_median[pair] = median(errs)
        self._learn(first, actual)

    # --- reporting ---------------------------------------------------------------------
    def error_summary(self) -> dict:
        """Error distribution over the jobs completed in the replay, and the pairs chosen."""
        out = error_distribution(self.log)
        out["chosen"] = dict(sorted(self.chosen.items(), key=lambda kv: -kv[1]))
        return out
