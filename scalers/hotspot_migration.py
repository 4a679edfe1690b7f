"""HotSpot's migration ("server hopping", Shastri & Irwin, SoCC'17), as Stratus §4.3
re-implements it for HSpot and SCloud.

A running instance's tasks hop together to a new instance of a *different type that is now
cheaper* and holds them all, when the saving over their remaining runtime exceeds the cost
of moving. HSpot runs one task per instance, so this is HotSpot's per-task rule; SCloud
packs several tasks on an instance and moves them all or none (docs/decisions.md).

Cost-benefit (per-second billing, Stratus §4.1), for an instance of price ``p_old`` whose
longest task has ``R`` seconds left, a target type of price ``p_new``, an expected spin-up
``s`` (the mean of the engine's uniform range) and a transfer time ``m`` (the longest of the
tasks' memory at the engine's migration rate, transfers run in parallel):

* stay: ``p_old * R``;
* hop: the tasks keep running on the old instance while the new one boots (``s``), then
  both are paid during the transfer (``m``), then the new one alone for ``R - s``:
  ``p_old * (s + m) + p_new * (s + m + R - s)``.

It hops when ``(p_old - p_new) * (R - s) > p_old * m + p_new * (s + m)``. Remaining
runtimes come from the view's estimator: HSpot and SCloud are registered with perfect
runtime knowledge (``estimator="oracle"``, §4.3), which is what makes this exact.

Cost: instances are grouped by (type, market, the set of catalog types their current load
fits); a group is examined only when some type of its set is cheaper than its own type at
the current prices, so a tick with no such price ordering costs one pass over the groups.
Load changes are found by comparing every tracked instance's free capacity with the one
seen last tick, in C (as packers/free_index.py does).

Under a savings plan (scalers.marginal) the target is the cheapest (type, market) the load
fits at the margin and ``p_old`` is what releasing the instance saves (nothing while the
plan covers an on-demand one): spot load hops onto covered on-demand capacity when the
saving pays for the move.
"""

from __future__ import annotations

import math
from itertools import compress, count
from operator import ne

from stratus.packers.free_index import GONE, free_of
from stratus.policy.compose import Plan
from stratus.policy.params import Param, Parametric
from stratus.pricing.catalog import InstanceType
from stratus.pricing.prices import ON_DEMAND, RESERVED
from stratus.scalers.marginal import Offer
from stratus.scalers.task_per_instance import BID_FACTOR, acquirable, bid_for
from stratus.sim.model import READY, RELEASED, RUNNING, Instance
from stratus.sim.view import ClusterView


def hop_gain(p_old: float, p_new: float, remaining: float, spinup: float, transfer: float) -> float:
    """Dollars-per-hour x seconds saved by hopping (positive: hop pays), see module doc."""
    return (p_old - p_new) * (remaining - spinup) - p_old * transfer - p_new * (spinup + transfer)


def _hop_at_margin(offer: Offer, index: dict[str, int], tname: str, market: str, mask: int
                   ) -> tuple[InstanceType, str, float, float] | None:
    """Under a savings plan: the cheapest (type, market) at the margin that a group's load
    fits (``mask`` over the catalog), its price, and what releasing one of the group's
    instances saves (scalers.marginal); None when the best is where they are."""
    for p, _, t, m in offer.ranked():
        if mask >> index[t.name] & 1:
            if t.name == tname and m == market:
                return None
            itype = offer.view.catalog[tname]
            return t, m, p, offer.release_saving(itype, market)
    return None


class PriceHopping(Parametric):
    """Migrator: HotSpot's price-driven hopping with its cost-benefit check (Stratus §4.3).

    ``unit``: what a target type must hold. "load": the tasks now on the instance (HSpot:
    one task, so HotSpot's own rule). "capacity": the whole instance, so only a price
    change can make a target cheaper and an instance never shrinks to its load (SCloud,
    whose holes stay "unfilled until all tasks on the VM complete", §5.1; decisions.md).
    ``bid_factor``: bid for the new instances at that multiple of on-demand (HSpot bids
    above on-demand, §4.1); None bids on-demand. An instance being vacated is cordoned
    (``Plan.cordon``): the packer gives it no new tasks."""

    label = "hotspot-migration"
    PARAMS = (BID_FACTOR, Param("unit", str, choices=("load", "capacity")))

    def __init__(self, bid_factor: float | None = None, unit: str = "load") -> None:
        self.bid_factor = bid_factor
        self.unit = unit
        self.check_init()
        self.reset()

    def reset(self) -> None:
        """A new replay: counts and the tracking start again (the cordons are reset by
        their owner, stratus.policy.compose)."""
        self.hops = 0
        self.tasks_hopped = 0
        self.hops_weighed = 0  # an instance whose load fits a cheaper type: a hop weighed
        self._timed = True  # (quiet: a hop was weighed against the remaining runtime)
        self._reset()

    def stats(self) -> dict:
        return {"hops": self.hops, "tasks_hopped": self.tasks_hopped,
                "hops_weighed": self.hops_weighed}

    # --- tracking instances by (type, market, fitting types) ---------------------------------
    def _reset(self) -> None:
        self._insts: list = []  # slot -> instance (or GONE)
        self._seen: list = []  # slot -> free capacity when last grouped
        self._key: list = []  # slot -> group key
        self._slot: dict[int, int] = {}
        self._groups: dict[tuple, dict[int, Instance]] = {}
        self._last_iid = -1
        self._live = 0

    def _fit_key(self, inst: Instance, caps) -> tuple:
        if self.unit == "capacity":  # the instance hops as a whole, holes included
            used = inst.itype.capacity
        else:
            used = [c - f for c, f in zip(inst.itype.capacity, inst.free)]
        mask = 0
        for i, cap in enumerate(caps):
            for u, c in zip(used, cap):
                if u > c:
                    break
            else:
                mask |= 1 << i
        return (inst.itype.name, inst.market, mask)

    def _group(self, s: int, inst: Instance, caps) -> None:
        old = self._key[s]
        key = self._fit_key(inst, caps)
        if key != old:
            if old is not None:
                del self._groups[old][inst.iid]
            self._groups.setdefault(key, {})[inst.iid] = inst
            self._key[s] = key
        self._seen[s] = inst.free

    def _drop(self, s: int) -> None:
        inst = self._insts[s]
        del self._groups[self._key[s]][inst.iid]
        del self._slot[inst.iid]
        self._insts[s] = GONE
        self._seen[s] = None
        self._key[s] = None
        self._live -= 1

    def _add(self, inst: Instance, caps) -> None:
        s = len(self._insts)
        self._insts.append(inst)
        self._seen.append(None)
        self._key.append(None)
        self._slot[inst.iid] = s
        self._live += 1
        self._last_iid = inst.iid
        self._group(s, inst, caps)

    def _sync(self, view: ClusterView) -> None:
        caps = [t.capacity for t in view.catalog]
        insts = self._insts
        for s in list(compress(count(), map(ne, map(free_of, insts), self._seen))):
            inst = insts[s]
            if inst is GONE:
                continue
            if inst.state == RELEASED:
                self._drop(s)
            else:
                self._group(s, inst, caps)
        instances = view.instances
        new = []
        for inst in reversed(instances):  # new instances are at the end (ids only grow)
            if inst.iid <= self._last_iid:
                break
            new.append(inst)
        for inst in reversed(new):
            self._add(inst, caps)
        if self._live != len(instances):
            # a release that left the free capacity as it was (e.g. an idle kept instance)
            for s, inst in enumerate(insts):
                if inst is not GONE and inst.state == RELEASED:
                    self._drop(s)
        if len(insts) > 256 and 4 * self._live < len(insts):  # mostly dead slots: compact
            keep = [(i, f, k) for i, f, k in zip(insts, self._seen, self._key) if i is not GONE]
            self._insts = [i for i, _, _ in keep]
            self._seen = [f for _, f, _ in keep]
            self._key = [k for _, _, k in keep]
            self._slot = {i.iid: s for s, i in enumerate(self._insts)}

    # --- the policy ------------------------------------------------------------------------------
    def quiet(self, view: ClusterView) -> tuple[float, bool]:
        """Until an event, a price change included, when no group had a cheaper target
        this tick; else never (whether a hop pays depends on the remaining runtime, which
        the clock changes) (stratus.policy.compose.ComposedScheduler.quiet)."""
        return -math.inf if self._timed else math.inf, True

    def migrate(self, view: ClusterView, plan: Plan) -> None:
        self._sync(view)
        self._timed = False  # (quiet: a hop was weighed against the remaining runtime)
        cordoned = plan.cordoned  # instances being vacated, by this or another part
        catalog = list(view.catalog)
        ok = acquirable(view, self.bid_factor)
        okset = {t.name for t in ok}
        price = {t.name: view.price(t) for t in ok}
        lo, hi = view.spinup_s
        spin = (lo + hi) / 2
        planned: set[int] | None = None
        offer = None
        if view.savings_plan is not None:  # at the margin (scalers.marginal)
            offer = Offer(view, plan, ok)
            index = {t.name: i for i, t in enumerate(catalog)}
        t_market = None  # the replay's market, without a plan
        for (tname, market, mask), members in self._groups.items():
            if not members or market == RESERVED:
                continue  # a reserved instance is prepaid to the end: nothing to save
            if offer is not None:
                hop = _hop_at_margin(offer, index, tname, market, mask)
                if hop is None:
                    continue
                target, t_market, p_new, p_old = hop
            else:
                target, p_new = None, 0.0
                for i, t in enumerate(catalog):  # the cheapest acquirable type the load fits
                    if mask >> i & 1 and t.name in okset and (target is None
                                                              or price[t.name] < p_new):
                        target, p_new = t, price[t.name]
                if target is None or target.name == tname:
                    continue
                p_old = view.price(tname, market)
            if p_new >= p_old:
                continue  # nothing here can get cheaper: the common case, one test per group
            self._timed = True
            if planned is None:
                dec = plan.decisions
                planned = {m.task.tid for m in dec.migrations}
                for a in dec.acquisitions:
                    planned.update(t.tid for t in a.migrate)
            for iid, inst in list(members.items()):
                if inst.state != READY or iid in cordoned:
                    continue
                if plan.free(inst) != inst.free:
                    continue  # this tick's plan put something on it: all or none
                tasks = list(inst.tasks.values())
                if not tasks or not self._movable(view, inst, tasks, planned):
                    continue
                rem = view.instance_remaining(inst)
                move = max(view.migration_seconds(t) for t in tasks)
                self.hops_weighed += 1
                if hop_gain(p_old, p_new, rem, spin, move) <= 0:
                    continue
                if offer is None:
                    plan.acquire(target, migrate=tasks,
                                 bid=bid_for(view, target, self.bid_factor))
                else:
                    bid = bid_for(view, target, self.bid_factor) \
                        if t_market == view.market else None
                    plan.acquire(target, migrate=tasks, market=t_market, bid=bid)
                planned.update(t.tid for t in tasks)
                plan.cordon(iid)
                self.hops += 1
                self.tasks_hopped += len(tasks)
                if offer is not None and t_market == ON_DEMAND:
                    offer.take(target, t_market)  # less headroom: the next may cost more
                    hop = _hop_at_margin(offer, index, tname, market, mask)
                    if hop is None or hop[2] >= hop[3]:
                        break
                    target, t_market, p_new, p_old = hop

    @staticmethod
    def _movable(view: ClusterView, inst: Instance, tasks, planned: set[int]) -> bool:
        for t in tasks:  # every task running here, none moving (all or none)
            if (view.location(t) is not inst or view.state(t) != RUNNING
                    or view.is_migrating(t) or t.tid in planned):
                return False
        return True
