"""Seeded synthetic spot-price traces for the types of any catalog in one availability zone.

Stratus (§4.1) replays Amazon's spot price history for the m4 family in us-west-2 over three
months from 2017-06-05. That history is not redistributable here, so this module generates a
trace with the same properties Stratus reports. Calibration targets, each with its source
and each checked by ``tests/pricing/test_spot.py``:

1. **Discount** (§2.1, citing [28]): spot prices "typically remain 70-80% below the prices
   of corresponding on-demand instances". Target: the time-weighted mean of
   spot/on-demand per type lies in [0.2, 0.3], and most of the time (>= 75%) every type
   is inside that band at once.
2. **Ordering churn** (§3.3, footnote 2): "for m4 instances in us-west-2 only, the sorted
   order of cost-per-VCore changes 850 times/day (Aug. to Sept. 2017)". Definition used
   here (``ordering_changes``): a *price event* is a timestamp at which at least one
   type's price changes; it is an *ordering change* if the ranking of the types by $/vCPU
   (ties broken by catalog order) after all changes at that timestamp differs from the
   ranking just before it. Target: ordering changes per day, averaged over the trace, in
   [700, 1000].
3. **Rare spikes above on-demand** (§3.3 and §4.1 footnote 3): bidding the on-demand
   price makes revocations rare; HotSpot [47] measured a 25-day mean time to revocation,
   and Stratus saw a single spike in all its experiments. Target: about one spike (a
   maximal interval with price > on-demand) per type per month, each lasting minutes to
   about an hour.
4. **Quantisation**: AWS publishes spot prices in steps of $0.0001 (``"0.032100"``), and
   every price here is a whole number of $0.0001.

Across families (a catalog of several, e.g. c4/m4/r4, or GPU types), the targets read as
follows (docs/decisions.md, "Spot prices for any catalog"): targets 1, 3 and 4 hold for every
type of the catalog; target 2 is a property of one family priced like m4 (six types, equal
on-demand $/vCPU), so it is checked on such families (m4, r4), and each family's own churn
and the whole catalog's churn are reported (``calibration``: ``families`` and
``ordering_changes_per_day``). A change of order inside a family is a change of the whole
order, so a catalog holding an m4-like family churns at least as much as the band; how much
more depends on how close the families' $/vCPU are, for which no source gives a target.

Parameters are per family (``SpotModel`` keyed by family name; ``family_of``): the m4
calibration is the default for every family without an entry. ``FAMILY_MODELS`` is empty:
Stratus publishes no per-family spot statistics, and nothing else here verifies any, so the
per-type process calibrated on m4 is carried over unchanged. Callers pass their own
(``generate_units(..., families={"p3": SpotModel(ratio=0.3)})``).

Model, per type, on its own random stream (so a type's series does not depend on which
other types are generated, nor on other families' parameters): price changes happen at Poisson times (whole seconds); the log
price is an Ornstein-Uhlenbeck process around ``log(ratio * on_demand)``, sampled exactly
at those times; prices are rounded to $0.0001, kept within [$0.0001, on-demand], and
events that leave the rounded price unchanged are dropped (AWS lists changes only). Since
m4 on-demand prices are linear in vCPU, equal ``ratio`` puts every type at the same mean
$/vCPU, so the six per-vCPU prices cross often (target 2). Spikes are overlaid last:
Poisson starts, log-uniform durations and multipliers of the on-demand price. A family whose
on-demand $/vCPU differs by size (c4.8xlarge is 11% cheaper per vCPU than c4.xlarge) keeps
that gap on average, so its types cross less often than m4's: that is a consequence of the
catalog's prices, not something the model corrects.
"""

from __future__ import annotations

import argparse
import math
import sys
import zlib
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path

import numpy as np

from stratus.base.errors import ConfigError, StratusError
from stratus.pricing.catalog import M4, Catalog, InstanceType
from stratus.pricing.catalog_files import load_catalog
from stratus.pricing.prices import PriceBook, PriceSeries
from stratus.pricing.spot import (
    DEFAULT_PRODUCT,
    UNITS_PER_USD,
    SpotHistory,
    bundled_history,
    load_spot_history,
    spot_price_book,
    write_aws,
    write_compact,
)

DAY_S = 86_400
DEFAULT_ORIGIN = datetime(2017, 6, 5, tzinfo=UTC)  # Stratus §4.1: from June 5th, 2017
DEFAULT_ZONE = "us-west-2a"  # Stratus §4.1: us-west-2 only; one zone
DISCOUNT_BAND = (0.2, 0.3)  # §2.1: 70-80% below on-demand
# The bundled trace (pricing/data) is generate_units(M4, BUNDLED_DAYS, BUNDLED_SEED).
BUNDLED_SEED = 2017
BUNDLED_DAYS = 90  # Stratus §4.1: "a three month period starting from June 5th, 2017"


@dataclass(frozen=True)
class SpotModel:
    """One family's parameters (defaults: m4's, calibrated to the module docstring's targets)."""

    ratio: float = 0.245          # geometric-mean spot/on-demand: middle of the §2.1 band
    sigma: float = 0.07           # stationary sd of log price: keeps types inside the band
    half_life_s: float = 1200.0       # OU mean reversion; with the rate below sets target 2
    changes_per_day: float = 450.0    # Poisson rate of price draws per type (before no-op removal)
    spikes_per_month: float = 1.0     # per type; HotSpot's ~25-day time to revocation
    spike_duration_s: tuple[float, float] = (120.0, 3600.0)  # "minutes to about an hour"
    spike_multiplier: tuple[float, float] = (1.1, 4.0)       # x on-demand, log-uniform

    def check(self) -> None:
        if not (0 < self.ratio < 1):
            raise ConfigError(f"spot ratio must be in (0, 1), got {self.ratio}")
        if self.sigma < 0 or self.half_life_s <= 0 or self.changes_per_day <= 0:
            raise ConfigError("sigma must be >= 0, half_life_s and changes_per_day > 0")
        if self.spikes_per_month < 0:
            raise ConfigError("spikes_per_month must be >= 0")
        lo, hi = self.spike_duration_s
        if not (1 <= lo <= hi):
            raise ConfigError("spike_duration_s must be (lo, hi) with 1 <= lo <= hi")
        lo, hi = self.spike_multiplier
        if not (1 < lo <= hi):
            raise ConfigError("spike_multiplier must be (lo, hi) with 1 < lo <= hi")


# Built-in per-family parameters (family name -> SpotModel). Empty on purpose: see the
# module docstring; a family without an entry uses the default SpotModel (m4's calibration).
FAMILY_MODELS: dict[str, SpotModel] = {}


def family_of(it: InstanceType) -> str:
    """The type's family: its ``family`` field, else the name before the first dot."""
    return it.family or it.name.split(".", 1)[0]


def family_models(catalog: Catalog, model: SpotModel | None = None,
                  families: Mapping[str, SpotModel] | None = None) -> dict[str, SpotModel]:
    """The model each family of ``catalog`` uses: ``families[f]``, else ``model`` for every
    family when given, else ``FAMILY_MODELS[f]``, else ``SpotModel()``. Each is checked."""
    out = {}
    for f in dict.fromkeys(family_of(t) for t in catalog):
        if families and f in families:
            m = families[f]
        elif model is not None:
            m = model
        else:
            m = FAMILY_MODELS.get(f, SpotModel())
        if not isinstance(m, SpotModel):
            raise ConfigError(f"spot model for family {f!r} must be a SpotModel, got "
                              f"{type(m).__name__}")
        try:
            m.check()
        except ConfigError as exc:
            raise ConfigError(f"spot model for family {f!r}: {exc}") from None
        out[f] = m
    return out


def families_of(catalog: Catalog) -> dict[str, Catalog]:
    """One sub-catalog per family, in the order families first appear (smallest type first)."""
    groups: dict[str, list[InstanceType]] = {}
    for t in catalog:
        groups.setdefault(family_of(t), []).append(t)
    return {f: Catalog(ts, name=f) for f, ts in groups.items()}


# --- generation -----------------------------------------------------------------------


def _rng(seed: int, name: str, stream: int) -> np.random.Generator:
    # Keyed by the type's name, not its position, so subsets of a catalog agree.
    return np.random.default_rng(np.random.SeedSequence([seed, zlib.crc32(name.encode()), stream]))


def _poisson_times(rng: np.random.Generator, rate_per_s: float, horizon_s: int) -> np.ndarray:
    """Whole-second event times in [0, horizon), starting with 0 (the initial price)."""
    n = int(rate_per_s * horizon_s + 8 * math.sqrt(rate_per_s * horizon_s) + 16)
    arrivals = np.cumsum(rng.exponential(1.0 / rate_per_s, size=n))
    if arrivals[-1] < horizon_s:  # practically never; fail loudly rather than truncate
        raise ConfigError("internal: Poisson draw too short; lower changes_per_day or days")
    t = np.floor(arrivals[arrivals < horizon_s]).astype(np.int64)
    return np.unique(np.concatenate([[0], t]))


_OU_BLOCK = 16.0  # e^16 ~ 9e6: cumulative sums lose < 1e-9 relative, far below $0.0001


def _ou_path(rng: np.random.Generator, t: np.ndarray, theta: float, sigma: float) -> np.ndarray:
    """Stationary OU (mean 0, sd ``sigma``) sampled exactly at times ``t``.

    x_k = a_k x_{k-1} + b_k with a_k = exp(-theta dt_k). Unrolled within a block that starts
    after time T, x_k = exp(-theta (t_k - T)) * (x_T + sum_j b_j exp(theta (t_j - T))); blocks
    span at most ``_OU_BLOCK / theta`` seconds so the exponentials stay well conditioned.
    """
    eps = rng.standard_normal(t.size)
    x = np.empty(t.size)
    x[0] = sigma * eps[0]
    tf = t.astype(np.float64)
    b = np.empty(t.size)
    b[1:] = sigma * np.sqrt(-np.expm1(-2.0 * theta * np.diff(tf))) * eps[1:]
    i0 = 1
    while i0 < t.size:
        ref = tf[i0 - 1]
        i1 = max(int(np.searchsorted(tf, ref + _OU_BLOCK / theta, side="right")), i0 + 1)
        rel = theta * (tf[i0:i1] - ref)
        x[i0:i1] = np.exp(-rel) * (x[i0 - 1] + np.cumsum(b[i0:i1] * np.exp(rel)))
        i0 = i1
    return x


def _drop_repeats(t: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    keep = np.concatenate([[True], u[1:] != u[:-1]])
    return t[keep], u[keep]


def _spikes(rng: np.random.Generator, m: SpotModel, horizon_s: int) -> list[tuple[int, int, float]]:
    """(start, end, multiplier) triples, in order, disjoint, all ending before the horizon.

    The count is the expected count rounded at random (floor plus a Bernoulli draw of the
    fraction), and spike k starts uniformly inside the k-th of that many equal slots: the
    rate is exact and no type gets an implausible cluster of spikes by chance."""
    lo, hi = m.spike_duration_s
    expected = m.spikes_per_month * horizon_s / (30 * DAY_S)
    n = int(expected) + int(rng.random() < expected - int(expected))
    slot = horizon_s // max(n, 1)
    longest = int(math.ceil(hi)) + 1
    if n == 0 or slot <= longest:
        return []
    starts = np.arange(n) * slot + rng.integers(0, slot - longest, size=n)
    durs = np.exp(rng.uniform(math.log(lo), math.log(hi), size=n)).astype(np.int64)
    mults = np.exp(rng.uniform(*np.log(m.spike_multiplier), size=n))
    return [(s, s + d, k) for s, d, k in zip(starts.tolist(), durs.tolist(), mults.tolist())]


def _overlay(t: np.ndarray, u: np.ndarray, spikes, od_units: int) -> tuple[np.ndarray, np.ndarray]:
    """Replace the price on each [start, end) by the spike price; return to the base path after."""
    for s, e, k in spikes:
        back = int(u[np.searchsorted(t, e, side="right") - 1])  # base price in force at e
        keep = (t < s) | (t >= e)
        add_t, add_u = [s], [max(int(math.ceil(od_units * k)), od_units + 1)]
        if not np.any(t == e):
            add_t.append(e)
            add_u.append(back)
        t = np.concatenate([t[keep], add_t])
        u = np.concatenate([u[keep], add_u])
        order = np.argsort(t, kind="stable")
        t, u = t[order], u[order]
    return _drop_repeats(t, u)


def generate_units(catalog: Catalog = M4, days: float = 90, seed: int = 2017,
                   model: SpotModel | None = None,
                   families: Mapping[str, SpotModel] | None = None,
                   ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per type: (int64 seconds from the origin, int64 price in $0.0001), changes only.

    Each type uses its family's model (``family_models``)."""
    models = family_models(catalog, model, families)
    if not days > 0:
        raise ConfigError(f"days must be > 0, got {days}")
    horizon = int(round(days * DAY_S))
    out = {}
    for it in catalog:
        m = models[family_of(it)]
        theta = math.log(2.0) / m.half_life_s
        od_units = int(round(it.ondemand_hourly * UNITS_PER_USD))
        if od_units < 1:
            raise ConfigError(f"instance type {it.name!r}: on-demand price "
                              f"{it.ondemand_hourly} is below the $0.0001 price step")
        rng = _rng(seed, it.name, 0)
        t = _poisson_times(rng, m.changes_per_day / DAY_S, horizon)
        x = _ou_path(rng, t, theta, m.sigma)
        u = np.rint(od_units * m.ratio * np.exp(x)).astype(np.int64)
        u = np.clip(u, 1, od_units)  # the base path never crosses on-demand: spikes do that
        t, u = _drop_repeats(t, u)
        out[it.name] = _overlay(t, u, _spikes(_rng(seed, it.name, 1), m, horizon), od_units)
    return out


def to_series(units: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> dict[str, PriceSeries]:
    # Division, not multiplication by 1e-4: u / 10000 is the double nearest to the decimal
    # price, i.e. exactly what parsing AWS's "0.025900" gives.
    return {n: PriceSeries(t.astype(np.float64), u / UNITS_PER_USD) for n, (t, u) in units.items()}


def generate_spot(catalog: Catalog = M4, days: float = 90, seed: int = 2017,
                  model: SpotModel | None = None,
                  families: Mapping[str, SpotModel] | None = None,
                  **params) -> dict[str, PriceSeries]:
    """Spot price series ($/h, seconds from the origin) for every type of ``catalog``.

    ``params`` override fields of ``SpotModel`` (e.g. ``sigma=0.1``) for every family
    without an entry in ``families``."""
    if params:
        try:
            model = SpotModel(**{**asdict(model or SpotModel()), **params})
        except TypeError as exc:
            raise ConfigError(f"generate_spot: {exc}") from None
    return to_series(generate_units(catalog, days, seed, model, families))


def _contents(catalog: Catalog) -> tuple:
    """What a type's series depends on (not the catalog's name): the cache key."""
    return tuple((t.name, family_of(t), t.ondemand_hourly) for t in catalog)


@lru_cache(maxsize=8)
def _cached(contents: tuple, days: float, seed: int) -> dict[str, PriceSeries]:
    types = [InstanceType(n, 1, 1, p, family=f) for n, f, p in contents]
    return generate_spot(Catalog(types, name="cache"), days, seed)


def synthetic_series(catalog: Catalog, days: float = BUNDLED_DAYS,
                     seed: int = BUNDLED_SEED) -> dict[str, PriceSeries]:
    """The built-in model's series for ``catalog``, cached per (types and prices, days, seed):
    a sweep or comparison replays many cells on one catalog. m4's types get exactly the
    bundled trace's series (same seed, days and streams)."""
    return dict(_cached(_contents(catalog), float(days), int(seed)))


# --- calibration measures (used by the tests and printed by the CLI) -------------------


def _grid(series: Mapping[str, PriceSeries], names: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """All change times of the given types, and every type's price at each (n x k)."""
    times = np.unique(np.concatenate([series[n].times for n in names]))
    cols = []
    for n in names:
        s = series[n]
        idx = np.maximum(np.searchsorted(s.times, times, side="right") - 1, 0)
        cols.append(s.prices[idx])
    return times, np.column_stack(cols)


def _per_vcpu_keys(prices: np.ndarray, vcpu: np.ndarray) -> np.ndarray:
    """Sort keys proportional to $/vCPU, exact (integers) when prices are whole $0.0001."""
    units = np.rint(prices * UNITS_PER_USD)
    whole = np.all(units / UNITS_PER_USD == prices) and np.all(vcpu == np.round(vcpu))
    if whole and np.all(units < 2**40):
        v = vcpu.astype(np.int64).tolist()
        lcm = math.lcm(*v)
        scale = [lcm // x for x in v]
        if lcm < 2**22:
            return units.astype(np.int64) * np.array(scale, dtype=np.int64)
        # many unlike vCPU counts (a user's catalog) overflow int64: Python's integers, still
        # exact (float $/vCPU can round two distinct ratios to one value, and then a family
        # alone would rank its types differently from the whole catalog)
        return units.astype(np.int64).astype(object) * np.array(scale, dtype=object)
    return prices / vcpu


def ordering_changes(series: Mapping[str, PriceSeries], catalog: Catalog = M4,
                     start_s: float | None = None, end_s: float | None = None) -> tuple[int, float]:
    """(count, per day) of ordering changes in (start_s, end_s] (definition: module docstring).

    The window defaults to the first and last change time of the catalog's types."""
    names = [t.name for t in catalog]
    vcpu = np.array([t.vcpu for t in catalog], dtype=np.float64)
    times, prices = _grid(series, names)
    # A stable sort breaks ties by column, i.e. by catalog order.
    ranking = np.argsort(_per_vcpu_keys(prices, vcpu), axis=1, kind="stable")
    changed = np.any(ranking[1:] != ranking[:-1], axis=1)
    lo = times[0] if start_s is None else start_s
    hi = times[-1] if end_s is None else end_s
    inside = (times[1:] > lo) & (times[1:] <= hi)
    count = int(np.count_nonzero(changed & inside))
    return count, count / max((hi - lo) / DAY_S, 1e-12)


def _time_weights(times: np.ndarray, end_s: float) -> np.ndarray:
    return np.diff(np.concatenate([times, [end_s]]))


def discount_stats(series: Mapping[str, PriceSeries], catalog: Catalog = M4,
                   end_s: float | None = None, band: tuple[float, float] = DISCOUNT_BAND) -> dict:
    """Time-weighted mean spot/on-demand per type; share of time every type is in ``band``."""
    names = [t.name for t in catalog]
    times, prices = _grid(series, names)
    end = float(times[-1] + 1) if end_s is None else float(end_s)
    w = _time_weights(times, end)
    ratio = prices / np.array([t.ondemand_hourly for t in catalog])
    inband = np.all((ratio >= band[0]) & (ratio <= band[1]), axis=1)
    mean = {n: float(np.average(ratio[:, i], weights=w)) for i, n in enumerate(names)}
    return {"mean_ratio": mean,
            "all_in_band": float(np.sum(w[inband]) / np.sum(w))}


def spikes(s: PriceSeries, ondemand: float,
           end_s: float | None = None) -> list[tuple[float, float]]:
    """(start, duration) of each maximal interval with price > ``ondemand`` (a revocation
    for a bid at the on-demand price, Stratus §4.1 footnote 3)."""
    above = s.prices > ondemand
    edges = np.diff(np.concatenate([[0], above.astype(np.int8), [0]]))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    end = math.inf if end_s is None else end_s
    t_end = np.concatenate([s.times[1:], [end]])
    return [(float(s.times[a]), float(t_end[b - 1] - s.times[a])) for a, b in zip(starts, ends)]


def calibration(series: Mapping[str, PriceSeries], catalog: Catalog = M4,
                days: float | None = None) -> dict:
    """Every calibration measure of the module docstring, as one JSON-able dict."""
    end = None if days is None else days * DAY_S
    n, per_day = ordering_changes(series, catalog, 0.0 if end is not None else None, end)
    span_days = days if days is not None else (
        max(series[t.name].times[-1] for t in catalog) / DAY_S)
    sp = {t.name: spikes(series[t.name], t.ondemand_hourly, end) for t in catalog}
    fams = {}
    for f, sub in families_of(catalog).items():
        fn, fday = ordering_changes(series, sub, 0.0 if end is not None else None, end)
        fams[f] = {"types": len(sub), "ordering_changes": fn, "ordering_changes_per_day": fday,
                   "all_in_band": discount_stats(series, sub, end)["all_in_band"]}
    return {
        **discount_stats(series, catalog, end),
        "ordering_changes": n,  # the whole catalog, by $/vCPU
        "ordering_changes_per_day": per_day,
        "families": fams,  # each family's own churn and band share
        "spikes": {k: len(v) for k, v in sp.items()},
        "spikes_per_type_per_month": sum(map(len, sp.values())) / len(sp) / (span_days / 30),
        "spike_durations_s": sorted(d for v in sp.values() for _, d in v),
        "changes_per_day": {t.name: (series[t.name].times.size - 1) / span_days for t in catalog},
    }


# --- files and command line -----------------------------------------------------------


def _units_of(series: Mapping[str, PriceSeries]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    out = {}
    for name, s in series.items():
        t, u = np.rint(s.times), np.rint(s.prices * UNITS_PER_USD)
        if np.any(t != s.times) or np.any(u / UNITS_PER_USD != s.prices):
            raise ConfigError(f"{name}: the compact format needs whole seconds and whole $0.0001")
        out[name] = (t.astype(np.int64), u.astype(np.int64))
    return out


def _jsonable(m: SpotModel) -> dict:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(m).items()}


def generator_meta(catalog: Catalog, days: float, seed: int, model: SpotModel | None,
                   families: Mapping[str, SpotModel] | None = None) -> dict:
    """What the compact file records about how it was made (JSON types: tuples as lists).

    ``model`` is the default; ``families`` lists only the families whose model differs."""
    default = model or SpotModel()
    gen = {"module": "stratus.pricing.synthetic_spot", "catalog": catalog.name, "days": days,
           "seed": seed, "model": _jsonable(default)}
    own = {f: _jsonable(m) for f, m in family_models(catalog, model, families).items()
           if m != default}
    if own:
        gen["families"] = own
    return {"generator": gen}


def save_spot(series: Mapping[str, PriceSeries] | Mapping[str, tuple[np.ndarray, np.ndarray]],
              path: str | Path, origin: datetime = DEFAULT_ORIGIN, zone: str = DEFAULT_ZONE,
              product: str = DEFAULT_PRODUCT, meta: Mapping | None = None) -> None:
    """Write a trace: ``.parquet`` in the compact format, else AWS-shaped (see ``write_aws``)."""
    path = Path(path)
    is_units = all(isinstance(v, tuple) for v in series.values())
    if path.suffix == ".parquet":
        write_compact(series if is_units else _units_of(series), path, origin, zone, product, meta)
    else:
        write_aws(to_series(series) if is_units else series, path, origin, zone, product)


def load_spot(path: str | Path) -> SpotHistory:
    """Read a trace written by ``save_spot`` (any zone and product it holds)."""
    return load_spot_history(path, zone=None, product=None)


def _summary(cal: dict) -> str:
    mean = ", ".join(f"{k} {v:.3f}" for k, v in cal["mean_ratio"].items())
    spikes = ", ".join(f"{k} {v}" for k, v in cal["spikes"].items())
    durs = cal["spike_durations_s"]
    span = f"{min(durs) / 60:.0f}-{max(durs) / 60:.0f} min" if durs else "none"
    lines = [
        f"mean spot/on-demand: {mean}",
        f"time with every type in {DISCOUNT_BAND}: {cal['all_in_band']:.1%}",
        f"ordering changes: {cal['ordering_changes']} ({cal['ordering_changes_per_day']:.0f}/day)",
    ]
    if len(cal["families"]) > 1:
        lines.append("within each family: " + ", ".join(
            f"{f} ({v['types']} types) {v['ordering_changes_per_day']:.0f}/day"
            for f, v in cal["families"].items()))
    lines.append(f"spikes above on-demand: {spikes} ({cal['spikes_per_type_per_month']:.2f}"
                 f"/type/month, {span})")
    return "\n".join(lines)


def _bundled_covers(catalog: Catalog) -> bool:
    """Every type is an m4 type at the price the bundled trace was generated for."""
    return all(t.name in M4 and M4[t.name].ondemand_hourly == t.ondemand_hourly
               for t in catalog)


def default_spot_book(catalog: Catalog = M4) -> PriceBook:
    """On-demand plus synthetic spot prices (us-west-2a, from 2017-06-05, 90 days): the
    bundled m4 trace when it covers the catalog, else the same model (same seed and span)
    generated for the catalog's types (``stratus.pricing.synthetic_spot.synthetic_series``), whose
    m4 types get exactly the bundled series."""
    name = f"{catalog.name}-spot-synthetic-2017"
    if _bundled_covers(catalog):
        return spot_price_book(catalog, bundled_history(), name=name)
    return spot_price_book(catalog, synthetic_series(catalog), name=name)


def _get_catalog(name: str) -> Catalog:
    return load_catalog(name)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m stratus.pricing.synthetic_spot",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help=".parquet (compact) or .json/.csv/.tsv/.txt[.gz]")
    ap.add_argument("--days", type=float, default=BUNDLED_DAYS)
    ap.add_argument("--seed", type=int, default=BUNDLED_SEED)
    ap.add_argument("--catalog", default="m4", help="a catalog the project knows (default m4)")
    args = ap.parse_args(argv)
    try:
        catalog = _get_catalog(args.catalog)
        units = generate_units(catalog, args.days, args.seed)
        save_spot(units, args.out, meta=generator_meta(catalog, args.days, args.seed, None))
    except StratusError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {args.out} ({Path(args.out).stat().st_size:,} bytes)")
    print(_summary(calibration(to_series(units), catalog, args.days)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
