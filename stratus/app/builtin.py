"""The registered compositions (Stratus §4.3 baselines, Stratus and its ablations)."""

from __future__ import annotations

from stratus.app.schedulers import register
from stratus.compose import ComposedScheduler
from stratus.scalers.task_per_instance import CheapestPerTask


@register("task-per-instance",
          "each task on its own instance of the cheapest type that fits (HotSpot placement)")
def task_per_instance() -> ComposedScheduler:
    return ComposedScheduler("task-per-instance", scaler=CheapestPerTask())


@register("first-fit",
          "first fit onto live instances, else a new cheapest-fitting instance per task")
def first_fit() -> ComposedScheduler:
    from stratus.packers.first_fit import FirstFit

    return ComposedScheduler("first-fit", scaler=CheapestPerTask(), packer=FirstFit())


def _stratus(name: str, clearing: bool) -> ComposedScheduler:
    from stratus.packers.binning import RuntimeBinPacker
    from stratus.scalers.clearing import InstanceClearing
    from stratus.scalers.cost_efficiency import CostEfficiencyScaler

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


# --- HSpot, SCloud and the Fig. 6 ablation chain (Stratus §4.3, §5.2) -------------------------
HOTSPOT_BID_FACTOR = 10.0  # HSpot bids above on-demand (§4.1): EC2's cap, 10x (decisions.md)


@register("hotspot", "HSpot (§4.3): each task on its own cheapest-fitting instance, hopping to a "
          "type that became cheaper when it pays; bids 10x on-demand; perfect runtimes",
          estimator="oracle")
def hotspot() -> ComposedScheduler:
    from stratus.scalers.hotspot_migration import PriceHopping

    return ComposedScheduler("hotspot", scaler=CheapestPerTask(bid_factor=HOTSPOT_BID_FACTOR),
                             migrator=PriceHopping(bid_factor=HOTSPOT_BID_FACTOR))


def _scloud(name: str, pack: bool = False, scale: bool = False,
            clear: bool = False) -> ComposedScheduler:
    """SCloud (§4.3) and the §5.2 steps from it towards Stratus (Fig. 6)."""
    from stratus.packers.dot_product import DotProductPacker
    from stratus.scalers.chain import MigratorChain
    from stratus.scalers.clearing import InstanceClearing
    from stratus.scalers.cost_efficiency import CostEfficiencyScaler
    from stratus.scalers.hotspot_migration import PriceHopping
    from stratus.scalers.scloud import GreedyConstrainedScaler

    packer = DotProductPacker() if pack else None
    scaler = CostEfficiencyScaler() if scale else GreedyConstrainedScaler()
    migrator = PriceHopping(unit="capacity")
    if clear:
        migrator = MigratorChain(migrator, InstanceClearing(packer))
    return ComposedScheduler(name, scaler=scaler, packer=packer, migrator=migrator)


@register("scloud", "SCloud (§4.3): SuperCloud-Spot's greedy packing of pending tasks on new "
          "instances (most-constrained resource, large types), HSpot hopping; perfect runtimes",
          estimator="oracle")
def scloud() -> ComposedScheduler:
    return _scloud("scloud")


@register("scloud+pack", "SCloud + online dot-product vector packing onto running instances "
          "(§5.2, Fig. 6)", estimator="oracle")
def scloud_pack() -> ComposedScheduler:
    return _scloud("scloud+pack", pack=True)


@register("scloud+pack+scale", "SCloud + dot-product packing + Stratus's cost-efficiency "
          "scale-out (§5.2, Fig. 6)", estimator="oracle")
def scloud_pack_scale() -> ComposedScheduler:
    return _scloud("scloud+pack+scale", pack=True, scale=True)


@register("scloud+pack+scale+clear", "SCloud + dot-product packing + cost-efficiency scale-out "
          "+ instance clearing without runtime binning, perfect runtimes (§5.2, Fig. 6)",
          estimator="oracle")
def scloud_pack_scale_clear() -> ComposedScheduler:
    return _scloud("scloud+pack+scale+clear", pack=True, scale=True, clear=True)


# --- Spot Fleet + ECS (§4.3), Karpenter, Stratus best-fit scale-out (§5.1) -----------------


def _fleet(name: str, choice, dim: int) -> ComposedScheduler:
    from stratus.packers.binpack import Binpack
    from stratus.scalers.per_task import PerTaskScaler

    return ComposedScheduler(name, scaler=PerTaskScaler(choice, copack=dim), packer=Binpack(dim))


@register("fleet", "Spot Fleet lowestPrice acquisition + ECS binpack (CPU) placement (§4.3 Fleet)")
def fleet() -> ComposedScheduler:
    from stratus.scalers.per_task import LowestPrice

    return _fleet("fleet", LowestPrice(), 0)


@register("fleet-mem", "Spot Fleet lowestPrice + ECS binpack on memory (§4.3 Fleet variant)")
def fleet_mem() -> ComposedScheduler:
    from stratus.scalers.per_task import LowestPrice

    return _fleet("fleet-mem", LowestPrice(), 1)


@register("fleet-diversified",
          "Spot Fleet diversified acquisition (round-robin over fitting types) + ECS binpack (CPU)")
def fleet_diversified() -> ComposedScheduler:
    from stratus.scalers.per_task import Diversified

    return _fleet("fleet-diversified", Diversified(), 0)


@register("karpenter", "Karpenter: batch first-fit-decreasing provisioning on the cheapest "
          "fitting types, WhenEmptyOrUnderutilized consolidation after 5 min; not runtime-aware")
def karpenter() -> ComposedScheduler:
    from stratus.packers.first_fit import FirstFit
    from stratus.scalers.karpenter import KarpenterConsolidation, KarpenterProvisioner

    packer = FirstFit()
    return ComposedScheduler("karpenter", scaler=KarpenterProvisioner(), packer=packer,
                             migrator=KarpenterConsolidation(packer))


@register("stratus-bestfit", "Stratus with the best-fitting instance per new task at scale-out "
          "(§5.1 ablation)", estimator="history")
def stratus_bestfit() -> ComposedScheduler:
    from stratus.packers.binning import RuntimeBinPacker
    from stratus.scalers.clearing import InstanceClearing
    from stratus.scalers.per_task import BestFit, PerTaskScaler

    packer = RuntimeBinPacker()
    return ComposedScheduler("stratus-bestfit", scaler=PerTaskScaler(BestFit()), packer=packer,
                             migrator=InstanceClearing(packer))
