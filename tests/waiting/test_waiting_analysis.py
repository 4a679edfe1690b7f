"""The waiting-policy analysis (paper 000 §3-4) against the paper's baseline figures, exact
small cases and a direct simulation of the reneging queue."""

from __future__ import annotations

import heapq
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratus.app.cli import main
from stratus.base.errors import ConfigError
from stratus.waiting.analysis import (
    erlang_b,
    erlang_c,
    evaluate,
    optimal_servers,
    reneging,
)

BASE = dict(lam=0.2, mu=0.002, pf=3.84, po=9.6)  # 000 §3.1: ρ = 1 at s = 100, d = 0.4


def _b_direct(s, a):
    terms = [a ** i / math.factorial(i) for i in range(s + 1)]
    return terms[-1] / sum(terms)


@pytest.mark.parametrize(("s", "a"), [(1, 0.5), (5, 3.0), (20, 25.0), (30, 12.5)])
def test_erlang_b_and_c_match_the_textbook_formulas(s, a):
    assert erlang_b(s, a) == pytest.approx(_b_direct(s, a), rel=1e-12)
    if a < s:
        num = s * a ** s / (math.factorial(s) * (s - a))
        c = num / (sum(a ** i / math.factorial(i) for i in range(s)) + num)
        assert erlang_c(s, a) == pytest.approx(c, rel=1e-12)


def test_erlang_is_stable_at_ten_thousand_servers():
    b = erlang_b(10_000, 9_900.0)
    assert 0 < b < 1 and math.isfinite(erlang_c(10_000, 9_900.0))


def test_the_papers_baseline_njw_optimum_and_ajw_price():
    """000 §3.2: NJW's optimum is s = 108, with 3.5% of jobs on demand and a normalized
    price of 0.467; AJW at s = 108 costs 0.432 with a mean wait of ~20 s."""
    s = optimal_servers("njw", **BASE)
    assert s == 108
    njw = evaluate("njw", s, **BASE)
    assert njw.on_demand_fraction == pytest.approx(0.035, abs=5e-4)
    assert njw.normalized_price == pytest.approx(0.467, abs=5e-4)
    ajw = evaluate("ajw", 108, **BASE)
    assert ajw.normalized_price == pytest.approx(0.432, abs=5e-4)
    assert ajw.wait_s == pytest.approx(20, abs=1)
    assert evaluate("ajw", 101, **BASE).wait_s == pytest.approx(450, rel=0.05)  # §4.2


def test_the_optimum_is_the_cheapest_s():
    prices = {s: evaluate("njw", s, **BASE).price for s in range(95, 125)}
    assert min(prices, key=prices.get) == 108
    s = optimal_servers("ajw-t", **BASE, b=300)
    prices = {k: evaluate("ajw-t", k, **BASE, b=300).price for k in range(s - 8, s + 9)}
    assert min(prices, key=prices.get) == s


def test_compound_has_the_lowest_opportunity_cost_at_s101():
    """000 Fig. 13 at s = 101, b = 900 s, t = 180 s."""
    oc = {p: evaluate(p, 101, **BASE, b=900, t=180).opportunity_cost
          for p in ("ajw", "ajw-t", "sww", "ljw", "compound")}
    assert min(oc, key=oc.get) == "compound"


def test_thresholds_reach_the_extremes():
    njw, ajw = evaluate("njw", 108, **BASE), evaluate("ajw", 108, **BASE)
    at0, atinf = evaluate("ajw-t", 108, **BASE, b=0), evaluate("ajw-t", 108, **BASE, b=1e7)
    assert at0.price == pytest.approx(njw.price) and at0.wait_s == 0
    assert atinf.price == pytest.approx(ajw.price) and atinf.wait_s == pytest.approx(ajw.wait_s)
    ljw0 = evaluate("ljw", 108, **BASE, t=0)
    assert ljw0.price == pytest.approx(ajw.price) and ljw0.wait_s == pytest.approx(ajw.wait_s)


def test_over_capacity_reneging_is_the_excess_load():
    ren = reneging(50, 0.2, 0.002, 1e6)  # ρ = 2
    assert ren.r == pytest.approx(0.5, rel=1e-6)


def test_every_policy_is_finite_at_5000_servers():
    """Large s through the recurrences (speed is in benchmarks/bench_waiting.py)."""
    for p in ("njw", "ajw", "ajw-t", "sww", "ljw", "compound"):
        out = evaluate(p, 5000, lam=9.0, mu=0.002, pf=3.84, po=9.6, b=900, t=180)
        assert all(math.isfinite(v) for v in (out.price, out.wait_s, out.on_demand_fraction))


def _simulate_reneging(s, lam, mu, b, n, seed):
    """FCFS M/M/s where a job leaves after waiting b: (share reneged, mean wait of all)."""
    rng = np.random.default_rng(seed)
    arrivals = np.cumsum(rng.exponential(1 / lam, n))
    service = rng.exponential(1 / mu, n)
    free = [0.0] * s  # when each server frees, as a heap
    heapq.heapify(free)
    reneged, wait = 0, 0.0
    for t, x in zip(arrivals.tolist(), service.tolist()):
        start = max(t, free[0])
        if start - t > b:
            reneged += 1
            wait += b
            continue
        wait += start - t
        heapq.heapreplace(free, start + x)
    return reneged / n, wait / n


@pytest.mark.slow
@pytest.mark.parametrize(("s", "lam", "b"), [(5, 4.5, 0.5), (5, 6.0, 1.0), (8, 7.0, 0.0)])
def test_reneging_matches_a_direct_simulation(s, lam, b):
    r_sim, w_sim = _simulate_reneging(s, lam, 1.0, b, 200_000, seed=1)
    out = evaluate("ajw-t", s, lam=lam, mu=1.0, pf=0.4, po=1.0, b=b)
    assert out.on_demand_fraction == pytest.approx(r_sim, abs=0.006)
    assert out.wait_s == pytest.approx(w_sim, abs=0.01 + 0.03 * w_sim)


@settings(max_examples=60, deadline=None)
@given(s=st.integers(80, 140), b=st.floats(0, 5000), t=st.floats(0, 2000))
def test_policy_orderings_hold_everywhere(s, b, t):
    """000 §4.4: SWW never waits longer than AJW-T at the same price; a longer b lowers
    the price and raises the wait; a longer t raises the price and lowers LJW's wait."""
    at, sw = evaluate("ajw-t", s, **BASE, b=b), evaluate("sww", s, **BASE, b=b)
    assert sw.price == pytest.approx(at.price) and sw.wait_s <= at.wait_s + 1e-9
    at2 = evaluate("ajw-t", s, **BASE, b=b * 1.5 + 1)
    assert at2.price <= at.price + 1e-9 and at2.wait_s >= at.wait_s - 1e-9
    l1, l2 = evaluate("ljw", s, **BASE, t=t), evaluate("ljw", s, **BASE, t=t * 1.5 + 1)
    assert l2.price >= l1.price - 1e-9
    if math.isfinite(l1.wait_s):
        assert l2.wait_s <= l1.wait_s + 1e-9
    for o in (at, sw, l1):
        assert 0 <= o.on_demand_fraction <= 1 and o.wait_s >= 0


def test_analyze_cli_json(capsys):
    assert main(["analyze", "--policy", "njw", "--lam", "0.2", "--mu", "0.002",
                 "--servers", "optimal", "--pf", "3.84", "--po", "9.6", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["servers"] == 108 and doc["policy"] == "njw"
    assert set(doc) >= {"policy", "servers", "wait_s", "price", "normalized_price",
                        "on_demand_fraction"}
    assert doc["normalized_price"] == pytest.approx(0.467, abs=5e-4)


@pytest.mark.parametrize(("argv", "what"), [
    (["--policy", "ajw", "--servers", "optimal"], "no cost optimum"),
    (["--policy", "nope", "--servers", "10"], "unknown waiting policy"),
    (["--policy", "njw", "--servers", "-3"], "--servers"),
    (["--policy", "njw", "--servers", "x"], "--servers"),
    (["--policy", "sww", "--servers", "10", "--b", "-1"], "--b"),
])
def test_analyze_bad_options(argv, what, capsys):
    base = ["analyze", "--lam", "0.2", "--mu", "0.002", "--pf", "3.84", "--po", "9.6"]
    assert main(base + argv) == 2
    err = capsys.readouterr().err
    assert what in err and err.count("\n") == 1


def test_evaluate_rejects_nonsense():
    with pytest.raises(ConfigError, match="--mu"):
        evaluate("njw", 10, lam=1, mu=0, pf=1, po=2)
    with pytest.raises(ConfigError, match="--f-over"):
        evaluate("sww", 10, lam=1, mu=1, pf=1, po=2, f_over=0.7, f_under=0.6)
