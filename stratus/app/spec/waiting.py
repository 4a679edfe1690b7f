"""The specs of the waiting-policy commands (papers 000, 003): the reserved server,
``waiting simulate``, ``advise`` and ``analyze``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from stratus.app.spec.fields import (
    CATALOG_HELP,
    LABEL,
    Bad,
    Spec,
    _catalog,
    _estimator,
    _scheduler,
    _warmup,
    flag,
    number,
    opt,
    reserved_pairs,
    seconds,
    text,
)
from stratus.app.spec.replay import SpotPrices, WindowSpec
from stratus.base.errors import ConfigError


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
        from stratus.pricing.catalog_files import get_catalog

        t = get_catalog(self.catalog)[self.reserved_type]
        return float(t.vcpu), float(t.mem_gib)

    def check(self) -> None:
        super().check()
        self.check_server()

    def check_server(self) -> None:
        """The one server's shape: ``--reserved-type``, or cores and GiB."""
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
    b: float = opt(0.0, seconds(), help=POOL_HELP["b"])
    t: float = opt(0.0, seconds(), help=POOL_HELP["t"])
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
class WaitingSpec(PoolOptions, SpotPrices):
    command: ClassVar[str] = "waiting"
    reserved: int | None = opt(None, number("a whole number of servers", 0, integer=True,
                                            hi=1_000_000, optional=True), metavar="S",
                               help="reserved servers of one shape (--reserved-type, or "
                                    "--reserved-cores and --reserved-mem-gb)")
    reserved_mix: str | None = opt(None, reserved_pairs("reserved_mix"),
                                   metavar="TYPE:COUNT[,TYPE:COUNT...]",
                                   help="reserved servers of --catalog types, type by type "
                                        "in this order (the replay's --reserved form), "
                                        "instead of --reserved S and its server")
    speculate_market: str = opt("on-demand", text(("on-demand", "spot")),
                                metavar="on-demand|spot",
                                help="(ljw-spec) the market speculative runs use; spot: the "
                                     "engine's bid and revocations, a revoked run restarts")
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

    def check_server(self) -> None:
        """Exactly one form of the pool: ``--reserved S`` with its server, or
        ``--reserved-mix``."""
        label = LABEL.get()
        if self.reserved_mix is None:
            if self.reserved is None:
                raise ConfigError(f"the pool needs {label('reserved')} S (with its server) or "
                                  f"{label('reserved_mix')} TYPE:COUNT[,TYPE:COUNT...]")
            super().check_server()
            return
        given = [label(k) for k in ("reserved", "reserved_type", "reserved_cores",
                                    "reserved_mem_gb") if getattr(self, k) is not None]
        if given:
            raise ConfigError(f"{label('reserved_mix')} is the whole pool: give it or "
                              f"{label('reserved')} S with its server, not both (also given: "
                              f"{', '.join(given)})")
        pairs = self.mix()
        if sum(n for _, n in pairs) > 1_000_000:
            raise ConfigError(f"{label('reserved_mix')}: at most 1,000,000 servers in all, "
                              f"got {sum(n for _, n in pairs):,}")

    def mix(self) -> tuple[tuple[str, int], ...] | None:
        """``--reserved-mix`` as ((type, count), ...), checked against ``--catalog``; None
        for the one-shape form."""
        if self.reserved_mix is None:
            return None
        from stratus.commitments.reserved import check_reserved, parse_reserved
        from stratus.pricing.catalog_files import get_catalog

        what = LABEL.get()("reserved_mix")
        pairs = parse_reserved(self.reserved_mix, what)
        check_reserved(pairs, get_catalog(self.catalog), what)
        return pairs

    def pool(self):
        """The pool's PoolSpec: S servers of one shape, or a mix's servers type by type."""
        from stratus.waiting.pool import PoolSpec

        pairs = self.mix()
        if pairs is None:
            return PoolSpec(self.reserved, *self.server(), self.packing, self.scheduling,
                            self.work_conserving)
        from stratus.pricing.catalog_files import get_catalog

        cat = get_catalog(self.catalog)
        shapes = [(float(cat[name].vcpu), float(cat[name].mem_gib))
                  for name, n in pairs for _ in range(n)]
        return PoolSpec.mixed(shapes, self.packing, self.scheduling, self.work_conserving)

    def check(self) -> None:
        super().check()
        self.pool()
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
            from stratus.pricing.catalog_files import get_catalog
            from stratus.sim.markets import spot_book

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
    slot: float = opt(3600.0, seconds(60.0, hi=86400.0),
                      help="MILP time slot, s (60 to 86400)")

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
    b: float = opt(0.0, seconds(), help="waiting threshold, s (ajw-t, sww, compound)")
    t: float = opt(0.0, seconds(), help="short-job threshold, s (ljw, compound)")
    f_over: float = opt(0.0, number("a fraction", 0, hi=1),
                        help="SWW: share of jobs over-predicting their wait (§4.1.1)")
    f_under: float = opt(0.0, number("a fraction", 0, hi=1),
                         help="SWW: share of jobs under-predicting their wait (§4.1.1)")


