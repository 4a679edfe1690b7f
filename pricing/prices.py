"""Prices over time: step functions per (instance type, market).

A price source answers three questions the engine needs: the price of type T in market
M at time t, the next time that price changes after t, and the exact integral of the
price over an interval (per-second billing, Stratus §4.1). On-demand and reserved
prices are constant; spot prices are step functions loaded from a trace.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Iterable, Mapping

import numpy as np

from stratus.base.errors import ConfigError
from stratus.pricing.catalog import Catalog

ON_DEMAND = "on-demand"
SPOT = "spot"
RESERVED = "reserved"
MARKETS = (ON_DEMAND, SPOT, RESERVED)


class PriceSeries:
    """A right-continuous step function of time: ``prices[i]`` holds on
    ``[times[i], times[i+1])``; before ``times[0]`` the first price holds and after the
    last change the last price holds. Prices are in $/hour, times in seconds."""

    __slots__ = ("times", "prices", "_cum", "_t", "_p", "_c")

    def __init__(self, times: Iterable[float], prices: Iterable[float]) -> None:
        t = np.asarray(list(times) if not isinstance(times, np.ndarray) else times, dtype=np.float64)
        p = np.asarray(list(prices) if not isinstance(prices, np.ndarray) else prices, dtype=np.float64)
        if t.ndim != 1 or t.shape != p.shape or t.size == 0:
            raise ConfigError("a price series needs equally many times and prices, at least one")
        if np.any(np.diff(t) <= 0):
            raise ConfigError("price series times must be strictly increasing")
        if np.any(~np.isfinite(p)) or np.any(p <= 0):  # zero: see docs/decisions.md
            raise ConfigError("prices must be finite and positive")
        self.times = t
        self.prices = p
        # _cum[i] = integral of the price from times[0] to times[i], in $*s/h
        self._cum = np.concatenate([[0.0], np.cumsum(p[:-1] * np.diff(t))])
        # the same numbers as Python lists: a scalar lookup is a bisect, not a numpy call
        # (the engine asks at every release), with the same float arithmetic after
        self._t = t.tolist()
        self._p = p.tolist()
        self._c = self._cum.tolist()

    @classmethod
    def constant(cls, price: float) -> PriceSeries:
        return cls([0.0], [price])

    @property
    def is_constant(self) -> bool:
        return self.times.size == 1

    def at(self, t: float) -> float:
        i = bisect_right(self._t, t) - 1
        return self._p[max(i, 0)]

    def next_change(self, t: float) -> float:
        """First change time strictly after ``t`` (``inf`` if none)."""
        i = bisect_right(self._t, t)
        return self._t[i] if i < len(self._t) else math.inf

    def _antiderivative(self, t: float) -> float:
        t0 = self._t[0]
        if t <= t0:
            return self._p[0] * (t - t0)
        i = bisect_right(self._t, t) - 1
        return self._c[i] + self._p[i] * (t - self._t[i])

    def cost(self, t0: float, t1: float) -> float:
        """Dollars for holding one instance over ``[t0, t1]`` at this price (per-second billing)."""
        if t1 <= t0:
            return 0.0
        if len(self._t) == 1:
            return self._p[0] * (t1 - t0) / 3600.0
        return (self._antiderivative(t1) - self._antiderivative(t0)) / 3600.0


class PriceBook:
    """Price series for every (type, market) a replay may use."""

    def __init__(self, catalog: Catalog, series: Mapping[tuple[str, str], PriceSeries], name: str = "") -> None:
        self.catalog = catalog
        self.name = name
        self._series = dict(series)
        for name_, market in self._series:
            if name_ not in catalog:
                raise ConfigError(f"price series for unknown instance type {name_!r}")
            if market not in MARKETS:
                raise ConfigError(f"unknown market {market!r}; known: {', '.join(MARKETS)}")

    @classmethod
    def on_demand(cls, catalog: Catalog) -> PriceBook:
        """Constant on-demand prices (and reserved rates where the catalog lists them)."""
        series = {(t.name, ON_DEMAND): PriceSeries.constant(t.ondemand_hourly) for t in catalog}
        for t in catalog:
            if t.reserved_hourly is not None:
                series[(t.name, RESERVED)] = PriceSeries.constant(t.reserved_hourly)
        return cls(catalog, series, name=f"{catalog.name}-on-demand")

    def with_series(self, extra: Mapping[tuple[str, str], PriceSeries], name: str = "") -> PriceBook:
        merged = dict(self._series)
        merged.update(extra)
        return PriceBook(self.catalog, merged, name=name or self.name)

    def markets(self) -> set[str]:
        return {m for _, m in self._series}

    def has(self, itype: str, market: str) -> bool:
        return (itype, market) in self._series

    def series(self, itype: str, market: str) -> PriceSeries:
        try:
            return self._series[(itype, market)]
        except KeyError:
            raise ConfigError(f"no {market} price for instance type {itype!r}") from None

    def price(self, itype: str, market: str, t: float) -> float:
        return self.series(itype, market).at(t)

    def next_change(self, itype: str, market: str, t: float) -> float:
        return self.series(itype, market).next_change(t)

    def cost(self, itype: str, market: str, t0: float, t1: float) -> float:
        return self.series(itype, market).cost(t0, t1)
