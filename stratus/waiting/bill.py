"""Prices for a reserved pool and its cloud overflow in the waiting-policy papers' model
(000 §5): the cloud runs each job that leaves on the smallest on-demand VM of the family
that fits it, billed per second; a reserved server costs its on-demand equivalent less the
discount, for the whole horizon, used or not."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from stratus.base.errors import ConfigError
from stratus.pricing.catalog import Catalog


@dataclass(frozen=True)
class PoolPrices:
    server_ondemand_hourly: float  # the smallest VM that covers one server
    server_reserved_hourly: float
    core_hour_ondemand: float  # server on-demand price per core (the advisor MILP's)
    server_type: str


def pool_prices(catalog: Catalog, cores: float, mem_gib: float,
                discount: float | None, server_type: str | None = None) -> PoolPrices:
    """A server's prices. ``discount`` D prices it at (1 - D) x on-demand (the papers use
    0.6); None takes the catalog's reserved rate for the covering type. ``server_type``
    names the type itself (``--reserved-type``) instead of the cheapest that covers the
    shape."""
    if server_type is not None:
        t = catalog[server_type]
    else:
        fitting = [t for t in catalog
                   if t.vcpu >= cores - 1e-9 and t.mem_gib >= mem_gib - 1e-9]
        if not fitting:
            raise ConfigError(f"no {catalog.name} type has {cores:g} cores and {mem_gib:g} "
                              f"GiB: a reserved server must be a shape the family rents")
        t = min(fitting, key=lambda x: (x.ondemand_hourly, x.vcpu))
    if discount is None:
        if t.reserved_hourly is None:
            raise ConfigError(f"catalog {catalog.name} has no reserved rate for {t.name}; "
                              f"give --reserved-discount")
        reserved = t.reserved_hourly
    else:
        if not (0 <= discount < 1 and math.isfinite(discount)):
            raise ConfigError(f"--reserved-discount takes a fraction in [0, 1), got {discount}")
        reserved = (1.0 - discount) * t.ondemand_hourly
    return PoolPrices(t.ondemand_hourly, reserved, t.ondemand_hourly / cores, t.name)


@dataclass(frozen=True)
class MixPrices:
    """A reserved mix's prices, server by server in the pool's order."""

    rates: tuple[float, ...]  # $/h reserved, one per server
    reserved_hourly: float  # their sum
    ondemand_hourly: float  # the servers' on-demand sum
    core_hour_ondemand: float  # on-demand $ per core-hour of the pool


def mix_prices(catalog: Catalog, pairs, discount: float | None) -> MixPrices:
    """``pairs`` ((type, count), ...) priced as the replay prices ``--reserved``
    (``stratus.commitments.reserved.reserved_rate``): (1 - D) x on-demand with ``discount`` D, else the
    catalog's reserved rate, else (1 - 0.6) x on-demand where the catalog has none."""
    from stratus.commitments.reserved import reserved_rate

    if discount is not None and not (0 <= discount < 1 and math.isfinite(discount)):
        raise ConfigError(f"--reserved-discount takes a fraction in [0, 1), got {discount}")
    rates: list[float] = []
    ondemand = cores = 0.0
    for name, n in pairs:
        t = catalog[name]
        rates += [reserved_rate(t, discount)] * n
        ondemand += n * t.ondemand_hourly
        cores += n * t.vcpu
    return MixPrices(tuple(rates), float(sum(rates)), ondemand, ondemand / cores)


def smallest_types(catalog: Catalog, cpu: np.ndarray, mem: np.ndarray) -> np.ndarray:
    """Per job, the index (in ``catalog.types``) of the cheapest type that fits it; -1
    where none does."""
    order = sorted(range(len(catalog.types)),
                   key=lambda i: (catalog.types[i].ondemand_hourly, catalog.types[i].vcpu))
    out = np.full(len(cpu), -1, dtype=np.int64)
    for i in reversed(order):  # the cheapest fitting type is written last
        t = catalog.types[i]
        out[(cpu <= t.vcpu + 1e-9) & (mem <= t.mem_gib + 1e-9)] = i
    return out


def smallest_vm_costs(catalog: Catalog, cpu: np.ndarray, mem: np.ndarray,
                      runtime: np.ndarray) -> np.ndarray:
    """$ per job on the cheapest type that fits it, per second. A job larger than every
    type spans ceil(size / largest) of the largest type (a parallel job over VMs)."""
    kind = smallest_types(catalog, cpu, mem)
    hourly = np.array([t.ondemand_hourly for t in catalog.types])
    big = kind < 0
    rate = np.where(big, np.nan, hourly[np.maximum(kind, 0)])
    if big.any():
        top = max(catalog, key=lambda x: (x.vcpu, x.mem_gib))
        k = np.maximum(np.ceil(cpu[big] / top.vcpu), np.ceil(mem[big] / top.mem_gib))
        rate[big] = k * top.ondemand_hourly
    return rate * runtime / 3600.0
