"""What an acquisition costs at the margin under a savings plan (issue 36, item 3), for the
schedulers that buy instances by price.

A savings plan's commitment is paid whatever is used (stratus.commitments.savings), so an on-demand
instance inside the plan's unused coverage costs nothing more: its marginal price
(``ClusterView.marginal_price``) is 0, the full on-demand price with no headroom, the
uncovered part in between. ``Offer`` is the set of (type, market) pairs a scheduler may
acquire in at one tick, priced that way: the types the scheduler's own rule allows in the
replay's market (its bid), and on demand every type not known short of capacity. A covered
on-demand type is priced at COVERED_FLOOR x its on-demand price instead of 0, as in
Stratus's score (scalers.cost_efficiency): covered capacity comes before anything that
costs money, and among covered types the smaller (the one taking less of the commitment)
first. Each on-demand pick takes its discounted rate off the headroom (``take``), and
the pairs are priced again.

The headroom is the plan's rate left at the current run rate (``Plan.savings_headroom``:
the live on-demand instances' and this tick's on-demand acquisitions'), not the usage left
in the current clock hour: an instance acquired now runs on past the hour
(docs/decisions.md, "Schedulers price acquisitions at the margin").

Reserved instances (stratus.commitments.reserved) are all live from the first tick: no acquisition is
ever billed at their rate, so they do not enter an acquisition's price; their idle capacity
is taken by placement, which every scheduler tries before it buys.

Without a plan no ``Offer`` is built: every scheduler runs its own code path unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence

from stratus.base.resources import fits
from stratus.commitments.savings import COVERED_FLOOR, marginal_price
from stratus.pricing.catalog import InstanceType
from stratus.pricing.prices import ON_DEMAND


class Offer:
    """(type, market) pairs to acquire in at one tick, at their marginal prices under the
    replay's savings plan (the view must have one). ``types``: those acquirable in the
    replay's market by the scheduler's rule, in its tie order (e.g. catalog order)."""

    __slots__ = ("view", "market", "discount", "headroom", "_pairs", "_priced", "_cache",
                 "_od")

    def __init__(self, view, plan, types: Sequence[InstanceType]) -> None:
        self.view = view
        self.market = view.market
        self.discount = view.savings_plan.discount
        self.headroom = plan.savings_headroom()
        pairs = [(t, self.market) for t in types]
        short = view.unavailable_types()
        od = [(t, ON_DEMAND) for t in view.catalog if t.name not in short]
        if self.market != ON_DEMAND:
            pairs += od
        else:
            pairs = od
        self._pairs = pairs
        self._od = {t.name for t, _ in od}
        self._price()

    @property
    def pairs(self) -> list[tuple[InstanceType, str]]:
        """Every (type, market) pair, the replay's market's first."""
        return list(self._pairs)

    def _price(self) -> None:
        priced = [(self.price(t, m), i, t, m) for i, (t, m) in enumerate(self._pairs)]
        priced.sort(key=lambda x: (x[0], x[1]))
        self._priced = priced
        self._cache: dict[tuple, tuple[InstanceType, str] | None] = {}

    def ranked(self) -> list[tuple[float, int, InstanceType, str]]:
        """(price, tie index, type, market) of every pair, cheapest first."""
        return self._priced

    def price(self, itype: InstanceType, market: str) -> float:
        """The price a pair is ranked at: its list price, on demand its marginal price
        (floored at COVERED_FLOOR x the list price)."""
        p = self.view.price(itype, market)
        if market == ON_DEMAND:
            p = max(marginal_price(p, self.headroom, self.discount), COVERED_FLOOR * p)
        return p

    def cheapest(self, need: Sequence[int], below: float = float("inf")
                 ) -> tuple[InstanceType, str] | None:
        """The cheapest pair at the margin whose type holds ``need`` and that costs less
        than ``below`` (ties: the replay's market, then the ``types`` order)."""
        key = (tuple(need), below)
        cache = self._cache
        if key in cache:
            return cache[key]
        out = next(((t, m) for p, _, t, m in self._priced
                    if p < below and fits(need, t.capacity)), None)
        cache[key] = out
        return out

    def cheapest_price(self, need: Sequence[int]) -> tuple[InstanceType, str, float] | None:
        """``cheapest`` with its price."""
        pick = self.cheapest(need)
        return None if pick is None else (*pick, self.price(*pick))

    def market_for(self, itype: InstanceType) -> str:
        """The market to buy ``itype`` in: on demand when it is cheaper there at the margin
        (and not short of capacity), else the replay's market."""
        if (self.market != ON_DEMAND and itype.name in self._od
                and self.price(itype, ON_DEMAND) < self.view.price(itype, self.market)):
            return ON_DEMAND
        return self.market

    def release_saving(self, itype: InstanceType, market: str) -> float:
        """$/h releasing a live instance of ``itype`` in ``market`` saves: on demand, its
        marginal price with the headroom it frees given back (0 while the plan would
        cover it); else its list price."""
        p = self.view.price(itype, market)
        if market == ON_DEMAND:
            return marginal_price(p, self.headroom + (1.0 - self.discount) * p, self.discount)
        return p

    def take(self, itype: InstanceType, market: str) -> None:
        """A pair was bought: an on-demand one takes its discounted rate off the headroom
        and the pairs are priced again."""
        if market == ON_DEMAND:
            self.headroom -= (1.0 - self.discount) * self.view.price(itype, ON_DEMAND)
            self._price()


def offer(view, plan, types: Sequence[InstanceType]) -> Offer | None:
    """An ``Offer`` under a savings plan; None without one (the caller's own path)."""
    if view.savings_plan is None:
        return None
    return Offer(view, plan, types)


__all__ = ["Offer", "offer"]
