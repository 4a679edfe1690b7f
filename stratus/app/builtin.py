"""The registered compositions (Stratus §4.3 baselines, Stratus and its ablations)."""

from __future__ import annotations

from scalers.task_per_instance import CheapestPerTask
from stratus.app.schedulers import register
from stratus.compose import ComposedScheduler


@register("task-per-instance",
          "each task on its own instance of the cheapest type that fits (HotSpot placement)")
def task_per_instance() -> ComposedScheduler:
    return ComposedScheduler("task-per-instance", scaler=CheapestPerTask())


@register("first-fit",
          "first fit onto live instances, else a new cheapest-fitting instance per task")
def first_fit() -> ComposedScheduler:
    from packers.first_fit import FirstFit

    return ComposedScheduler("first-fit", scaler=CheapestPerTask(), packer=FirstFit())


def _stratus(name: str, clearing: bool) -> ComposedScheduler:
    from packers.binning import RuntimeBinPacker
    from scalers.clearing import InstanceClearing
    from scalers.cost_efficiency import CostEfficiencyScaler

    packer = RuntimeBinPacker()
    return ComposedScheduler(name, scaler=CostEfficiencyScaler(), packer=packer,
                             migrator=InstanceClearing(packer) if clearing else None)


@register("stratus", "Stratus (SoCC'18): runtime binning, cost-efficiency scale-out, instance "
          "clearing; JVuPredict-like history estimates", estimator="history")
def stratus() -> ComposedScheduler:
    return _stratus("stratus", clearing=True)


@register("stratus-noclear", "Stratus without instance clearing (§5.2 side note, §5.4.2)",
          estimator="history")
def stratus_noclear() -> ComposedScheduler:
    return _stratus("stratus-noclear", clearing=False)


@register("stratus-oracle", "Stratus with perfect runtime knowledge (§5.4.1)", estimator="oracle")
def stratus_oracle() -> ComposedScheduler:
    return _stratus("stratus-oracle", clearing=True)
