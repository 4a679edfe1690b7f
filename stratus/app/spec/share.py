"""The specs of ``stratus share simulate|sweep|defect|solo``: paper 004's shared cloud
cluster (spec B.13). The messages are the command's since it had argparse options."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from stratus.app.spec.fields import Bad, flag, number, opt, seconds, text
from stratus.app.spec.replay import WindowSpec
from stratus.base.errors import ConfigError

DEFAULT_GRID = "0:160:8"
DEFAULT_THETAS = "1,2,5,10,15,20,30,50,100,1000,inf"
DEFAULT_KS = "0,1,2,4,8,16,32,64"


def _choice(option: str, allowed: tuple[str, ...]):
    def check(v):
        if v not in allowed:
            raise ConfigError(f"{option} takes {', '.join(allowed[:-1])} or {allowed[-1]}, "
                              f"got {v!r}")
        return v
    return check


def _pricing(v):
    from stratus.sharing.chargeback import PRICINGS

    if v not in PRICINGS:
        raise ConfigError(f"--pricing takes socialist or capitalist, got {v!r}")
    return v


def _reserved_or_optimal(v):
    """A whole number of reserved units, or "optimal" (searched over ``grid``)."""
    if isinstance(v, str) and v.strip().lower() == "optimal":
        return "optimal"
    try:
        n = int(v) if not isinstance(v, bool) and float(v) == int(float(v)) else -1
    except (TypeError, ValueError, OverflowError):
        n = -1
    if not 0 <= n <= 1_000_000:
        raise ConfigError(f"--reserved takes a whole number from 0 to 1,000,000 or "
                          f"'optimal', got {v!r}")
    return n


def _grid(option: str):
    def check(v):
        from stratus.sharing.analyses import parse_grid

        if isinstance(v, (list, tuple)):
            v = ",".join(str(x) for x in v)
        parse_grid(str(v), option)
        return str(v)
    return check


def floats(v, option: str) -> list[float]:
    """Comma-separated numbers >= 0 (inf allowed), sorted and distinct."""
    try:
        vals = [float(x) for x in str(v).split(",") if x.strip()] \
            if not isinstance(v, (list, tuple)) else [float(x) for x in v]
    except (TypeError, ValueError):
        vals = []
    if not vals or any(math.isnan(x) or x < 0 for x in vals):
        raise ConfigError(f"{option} takes comma-separated numbers >= 0 (inf allowed), "
                          f"got {v!r}")
    return sorted(set(vals))


def _items(v) -> list:
    """A list or tuple as it is; one number as a list of it."""
    return list(v) if isinstance(v, (list, tuple)) else [v]


def _thetas(v):
    floats(v, "--thetas")
    return v if isinstance(v, str) else ",".join(repr(float(x)) for x in _items(v))


def _ks(v):
    ks = floats(v, "--ks")
    if any(not k.is_integer() or k > 1_000_000 for k in ks):
        raise ConfigError(f"--ks takes whole numbers from 0 to 1,000,000, got {v!r}")
    return v if isinstance(v, str) else ",".join(str(int(k)) for k in _items(v))


def _policies(v):
    from stratus.sharing.cluster import POLICIES

    items = v.split(",") if isinstance(v, str) else v
    if not isinstance(items, (list, tuple)) or not all(isinstance(p, str) for p in items):
        raise ConfigError(f"--policies takes names among {', '.join(POLICIES)}, got {v!r}")
    pols = [p.strip() for p in items if p.strip()]
    bad = [p for p in pols if p not in POLICIES]
    if not pols or bad or len(set(pols)) != len(pols):
        raise ConfigError(f"--policies takes distinct names among {', '.join(POLICIES)}, "
                          f"got {v!r}")
    return ",".join(pols)


def _steady(v):
    try:
        f = number("a fraction in [0, 0.5)", 0, hi=0.5)(v)
    except Bad:
        f = 0.5
    if not f < 0.5:
        raise ConfigError(f"--steady-state takes a fraction in [0, 0.5), got {v}")
    return f


@dataclass(frozen=True, kw_only=True)
class ShareOptions(WindowSpec):
    """The cluster every ``share`` command simulates (004 §3-5)."""
    command: ClassVar[str] = "share"
    policy: str = opt("burst-wait", text(what="a provisioning policy"),
                      help="lift-and-shift, burst-nowait or burst-wait")
    mode: str = opt("auto", _choice("--mode", ("auto", "pool", "node")),
                    help="pool (SWF default), node or auto")
    vm: str = opt("m5.16xlarge", text(what="an instance type"), help="node mode's reserved VM")
    vm_cores: float = opt(1.0, number("a number of cores", 0, above=True),
                          help="pool mode: cores per unit")
    reserved_ratio: float = opt(0.6, number("a ratio", 0, above=True),
                                help="reserved price / on-demand price (004 §5)")
    od_sizing: str = opt("auto", _choice("--od-sizing", ("auto", "exact", "m5")),
                         help="exact (pool default) or m5")
    b: float = opt(86400.0, seconds(), help="burst-wait: longest wait, s")
    t: float = opt(180.0, seconds(), help="burst-wait: short jobs, s")
    short_jobs: str = opt("reserved-first", text(what="reserved-first or ondemand"),
                          help="reserved-first or ondemand")
    placement: str = opt("best-fit", text(what="best-fit or first-fit"),
                         help="node mode: best-fit or first-fit")
    pricing: str = opt("socialist", _pricing, help="socialist or capitalist")
    wait_metric: str = opt("ratio-of-means",
                           _choice("--wait-metric", ("ratio-of-means", "mean-of-ratios")),
                           help="per-user wait/runtime: ratio-of-means or mean-of-ratios")

    def cluster(self, mode: str, policy: str | None = None, reserved: int = 0):
        """The stratus.sharing cluster of these options in ``mode`` (pool or node)."""
        from stratus.sharing.cluster import Cluster

        od = self.od_sizing
        if od == "auto":
            od = "exact" if mode == "pool" else "m5"
        return Cluster(policy=policy or self.policy, reserved=reserved, mode=mode, vm=self.vm,
                       vm_cores=self.vm_cores, ratio=self.reserved_ratio, od_sizing=od,
                       b=self.b, t=self.t, short_jobs=self.short_jobs,
                       placement=self.placement)

    def mode_for(self, trace) -> str:
        if self.mode != "auto":
            return self.mode
        return "pool" if trace.meta.get("format") == "swf" else "node"  # spec B.1

    def check(self) -> None:
        super().check()
        for mode in ("pool", "node") if self.mode == "auto" else (self.mode,):
            self.cluster(mode)


@dataclass(frozen=True, kw_only=True)
class ShareAtN(ShareOptions):
    """A command run at N reserved units, or at the N the grid search finds best."""
    reserved: int | str = opt("optimal", _reserved_or_optimal, metavar="N|optimal",
                              help="reserved VMs (node mode) or cores (pool mode)")
    grid: str = opt(DEFAULT_GRID, _grid("--grid"), help="N searched for 'optimal'")


@dataclass(frozen=True, kw_only=True)
class ShareSimulateSpec(ShareAtN):
    command: ClassVar[str] = "share simulate"
    reserved: int | str = opt(check=_reserved_or_optimal, metavar="N|optimal",
                              help="reserved VMs (node mode) or cores (pool mode)")
    steady_state: float = opt(0.0, _steady, metavar="F",
                              help="mean wait without the first and last F of jobs")
    strict: bool = opt(False, flag, cli="flag",
                       help="a job that can never fit the reserved capacity is an error")


@dataclass(frozen=True, kw_only=True)
class ShareSweepSpec(ShareOptions):
    command: ClassVar[str] = "share sweep"
    reserved: str = opt(DEFAULT_GRID, _grid("--reserved"), metavar="A:B:S",
                        help="reserved VMs (node mode) or cores (pool mode): a grid")
    policies: str = opt("lift-and-shift,burst-wait,burst-nowait", _policies)
    periods: int = opt(1, number("a whole number", 1, integer=True, hi=100),
                       help="also cut the trace into K spans: N* per span and each span at "
                            "the previous one's N* (Fig. 7)")
    steady_state: float = opt(0.0, _steady, metavar="F",
                              help="mean wait without the first and last F of jobs")


@dataclass(frozen=True, kw_only=True)
class ShareDefectSpec(ShareAtN):
    command: ClassVar[str] = "share defect"
    thetas: str = opt(DEFAULT_THETAS, _thetas)
    defect_on_price: bool = opt(False, flag, cli="flag",
                                help="also leave when one's price reaches on-demand")


@dataclass(frozen=True, kw_only=True)
class ShareSoloSpec(ShareAtN):
    command: ClassVar[str] = "share solo"
    ks: str = opt(DEFAULT_KS, _ks)
    burst_jobs: int = opt(10, number("a whole number", 1, integer=True),
                          help="bursty: this many jobs in some 5 minutes")


SHARE_SPECS = {"simulate": ShareSimulateSpec, "sweep": ShareSweepSpec,
               "defect": ShareDefectSpec, "solo": ShareSoloSpec}
