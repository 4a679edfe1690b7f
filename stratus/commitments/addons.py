"""The commitments as engine add-ons (stratus.sim.hooks): reserved instances, a savings plan
and a waiting policy at the door of the reserved instances. Each does at its hooks what
the engine once did in branches of its own; ``addons_for`` builds them from a config."""

from __future__ import annotations

from stratus.commitments.bill import reserved_utilization, savings_plan_summary, with_reserved
from stratus.commitments.check import check_commitments
from stratus.commitments.gate import ReservedGate, Waiting
from stratus.commitments.reserved import check_reserved, ran_where, reserved_rate, reserved_text
from stratus.commitments.savings import SavingsPlan, ledger_bill
from stratus.commitments.savings import bound as plan_bound
from stratus.pricing.prices import ON_DEMAND, RESERVED, PriceSeries
from stratus.sim.events import EV_DEPART
from stratus.sim.hooks import AddOn
from stratus.sim.result import rounded

#: why the scheduler may not use reserved room under ``share=off`` (DecisionApplier.cordon)
CORDONED = ("is reserved capacity the waiting policy keeps to itself (share=off): the "
            "scheduler may not place or move tasks there")


class ReservedInstances(AddOn):
    """Reserved instances (stratus.commitments.reserved): priced at their rate, up from
    the first tick, and a per-task record of where each run started (bit 1: a reserved
    instance, bit 2: a rented one) for the summary's split (``ran_where``)."""

    claims = ("reserved", "reserved_discount")

    def __init__(self, reserved: tuple[tuple[str, int], ...], discount: float | None) -> None:
        self.reserved = reserved
        self.discount = discount
        self.ran_on = bytearray()
        self.cloud = self.catalog = None

    def configure(self, cfg) -> None:
        # checked again against the catalog the prices are for
        check_reserved(self.reserved, cfg.catalog, "ReplayConfig.reserved")
        cfg.prices = cfg.prices.with_series(
            {(name, RESERVED): PriceSeries.constant(reserved_rate(cfg.catalog[name],
                                                                  self.discount))
             for name, _ in self.reserved})

    def attach(self, core) -> None:
        self.cloud, self.catalog = core.cloud, core.cfg.catalog
        self.ran_on = bytearray(core.work.n)
        core.applier.pin(RESERVED, "a reserved instance runs to the end of the replay")

    def open(self, t: float) -> None:
        for name, count in self.reserved:  # prepaid: up from the start
            for _ in range(count):
                self.cloud.add_reserved(self.catalog[name], t)

    def started(self, task, inst, t: float) -> None:
        self.ran_on[task.tid] |= 1 if inst.market == RESERVED else 2

    def bill(self, bill) -> None:
        # the lower bounds may rent the reserved types at their rates too
        bill.bound_prices, bill.bound_markets = with_reserved(
            bill.bound_prices, bill.catalog, bill.bound_markets, self.reserved)
        # counted in instances_acquired too, billed in cost_by_market["reserved"]
        bill.keys["reserved_instances"] = sum(n for _, n in self.reserved)
        bill.keys["reserved"] = reserved_text(self.reserved)
        bill.keys["reserved_cost_usd"] = rounded(bill.by_market.get("reserved", 0.0))
        bill.keys["reserved_utilization"] = reserved_utilization(bill.ledger, bill.names)

    def summary(self, summary: dict) -> None:  # what ran where (docs/reference/reserved.md)
        summary.update(ran_where(self.ran_on))


class SavingsPlanBook(AddOn):
    """A savings plan (stratus.commitments.savings): on-demand joins the allowed markets
    (what the plan covers), and the cloud counts its live on-demand instances (the view's
    headroom under the plan); the bill is the commitment for the replay's hours and the
    on-demand usage beyond what the plan covers, at on-demand rates."""

    claims = ("savings_plan",)

    def __init__(self, plan: SavingsPlan) -> None:
        self.plan = plan

    def configure(self, cfg) -> None:
        if ON_DEMAND not in cfg.markets:
            cfg.markets = (*cfg.markets, ON_DEMAND)

    def attach(self, core) -> None:
        core.cloud.track_on_demand()

    def bill(self, bill) -> None:
        plan = self.plan
        pbill = ledger_bill(plan, bill.ledger, bill.prices, bill.start, bill.end)
        bill.total += pbill.total - pbill.usage
        if "on-demand" in bill.by_market:
            bill.by_market["on-demand"] = pbill.uncovered
        bill.by_market["savings-plan"] = pbill.commitment
        # bounds on the bill without the plan, made bounds with it
        bill.bounds.append(lambda x: plan_bound(x, pbill.commitment, plan.discount))
        bill.keys.update(savings_plan_summary(plan, pbill))


class WaitingGate(AddOn):
    """A waiting policy at the door of the reserved instances (``ReservedGate``): it
    takes each tick's arrivals before the scheduler, keeps its view of the reserved room
    as the core holds and frees it, and reports its split. ``reserved``: the run's
    reserved-instances add-on (what ran where)."""

    claims = ("waiting",)

    def __init__(self, waiting: Waiting, reserved: ReservedInstances) -> None:
        self.waiting = waiting
        self.reserved = reserved
        self.gate: ReservedGate | None = None

    def attach(self, core) -> None:
        # an AJW-T timer is an event, so that a tick comes when it runs out even while
        # the ticks are skipped
        self.gate = gate = ReservedGate(self.waiting, core.book, core.cloud, core,
                                        core.kernel, core.cfg.tick_s)
        if not self.waiting.share:
            core.applier.cordon(RESERVED, CORDONED)
        core.kernel.on(EV_DEPART, lambda tid, _b, _t: gate.due(tid))

    def open(self, t: float) -> None:
        self.gate.open()

    def admit(self, tasks, t: float) -> None:
        self.gate.tick(tasks, t)

    def held(self, inst, task, t: float) -> None:
        if inst.market == RESERVED:
            self.gate.sync(inst)

    def freed(self, inst, task, t: float) -> None:
        if inst.market == RESERVED:
            self.gate.sync(inst, grew=True)

    def summary(self, summary: dict) -> None:  # as `stratus waiting simulate` reports a pool
        s = summary
        s["waiting"] = {**self.gate.summary(self.reserved.ran_on),
                        "reserved_cost_usd": s["reserved_cost_usd"],
                        "cloud_cost_usd": round(s["total_cost_usd"] - s["reserved_cost_usd"], 4)}


def addons_for(cfg) -> tuple[AddOn, ...]:
    """The add-ons a replay config asks for, in hook order: reserved instances, a savings
    plan, a waiting policy (which needs the reserved instances). Checks the config's
    commitment fields first (``check_commitments``): one ConfigError line."""
    check_commitments(cfg)
    out: list[AddOn] = []
    reserved = None
    if cfg.reserved:
        reserved = ReservedInstances(cfg.reserved, cfg.reserved_discount)
        out.append(reserved)
    if cfg.savings_plan is not None:
        out.append(SavingsPlanBook(cfg.savings_plan))
    if cfg.waiting is not None:
        out.append(WaitingGate(cfg.waiting, reserved))
    return tuple(out)


def gate_of(core) -> ReservedGate | None:
    """The waiting gate of a replay (``core.addons``), or None."""
    return next((a.gate for a in core.addons if isinstance(a, WaitingGate)), None)


__all__ = ["CORDONED", "ReservedInstances", "SavingsPlanBook", "WaitingGate", "addons_for",
           "gate_of"]
