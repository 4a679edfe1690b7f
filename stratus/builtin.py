"""The registered compositions (Stratus §4.3 baselines, Stratus and its ablations)."""

from __future__ import annotations

from scalers.task_per_instance import CheapestPerTask
from stratus.compose import ComposedScheduler
from stratus.registry import register


@register("task-per-instance",
          "each task on its own instance of the cheapest type that fits (HotSpot placement)")
def task_per_instance() -> ComposedScheduler:
    return ComposedScheduler("task-per-instance", scaler=CheapestPerTask())


@register("first-fit",
          "first fit onto live instances, else a new cheapest-fitting instance per task")
def first_fit() -> ComposedScheduler:
    from packers.first_fit import FirstFit

    return ComposedScheduler("first-fit", scaler=CheapestPerTask(), packer=FirstFit())
