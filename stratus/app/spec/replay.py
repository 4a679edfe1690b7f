"""The specs of the replay commands: the trace window, the cloud, ``replay``, ``compare``,
``sensitivity`` and ``estimate``."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import ClassVar

from stratus.app.spec.fields import (
    CATALOG_HELP,
    Bad,
    Spec,
    _cache_dir,
    _catalog,
    _discount,
    _estimator,
    _faults,
    _footprint,
    _market,
    _on_off,
    _path,
    _reserved,
    _savings_plan,
    _scheduler,
    _spinup,
    _trace,
    _waiting,
    _warmup,
    flag,
    instant,
    names,
    number,
    numbers,
    opt,
    seconds,
    span_hours,
    text,
    tick_seconds,
)
from stratus.base.errors import ConfigError


@dataclass(frozen=True, kw_only=True)
class WindowSpec(Spec):
    """The trace and the window cut from it (Stratus §4.2: seeded random 1-day slices)."""
    trace: str = opt(check=_trace, help="synthetic:NAME[?k=v&...] or a trace file")
    format: str | None = opt(None, text(optional=True, what="a trace format name"),
                             help="trace file format, e.g. swf, google2011, umass, "
                                  "generic?... (see `stratus traces formats`)")
    hours: float | None = opt(None, span_hours(optional=True),
                              help="length of the window in hours")
    start: float | None = opt(None, instant(optional=True),
                              help="window start, seconds of trace time")
    slice: int | None = opt(None, number("an integer", 0, integer=True, optional=True),
                            metavar="K", help="use seeded random window K of --slices "
                                              "(Stratus §4.2: 1-day ranges)")
    slices: int | None = opt(None, number("an integer", 1, integer=True, optional=True),
                             metavar="N", help="number of random windows --slice picks from "
                             "(20); compare and sensitivity without --slice: run slices "
                             "0..N-1 and report the spread")
    seed: int = opt(0, number("an integer", 0, integer=True, hi=2**63 - 1),
                    help="seed for workload, spin-up, noise, slices")
    # where a loaded raw-format trace is kept (traces/cache.py): never part of a result
    cache_dir: str | None = opt(None, _cache_dir, metavar="DIR", identity=False,
                                help="cache of loaded raw-format traces (default: "
                                     "$STRATUS_CACHE_DIR, else $XDG_CACHE_HOME/stratus, else "
                                     "~/.cache/stratus)")
    no_cache: bool = opt(False, flag, cli="flag", identity=False,
                         help="load the trace from its raw files; read and write no cache")

    def check(self) -> None:
        super().check()
        if self.no_cache and self.cache_dir is not None:
            from stratus.app.spec.fields import LABEL

            label = LABEL.get()
            raise ConfigError(f"{label('no_cache')} and {label('cache_dir')}: give one, not "
                              "both")
        if self.slice is not None and not self.slice < (self.slices or 20):
            raise ConfigError(f"slice {self.slice} is out of range: there are "
                              f"{self.slices or 20} slices (0..{(self.slices or 20) - 1})")

    def window(self) -> dict:
        return {k: getattr(self, k) for k in WINDOW_KEYS}

    def trace_cache(self):
        """The trace cache this spec names (None: off)."""
        from stratus.traces.cache import trace_cache

        return trace_cache(self.cache_dir, not self.no_cache)


WINDOW_KEYS = ("trace", "format", "hours", "start", "slice", "slices", "seed")


@dataclass(frozen=True, kw_only=True)
class SpotPrices(Spec):
    """Where spot prices come from: an AWS price history, or the synthetic model."""
    spot_prices: str | None = opt(None, _path, metavar="FILE",
                                  help="AWS spot price history (JSON, CSV/TSV, text, Parquet); "
                                       "default: synthetic (the bundled trace for m4)")
    spot_zone: str | None = opt(None, text(optional=True),
                                help="availability zone to take from --spot-prices")
    spot_start: float = opt(0.0, instant(),
                            help="seconds into the spot history that line up with trace "
                                 "time 0")


@dataclass(frozen=True, kw_only=True)
class CloudSpec(WindowSpec, SpotPrices):
    """The simulated cloud a replay runs in, and the estimator it predicts with."""
    tick: float = opt(60.0, tick_seconds(),
                      help="scheduling interval in seconds (1 to 3600)")
    market: str = opt("spot", _market,
                      help="market for acquisitions: spot (bid = on-demand) or on-demand")
    estimator: str | None = opt(None, _estimator,
                                help="oracle, noisy:H, requested, history or history:OPTS "
                                     "(censored, cold, requested, '+'-joined; default: the "
                                     "scheduler's, else oracle)")
    warmup_hours: str = opt("auto", _warmup, metavar="H|auto",
                            help="history a learning estimator trains on before the window "
                                 "(auto: the window's length, 1 to 24 hours)")
    catalog: str = opt("m4", _catalog, metavar="NAME|FILE", help=CATALOG_HELP)
    drop_oversized: bool = opt(False, flag, cli="flag",
                               help="drop jobs with a task larger than every instance type "
                                    "(reported)")
    spinup: str = opt("30,160", _spinup, help="instance spin-up range LO,HI seconds")
    migration_mbps: float = opt(160.0, number("a rate in Mbit/s", 0, above=True),
                                help="migration rate, Mbit/s")
    migration_footprint: str = opt("request", _footprint, metavar="request|usage:F",
                                   help="memory a migration moves: the request or F in "
                                        "(0, 1] of it")
    max_hours: float | None = opt(None, span_hours(optional=True), metavar="H",
                                  help="stop a replay H simulated hours after it starts; "
                                       "tasks not done by then are reported unfinished "
                                       "(default: run until every task is done or capacity "
                                       "can never be had)")
    faults: str | None = opt(None, _faults, metavar="crash:R,ice:P[,ice-window:S]",
                             help="the cloud's own faults (seeded): instances crash at R per "
                                  "instance-hour; a tick's launch call for a type is refused "
                                  "with probability P (known at once), and with ice-window "
                                  "the type stays unavailable S seconds (default: none)")
    reserved: str | None = opt(None, _reserved, metavar="TYPE:COUNT[,TYPE:COUNT...]",
                               help="reserved instances of --catalog types, up from the first "
                                    "tick to the end and billed for all of it, used or not; "
                                    "never released, revoked or crashed (default: none)")
    reserved_discount: float | None = opt(None, _discount, metavar="D",
                                          help="price --reserved instances at (1 - D) x "
                                               "on-demand, D in [0, 1) (default: the "
                                               "catalog's reserved rate, else D = 0.6)")
    waiting: str | None = opt(None, _waiting, metavar="POLICY[:b=S,t=S,share=on|off]",
                              help="a waiting policy for the --reserved instances (paper 000 "
                                   "§3-4): njw, ajw, ajw-t:b=S, sww:b=S, ljw:t=S or "
                                   "compound:b=S,t=S; each task arriving when reserved room "
                                   "cannot take it waits for it or goes to the scheduler; "
                                   "share=off keeps the scheduler off reserved room "
                                   "(default: none, the scheduler fills reserved first)")
    savings_plan: str | None = opt(None, _savings_plan, metavar="USD_PER_HOUR[:DISCOUNT]",
                                   help="a savings plan: USD_PER_HOUR committed every hour "
                                        "from the first tick to the end, used or not; "
                                        "on-demand usage up to it at (1 - DISCOUNT) x "
                                        "on-demand, beyond it at on-demand (DISCOUNT in [0, "
                                        "1), default 0.5); stratus may then acquire on "
                                        "demand in a spot replay (default: none)")
    anti_affinity: str = opt("on", _on_off, choices=("on", "off"),
                             help="honour the trace's anti_affinity flags: no two flagged "
                                  "tasks of one job on one instance at once (off ignores them)")

    def check(self) -> None:
        super().check()
        if self.market == "on-demand" and self.spot_prices:
            raise ConfigError("--spot-prices given with --market on-demand")
        if self.spot_zone and not self.spot_prices:
            raise ConfigError("--spot-zone needs --spot-prices (the bundled trace has one "
                              "zone)")
        if self.reserved is not None:
            from stratus.app.spec.fields import LABEL
            from stratus.commitments.reserved import check_reserved, parse_reserved
            from stratus.pricing.catalog_files import get_catalog

            check_reserved(parse_reserved(self.reserved), get_catalog(self.catalog),
                           LABEL.get()("reserved"))
        if self.waiting is not None and self.reserved is None and not self.reserved_later():
            raise ConfigError("--waiting needs reserved instances to wait for "
                              "(--reserved TYPE:COUNT)")

    def check_cost_models(self, names) -> None:
        """Refuse a cost model (fargate) beside reserved instances: it bills tasks, not
        instances, so it would pay none of the commitment the policies pay (issue 36)."""
        if self.reserved is None and not self.reserved_later():
            return
        from stratus.app.registry import is_cost_model
        from stratus.app.spec.fields import LABEL

        models = [n for n in names if is_cost_model(n)]
        if models:
            what = LABEL.get()("reserved") if self.reserved is not None else "--commit"
            raise ConfigError(f"{what} cannot be combined with the cost "
                              f"model {models[0]}: it bills tasks, not instances, so it would "
                              "not pay for the reserved instances the other schedulers pay "
                              f"for; drop {models[0]} or the reserved instances")

    def reserved_later(self) -> bool:
        """Whether the reserved instances are chosen after this check (the advisor's)."""
        return False

    def cloud(self, **changes) -> CloudSpec:
        """Just the cloud and the window (what one replay needs), with ``changes``."""
        names = [f.name for f in fields(CloudSpec)]
        return CloudSpec(**{**{n: getattr(self, n) for n in names}, **changes})

    def spinup_range(self) -> tuple[float, float]:
        lo, hi = (float(x) for x in self.spinup.split(","))
        return lo, hi


@dataclass(frozen=True, kw_only=True)
class ReplaySpec(CloudSpec):
    command: ClassVar[str] = "replay"
    scheduler: str = opt("stratus", _scheduler, help="see `stratus schedulers`")

    def check(self) -> None:
        super().check()
        self.check_cost_models([self.scheduler])


def _jobs(v):
    try:
        return number("an integer", 1, integer=True, optional=True)(v)
    except Bad:
        raise Bad(f"must be at least 1, got {v}") from None



@dataclass(frozen=True, kw_only=True)
class CompareSpec(CloudSpec):
    command: ClassVar[str] = "compare"
    schedulers: tuple[str, ...] | None = opt(
        None, names(), help="comma-separated names (default: every policy; cost models such "
                            "as fargate by name)")
    jobs: int | None = opt(None, _jobs, metavar="N", identity=False,
                           help="replay schedulers in N processes (default: one per core; 1: "
                                "serially in this process)")

    def check(self) -> None:
        super().check()
        _check_slice_plan(self)
        if self.schedulers:  # each checked, its parameters in canonical form
            object.__setattr__(self, "schedulers", _canonical(self.schedulers))
            self.check_cost_models(self.schedulers)


@dataclass(frozen=True, kw_only=True)
class SensitivitySpec(CloudSpec):
    command: ClassVar[str] = "sensitivity"
    h: tuple[float, ...] = opt((0.01, 0.1, 1.0, 10.0, 100.0),
                               numbers("positive numbers"), metavar="LIST",
                               help="estimate-error factors, comma-separated")
    schedulers: tuple[str, ...] = opt(("stratus", "stratus-noclear"), names(False),
                                      help="comma-separated names; the first is the "
                                           "reference")
    jobs: int | None = opt(None, _jobs, metavar="N", identity=False,
                           help="replays in N processes (default: one per core)")

    def check(self) -> None:
        super().check()
        if self.estimator is not None:
            raise ConfigError("sensitivity sets the estimator itself (noisy:h); drop "
                              "--estimator")
        _check_slice_plan(self)
        object.__setattr__(self, "schedulers", _canonical(self.schedulers))
        self.check_cost_models(self.schedulers)


def _canonical(given: tuple[str, ...]) -> tuple[str, ...]:
    """Each name checked and in canonical form; two names of one scheduler
    (``scloud+pack`` and ``scloud?pack=true``) are refused, as two equal names are."""
    out: dict[str, str] = {}
    for n in given:
        c = _scheduler(n)
        if c in out:
            raise ConfigError(f"--schedulers names one scheduler twice: {out[c]!r} and {n!r} "
                              f"(both {c})")
        out[c] = n
    return tuple(out)


def _check_slice_plan(s: WindowSpec) -> None:
    if s.slices is not None and s.slice is None and s.start is not None:
        raise ConfigError("--slices N replays N random windows: it cannot be combined with "
                          "--start (use --slice K to pick one)")


def slice_plan(s: WindowSpec) -> list[int | None]:
    """The slices a compare or sensitivity run replays: [None] for the one window the trace
    options name; slices 0..N-1 for --slices N without --slice."""
    if s.slice is not None or s.slices is None:
        return [None]
    return list(range(s.slices))


@dataclass(frozen=True, kw_only=True)
class EstimateSpec(WindowSpec):
    command: ClassVar[str] = "estimate"
    estimator: str = opt("history", _estimator,
                         help="oracle, noisy:H, requested, history or history:OPTS")
    warmup_hours: str = opt("auto", _warmup, metavar="H|auto",
                            help="history a learning estimator trains on before the window")




COMMITS = ("reserved", "savings-plan")
PLAN_DISCOUNT = 0.5  # stratus.commitments.savings.DEFAULT_DISCOUNT (a test holds them equal)


@dataclass(frozen=True, kw_only=True)
class CommitSpec(ReplaySpec):
    """``stratus advise --commit``: the reserved mix or savings-plan level that minimizes
    the bill of the unified replay (the window, cloud, scheduler and waiting policy as a
    replay takes them)."""
    command: ClassVar[str] = "advise-commit"
    commit: str = opt(check=text(COMMITS), choices=COMMITS,
                      help="what to buy: a reserved mix (count per type) or a savings-plan "
                           "level ($/h)")
    slot: float = opt(3600.0, seconds(60.0, hi=86400.0),
                      help="the MILP's time slot over the load curve, s (60 to 86400)")
    replays: int = opt(10, number("a whole number", 3, integer=True, hi=200), metavar="N",
                       help="at most N replays in the search")
    plan_discount: float = opt(PLAN_DISCOUNT, _discount, metavar="D",
                               help="(--commit savings-plan) the plan's discount on "
                                    "on-demand usage, D in [0, 1)")
    jobs: int | None = opt(None, _jobs, metavar="N", identity=False,
                           help="replays in N processes (default: one per core)")

    def reserved_later(self) -> bool:
        return self.commit == "reserved"

    def check(self) -> None:
        super().check()
        if self.commit == "reserved" and self.reserved is not None:
            raise ConfigError("--commit reserved chooses the reserved mix itself; drop "
                              "--reserved")
        if self.commit == "savings-plan" and self.savings_plan is not None:
            raise ConfigError("--commit savings-plan chooses the plan's level itself; drop "
                              "--savings-plan (--plan-discount sets its discount)")
