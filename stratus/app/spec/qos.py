"""The specs of the deadline-admission commands (paper 001: QoPS, VQoPS, DVQoPS; spec
``qos-and-sharing.md`` A.1-A.12): the workload and the schemes' options, ``qos run`` and
``qos sweep``. Every option is checked here, before the trace is read."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from stratus.app.spec.fields import Bad, flag, number, opt, text
from stratus.app.spec.replay import WindowSpec
from stratus.base.errors import ConfigError

SCHEMES = ("qops", "vqops", "dvqops")
MAX_HOURS = 24 * 365
MAX_RUNS = 500


def _worded(words: str, check: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``check`` with its error in ``words`` (what the option has always said)."""
    def f(v):
        try:
            return check(v)
        except Bad:
            raise Bad(f"{words}, got {v!r}") from None
    return f


def _one_of(*allowed: str) -> Callable[[Any], Any]:
    return _worded(f"takes {', '.join(allowed)}", text(allowed))


def _floats(lo: float = 0.0, above: bool = False) -> Callable[[Any], Any]:
    """Comma-separated numbers (or a list of them) > lo or >= lo, in the order given, none
    twice."""
    def check(v):
        items = v.split(",") if isinstance(v, str) else v
        if not isinstance(items, (list, tuple)):
            items = [items]
        out = []
        for tok in items:
            x = None
            if isinstance(tok, str):
                try:
                    x = float(tok)
                except ValueError:
                    x = None
            elif isinstance(tok, (int, float)) and not isinstance(tok, bool):
                x = float(tok)
            if x is None or not math.isfinite(x) or (x <= lo if above else x < lo):
                raise Bad(f"takes comma-separated numbers {'>' if above else '>='} {lo:g}, "
                          f"got {tok!r} in {v!r}")
            out.append(x)
        if not out:
            raise Bad(f"takes comma-separated numbers, got {v!r}")
        if len(set(out)) != len(out):
            raise ConfigError(f"{v!r} repeats a value")
        return tuple(out)
    return check


def _dv_window(v):
    """auto, or fixed:H with H hours in (0, 8760]."""
    if v == "auto":
        return v
    if isinstance(v, str) and v.startswith("fixed:"):
        try:
            w = _floats(above=True)(v[6:])
        except (Bad, ConfigError):
            w = ()
        if len(w) == 1 and w[0] <= MAX_HOURS:
            return v
    raise Bad(f"takes auto or fixed:H (hours in (0, {MAX_HOURS}]), got {v!r}")


def _schemes(v):
    items = v.split(",") if isinstance(v, str) else v
    if not isinstance(items, (list, tuple)) or not items:
        raise Bad(f"takes comma-separated schemes ({', '.join(SCHEMES)}), got {v!r}")
    for s in items:
        if s not in SCHEMES:
            raise Bad(f"takes {', '.join(SCHEMES)}, got {s!r}")
    if len(set(items)) != len(items):
        raise ConfigError(f"{v!r} repeats a scheme")
    return tuple(items)


def _urgent_fracs(v):
    out = _floats()(v)
    for u in out:
        if u > 1:
            raise Bad(f"takes a fraction in [0, 1], got {u}")
    return out


def _dup_fracs(v):
    out = _floats()(v)
    if max(out) > 20:
        raise Bad("takes numbers in [0, 20]")
    return out


def _fixed_windows(v):
    if v is None or v == "":
        return None
    out = _floats(above=True)(v)
    if max(out) > MAX_HOURS:
        raise Bad(f"takes hours in (0, {MAX_HOURS}], got {v!r}")
    return out


@dataclass(frozen=True, kw_only=True)
class QosWorkloadOptions(WindowSpec):
    """The rigid jobs cut from the trace, their prices and deadlines (001 §3), and the
    schemes' own options (QoPS's K, VQoPS's tie, DVQoPS's grids and windows)."""
    processors: int | None = opt(None, _worded("takes an integer in [1, 1e7]", number(
        "an integer", 1, integer=True, hi=10**7, optional=True)), metavar="P",
        help="machine size (default: the SWF header's MaxProcs)")
    first_jobs: int | None = opt(None, _worded("takes a positive integer", number(
        "an integer", 1, integer=True, optional=True)), metavar="N",
        help="only N consecutive jobs (in submit order) ...")
    skip: int = opt(0, number("an integer", 0, integer=True), metavar="M",
                    help="... after skipping the first M")
    estimates: str = opt("exact", _one_of("exact", "trace"),
                         help="exact (e = runtime) or trace (e = requested time, SWF field 9)")
    overrun: str = opt("kill", _one_of("kill", "extend"),
                       help="trace estimates below the runtime: kill at the estimate "
                            "(default) or extend the estimate")
    slack_factor: float = opt(5.0, number("a number", 1),
                              help="deadline = submit + SF x estimate (001 §3: 5)")
    base_rate: float = opt(0.1, _worded("takes a positive number", number(
        "a number", 0, above=True)),
        help="price per processor-second of a normal job (001 §3: 0.1)")
    charge_basis: str = opt("actual", _one_of("actual", "estimate"),
                            help="Vmax on the actual runtime (default) or the estimate")
    deadline_basis: str = opt("estimate", _one_of("estimate", "requested"),
                              help="deadline from the estimate (default) or the requested "
                                   "time")
    dup_copies_urgency: bool = opt(False, flag, cli="flag",
                                   help="copies inherit their original's urgency (default: "
                                        "marked anew)")
    qops_k: int = opt(5, _worded("takes an integer in [0, 1000]", number(
        "an integer", 0, integer=True, hi=1000)),
        help="QoPS K-factor: queued jobs that may be promoted ahead")
    oc_tie: str = opt("reject", _one_of("reject", "accept"),
                      help="VQoPS at gain = f x size: reject (strict, default) or accept")
    dv_oc_grid: tuple[float, ...] = opt((0.0, 0.05, 0.1, 0.2, 0.4), _floats(),
                                        help="DVQoPS candidate OC-factors")
    dv_windows: tuple[float, ...] = opt((1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0),
                                        _floats(above=True),
                                        help="DVQoPS candidate rollback windows, hours")
    dv_wmax: float = opt(64.0, _worded(f"takes hours in (0, {MAX_HOURS}]", number(
        "hours", 0, above=True, hi=MAX_HOURS)), help="DVQoPS W_max, hours")
    dv_window: str = opt("auto", _dv_window,
                         help="auto (window updates every W_max) or fixed:H")
    dv_replay: str = opt("nested", _one_of("nested", "tiling"),
                         help="window update: nested DVQoPS replays (default) or tiling")
    whatif_start: str = opt("snapshot", _one_of("snapshot", "empty"),
                            help="what-ifs start from the real schedule's snapshot (default) "
                                 "or empty")

    def check(self) -> None:
        super().check()
        if max(self.dv_windows) > self.dv_wmax:
            raise ConfigError(f"--dv-windows: {max(self.dv_windows):g} h exceeds --dv-wmax "
                              f"{self.dv_wmax:g} h")

    def dv_window_parts(self) -> tuple[str, float]:
        """(auto|fixed, W_init hours) of ``dv_window`` (auto starts at 16 h: spec A.5)."""
        if self.dv_window == "auto":
            return "auto", 16.0
        return "fixed", float(self.dv_window[6:])


@dataclass(frozen=True, kw_only=True)
class QosRunSpec(QosWorkloadOptions):
    command: ClassVar[str] = "qos run"
    scheme: str = opt("vqops", _one_of(*SCHEMES), help="qops, vqops (default) or dvqops")
    oc: float = opt(0.0, number("a number", 0),
                    help="VQoPS OC-factor f (DVQoPS: the initial f; 0)")
    urgent_frac: float = opt(0.5, _worded("takes a fraction in [0, 1]", number(
        "a fraction", 0, hi=1)), metavar="U")
    urgent_cost: float = opt(10.0, _worded("takes a positive number", number(
        "a number", 0, above=True)), metavar="C")
    dup_frac: float = opt(0.0, _worded("takes a number in [0, 20]", number(
        "a number", 0, hi=20)), metavar="D",
        help="duplicate each job with probability D (D > 1: floor(D) sure copies)")


@dataclass(frozen=True, kw_only=True)
class QosSweepSpec(QosWorkloadOptions):
    command: ClassVar[str] = "qos sweep"
    schemes: tuple[str, ...] = opt(SCHEMES, _schemes)
    ocs: tuple[float, ...] = opt((0.0, 0.05, 0.1, 0.2, 0.4), _floats(),
                                 help="VQoPS OC-factors")
    urgent_fracs: tuple[float, ...] = opt((0.5,), _urgent_fracs)
    urgent_costs: tuple[float, ...] = opt((10.0,), _floats(above=True))
    dup_fracs: tuple[float, ...] = opt((0.0,), _dup_fracs)
    dv_fixed_windows: tuple[float, ...] | None = opt(
        None, _fixed_windows, metavar="H,...",
        help="DVQoPS at each fixed window instead of auto (001 Table 2)")

    def check(self) -> None:
        super().check()
        n = self.runs()
        if n > MAX_RUNS:
            raise ConfigError(f"the sweep asks for {n} runs; at most {MAX_RUNS}")

    def runs(self) -> int:
        """Runs in the sweep: each scheme (VQoPS at each f, DVQoPS at each fixed window)
        on each (load, mix)."""
        groups = len(self.urgent_fracs) * len(self.urgent_costs) * len(self.dup_fracs)
        per = (("qops" in self.schemes) + ("vqops" in self.schemes) * len(self.ocs)
               + ("dvqops" in self.schemes) * max(1, len(self.dv_fixed_windows or ())))
        return groups * per
