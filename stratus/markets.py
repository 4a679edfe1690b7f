"""Choosing the market a replay acquires in, and the prices that go with it."""

from __future__ import annotations

from pricing.prices import MARKETS, ON_DEMAND, PriceBook
from stratus.errors import ConfigError


def configure_market(cfg, market: str) -> None:
    """Set ``cfg.market`` and the price book it needs."""
    if market not in MARKETS:
        raise ConfigError(f"unknown market {market!r}; known: {', '.join(MARKETS)}")
    if market == ON_DEMAND:
        cfg.market = ON_DEMAND
        cfg.prices = PriceBook.on_demand(cfg.catalog)
        return
    raise ConfigError(f"market {market!r} needs a price trace, which this build does not have")
