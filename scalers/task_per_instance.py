"""Every task gets its own instance of the cheapest type that fits it: the placement half
of HotSpot (Shastri & Irwin, SoCC'17; Stratus §4.3 "HSpot")."""

from __future__ import annotations

from collections.abc import Sequence

from pricing.catalog import InstanceType
from stratus.compose import Plan
from stratus.errors import DecisionError
from stratus.model import Task
from stratus.resources import fits
from stratus.view import ClusterView


def cheapest_fitting(view: ClusterView, market: str | None = None) -> list[tuple[float, InstanceType]]:
    """Catalog types by current price, cheapest first (ties: smaller type first)."""
    return sorted(((view.price(t, market), i, t) for i, t in enumerate(view.catalog)),
                  key=lambda x: (x[0], x[1]))


class CheapestPerTask:
    """Scaler: one new instance per task, the cheapest type it fits, in the replay market."""

    name = "cheapest-per-task"

    def scale(self, view: ClusterView, plan: Plan, tasks: Sequence[Task]) -> None:
        by_price = [t for _, _, t in cheapest_fitting(view)]
        cache: dict[tuple, InstanceType] = {}
        for task in tasks:
            itype = cache.get(task.req)
            if itype is None:
                for cand in by_price:
                    if fits(task.req, cand.capacity):
                        itype = cand
                        break
                else:
                    raise DecisionError(f"{task!r} fits no instance type")
                cache[task.req] = itype
            plan.acquire(itype, (task,))
