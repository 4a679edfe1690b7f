"""SWW with waits predicted from cluster state (paper 003 §3.2)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from stratus.app.cli import main
from stratus.waiting.ml import WaitModel, mcc
from stratus.waiting.pool import STATE_FEATURES, PoolSpec, WaitingPolicy, simulate

pytest.importorskip("sklearn")


def test_mcc_matches_its_definition():
    assert mcc([True, False, True, False], [True, False, True, False]) == 1.0
    assert mcc([True, False], [False, True]) == -1.0
    assert mcc([True, True], [True, False]) is None  # a constant prediction: undefined
    p = np.array([1, 1, 0, 0, 1, 0], bool)
    a = np.array([1, 0, 0, 1, 1, 0], bool)
    assert mcc(p, a) == pytest.approx(1 / 3)


@pytest.mark.slow
def test_the_walked_forest_is_sklearns_forest():
    rng = np.random.default_rng(0)
    x = rng.random((400, len(STATE_FEATURES)))
    y = 1000 * x[:, 1] + 50 * rng.random(400)
    model = WaitModel(n_trees=8, max_depth=6).fit(x, y)
    batch = model._forest.predict(x[:50])
    assert [model.predict(row) for row in x[:50]] == pytest.approx(batch.tolist())


def test_the_observer_sees_the_state_and_the_oracle_wait():
    rng = np.random.default_rng(3)
    n = 600
    sub = np.cumsum(rng.exponential(20.0, n))
    rt = rng.exponential(600.0, n)
    seen = []
    # strict FCFS: no later arrival can pass it, so the oracle's forward simulation is exact
    # (work-conserving, a later, smaller job may start first and delay it: 003 §3.2)
    run = simulate(PoolSpec(3, 8.0, 32.0, work_conserving=False), WaitingPolicy("sww", b=300.0),
                   sub, rt,
                   rng.choice([2.0, 4.0, 8.0], n), np.full(n, 4.0),
                   observe=lambda j, x, w: seen.append((j, x, w)))
    assert seen and all(len(x) == len(STATE_FEATURES) for _, x, _ in seen)
    for j, _, w in seen:  # the oracle's foresight was the decision
        assert run.cloud[j] == (w > 300.0)
        if not run.cloud[j]:
            assert run.wait[j] == pytest.approx(w)


@pytest.mark.slow
def test_cli_ml_predictor_reports_mcc(capsys):
    assert main(["waiting", "simulate", "--trace", "synthetic:google?scale=0.02", "--hours", "6",
                 "--seed", "1", "--reserved", "3", "--reserved-cores", "16",
                 "--reserved-mem-gb", "64", "--policy", "sww", "--b", "300",
                 "--wait-predictor", "ml", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    ml = doc["ml"]
    assert ml["train_decisions"] >= 10 and ml["decisions"] > 0
    assert ml["mcc"] is None or -1 <= ml["mcc"] <= 1
    assert doc["jobs"] == ml["test_jobs"]
    assert main(["waiting", "simulate", "--trace", "synthetic:mms?hours=1", "--reserved", "3",
                 "--reserved-cores", "1", "--reserved-mem-gb", "4", "--policy", "njw",
                 "--wait-predictor", "ml"]) == 2


@pytest.mark.slow
def test_the_aggregation_round_adds_states_the_oracle_never_reached(monkeypatch):
    """The cross-fitted round runs each stretch of the training jobs under a model fitted
    without it, and what it reaches is new: rows the oracle's run never produced."""

    from stratus.app.waiting import train_wait_model

    fits = []
    real_fit = WaitModel.fit

    def spy(self, x, y):
        fits.append(np.asarray(x))
        return real_fit(self, x, y)

    monkeypatch.setattr(WaitModel, "fit", spy)
    rng = np.random.default_rng(5)
    n = 800
    sub = np.cumsum(rng.exponential(25.0, n))
    rt = rng.exponential(600.0, n)
    cpu = rng.choice([2.0, 4.0, 8.0], n)
    _, info = train_wait_model(PoolSpec(3, 8.0, 32.0), WaitingPolicy("sww", b=300.0),
                               sub, rt, cpu, np.full(n, 4.0), None, seed=0)
    oracle, final = fits[0], fits[-1]
    assert len(fits) == 4  # the oracle's fit, one per held-out stretch, the final one
    assert info["oracle_run_decisions"] == len(oracle) < info["train_decisions"] == len(final)
    seen = {tuple(r) for r in oracle}
    assert sum(tuple(r) not in seen for r in final[len(oracle):]) > 0
