"""Options of the history estimator where the paper is silent: Stratus §3.4 says what the
estimator is (JVuPredict, predicting a job's average task runtime), not how it starts.

* ``censored``: censoring-aware learning. A job still running when a sibling arrives is a
  lower bound on its runtime (it has run ``now - submit`` so far). A learner that sees only
  finished jobs is biased short in any window shorter than its longest jobs: the long ones
  have not finished yet. The group's mean and median become Kaplan-Meier estimates over its
  finished jobs and its running ones (``km_points``), and the chosen estimate is never
  below its group's Kaplan-Meier median (pairs are scored on finished jobs, the short).
* ``cold``: a better cold start. With no similar job, the fallback is the same Kaplan-Meier
  estimate cluster-wide (finished and running jobs) instead of the median of finished jobs
  only, which early in a cold window holds only the shortest; before any job has finished,
  ``default_s`` raised to what the running jobs already show.
* ``requested``: the user's requested runtime (``estimate_s``: SWF's requested time, a
  generic CSV's estimate column) as a prior: one more candidate, requested x the median
  ratio actual/requested of the user's finished jobs (cluster-wide, then 1, before any),
  scored like the attribute-statistic pairs, and the fallback when no group matches.

Elapsed time is measured from a job's submission: in a replay it includes any wait for an
instance, so a bound can exceed the true one by that wait (warm-up passes run jobs at once).
"""

from __future__ import annotations

from itertools import islice

from stratus.base.errors import ConfigError
from stratus.policy.history import _KEYS, STATISTICS, HistoryEstimator
from stratus.policy.windows import Window
from stratus.sim.model import Task

OPTIONS = ("censored", "cold", "requested")
#: running jobs a group or the cluster-wide fallback looks at (the most recent)
CLUSTER_RUNNING = 200


def km_points(done, bounds) -> list[tuple[float, float]]:
    """(value, weight) point masses, in value order, of the Kaplan-Meier estimate from
    finished runtimes ``done`` and lower bounds ``bounds`` of running jobs: each bound's mass
    goes in equal parts to the observations above it (Efron's redistribution to the right);
    a bound with none above keeps its mass at twice itself (a job that has run e is taken to
    need as long again: Stratus §3.4 heuristic 1, after Harchol-Balter and Downey)."""
    obs = sorted([(x, 0) for x in done] + [(c, 1) for c in bounds])  # ties: finished first
    n = len(obs)
    carry, pts = 0.0, []
    for i, (x, censored) in enumerate(obs):
        m = 1.0 / n + carry
        rest = n - 1 - i
        if censored and rest:
            carry += m / rest
        else:
            pts.append((2.0 * x if censored else x, m))
    pts.sort()
    return pts


def km_mean_median(done, bounds) -> tuple[float, float]:
    pts = km_points(done, bounds)
    total = sum(w for _, w in pts)
    mean = sum(v * w for v, w in pts) / total
    acc = 0.0
    for v, w in pts:
        acc += w
        if acc >= total / 2 - 1e-12:
            return mean, v
    return mean, pts[-1][0]


class HistoryOptionsEstimator(HistoryEstimator):
    """``history`` with any of OPTIONS; without them it is ``history`` itself."""

    def __init__(self, options: tuple[str, ...] = (), **kw) -> None:
        super().__init__(**kw)
        bad = [o for o in options if o not in OPTIONS]
        if bad or not options:
            raise ConfigError(f"history estimator options are {', '.join(OPTIONS)} (joined "
                              f"with '+', e.g. history:censored+cold), got {'+'.join(options)!r}")
        self.censored = "censored" in options
        self.cold = "cold" in options
        self.requested = "requested" in options
        self.name = "history:" + "+".join(o for o in OPTIONS if o in options)
        self._submit: dict[int, float] = {}  # running jobs (predicted, not finished): submit
        self._run_groups: list[dict] = [{} for _ in _KEYS]  # group key -> {job: submit}
        if self.requested:
            self.pairs.append(("requested", "ratio"))
            self._names.append("requested/ratio")
            i = len(self.pairs) - 1
            self._req_id = i
            self.errors.append(Window(self.error_window))
            self._err_count.append(0)
            self._err_median.append(None)
            self._rank.append((1, i))
            self._ratio: dict[str, Window] = {}  # user -> actual/requested of finished jobs
            self._ratio_all = Window(200)

    # --- prediction ----------------------------------------------------------------------
    def _bounds(self, running: dict, now: float, n: int) -> list[float]:
        return [now - s for s in islice(reversed(running.values()), n) if now > s]

    def _requested(self, t: Task) -> float | None:
        req = t.user_estimate
        if req is None or not req > 0:
            return None
        w = self._ratio.get(t.user) or self._ratio_all
        return req * (w.median() if w else 1.0)

    def _predict_job(self, t: Task) -> float:
        now = t.submit
        ids: list[int] = []
        ests: list[float] = []
        keys = [keyf(t) for keyf in _KEYS]
        floor: dict[int, float] = {}  # attribute -> its group's Kaplan-Meier median
        for a, (groups, k, pair_ids) in enumerate(zip(self.groups, keys, self._pair_ids)):
            w = groups.get(k)
            if w is None:  # a group with no finished job proves no runtime: no candidate
                continue
            stats = w.stats or w.statistics()
            run = self._run_groups[a].get(k) if self.censored else None
            if run:
                bounds = self._bounds(run, now, self.window)
                if bounds:
                    mean, med = km_mean_median(list(w.values), bounds)
                    stats = (mean, med, *stats[2:])
                    floor[a] = med
            ids.extend(pair_ids)
            ests.extend(stats)
        req = self._requested(t) if self.requested else None
        if req is not None:
            ids.append(self._req_id)
            ests.append(req)
        self._job_cands[t.job] = (ids, ests)
        if ids:
            best = min(ids, key=self._rank.__getitem__)
            est = ests[ids.index(best)]
            name = self._names[best]
            # pairs are scored on finished jobs only, which favours the short; the chosen
            # estimate is kept at least at its group's median counting the running jobs
            a = best // len(STATISTICS)
            if a in floor and floor[a] > est:
                est = floor[a]
        elif self.cold and (self.recent or self._submit):
            bounds = self._bounds(self._submit, now, CLUSTER_RUNNING)
            if self.recent:
                est = km_mean_median(list(self.recent.values), bounds)[1]
                name = "cluster"
            else:  # nothing finished yet: what the running jobs show, at least the default
                est = max(self.default_s, km_mean_median([], bounds)[1]) if bounds \
                    else self.default_s
                name = "default"
        elif self.recent:
            est = self.recent.median()
            name = "cluster"
        else:
            est = self.default_s
            name = "default"
        self.chosen[name] = self.chosen.get(name, 0) + 1
        if self.censored or self.cold:
            self._submit[t.job] = now
            if self.censored:
                for runs, k in zip(self._run_groups, keys):
                    runs.setdefault(k, {})[t.job] = now
        return max(est, 1.0)

    # --- learning ------------------------------------------------------------------------
    def observe(self, tasks, now: float) -> None:
        super().observe(tasks, now)
        first = tasks[0]
        if self._submit.pop(first.job, None) is not None and self.censored:
            for runs, keyf in zip(self._run_groups, _KEYS):
                k = keyf(first)
                group = runs.get(k)
                if group is not None:
                    group.pop(first.job, None)
                    if not group:
                        del runs[k]
        if self.requested and first.user_estimate is not None and first.user_estimate > 0:
            actual = sum(t.runtime for t in tasks) / len(tasks)
            ratio = actual / first.user_estimate
            w = self._ratio.get(first.user)
            if w is None:
                w = self._ratio[first.user] = Window(self.window)
            w.append(ratio)
            self._ratio_all.append(ratio)
