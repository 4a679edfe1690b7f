"""The registered compositions (Stratus §4.3 baselines, Stratus and its ablations). A
factory's keyword arguments are its options (``stratus?clearing=false``); the ablations are
aliases, registered names for a factory with options set (stratus.app.schedulers)."""

from __future__ import annotations

from typing import Literal

from stratus.app.schedulers import alias, register
from stratus.policy.compose import ComposedScheduler
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


@register("stratus", "Stratus (SoCC'18): runtime binning, cost-efficiency scale-out, instance "
          "clearing; JVuPredict-like history estimates", estimator="history")
def stratus(clearing: bool = True,
            scaleout: Literal["cost-efficiency", "best-fit"] = "cost-efficiency"
            ) -> ComposedScheduler:
    """Stratus (§3); ``clearing``: instance clearing (§3.4); ``scaleout``: the
    cost-efficiency scaler (§3.3) or the best-fitting type per new task (§5.1 ablation)."""
    from stratus.packers.binning import RuntimeBinPacker
    from stratus.scalers.clearing import InstanceClearing
    from stratus.scalers.cost_efficiency import CostEfficiencyScaler
    from stratus.scalers.per_task import BestFit, PerTaskScaler

    packer = RuntimeBinPacker()
    scaler = CostEfficiencyScaler() if scaleout == "cost-efficiency" else PerTaskScaler(BestFit())
    return ComposedScheduler("stratus", scaler=scaler, packer=packer,
                             migrator=InstanceClearing(packer) if clearing else None)


alias("stratus-noclear", "stratus", "Stratus without instance clearing (§5.2 side note, "
      "§5.4.2)", {"clearing": False})
#: references, not competitors: they are given what no scheduler knows (reports mark them)
PERFECT_RUNTIMES = "given perfect runtimes"

alias("stratus-oracle", "stratus", "Stratus with perfect runtime knowledge (§5.4.1)",
      estimator="oracle", reference=f"{PERFECT_RUNTIMES} (§5.4.1)")


# --- HSpot, SCloud and the Fig. 6 ablation chain (Stratus §4.3, §5.2) -------------------------
HOTSPOT_BID_FACTOR = 10.0  # HSpot bids above on-demand (§4.1): EC2's cap, 10x (decisions.md)


@register("hotspot", "HSpot (§4.3): each task on its own cheapest-fitting instance, hopping to a "
          "type that became cheaper when it pays; bids 10x on-demand; perfect runtimes",
          estimator="oracle")
def hotspot() -> ComposedScheduler:
    from stratus.scalers.hotspot_migration import PriceHopping

    return ComposedScheduler("hotspot", scaler=CheapestPerTask(bid_factor=HOTSPOT_BID_FACTOR),
                             migrator=PriceHopping(bid_factor=HOTSPOT_BID_FACTOR))


@register("scloud", "SCloud (§4.3): SuperCloud-Spot's greedy packing of pending tasks on new "
          "instances (most-constrained resource, large types), HSpot hopping; perfect runtimes",
          estimator="oracle")
def scloud(pack: bool = False, scale: bool = False, clear: bool = False) -> ComposedScheduler:
    """SCloud (§4.3) and the §5.2 steps from it towards Stratus (Fig. 6): ``pack``, online
    dot-product packing onto running instances; ``scale``, Stratus's cost-efficiency
    scale-out; ``clear``, instance clearing (without runtime bins: it re-packs a cleared
    instance's tasks by dot product, Fig. 6's last step; without ``pack`` with a
    dot-product index of its own, as new tasks still go only on new instances)."""
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
        clearing = InstanceClearing(packer) if packer is not None else \
            InstanceClearing(DotProductPacker(), own_packer=True)
        migrator = MigratorChain(migrator, clearing)
    return ComposedScheduler("scloud", scaler=scaler, packer=packer, migrator=migrator)


# the Fig. 6 chain is an ablation run with perfect runtimes (§5.2): references in a report
_CHAIN = f"{PERFECT_RUNTIMES}: the §5.2 ablation chain (Fig. 6)"
alias("scloud+pack", "scloud", "SCloud + online dot-product vector packing onto running "
      "instances (§5.2, Fig. 6)", {"pack": True}, reference=_CHAIN)
alias("scloud+pack+scale", "scloud", "SCloud + dot-product packing + Stratus's cost-efficiency "
      "scale-out (§5.2, Fig. 6)", {"pack": True, "scale": True}, reference=_CHAIN)
alias("scloud+pack+scale+clear", "scloud", "SCloud + dot-product packing + cost-efficiency "
      "scale-out + instance clearing without runtime binning, perfect runtimes (§5.2, Fig. 6)",
      {"pack": True, "scale": True, "clear": True}, reference=_CHAIN)


# --- Spot Fleet + ECS (§4.3), Karpenter, Stratus best-fit scale-out (§5.1) -----------------


@register("fleet", "Spot Fleet lowestPrice acquisition + ECS binpack (CPU) placement (§4.3 Fleet)")
def fleet(allocation: Literal["lowest-price", "diversified"] = "lowest-price",
          binpack: Literal["cpu", "memory"] = "cpu") -> ComposedScheduler:
    """Spot Fleet + ECS (§4.3): ``allocation``, Spot Fleet's strategy for what fits nowhere
    (lowestPrice, or diversified: round-robin over the types a task fits); ``binpack``, the
    resource ECS binpack places on."""
    from stratus.packers.binpack import Binpack
    from stratus.scalers.per_task import Diversified, LowestPrice, PerTaskScaler

    choice = LowestPrice() if allocation == "lowest-price" else Diversified()
    dim = 0 if binpack == "cpu" else 1
    return ComposedScheduler("fleet", scaler=PerTaskScaler(choice, copack=dim),
                             packer=Binpack(dim))


alias("fleet-mem", "fleet", "Spot Fleet lowestPrice + ECS binpack on memory (§4.3 Fleet "
      "variant)", {"binpack": "memory"})
alias("fleet-diversified", "fleet", "Spot Fleet diversified acquisition (round-robin over "
      "fitting types) + ECS binpack (CPU)", {"allocation": "diversified"})


@register("karpenter", "Karpenter: batch first-fit-decreasing provisioning on the cheapest "
          "fitting types, WhenEmptyOrUnderutilized consolidation after 5 min; not runtime-aware")
def karpenter() -> ComposedScheduler:
    from stratus.packers.first_fit import FirstFit
    from stratus.scalers.karpenter import KarpenterConsolidation, KarpenterProvisioner

    packer = FirstFit()
    return ComposedScheduler("karpenter", scaler=KarpenterProvisioner(), packer=packer,
                             migrator=KarpenterConsolidation(packer))


alias("stratus-bestfit", "stratus", "Stratus with the best-fitting instance per new task at "
      "scale-out (§5.1 ablation)", {"scaleout": "best-fit"})


# --- Eva (EuroSys '25), the state of the art beside Stratus -----------------------------------


@register("eva", "Eva (EuroSys'25) without throughput awareness (interference is not "
          "modelled: Eva's own ablation): reservation prices, top-down provisioning, Full or "
          "Partial reconfiguration every period; not runtime-aware")
def eva(period: float = 300.0, partial: bool = True, full: bool = True):
    """Eva (scalers.eva): ``period``, seconds between rounds (the artifact's 300);
    ``partial``/``full``: whether Partial/Full reconfiguration may be chosen (false: the
    artifact's ``EVAGangNoLocal``/``EVAGangNoGlobal``)."""
    from stratus.scalers.eva import Eva

    return Eva("eva", period=period, partial=partial, full=full)
