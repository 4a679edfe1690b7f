"""Every task gets its own instance of the cheapest type that fits it: the placement half
of HotSpot (Shastri & Irwin, SoCC'17; Stratus §4.3 "HSpot")."""

from __future__ import annotations

from collections.abc import Sequence

from pricing.catalog import InstanceType
from stratus.compose import Plan
from stratus.model import Task
from stratus.resources import fits
from stratus.view import ClusterView


def by_price(view: ClusterView) -> list[InstanceType]:
    """Acquirable types by current price, cheapest first (ties: smaller type first)."""
    types = view.acquirable_types()
    return [t for _, _, t in sorted((view.price(t), i, t) for i, t in enumerate(types))]


class CheapestPerTask:
    """Scaler: one new instance per task, the cheapest type it fits, in the replay market."""

    name = "cheapest-per-task"

    def scale(self, view: ClusterView, plan: Plan, tasks: Sequence[Task]) -> None:
        types = by_price(view)
        cache: dict[tuple, InstanceType | None] = {}
        market, acquire = view.market, plan.acquire
        for task in tasks:
            req = task.req
            if req in cache:
                itype = cache[req]
            else:
                itype = cache[req] = next((t for t in types if fits(req, t.capacity)), None)
            if itype is not None:  # else every type it fits is above its bid: wait
                acquire(itype, (task,), market)
