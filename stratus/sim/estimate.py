"""The runtime estimator's contract, as the engine calls it: ``bind(trace)`` once before a
replay, ``predict(tasks)`` for each batch of newly arrived tasks, ``observe(tasks, now)``
when a job completes (online learners only). The default is perfect knowledge
(``OracleEstimator``); the learners (stratus.policy.estimators, stratus.policy.history)
build on this base. What remains of a running task is derived in the cluster view
(``remaining_estimate``)."""

from __future__ import annotations

from collections.abc import Sequence

from stratus.sim.model import Task

MIN_ESTIMATE_S = 1.0  # an estimate of zero would put a task in no runtime bin


class Estimator:
    """Base class. Subclasses override ``predict`` and, if they learn, ``observe``."""

    name = "estimator"
    learns_online = False

    def bind(self, trace) -> None:
        """Called once with the trace about to be replayed (before any prediction)."""

    def fit(self, history) -> Estimator:
        """Train on a past trace; the default estimators need no training."""
        return self

    def predict(self, tasks: Sequence[Task]) -> list[float]:
        raise NotImplementedError

    def observe(self, tasks: Sequence[Task], now: float) -> None:
        """A job whose tasks are ``tasks`` just completed at ``now``."""

    #: jobs a learner learned from before the replay (its warm-up ``fit``)
    warmup_jobs = 0

    def error_summary(self) -> dict | None:
        """A learner's record of its own errors over the replay (``jobs``,
        ``median_abs_log_ratio``, ``within_factor_2``), or None for one that keeps none."""
        return None


class OracleEstimator(Estimator):
    """Perfect knowledge: the true runtime (Stratus §5.4.1)."""

    name = "oracle"

    def predict(self, tasks: Sequence[Task]) -> list[float]:
        return [max(t.runtime, MIN_ESTIMATE_S) for t in tasks]


def remaining_estimate(estimate: float, elapsed: float, readjust: bool = True) -> float:
    """Estimated seconds left for a task predicted to run ``estimate`` s that has run
    ``elapsed`` s. With ``readjust``, a task that has outlived its estimate is assumed
    half done, i.e. it needs as long again as it has run (Stratus §3.4, heuristic 1,
    after Harchol-Balter and Downey)."""
    left = estimate - elapsed
    if left > 0:
        return left
    return elapsed if readjust else 0.0
