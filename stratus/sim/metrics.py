"""Metrics computed from a finished replay: cost, utilization, latency, lower bound."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from stratus.pricing.catalog import Catalog
from stratus.pricing.prices import PriceBook


def cheapest_unit_prices(prices: PriceBook, catalog: Catalog, markets: Iterable[str],
                         t0: float = -np.inf, t1: float = np.inf) -> tuple[np.ndarray, np.ndarray]:
    """rho_d(t): the cheapest $/h per resource unit of dimension d over every allowed
    (type, market), as a step function on [t0, t1]: (change times [K], prices per unit [K, D])."""
    series = [(prices.series(t.name, m), np.asarray(t.capacity, dtype=np.float64))
              for t in catalog for m in markets if prices.has(t.name, m)]
    # only the changes inside the window matter, plus the price in force at its start
    times = np.unique(np.concatenate(
        [[max(t0, float(s.times[0]))] if np.isfinite(t0) else s.times[:1] for s, _ in series]
        + [s.times[(s.times > t0) & (s.times <= t1)] for s, _ in series]))
    dims = len(catalog.types[0].capacity)
    rho = np.full((times.size, dims), np.inf)
    for s, cap in series:
        idx = np.clip(np.searchsorted(s.times, times, side="right") - 1, 0, None)
        p = s.prices[idx]
        with np.errstate(divide="ignore"):  # a type without GPUs: no GPU at any price
            rho = np.minimum(rho, p[:, None] / cap[None, :])
    return times, rho


def fluid_lower_bound(starts: np.ndarray, ends: np.ndarray, reqs: np.ndarray,
                      rho_times: np.ndarray, rho: np.ndarray) -> float:
    """A lower bound on the cost of any cluster that runs tasks over the given intervals.

    At every instant the instances must hold at least the resources of the running tasks,
    and no instance costs less than rho_d(t) per unit of any dimension d; so the bill is at
    least the integral over time of max_d (load_d(t) * rho_d(t)). No fragmentation, no
    spin-up, no idle capacity. (Pricing each task by its *own* constraining resource is not
    a bound: complementary tasks share an instance. See docs/decisions.md.)
    """
    if starts.size == 0:
        return 0.0
    dims = reqs.shape[1]
    times = np.concatenate([starts, ends, rho_times])
    deltas = np.concatenate([reqs, -reqs, np.zeros((rho_times.size, dims), dtype=reqs.dtype)])
    order = np.argsort(times, kind="stable")
    times = times[order]
    load = np.cumsum(deltas[order], axis=0)[:-1].astype(np.float64)
    dt = np.diff(times)
    idx = np.clip(np.searchsorted(rho_times, times[:-1], side="right") - 1, 0, None)
    rate = (load * rho[idx]).max(axis=1)
    return float(np.sum(rate * dt) / 3600.0)


def percentile(values: np.ndarray, q: float) -> float:
    values = values[np.isfinite(values)]
    return float(np.percentile(values, q)) if values.size else float("nan")
