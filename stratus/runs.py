"""Replays as the command line configures them."""

from __future__ import annotations

from collections.abc import Callable

from stratus.errors import ConfigError
from stratus.registry import SchedulerSpec


def spinup_range(text: str) -> tuple[float, float]:
    try:
        lo, hi = (float(x) for x in text.split(","))
    except ValueError:
        raise ConfigError(f"--spinup takes LO,HI in seconds, got {text!r}") from None
    return lo, hi


def estimator_name(args, spec: SchedulerSpec) -> str:
    """The estimator a replay of ``spec`` uses: --estimator, else the scheduler's own."""
    return args.estimator or spec.estimator or "oracle"


def learns_online(args, spec: SchedulerSpec) -> bool:
    from stratus.estimators import make_estimator

    return make_estimator(estimator_name(args, spec), args.seed).learns_online


def replay_one(args, trace, spec: SchedulerSpec, history: Callable[[], object],
               warmup_h: float | None = None, progress: bool = False):
    """Replay ``trace`` under scheduler ``spec`` with the cloud options in ``args``.
    ``history()`` gives the warm-up trace (or None), ``warmup_h`` hours of it; it is called
    only for an estimator that learns, so a replay that needs none never loads it."""
    from pricing.catalog import get_catalog
    from stratus.engine import Engine, ReplayConfig
    from stratus.estimators import make_estimator
    from stratus.markets import configure_market
    from stratus.progress import ProgressBar

    cfg = ReplayConfig(tick_s=args.tick, spinup_s=spinup_range(args.spinup),
                       migration_mbps=args.migration_mbps,
                       migration_footprint=args.migration_footprint, seed=args.seed,
                       catalog=get_catalog(args.catalog))
    configure_market(cfg, args.market, args.spot_prices, args.spot_zone, args.spot_start)
    est = make_estimator(estimator_name(args, spec), args.seed)
    if est.learns_online:
        hist = history()
        if hist is not None:
            est.fit(hist)
    cfg.estimator = est
    if progress and ProgressBar.wanted():
        cfg.progress = ProgressBar(spec.name)
    res = Engine(trace, spec.factory(), cfg).run()
    if est.learns_online and warmup_h is not None:
        res.summary["estimator_warmup_hours"] = round(max(0.0, warmup_h), 4)
    return res
