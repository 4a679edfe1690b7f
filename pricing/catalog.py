"""Instance types and the families Stratus and the waiting-policy papers use.

m4 (Stratus §4.1, Fig. 3c) at 2017 us-west-2 on-demand Linux prices; m5 at
0.096 $/h per 2 vCPU / 8 GiB, linear in size, with the 3-year reserved rate
the waiting-policy paper uses (m5.large: $988 for 3 years, §2 of 000). Other
catalogs, built-in or the user's own, are files: see ``stratus.pricing.catalog_files``.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from stratus.base.errors import ConfigError, shown
from stratus.base.resources import ALL_DIMS, to_units

HOURS_PER_3_YEARS = 3 * 365 * 24


@dataclass(frozen=True)
class InstanceType:
    """A rentable shape. ``capacity`` is in integer resource units (see stratus.base.resources):
    (cpu, mem) for a type without GPUs, (cpu, mem, gpu) for one with; a ``Catalog`` with
    any GPU type gives every type of it the third dimension."""

    name: str
    vcpu: float
    mem_gib: float
    ondemand_hourly: float
    family: str = ""
    reserved_hourly: float | None = None
    gpus: int = 0
    # provenance: where the price comes from, and whether it was checked against it (a
    # price is unverified unless its maker says so)
    source: str = ""
    verified: bool = False
    capacity: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.vcpu <= 0 or self.mem_gib <= 0 or self.ondemand_hourly <= 0:
            raise ConfigError(f"instance type {self.name!r}: sizes and price must be positive")
        g = self.gpus
        try:  # a whole number from a file (4.0, numpy ints) is taken as the int it is
            whole = not isinstance(g, bool) and g >= 0 and int(g) == g
        except (TypeError, ValueError, OverflowError):
            whole = False
        if not whole:
            raise ConfigError(f"instance type {self.name!r}: gpus must be an integer >= 0, "
                              f"got {shown(g)}")
        object.__setattr__(self, "gpus", int(g))
        amounts = (self.vcpu, self.mem_gib, self.gpus) if self.gpus else (self.vcpu, self.mem_gib)
        object.__setattr__(self, "capacity", to_units(*amounts))

    def with_dims(self, n: int) -> InstanceType:
        """The same type with an ``n``-dimensional capacity (a CPU type in a GPU catalog
        has 0 GPUs)."""
        if len(self.capacity) == n:
            return self
        out = copy.copy(self)
        object.__setattr__(out, "capacity", to_units(*(self.vcpu, self.mem_gib, self.gpus)[:n]))
        return out


class Catalog:
    """An ordered set of instance types, smallest first; the types a replay may acquire."""

    def __init__(self, types: Iterable[InstanceType], name: str = "custom", *,
                 region: str = "", as_of: str = "", source: str = "",
                 origin: str = "") -> None:
        types = list(types)
        # one dimension count for the whole catalog: 3 (cpu, mem, gpu) when any type has
        # GPUs, else 2 (docs/decisions.md, "A GPU dimension")
        dims = max((len(t.capacity) for t in types), default=2)
        ts = sorted((t.with_dims(dims) for t in types),
                    key=lambda t: (t.capacity, t.ondemand_hourly, t.name))
        if not ts:
            raise ConfigError("an instance catalog needs at least one type")
        names = [t.name for t in ts]
        if len(set(names)) != len(names):
            raise ConfigError(f"duplicate instance type names in catalog {name!r}")
        self.name = name
        # metadata: where and when the prices hold, where they come from, and the
        # built-in name or file the catalog was read from
        self.region, self.as_of, self.source = region, as_of, source
        self.origin = origin or name
        self.types: tuple[InstanceType, ...] = tuple(ts)
        self._by_name = {t.name: t for t in ts}
        #: the names of the resource dimensions of this catalog's vectors
        self.dims: tuple[str, ...] = ALL_DIMS[:dims]
        # Per dimension: the largest amount any type offers (task feasibility) and the
        # amount on the smallest type (Stratus §3.3 normalisation).
        self.max_capacity = tuple(max(t.capacity[d] for t in ts) for d in range(dims))
        self.smallest = ts[0]
        # §3.3's normaliser: the smallest type's amount; in a dimension where it has none
        # (GPUs on a CPU type) the smallest non-zero amount any type has, 1 if none has any
        # (docs/decisions.md, "The GPU normaliser")
        self.norm: tuple[int, ...] = tuple(
            c or min((t.capacity[d] for t in ts if t.capacity[d]), default=1)
            for d, c in enumerate(ts[0].capacity))

    @property
    def has_gpus(self) -> bool:
        return len(self.dims) > 2

    def __iter__(self) -> Iterator[InstanceType]:
        return iter(self.types)

    def __len__(self) -> int:
        return len(self.types)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __getitem__(self, name: str) -> InstanceType:
        try:
            return self._by_name[name]
        except KeyError:
            known = ", ".join(self._by_name)
            raise ConfigError(f"unknown instance type {name!r}; catalog {self.name!r} has: {known}") from None

    def subset(self, names: Iterable[str]) -> Catalog:
        """The named types only, e.g. to restrict a replay to a few shapes."""
        return Catalog([self[n] for n in names], name=f"{self.name}-subset",
                       region=self.region, as_of=self.as_of, source=self.source)

    @property
    def families(self) -> list[str]:
        """The families, in order of first appearance (smallest type first)."""
        return list(dict.fromkeys(t.family for t in self.types))


M4_SOURCE = ("Stratus (SoCC 2018) §4.1 and Fig. 3c: m4 at 2017 us-west-2 Linux on-demand "
             "prices; the same figures in the US East Linux price list of 2017-12-01 "
             "(riceissa/computing-data-project, sql/cloud-instance-costs.sql)")
M5_SOURCE = ("m5.large 0.096 $/h Linux on-demand (US East price list of 2017-12-01, "
             "riceissa/computing-data-project), linear in size; 3-year reserved m5.large "
             "$988 from the waiting-policy paper (000 §2)")


def _m4() -> list[InstanceType]:
    rows = [  # name, vCPU, GiB, on-demand $/h (us-west-2, 2017)
        ("m4.large", 2, 8, 0.10),
        ("m4.xlarge", 4, 16, 0.20),
        ("m4.2xlarge", 8, 32, 0.40),
        ("m4.4xlarge", 16, 64, 0.80),
        ("m4.10xlarge", 40, 160, 2.00),
        ("m4.16xlarge", 64, 256, 3.20),
    ]
    return [InstanceType(n, c, m, p, family="m4", source=M4_SOURCE, verified=True)
            for n, c, m, p in rows]


M5_LARGE_HOURLY = 0.096
M5_LARGE_RESERVED_3Y_USD = 988.0


def _m5() -> list[InstanceType]:
    out = []
    for size, mult in [("large", 1), ("xlarge", 2), ("2xlarge", 4), ("4xlarge", 8),
                       ("8xlarge", 16), ("12xlarge", 24), ("16xlarge", 32), ("24xlarge", 48)]:
        out.append(InstanceType(
            f"m5.{size}", 2 * mult, 8 * mult, round(M5_LARGE_HOURLY * mult, 6), family="m5",
            reserved_hourly=M5_LARGE_RESERVED_3Y_USD * mult / HOURS_PER_3_YEARS,
            source=M5_SOURCE,
            # 8xlarge and 16xlarge are not in the 2017 list (launched later): linear, unchecked
            verified=size not in ("8xlarge", "16xlarge"),
        ))
    return out


M4 = Catalog(_m4(), name="m4", region="us-west-2", as_of="2017", source=M4_SOURCE)
M5 = Catalog(_m5(), name="m5", region="us-east-1", as_of="2017-12", source=M5_SOURCE)
# the catalogs built in Python; the others are TOML files in pricing/data (catalog_files)
CATALOGS = {"m4": M4, "m5": M5}
