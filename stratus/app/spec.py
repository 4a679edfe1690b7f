"""Typed run specifications: one frozen dataclass per command, each option a field with
exactly one default and one validator. The CLI parses argv into a spec, a sweep builds its
cells' specs from TOML, and the Python API's keyword arguments are the fields; all three
meet here, so one cell has one canonical form and one key wherever it was written.

A validator takes what a user can write (a string from argv, a TOML or Python value) and
returns the canonical value, or raises ``Bad`` with what it takes; the spec turns that into
one ConfigError naming the option in the caller's terms (``--hours`` on the command line,
``grid[0].hours`` in a sweep config, ``hours`` in Python)."""

from __future__ import annotations

import contextvars
import dataclasses
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, ClassVar

from stratus.errors import ConfigError

MIN_TICK_S = 1.0  # a finer tick makes a day's replay millions of scheduling rounds
CATALOG_HELP = ("instance catalog: a built-in name (see `stratus catalogs`) or your own "
                "catalog file, .toml or .csv")


class Bad(ValueError):
    """A value an option does not take; the message says what it takes."""


def _api_label(name: str) -> str:
    return name


#: how an option is named in an error: by the caller (CLI, sweep config, API)
LABEL: contextvars.ContextVar[Callable[[str], str]] = contextvars.ContextVar(
    "stratus_spec_label", default=_api_label)


@contextmanager
def labelled(label: Callable[[str], str]) -> Iterator[None]:
    token = LABEL.set(label)
    try:
        yield
    finally:
        LABEL.reset(token)


def cli_label(name: str) -> str:
    return "--" + name.replace("_", "-")


# --- validators -----------------------------------------------------------------------------
def number(what: str, lo: float | None = None, above: bool = False, hi: float | None = None,
           integer: bool = False, optional: bool = False) -> Callable[[Any], Any]:
    """A finite number (an integer with ``integer``) >= lo (> lo with ``above``), <= hi."""
    def check(v):
        if v is None and optional:
            return None
        x = None
        if isinstance(v, str):
            try:
                x = int(v) if integer else float(v)
            except ValueError:
                x = None
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            x = v
            if integer and isinstance(v, float):
                x = int(v) if v.is_integer() else None
        ok = x is not None and math.isfinite(x) and (
            lo is None or (x > lo if above else x >= lo)) and (hi is None or x <= hi)
        if not ok:
            bound = "" if lo is None else f" {'>' if above else '>='} {lo:g}"
            bound += "" if hi is None else f" and <= {hi:g}"
            raise Bad(f"takes {what}{bound}, got {v!r}")
        return int(x) if integer else float(x)
    return check


def text(choices: tuple[str, ...] | None = None, optional: bool = False,
         what: str = "a string") -> Callable[[Any], Any]:
    def check(v):
        if v is None and optional:
            return None
        if not isinstance(v, str) or (choices is None and not v.strip()):
            raise Bad(f"takes {what}, got {v!r}")
        if choices is not None and v not in choices:
            raise Bad(f"takes {' or '.join(choices)}, got {v!r}")
        return v
    return check


def flag(v):
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.lower() in ("true", "false"):
        return v.lower() == "true"
    raise Bad(f"takes true or false, got {v!r}")


def names(default_ok: bool = True) -> Callable[[Any], Any]:
    """Comma-separated names or a list of them, as a tuple (None: the command's default)."""
    def check(v):
        if v is None and default_ok:
            return None
        items = v.split(",") if isinstance(v, str) else v
        if not isinstance(items, (list, tuple)) or not all(isinstance(x, str) for x in items):
            raise Bad(f"takes comma-separated names or a list of names, got {v!r}")
        out = tuple(x.strip() for x in items if x.strip())
        if not out:
            raise Bad("names nothing")
        if len(set(out)) != len(out):
            raise Bad(f"names one twice: {v!r}")
        return out
    return check


def numbers(what: str, lo: float = 0.0, above: bool = True) -> Callable[[Any], Any]:
    one = number(what, lo, above=above)

    def check(v):
        items = v.split(",") if isinstance(v, str) else v
        if not isinstance(items, (list, tuple)):
            items = [items]
        vals = [one(x.strip() if isinstance(x, str) else x) for x in items
                if not (isinstance(x, str) and not x.strip())]
        if not vals:
            raise Bad(f"takes comma-separated {what}, got {v!r}")
        return tuple(sorted(set(vals)))
    return check


def _catalog(v):
    if not isinstance(v, str) or not v.strip():
        raise Bad(f"takes a catalog name or file, got {v!r}")
    from pricing.catalog_files import get_catalog

    get_catalog(v)  # an unknown name or a bad file: its own one-line error
    return v


def _scheduler(v):
    if not isinstance(v, str):
        raise Bad(f"takes a scheduler name, got {v!r}")
    from stratus.app.registry import get_spec

    get_spec(v)
    return v


def _estimator(v):
    if v is None:
        return None
    if not isinstance(v, str):
        raise Bad(f"takes oracle, noisy:H or history, got {v!r}")
    from stratus.app.registry import make_estimator

    make_estimator(v, 0)
    return v


def _warmup(v):
    from traces.spec import warmup_hours

    if isinstance(v, bool) or not isinstance(v, (str, int, float)):
        raise Bad(f"takes a number of hours or 'auto', got {v!r}")
    if isinstance(v, str) and v.strip().lower() == "auto":
        return "auto"
    warmup_hours(v, 1.0)
    return repr(float(v))


def _spinup(v):
    try:
        lo, hi = (float(x) for x in str(v).split(","))
    except ValueError:
        raise Bad(f"takes LO,HI in seconds, got {v!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and 0 <= lo <= hi):
        raise Bad(f"takes LO,HI in seconds with 0 <= LO <= HI, got {v!r}")
    return f"{lo!r},{hi!r}"


def _footprint(v):
    from stratus.footprint import footprint_name

    return footprint_name(str(v))


def _faults(v):
    if v is None:
        return None
    from stratus.faults import parse_faults

    parse_faults(str(v))
    return str(v)


def _market(v):
    if v not in ("spot", "on-demand"):
        raise ConfigError(f"unknown market {v!r} for elastic acquisitions; known: on-demand, "
                          f"spot")
    return v


def _on_off(v):
    if isinstance(v, bool):
        return "on" if v else "off"
    if v not in ("on", "off"):
        raise Bad(f"takes on or off, got {v!r}")
    return v


def _path(v):
    if v is None:
        return None
    if not isinstance(v, str) or not v:
        raise Bad(f"takes a file path, got {v!r}")
    return v


def _trace(v):
    if not isinstance(v, str) or not v.strip():
        raise Bad(f"takes synthetic:NAME[?k=v&...] or a trace file, got {v!r}")
    if v.startswith("synthetic:"):
        from traces.spec import parse_synthetic
        from traces.synthetic import checked

        name, params = parse_synthetic(v)
        checked(name, params)  # a bad name or parameter fails before any cell runs
    return v


def opt(default: Any = MISSING, check: Callable[[Any], Any] | None = None, help: str = "",
        metavar: str | None = None, cli: str = "value", identity: bool = True,
        choices: tuple[str, ...] | None = None) -> Any:
    """A spec field. ``cli``: "value" (--x V), "flag" (--x), "bool" (--x/--no-x) or "" (not
    on the command line); ``identity``: False for what does not change a result (--jobs)."""
    meta = {"check": check, "help": help, "metavar": metavar, "cli": cli,
            "identity": identity, "choices": choices}
    return field(default=default, metadata=meta)


# --- specs ----------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class Spec:
    """Validated on construction; ``canonical()`` is what names a run."""
    command: ClassVar[str] = ""

    def __post_init__(self) -> None:
        label = LABEL.get()
        for f in fields(self):
            check = f.metadata.get("check")
            if check is None:
                continue
            try:
                v = check(getattr(self, f.name))
            except Bad as exc:
                raise ConfigError(f"{label(f.name)} {exc}") from None
            except ConfigError as exc:  # a validator's own message: say which option
                msg = str(exc)
                where = label(f.name)
                raise ConfigError(msg if where in msg else f"{where}: {msg}") from None
            object.__setattr__(self, f.name, v)
        self.check()

    def check(self) -> None:
        """Checks across fields (after each field's own)."""

    @classmethod
    def option_names(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    @classmethod
    def build(cls, values: dict, label: Callable[[str], str] | None = None):
        """A spec from a mapping of option names; an unknown name is one ConfigError."""
        known = {f.name for f in fields(cls)}
        bad = sorted(set(values) - known)
        lab = label or LABEL.get()
        if bad:
            raise ConfigError(f"{lab(bad[0])}: not an option of {cls.command or cls.__name__}"
                              f" (known: {', '.join(sorted(known))})")
        with labelled(lab):
            return cls(**values)

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)

    def canonical(self) -> dict:
        """Every field that decides the result, defaults included: one cell, one form."""
        return {"command": self.command,
                **{f.name: _plain(getattr(self, f.name)) for f in fields(self)
                   if f.metadata.get("identity", True)}}


def _plain(v):
    return list(v) if isinstance(v, tuple) else v


@dataclass(frozen=True, kw_only=True)
class WindowSpec(Spec):
    """The trace and the window cut from it (Stratus §4.2: seeded random 1-day slices)."""
    trace: str = opt(check=_trace, help="synthetic:NAME[?k=v&...] or a trace file")
    format: str | None = opt(None, text(optional=True, what="a trace format name"),
                             help="trace file format, e.g. swf, google2011, umass, "
                                  "generic?... (see `stratus traces formats`)")
    hours: float | None = opt(None, number("a number of hours", 0, optional=True),
                              help="length of the window in hours")
    start: float | None = opt(None, number("a number of seconds", optional=True),
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

    def check(self) -> None:
        if self.slice is not None and not self.slice < (self.slices or 20):
            raise ConfigError(f"slice {self.slice} is out of range: there are "
                              f"{self.slices or 20} slices (0..{(self.slices or 20) - 1})")

    def window(self) -> dict:
        return {k: getattr(self, k) for k in WINDOW_KEYS}


WINDOW_KEYS = ("trace", "format", "hours", "start", "slice", "slices", "seed")


@dataclass(frozen=True, kw_only=True)
class CloudSpec(WindowSpec):
    """The simulated cloud a replay runs in, and the estimator it predicts with."""
    tick: float = opt(60.0, number("a number of seconds", MIN_TICK_S),
                      help="scheduling interval in seconds (at least 1)")
    market: str = opt("spot", _market,
                      help="market for acquisitions: spot (bid = on-demand) or on-demand")
    spot_prices: str | None = opt(None, _path, metavar="FILE",
                                  help="AWS spot price history (JSON, CSV/TSV, text, Parquet); "
                                       "default: synthetic (the bundled trace for m4)")
    spot_zone: str | None = opt(None, text(optional=True),
                                help="availability zone to take from --spot-prices")
    spot_start: float = opt(0.0, number("a number of seconds"),
                            help="seconds into the spot history that line up with trace "
                                 "time 0")
    estimator: str | None = opt(None, _estimator,
                                help="oracle, noisy:H or history (default: the scheduler's, "
                                     "else oracle)")
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
    max_hours: float | None = opt(None, number("a number of hours", 0, above=True,
                                               optional=True), metavar="H",
                                  help="stop a replay H simulated hours after it starts; "
                                       "tasks not done by then are reported unfinished "
                                       "(default: run until every task is done or capacity "
                                       "can never be had)")
    faults: str | None = opt(None, _faults, metavar="crash:R,ice:P[,ice-window:S]",
                             help="the cloud's own faults (seeded): instances crash at R per "
                                  "instance-hour; a request fails with probability P, and "
                                  "with ice-window its type stays unavailable S seconds "
                                  "(default: none)")
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
        for n in self.schedulers or ():
            _scheduler(n)


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
        for n in self.schedulers:
            _scheduler(n)


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
    estimator: str = opt("history", _estimator, help="oracle, noisy:H or history")
    warmup_hours: str = opt("auto", _warmup, metavar="H|auto",
                            help="history a learning estimator trains on before the window")


@dataclass(frozen=True, kw_only=True)
class ServerSpec(Spec):
    """The reserved server's shape and price (paper 000 §5): a catalog type, or cores and
    GiB; priced at (1 - D) x on-demand or the catalog's reserved rate."""
    reserved_cores: float | None = opt(None, number("a number of cores", 0, above=True,
                                                    optional=True), help="cores per server")
    reserved_mem_gb: float | None = opt(None, number("a number of GiB", 0, above=True,
                                                     optional=True), help="GiB per server")
    reserved_type: str | None = opt(None, text(optional=True), metavar="TYPE",
                                    help="a --catalog type as the server (e.g. m5.4xlarge), "
                                         "instead of --reserved-cores/--reserved-mem-gb")
    reserved_discount: float | None = opt(None, number("a fraction", 0, hi=1, optional=True),
                                          metavar="D",
                                          help="price servers at (1 - D) x on-demand "
                                               "(default: the catalog's 3-year reserved rate)")
    catalog: str = opt("m5", _catalog, metavar="NAME|FILE",
                       help="the VMs for servers and cloud; " + CATALOG_HELP)

    def server(self) -> tuple[float, float]:
        """(cores, GiB) of one server: ``--reserved-type``'s, or the two options."""
        if self.reserved_type is None:
            return self.reserved_cores, self.reserved_mem_gb
        from pricing.catalog_files import get_catalog

        t = get_catalog(self.catalog)[self.reserved_type]
        return float(t.vcpu), float(t.mem_gib)

    def check(self) -> None:
        super().check()
        if self.reserved_type is not None:
            if self.reserved_cores is not None or self.reserved_mem_gb is not None:
                raise ConfigError("give the server as --reserved-type or as --reserved-cores "
                                  "with --reserved-mem-gb, not both")
            try:
                self.server()
            except ConfigError as e:
                raise ConfigError(f"--reserved-type: {e}") from None
        elif self.reserved_cores is None or self.reserved_mem_gb is None:
            raise ConfigError("the server needs --reserved-cores and --reserved-mem-gb, or "
                              "--reserved-type (a --catalog type, e.g. m5.4xlarge)")


POOL_HELP = {"b": "seconds a job may wait (ajw-t, sww, compound)",
             "t": "seconds: shorter jobs are short (ljw, compound)"}


@dataclass(frozen=True, kw_only=True)
class PoolOptions(WindowSpec, ServerSpec):
    """A waiting policy over a reserved pool (paper 000 §3-4)."""
    policy: str = opt(check=text(what="a waiting policy"),
                      help="njw, ajw, ajw-t, sww, ljw, compound or ljw-spec (LJW by "
                           "speculative execution, paper 003 §3.1)")
    b: float = opt(0.0, number("a number of seconds", 0), help=POOL_HELP["b"])
    t: float = opt(0.0, number("a number of seconds", 0), help=POOL_HELP["t"])
    scheduling: str = opt("fcfs", text(("fcfs", "sjf")), help="queue order: fcfs or sjf")
    packing: str = opt("best-fit", text(("best-fit", "first-fit")),
                       help="best-fit or first-fit")
    work_conserving: bool = opt(True, flag, cli="bool",
                                help="the first queued job that fits starts (default), or "
                                     "only the head")

    def check(self) -> None:
        super().check()
        from stratus.waiting.pool import WaitingPolicy

        WaitingPolicy(self.policy, self.b, self.t)


@dataclass(frozen=True, kw_only=True)
class WaitingSpec(PoolOptions):
    command: ClassVar[str] = "waiting"
    reserved: int = opt(check=number("a whole number of servers", 0, integer=True,
                                     hi=1_000_000), metavar="S", help="reserved servers")
    speculate_market: str = opt("on-demand", text(("on-demand", "spot")),
                                metavar="on-demand|spot",
                                help="(ljw-spec) the market speculative runs use; spot: the "
                                     "engine's bid and revocations, a revoked run restarts")
    spot_prices: str | None = opt(None, _path, metavar="FILE",
                                  help="(spot) AWS spot price history; default: synthetic "
                                       "(the bundled trace for m4)")
    spot_zone: str | None = opt(None, text(optional=True),
                                help="availability zone to take from --spot-prices")
    spot_start: float = opt(0.0, number("a number of seconds"),
                            help="seconds into the spot history that line up with trace "
                                 "time 0")
    steady_state: float | None = opt(None, number("a fraction", 0, hi=0.5, optional=True),
                                     metavar="F",
                                     help="drop the first and last F of jobs from the wait "
                                          "mean (default 0.1 for synthetic:mms, else 0)")
    f_over: float = opt(0.0, number("a fraction", 0, hi=1),
                        help="share of jobs over-predicting (SWW: their wait; LJW: short "
                             "as long)")
    f_under: float = opt(0.0, number("a fraction", 0, hi=1),
                         help="share of jobs under-predicting (SWW: wait; LJW: long as short)")
    wait_predictor: str = opt("oracle", text(("oracle", "ml")), choices=("oracle", "ml"),
                              help="SWW/compound: the oracle (simulate forward with true "
                                   "runtimes) or a random forest on cluster state (paper 003 "
                                   "§3.2), trained on the first --train-fraction of jobs and "
                                   "scored on the rest")
    train_fraction: float = opt(0.5, number("a fraction", 0, above=True, hi=1), metavar="F")
    ml_rounds: int = opt(1, number("an integer", 1, integer=True), cli="")
    estimator: str = opt("oracle", _estimator,
                         help="runtimes LJW/compound classify by and SJF orders by: oracle, "
                              "history or noisy:H")
    cloud: str = opt("smallest-vm", text(what="smallest-vm or a scheduler"),
                     metavar="smallest-vm|SCHEDULER",
                     help="the overflow: each job on the cheapest VM that fits (the papers' "
                          "model), or replayed by a registered VC scheduler")
    market: str = opt("spot", text(("spot", "on-demand")),
                      help="(--cloud SCHEDULER) spot or on-demand")
    cloud_catalog: str = opt("m4", _catalog, metavar="NAME|FILE",
                             help="(--cloud SCHEDULER) the VC's " + CATALOG_HELP)
    warmup_hours: str = opt("auto", _warmup, metavar="H|auto",
                            help="(--cloud SCHEDULER) history a learning estimator trains on")

    def check(self) -> None:
        super().check()
        from stratus.waiting.pool import PoolSpec

        cores, mem = self.server()
        PoolSpec(self.reserved, cores, mem, self.packing, self.scheduling,
                 self.work_conserving)
        if self.steady_state is not None and not self.steady_state < 0.5:
            raise ConfigError(f"--steady-state takes a fraction in [0, 0.5), got "
                              f"{self.steady_state}")
        if self.wait_predictor == "ml":
            if self.policy not in ("sww", "compound"):
                raise ConfigError("--wait-predictor ml is for --policy sww or compound")
            if not self.train_fraction < 1:
                raise ConfigError(f"--train-fraction takes a fraction in (0, 1), got "
                                  f"{self.train_fraction}")
        if self.cloud != "smallest-vm":
            _scheduler(self.cloud)
        if self.speculate_market == "spot":
            if self.policy != "ljw-spec":
                raise ConfigError("--speculate-market spot is for --policy ljw-spec")
            from pricing.catalog_files import get_catalog

            from stratus.markets import spot_book

            try:
                spot_book(get_catalog(self.catalog), self.spot_prices, self.spot_zone,
                          self.spot_start)
            except ConfigError as e:
                raise ConfigError(f"--speculate-market spot: {e}") from None
        elif (self.spot_prices or self.spot_zone or self.spot_start) and not (
                self.cloud != "smallest-vm" and self.market == "spot"):
            raise ConfigError("--spot-prices, --spot-zone and --spot-start are for "
                              "--speculate-market spot or --cloud SCHEDULER --market spot")


@dataclass(frozen=True, kw_only=True)
class AdviseSpec(PoolOptions):
    command: ClassVar[str] = "advise"
    policy: str = opt(check=text(what="a waiting policy"),
                      help="njw, ajw-t, sww, ljw, compound (or ajw)")
    slot: float = opt(3600.0, number("a number of seconds", 0, above=True),
                      help="MILP time slot, s")

    def check(self) -> None:
        super().check()
        from stratus.waiting.pool import PoolSpec

        cores, mem = self.server()
        PoolSpec(1, cores, mem, self.packing, self.scheduling, self.work_conserving)


def _servers(v):
    if isinstance(v, str) and v.strip().lower() == "optimal":
        return "optimal"
    try:
        return number("a whole number or 'optimal'", 0, integer=True)(v)
    except Bad:
        raise Bad(f"takes a whole number or 'optimal', got {v!r}") from None


@dataclass(frozen=True, kw_only=True)
class AnalyzeSpec(Spec):
    command: ClassVar[str] = "analyze"
    policy: str = opt(check=text(what="a waiting policy"),
                      help="ajw, njw, ajw-t, sww, ljw or compound")
    lam: float = opt(check=number("a rate", 0, above=True), help="job arrival rate λ (jobs/s)")
    mu: float = opt(check=number("a rate", 0, above=True),
                    help="service rate μ (1 / mean runtime s)")
    servers: int | str = opt(check=_servers, metavar="S|optimal",
                             help="reserved servers, or 'optimal' (marginal analysis: "
                                  "ρ_s = pf/po)")
    pf: float = opt(check=number("a price", 0),
                    help="fixed (reserved) price per server at full use")
    po: float = opt(check=number("a price", 0), help="on-demand price per server")
    b: float = opt(0.0, number("a number of seconds", 0),
                   help="waiting threshold, s (ajw-t, sww, compound)")
    t: float = opt(0.0, number("a number of seconds", 0),
                   help="short-job threshold, s (ljw, compound)")
    f_over: float = opt(0.0, number("a fraction", 0, hi=1),
                        help="SWW: share of jobs over-predicting their wait (§4.1.1)")
    f_under: float = opt(0.0, number("a fraction", 0, hi=1),
                         help="SWW: share of jobs under-predicting their wait (§4.1.1)")


SPECS: dict[str, type[Spec]] = {s.command: s for s in (
    ReplaySpec, CompareSpec, SensitivitySpec, EstimateSpec, WaitingSpec, AdviseSpec,
    AnalyzeSpec)}
