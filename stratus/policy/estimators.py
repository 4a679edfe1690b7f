"""Runtime estimators behind one fit/predict interface (the project's design sketch,
../shared/DESIGN.md, "Habits": "Estimators look like scikit-learn").

The engine calls ``bind(trace)`` once before a replay, ``predict(tasks)`` for each batch
of newly arrived tasks, and ``observe(tasks)`` when a job completes (online learners
only). Predictions are total runtimes in seconds; what remains of a running task is
derived in the cluster view (see ``remaining_estimate``). The contract (``Estimator``),
perfect knowledge (``OracleEstimator``, the default) and ``remaining_estimate`` are the
core's (``stratus.sim.estimate``): the engine calls them; the learners live here.

An online learner (``learns_online``) is deep-copied by the engine at the start of each
replay: it learns on the copy, and the caller's object keeps what it had, a warm-up
``fit`` included (docs/decisions.md, "Reusable objects").
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat

import numpy as np

from stratus.base.errors import ConfigError
from stratus.sim.estimate import MIN_ESTIMATE_S, Estimator
from stratus.sim.gcpause import rare_gc
from stratus.sim.model import Task


class NoisyEstimator(Estimator):
    """True runtime x h_tau, h_tau ~ U[h, 1) if h < 1 else U[1, h] (Stratus §5.4.2).

    One factor per task, drawn for the whole trace at ``bind`` from ``seed``, so a task's
    estimate is the same whatever scheduler replays it and whenever it arrives.
    """

    def __init__(self, h: float, seed: int = 0) -> None:
        if not (h > 0 and np.isfinite(h)):
            raise ConfigError(f"noisy estimator: h must be a positive number, got {h!r}")
        self.h = float(h)
        self.seed = seed
        self.name = f"noisy:{h:g}"
        self._factor: np.ndarray | None = None

    def bind(self, trace) -> None:
        rng = np.random.default_rng([self.seed, 0x5EED])
        lo, hi = (self.h, 1.0) if self.h < 1 else (1.0, self.h)
        self._factor = rng.uniform(lo, hi, size=len(trace))

    def predict(self, tasks: Sequence[Task]) -> list[float]:
        if self._factor is None:
            raise ConfigError("noisy estimator used before bind(trace)")
        f = self._factor
        return [max(t.runtime * float(f[t.tid]), MIN_ESTIMATE_S) for t in tasks]


class RequestedEstimator(Estimator):
    """The user's requested runtime (``estimate_s``: SWF's requested time, a generic CSV's
    estimate column), as the user gave it: usually a limit, so long."""

    name = "requested"

    def bind(self, trace) -> None:
        frame = getattr(trace, "frame", None)
        if frame is not None and "estimate_s" not in frame.columns:
            raise ConfigError(f"{getattr(trace, 'name', 'trace')}: the requested estimator needs "
                              f"a trace with estimate_s (SWF's requested time, or a generic "
                              f"CSV's estimate_s)")

    def predict(self, tasks: Sequence[Task]) -> list[float]:
        out = []
        for t in tasks:
            if t.user_estimate is None:
                raise ConfigError("the requested estimator needs every task's estimate_s")
            out.append(max(t.user_estimate, MIN_ESTIMATE_S))
        return out


def trace_jobs(frame) -> list[tuple[float, float, list[Task]]]:
    """(submit, end if run at once, tasks) per job of a canonical frame, by submit time
    (jobs submitted at the same time: in order of their first row); tasks in row order."""
    from stratus.base.resources import request_units

    n = len(frame)
    if not n:
        return []
    job = frame["job_id"].to_numpy()
    sub = frame["submit_s"].to_numpy(dtype=np.float64)
    rt = frame["runtime_s"].to_numpy(dtype=np.float64)
    # jobs numbered by first appearance; rows grouped by job, in row order within a job
    uniq, first, inverse = np.unique(job, return_index=True, return_inverse=True)
    rank = np.empty(uniq.size, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(uniq.size)
    code = rank[inverse.reshape(-1)]
    order = np.argsort(code, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(code))]).tolist()
    starts = np.asarray(bounds[:-1], dtype=np.int64)
    job_sub = np.minimum.reduceat(sub[order], starts)
    job_end = np.maximum.reduceat((sub + rt)[order], starts)
    gpus = frame["gpus"] if "gpus" in frame.columns and (frame["gpus"] > 0).any() else None
    units = request_units(frame["cpu"], frame["mem_gib"], gpus)  # GPUs are part of a shape
    reqs = zip(*(units[:, d].tolist() for d in range(units.shape[1])))  # tuples of ints
    tasks = list(map(Task, range(n), job.tolist(), frame["task_id"].tolist(), sub.tolist(),
                     rt.tolist(), reqs, map(str, frame["user"].tolist()),
                     map(str, frame["job_name"].tolist()), frame["priority"].tolist(),
                     frame["estimate_s"].tolist() if "estimate_s" in frame.columns
                     else repeat(None)))
    grouped = [tasks[i] for i in order.tolist()]
    by_submit = np.argsort(job_sub, kind="stable").tolist()  # stable, as sorted() is
    job_sub, job_end = job_sub.tolist(), job_end.tolist()
    return [(job_sub[k], job_end[k], grouped[bounds[k]:bounds[k + 1]]) for k in by_submit]


def online_pass(est: Estimator, frame) -> list[tuple[float, float]]:
    """Feed ``frame``'s jobs to ``est`` in time order: predicted when submitted, learned
    from when their last task ends (as if run at once). Returns (mean predicted, mean
    actual) task runtime per job, the quantity Stratus's modified JVuPredict estimates (§3.4)."""
    with rare_gc():
        return _online_pass(est, frame)


def task_estimates(est: Estimator, frame) -> np.ndarray:
    """Each row's runtime estimate as the online pass makes it (predicted at submit, the
    estimator learning from jobs that ended before), by row of ``frame``."""
    out = np.full(len(frame), np.nan)
    with rare_gc():
        _online_pass(est, frame, out)
    return out


def _online_pass(est: Estimator, frame, per_task: np.ndarray | None = None
                 ) -> list[tuple[float, float]]:
    jobs = trace_jobs(frame)
    # ends first at ties, except a job's own end, which follows its submission (a job of no
    # length, or whose runtime vanishes next to a huge submit time in floating point)
    events = sorted([(sub, 1, i) for i, (sub, _, _) in enumerate(jobs)]
                    + [(end, 0, i) if end > sub else (sub, 2, i)
                       for i, (sub, end, _) in enumerate(jobs)])
    pred: dict[int, float] = {}
    out = []
    for t, is_submit, i in events:
        tasks = jobs[i][2]
        if is_submit:
            p = est.predict(tasks)
            pred[i] = sum(p) / len(p)
            if per_task is not None:
                per_task[[x.tid for x in tasks]] = p
        else:
            out.append((pred.pop(i), sum(x.runtime for x in tasks) / len(tasks)))
            if est.learns_online:
                est.observe(tasks, t)
    return out


def error_distribution(pairs) -> dict:
    """Relative error (estimate - actual) / actual over jobs (cf. Stratus Fig. 3b)."""
    if not len(pairs):
        return {"jobs": 0}
    est, act = np.asarray(pairs, dtype=np.float64).T
    rel = (est - act) / act
    ratio = np.abs(np.log(est / act))
    return {
        "jobs": int(rel.size),
        "relative_error_percentiles": {f"p{q}": round(float(np.percentile(rel, q)), 4)
                                       for q in (5, 25, 50, 75, 95)},
        "within_10pct": round(float(np.mean(np.abs(rel) <= 0.10)), 4),
        "within_factor_2": round(float(np.mean(ratio <= np.log(2))), 4),
        "median_abs_log_ratio": round(float(np.median(ratio)), 4),
        "under_estimates": round(float(np.mean(rel < 0)), 4),
    }
