"""Every task gets its own instance of the cheapest type that fits it: the placement half
of HotSpot (Shastri & Irwin, SoCC'17; Stratus §4.3 "HSpot").
Under a savings plan: the cheapest (type, market) at the margin (scalers.marginal)."""

from __future__ import annotations

from collections.abc import Sequence

from stratus.base.resources import fits
from stratus.policy.compose import Plan
from stratus.policy.params import Param, Parametric
from stratus.pricing.catalog import InstanceType
from stratus.pricing.prices import SPOT
from stratus.scalers.marginal import Offer
from stratus.sim.model import Task
from stratus.sim.view import ClusterView


def acquirable(view: ClusterView, bid_factor: float | None = None) -> list[InstanceType]:
    """Types worth acquiring now. With ``bid_factor`` (bids at that multiple of the
    on-demand price, HotSpot in Stratus §4.1) a spot type is acquirable while its price is
    not above that bid; without it, the view's rule (not above on-demand, §3.3)."""
    if bid_factor is None or view.market != SPOT:
        return view.acquirable_types()
    short = view.unavailable_types()  # known short of capacity (stratus.sim.faults): not now
    return [t for t in view.catalog
            if view.price(t) <= bid_factor * view.bid(t) and t.name not in short]


def bid_for(view: ClusterView, itype: InstanceType, bid_factor: float | None) -> float | None:
    """The bid to name in an acquisition (None: the engine's default, on-demand)."""
    if bid_factor is None or view.market != SPOT:
        return None
    return bid_factor * view.bid(itype)


def by_price(view: ClusterView, bid_factor: float | None = None) -> list[InstanceType]:
    """Acquirable types by current price, cheapest first (ties: smaller type first)."""
    types = acquirable(view, bid_factor)
    return [t for _, _, t in sorted((view.price(t), i, t) for i, t in enumerate(types))]


#: a spot bid as a multiple of the on-demand price (HotSpot, Stratus §4.1; none: the
#: engine's bid, on-demand, §3.3): from on-demand (below it a task may wait for a price
#: that never comes) to EC2's cap, 10x (docs/decisions.md)
BID_FACTOR = Param("bid_factor", float, 1, 10, what="a multiple of the on-demand price",
                   none=True)


class CheapestPerTask(Parametric):
    """Scaler: one new instance per task, the cheapest type it fits, in the replay market.

    ``bid_factor``: bid that multiple of the on-demand price (HotSpot, Stratus §4.1);
    None bids on-demand (§3.3)."""

    label = "cheapest-per-task"
    PARAMS = (BID_FACTOR,)

    def __init__(self, bid_factor: float | None = None) -> None:
        self.bid_factor = bid_factor
        self.check_init()

    def scale(self, view: ClusterView, plan: Plan, tasks: Sequence[Task]) -> None:
        if view.savings_plan is not None:
            self._scale_at_margin(view, plan, tasks)
            return
        types = by_price(view, self.bid_factor)
        cache: dict[tuple, InstanceType | None] = {}
        market, acquire = view.market, plan.acquire
        factor = self.bid_factor
        for task in tasks:
            req = task.req
            if req in cache:
                itype = cache[req]
            else:
                itype = cache[req] = next((t for t in types if fits(req, t.capacity)), None)
            if itype is not None:  # else every type it fits is above its bid: wait
                if factor is None:
                    acquire(itype, (task,), market)
                else:
                    acquire(itype, (task,), market, bid=bid_for(view, itype, factor))

    def _scale_at_margin(self, view: ClusterView, plan: Plan, tasks: Sequence[Task]) -> None:
        """Under a savings plan: the cheapest (type, market) the task fits at the margin
        (scalers.marginal), covered on-demand capacity first."""
        factor = self.bid_factor
        offer = Offer(view, plan, acquirable(view, factor))
        for task in tasks:
            pick = offer.cheapest(task.req)
            if pick is None:
                continue  # every type it fits is above its bid: wait
            itype, market = pick
            bid = bid_for(view, itype, factor) if market == view.market else None
            plan.acquire(itype, (task,), market, bid=bid)
            offer.take(itype, market)
