"""Waiting-time prediction from cluster state (paper 003 §3.2): a regression model on
the state a job finds when it arrives (``pool.STATE_FEATURES``, 003 Table 1), trained on a
simulated run, used by SWW to decide whether the job waits. A regression, not a
classifier, so one model serves every threshold b (003 §3.2).

scikit-learn (the ``ml`` extra) fits a random forest; its trees are then walked here, one
sample at a time, since the pool asks one job at a time and a forest's own ``predict``
costs milliseconds a call."""

from __future__ import annotations

import math

import numpy as np

from stratus.base.errors import ConfigError


class WaitModel:
    """fit(X, y) / predict(x): y are waits in seconds (capped by the caller)."""

    def __init__(self, n_trees: int = 40, max_depth: int = 12, seed: int = 0) -> None:
        self.n_trees, self.max_depth, self.seed = n_trees, max_depth, seed
        self._trees: list[tuple[list, list, list, list, list]] = []

    def fit(self, x: np.ndarray, y: np.ndarray) -> WaitModel:
        try:
            from sklearn.ensemble import RandomForestRegressor
        except ImportError as exc:
            raise ConfigError("the ml wait predictor needs scikit-learn "
                              "(pip install 'stratus-vc[ml]')") from exc
        if len(y) < 10:
            raise ConfigError(f"the ml wait predictor needs training decisions: the training "
                              f"run had {len(y)} jobs that found the pool full")
        forest = RandomForestRegressor(n_estimators=self.n_trees, max_depth=self.max_depth,
                                       min_samples_leaf=5, random_state=self.seed, n_jobs=1)
        forest.fit(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64))
        self._trees = [(t.tree_.children_left.tolist(), t.tree_.children_right.tolist(),
                        t.tree_.feature.tolist(), t.tree_.threshold.tolist(),
                        t.tree_.value[:, 0, 0].tolist()) for t in forest.estimators_]
        self._forest = forest  # for the batch check in tests
        return self

    def predict(self, x) -> float:
        total = 0.0
        for left, right, feat, thr, val in self._trees:
            node = 0
            while left[node] != -1:
                node = left[node] if x[feat[node]] <= thr[node] else right[node]
            total += val[node]
        return total / len(self._trees)


def mcc(predicted_long: np.ndarray, truly_long: np.ndarray) -> float | None:
    """Matthews correlation of the wait-or-not decision (003 Fig. 6); None when undefined."""
    p = np.asarray(predicted_long, bool)
    a = np.asarray(truly_long, bool)
    tp = float(np.sum(p & a))
    tn = float(np.sum(~p & ~a))
    fp = float(np.sum(p & ~a))
    fn = float(np.sum(~p & a))
    den = math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    return None if den == 0 else (tp * tn - fp * fn) / den
