"""A replay's configuration (``ReplayConfig``) and its one resolution (``resolve``).

``resolve`` is the one way a configuration becomes the run's own: the replay engine
(stratus.sim.engine), the live mirror (stratus.live.mirror) and the Fargate model
(stratus.fargate) all call it, so they fill in and refuse alike.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import Protocol

from stratus.base.bounds import MAX_HOURS, MAX_SPINUP_S, MAX_TICK_S
from stratus.base.errors import ConfigError
from stratus.pricing.catalog import M4, Catalog
from stratus.pricing.prices import SPOT, PriceBook
from stratus.sim.estimate import Estimator, OracleEstimator
from stratus.sim.faults import Faults
from stratus.sim.footprint import DEFAULT as DEFAULT_FOOTPRINT
from stratus.sim.footprint import footprint_fraction


class PlanTerms(Protocol):
    """What the core reads of a savings plan (``stratus.commitments.savings.SavingsPlan``
    implements it; the core names no commitment type): the view's headroom and price at
    the margin."""

    hourly_usd: float
    discount: float

    def headroom(self, od_rate: float) -> float: ...
    def marginal(self, price: float, od_rate: float) -> float: ...


#: a config field that only an add-on acts on (``AddOn.claims``); the core refuses a run
#: where such a field is set and no add-on of the run claims it, so it is never ignored
ADDON = {"addon": True}


@dataclass
class ReplayConfig:
    """Everything about the simulated cloud that is not the workload or the policy.

    A replay reads it and never writes it, so one config serves any number of replays
    alike; an online-learning ``estimator`` learns on the replay's own copy (``Engine``)."""

    tick_s: float = 60.0
    spinup_s: tuple[float, float] = (30.0, 160.0)  # Stratus §4.1
    migration_mbps: float = 160.0  # Stratus §4.1 (HotSpot's measured rate)
    # Stratus §4.1: a migration moves the container's memory footprint. "request" takes the
    # memory request as the footprint; "usage:F" a fraction F of it (docs/decisions.md).
    migration_footprint: str = DEFAULT_FOOTPRINT
    market: str = SPOT  # Stratus §3.3/§4.1: spot instances, bid = on-demand price
    markets: tuple[str, ...] | None = None  # markets acquisitions may use; default (market,)
    seed: int = 0
    catalog: Catalog = M4
    prices: PriceBook | None = None
    estimator: Estimator | None = None  # None: perfect knowledge (an OracleEstimator)
    readjust: bool = True  # Stratus §3.4 heuristic 1
    record: bool = False  # keep per-interval logs for invariant checks
    # stall guard: ticks in a row with no task finishing and none running without loss
    max_idle_ticks: int = 100_000
    max_hours: float | None = None  # guard: stop this many simulated hours after the start
    faults: Faults | None = None  # the cloud's own faults (stratus.sim.faults); None: none
    max_restarts: int = 100  # crash-loop guard: stop when a hopeless task lost this many runs
    anti_affinity: bool = True  # honour the trace's anti_affinity column (docs/decisions.md)
    # reserved instances (stratus.commitments.reserved): ((type name, count), ...), ready from the first
    # tick to the end, billed for that whole horizon; parse_reserved reads TYPE:COUNT,...
    reserved: tuple[tuple[str, int], ...] = field(default=(), metadata=ADDON)
    # their rate: (1 - D) x on-demand; None: the catalog's reserved rate, else 0.4 x on-demand
    reserved_discount: float | None = None
    # a waiting policy at the door of the reserved instances (stratus.commitments.gate.Waiting;
    # parse_waiting reads POLICY[:b=,t=,share=]); None: every task goes to the scheduler
    waiting: object | None = field(default=None, metadata=ADDON)
    # a savings plan (stratus.commitments.savings): C $/hour committed from the first tick to the end,
    # discounting on-demand usage up to it; on-demand joins the allowed markets
    savings_plan: PlanTerms | None = field(default=None, metadata=ADDON)
    # called at every tick with (simulated time, tasks done, tasks); its close(), if it has
    # one, when the replay ends, however it ends (stratus.app.progress.ProgressBar)
    progress: Callable[[float, int, int], None] | None = field(default=None, repr=False)

    def validate(self) -> None:
        # the ranges the options take (stratus.base.bounds); below 1 s only for tests of the
        # engine's own arithmetic, which the options never reach
        if not (0 < self.tick_s <= MAX_TICK_S):
            raise ConfigError(f"tick takes a number of seconds > 0 and <= {MAX_TICK_S:g}, got "
                              f"{self.tick_s}")
        lo, hi = self.spinup_s
        if not (0 <= lo <= hi <= MAX_SPINUP_S):
            raise ConfigError(f"spin-up range must satisfy 0 <= lo <= hi <= {MAX_SPINUP_S:g} "
                              f"s, got {self.spinup_s}")
        if not self.migration_mbps > 0:
            raise ConfigError(f"migration rate must be positive, got {self.migration_mbps}")
        if self.max_hours is not None and not 0 < self.max_hours <= MAX_HOURS:
            raise ConfigError(f"--max-hours takes a number of hours > 0 and <= "
                              f"{MAX_HOURS:g}, got {self.max_hours}")
        footprint_fraction(self.migration_footprint)
        if not (isinstance(self.max_restarts, int) and self.max_restarts >= 1):
            raise ConfigError(f"max_restarts must be an integer >= 1, got {self.max_restarts!r}")
        if self.faults is not None:
            if not isinstance(self.faults, Faults):
                raise ConfigError(f"ReplayConfig.faults takes a Faults object, got "
                                  f"{self.faults!r} (stratus.sim.faults.parse_faults reads a spec)")
            self.faults.validate()
        # the add-ons' own fields (reserved, waiting, savings_plan) are checked by the
        # add-ons (stratus.commitments.addons.addons_for); ``resolve`` refuses them unclaimed


def resolve(cfg: ReplayConfig, addons=(), default_estimator: Callable[[], Estimator]
            = OracleEstimator, copy_learner: bool = True) -> ReplayConfig:
    """The run's own copy of ``cfg``, checked and filled in: prices (the market's book
    when none), the catalog the prices are for, the allowed markets (``markets``, a tuple),
    what the add-ons add (``AddOn.configure``: reserved rates, the savings plan's market),
    and an estimator (``default_estimator()`` when none; an online learner copied, so
    the caller's learns nothing from this run, unless not ``copy_learner``: the live
    loop's mirrors learn on one). ``cfg`` itself is never written.
    Refuses, with one ConfigError line, an add-on's field (``ADDON``) that no add-on of
    the run claims (``AddOn.claims``), a default market outside the allowed ones and an
    allowed market without prices for every type of the catalog."""
    cfg.validate()
    claimed = {name for addon in addons for name in addon.claims}
    for f in fields(cfg):
        if f.metadata.get("addon") and getattr(cfg, f.name) and f.name not in claimed:
            raise ConfigError(f"ReplayConfig.{f.name} is set, and no add-on of this run acts "
                              f"on it (build the run with its add-ons: "
                              f"stratus.replays.engine, or stratus.commitments.addons_for)")
    cfg = replace(cfg)
    if cfg.prices is None:
        from stratus.sim.markets import configure_market

        configure_market(cfg, cfg.market)
    if cfg.prices.catalog is not cfg.catalog:
        cfg.catalog = cfg.prices.catalog
    cfg.markets = tuple(cfg.markets or (cfg.market,))
    for addon in addons:
        addon.configure(cfg)
    prices, markets = cfg.prices, cfg.markets
    if cfg.market not in markets:
        raise ConfigError(f"default market {cfg.market!r} is not among allowed markets {markets}")
    for m in markets:
        missing = [t.name for t in cfg.catalog if not prices.has(t.name, m)]
        if missing:
            raise ConfigError(f"no {m} prices for {', '.join(missing)} in price book {prices.name!r}")
    if cfg.estimator is None:
        cfg.estimator = default_estimator()
    elif not isinstance(cfg.estimator, Estimator):  # names are the application's to resolve
        raise ConfigError(f"ReplayConfig.estimator takes an Estimator object, got "
                          f"{cfg.estimator!r} (stratus.app.registry.make_estimator "
                          f"resolves a name)")
    elif cfg.estimator.learns_online and copy_learner:
        # an online learner learns on a copy: the caller's keeps its warm-up fit and
        # learns nothing from this replay (docs/decisions.md, "Reusable objects")
        cfg.estimator = copy.deepcopy(cfg.estimator)
    return cfg


__all__ = ["ReplayConfig", "resolve"]
