import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratus.app.registry import make_estimator, make_scheduler
from stratus.base.errors import ConfigError
from stratus.policy.estimators import NoisyEstimator
from stratus.pricing.catalog import M4
from stratus.pricing.prices import ON_DEMAND, PriceBook, PriceSeries
from stratus.replays import replay
from stratus.sim.engine import ReplayConfig
from stratus.sim.estimate import OracleEstimator, remaining_estimate
from stratus.sim.metrics import cheapest_unit_prices, fluid_lower_bound
from stratus.sim.model import Task
from tests.helpers.trace import make_trace


def tasks(runtimes):
    return [Task(i, 0, i, 0.0, r, (1, 1)) for i, r in enumerate(runtimes)]


def test_oracle_is_exact():
    assert OracleEstimator().predict(tasks([5.0, 300.0])) == [5.0, 300.0]


@pytest.mark.parametrize("h", [0.01, 0.5, 1.0, 3.0, 100.0])
def test_noisy_factor_range_follows_stratus_5_4_2(h):
    ts = tasks([100.0] * 5000)
    est = NoisyEstimator(h, seed=1)
    est.bind(ts)
    f = np.array(est.predict(ts)) / 100.0
    lo, hi = (h, 1.0) if h < 1 else (1.0, h)
    assert f.min() >= lo - 1e-12 and f.max() <= hi + 1e-12
    if h != 1:
        assert f.std() > 0.2 * (hi - lo)  # spread over the range, not a constant
        assert abs(f.mean() - (lo + hi) / 2) < 0.05 * (hi - lo)


def test_noisy_is_per_task_and_seeded():
    ts = tasks([10.0, 20.0, 30.0])
    a, b, c = NoisyEstimator(0.2, 1), NoisyEstimator(0.2, 1), NoisyEstimator(0.2, 2)
    for e in (a, b, c):
        e.bind(ts)
    assert a.predict(ts) == b.predict(ts) != c.predict(ts)
    assert a.predict(ts[2:]) == a.predict(ts)[2:]  # independent of batching


def test_estimator_specs():
    assert make_estimator("oracle").name == "oracle"
    assert make_estimator("noisy:0.01").h == 0.01
    with pytest.raises(ConfigError, match="unknown estimator"):
        make_estimator("psychic")
    with pytest.raises(ConfigError, match="must be a number"):
        make_estimator("noisy:abc")
    with pytest.raises(ConfigError, match="needs a factor"):
        make_estimator("noisy")


def test_readjustment_assumes_half_done():
    assert remaining_estimate(100.0, 30.0) == 70.0
    assert remaining_estimate(100.0, 150.0) == 150.0  # outlived: as long again as it has run
    assert remaining_estimate(100.0, 150.0, readjust=False) == 0.0


def test_lower_bound_uses_max_over_dimensions_not_per_task_shares():
    # complementary tasks share one m4.large: 1.8 vCPU/0.8 GiB and 0.2 vCPU/7.2 GiB.
    # Pricing each by its own constraining resource would give 0.18 $/h > the 0.10 $/h
    # instance that really runs them; the bound must stay below the real bill.
    rt, rho = cheapest_unit_prices(PriceBook.on_demand(M4), M4, [ON_DEMAND])
    reqs = np.array([[1800, 819], [200, 7373]])
    lb = fluid_lower_bound(np.array([0.0, 0.0]), np.array([3600.0, 3600.0]), reqs, rt, rho)
    assert lb <= 0.10 + 1e-12
    assert lb == pytest.approx(max(2000 * rho[0, 0], (819 + 7373) * rho[0, 1]))


def test_lower_bound_follows_price_steps():
    book = PriceBook.on_demand(M4).with_series(
        {(t.name, "spot"): PriceSeries([0.0, 1800.0], [t.ondemand_hourly * 0.3, t.ondemand_hourly * 0.2])
         for t in M4})
    rt, rho = cheapest_unit_prices(book, M4, ["spot"])
    lb = fluid_lower_bound(np.array([0.0]), np.array([3600.0]), np.array([[2000, 1024]]), rt, rho)
    # 2 vCPU at 0.015 $/vCPU-h for half an hour, then at 0.010
    assert lb == pytest.approx(2 * 0.015 * 0.5 + 2 * 0.010 * 0.5)


@pytest.mark.slow
@settings(max_examples=50)  # two replays and their integer bounds each, new every run
@given(st.lists(st.tuples(st.floats(0, 1000), st.floats(1, 1000), st.sampled_from([0.5, 1, 2, 4]),
                          st.sampled_from([0.5, 2, 8, 16])), min_size=1, max_size=15))
def test_lower_bound_never_exceeds_a_replays_bill(rows):
    tr = make_trace([(i, 0, s, r, c, m) for i, (s, r, c, m) in enumerate(rows)])
    for name in ("task-per-instance", "first-fit"):
        res = replay(tr, make_scheduler(name), ReplayConfig(spinup_s=(0.0, 0.0)))
        assert 0 < res["lower_bound_cost_usd"] <= res["total_cost_usd"] + 1e-9
