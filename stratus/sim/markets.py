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


def check_spot_window(book: PriceBook, start_s: float, end_s: float,
                      spot_start_s: float = 0.0) -> None:
    """Refuse a replay whose window, trace time [start_s, end_s], lies wholly outside the
    spot price history once ``--spot-start`` has lined the two up: every price would be the
    history's first or last one, held (a price series is not cycled, docs/decisions.md),
    and the replay a constant-price one that looks like a replay of the history. A history
    without a change (one price per type) lines up with any window."""
    spot = [book.series(t.name, SPOT) for t in book.catalog if book.has(t.name, SPOT)]
    if not spot or all(s.is_constant for s in spot) or not end_s >= start_s:
        return
    lo = min(float(s.times[0]) for s in spot)  # replay time (the book is shifted)
    hi = max(float(s.times[-1]) for s in spot)
    if start_s <= hi and end_s >= lo:
        return
    ss = spot_start_s
    held = "last" if start_s > hi else "first"
    raise ConfigError(
        f"--spot-start {ss:.10g}: the replay's window, trace time [{start_s:.10g}, "
        f"{end_s:.10g}] s, falls at [{start_s + ss:.10g}, {end_s + ss:.10g}] s of the spot "
        f"price history, whose prices change from {lo + ss:.10g} to {hi + ss:.10g} s: wholly "
        f"outside it, every spot price would be the history's {held}, held; give "
        f"--spot-start in [{lo + ss - end_s:.10g}, {hi + ss - start_s:.10g}]")


def check_trace_spot_window(book: PriceBook, trace, spot_start_s: float = 0.0) -> None:
    """``check_spot_window`` for the window of ``trace``: its first submit to its last end."""
    if len(trace):
        sub = trace.column("submit_s")
        check_spot_window(book, float(sub.min()), float((sub + trace.column("runtime_s")).max()),
                          spot_start_s)
