"""Choosing the market a replay acquires in, and the prices that go with it."""

from __future__ import annotations

from stratus.base.errors import ConfigError
from stratus.pricing.prices import MARKETS, ON_DEMAND, SPOT, PriceBook, PriceSeries


def shifted(book: PriceBook, market: str, shift_s: float) -> PriceBook:
    """``book`` with ``market``'s series moved so that price-trace time ``shift_s`` is
    replay time 0 (to replay a trace against a later stretch of a price history)."""
    if not shift_s:
        return book
    extra = {}
    for t in book.catalog:
        if book.has(t.name, market):
            s = book.series(t.name, market)
            extra[(t.name, market)] = PriceSeries(s.times - shift_s, s.prices)
    return book.with_series(extra, name=f"{book.name}+{shift_s:g}s")


def spot_book(catalog, path: str | None = None, zone: str | None = None,
              start_s: float = 0.0) -> PriceBook:
    """On-demand prices plus spot series: from ``path`` (AWS history: JSON, CSV/TSV, text,
    or the compact Parquet; it must price every catalog type) or, without one, the synthetic
    model for the catalog's types (the bundled trace for m4; ``default_spot_book``)."""
    from stratus.pricing.spot import load_spot_history, spot_price_book
    from stratus.pricing.synthetic_spot import default_spot_book

    if path:
        book = spot_price_book(catalog, load_spot_history(path, zone=zone))
    else:
        if zone:
            raise ConfigError("--spot-zone needs --spot-prices (the bundled trace has one zone)")
        book = default_spot_book(catalog)
    return shifted(book, SPOT, start_s)


def configure_market(cfg, market: str, spot_prices: str | None = None,
                     spot_zone: str | None = None, spot_start_s: float = 0.0) -> None:
    """Set ``cfg.market`` and the price book it needs."""
    if market not in (ON_DEMAND, SPOT):
        known = ", ".join(m for m in MARKETS if m != "reserved")
        raise ConfigError(f"unknown market {market!r} for elastic acquisitions; known: {known}")
    cfg.market = market
    if market == ON_DEMAND:
        if spot_prices:
            raise ConfigError("--spot-prices given with --market on-demand")
        cfg.prices = PriceBook.on_demand(cfg.catalog)
    else:
        cfg.prices = spot_book(cfg.catalog, spot_prices, spot_zone, spot_start_s)
