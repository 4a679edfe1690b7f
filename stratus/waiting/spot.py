"""Speculative execution on spot VMs (paper 003 §3.1, "We can further decrease the cost of
speculative execution using spot VMs"): each speculating job runs on the smallest VM of the
family that fits it, bought on the spot market at the replay engine's bid and revoked by
the engine's rule, and billed per second at the spot price it ran under.

The rules are the engine's (``stratus.sim.engine``): the bid is the type's on-demand price
(Stratus §3.3); an instance whose spot price is above its bid, when it is acquired or at
any later price change, is revoked ``SPOT_WARNING_S`` (AWS's two-minute notice) later,
whatever the price does in between. There is no spin-up, as in the papers' cloud model
(000 §5) that the on-demand speculation uses.
"""

from __future__ import annotations

import math

import numpy as np

from stratus.base.errors import ConfigError
from stratus.pricing.prices import ON_DEMAND, SPOT, PriceBook
from stratus.sim.engine import SPOT_WARNING_S
from stratus.waiting.bill import smallest_types


class SpotSpeculation:
    """When a speculation of job j started at time t is revoked (``revocation``), and what
    a stretch of it costs (``cost``), for jobs of ``cpu`` cores and ``mem`` GiB."""

    def __init__(self, book: PriceBook, cpu: np.ndarray, mem: np.ndarray) -> None:
        catalog = book.catalog
        self.book = book
        self.kind = smallest_types(catalog, np.asarray(cpu, np.float64),
                                   np.asarray(mem, np.float64))
        self.names = [t.name for t in catalog.types]
        self._above: list[tuple[np.ndarray, np.ndarray] | None] = []
        for t in catalog.types:
            if not book.has(t.name, SPOT):
                self._above.append(None)
                continue
            s = book.series(t.name, SPOT)
            bid = book.price(t.name, ON_DEMAND, 0.0)  # the engine's default bid
            above = s.prices > bid
            # segment start times and whether the price there is above the bid
            self._above.append((s.times, above))
        self._next_above: list[np.ndarray | None] = [
            None if a is None else a[0][a[1]] for a in self._above]

    def type_of(self, j: int) -> str:
        k = int(self.kind[j])
        if k < 0:
            raise ConfigError(f"job {j} fits no {self.book.catalog.name} type")
        return self.names[k]

    def check(self, jobs: np.ndarray) -> None:
        """Every type these jobs would speculate on has a spot price: else one error."""
        missing = sorted({self.names[k] for k in np.unique(self.kind[jobs]) if k >= 0
                          and self._above[k] is None})
        if missing:
            raise ConfigError(f"--speculate-market spot: no spot prices for "
                              f"{', '.join(missing)} in {self.book.name or 'the price book'}; "
                              f"give --spot-prices with those types, or leave it out for "
                              f"the synthetic spot model")

    def revocation(self, j: int, t: float) -> float:
        """The time a spot VM for job j acquired at ``t`` is taken back (inf: never)."""
        k = int(self.kind[j])
        times, above = self._above[k]
        i = int(np.searchsorted(times, t, side="right")) - 1
        if above[max(i, 0)]:  # above the bid already: revoked two minutes on
            return t + SPOT_WARNING_S
        later = self._next_above[k]
        n = int(np.searchsorted(later, t, side="right"))
        return float(later[n]) + SPOT_WARNING_S if n < len(later) else math.inf

    def cost(self, j: int, t0: float, t1: float) -> float:
        """$ for job j's spot VM over [t0, t1], per second at the prevailing price."""
        return self.book.cost(self.type_of(j), SPOT, t0, t1)


def speculation_bill(run, spot: SpotSpeculation, runtime: np.ndarray,
                     ondemand_cost: np.ndarray) -> dict:
    """Split a spot-speculating pool run's cloud spend: per job what its completed cloud
    run cost (spot for a speculation that finished, on demand for a job no server fits),
    and what the wasted speculations cost: killed at t, and revoked before they ended."""
    per_job = np.asarray(ondemand_cost, dtype=np.float64).copy()
    killed = revoked = 0.0
    n_revoked = 0
    for j, t0, t1, outcome in run.speculations:
        c = spot.cost(j, t0, t1)
        if outcome == "done":
            per_job[j] = c
        elif outcome == "killed":
            killed += c
        else:
            revoked += c
            n_revoked += 1
    return {"cloud_cost": per_job, "killed_usd": killed, "revoked_usd": revoked,
            "revocations": n_revoked}
