"""Stratus instance clearing (Chung et al., SoCC'18, §3.4, heuristic 2).

An instance under ``threshold`` (50%) utilization in *every* dimension for more than
``ticks`` (3) consecutive scheduling events is a candidate. Candidates are taken in
decreasing order of cost per resource used. All or none of a candidate's tasks move: it
is cordoned (``Plan.cordon``: the packer gives it no new tasks) and its tasks are re-packed with the
packer (§3.2, by remaining runtime) onto running instances; if they do not all fit, a
new, cheaper instance is acquired for all of them (the best type by the §3.3 score among
types cheaper than the candidate). A candidate is cleared only if its longest task's
predicted remaining runtime exceeds the migration time (plus the expected spin-up when a
new instance is needed). Migrated tasks keep their progress (the engine's migration).

Reserved instances (stratus.commitments.reserved) are never candidates: they are billed to the end
whether emptied or not. Tasks may be re-packed onto them.

Under a savings plan (stratus.commitments.savings) "cheaper" compares marginal prices: a candidate on
demand is worth what releasing it saves (nothing while the plan's headroom would cover it),
and the new home may be an on-demand type at its marginal price (scalers.cost_efficiency).
"""

from __future__ import annotations

import math

from stratus.base.resources import fits
from stratus.commitments.savings import marginal_price
from stratus.policy.compose import IndexedPacker, Part, Plan, part_hooks
from stratus.policy.params import Param, Parametric
from stratus.pricing.prices import ON_DEMAND, RESERVED
from stratus.scalers.cost_efficiency import (
    normalized_used_constraining,
    plan_options,
    plan_price,
)
from stratus.sim.model import READY, RUNNING, Instance
from stratus.sim.view import ClusterView


class InstanceClearing(Part, Parametric):
    """Migrator (§3.4). ``packer``: the index it re-packs with, the scheduler's packer
    (reset by the scheduler), or its own (``own_packer``: it resets it; SCloud clearing
    without packing new tasks onto running instances, §5.2)."""

    label = "instance-clearing"
    key = "clearing"  # its parameters: clearing.threshold, clearing.ticks
    PARAMS = (Param("threshold", float, 0, 1, low_open=True, what="a utilization"),
              Param("ticks", int, 0, what="a whole number of ticks"))

    def __init__(self, packer: IndexedPacker, threshold: float = 0.5, ticks: int = 3,
                 own_packer: bool = False) -> None:
        self.packer = packer
        self.threshold = threshold
        self.ticks = ticks
        self.own_packer = own_packer
        self.check_init()
        self.reset()

    def reset(self) -> None:
        """A new replay: instance ids start again, and so do the counts (the cordons, and
        a packer it shares, are reset by their owner, stratus.policy.compose)."""
        if self.own_packer:
            part_hooks(self.packer)[0]()
        self.low: dict[int, int] = {}  # iid -> consecutive low-utilization ticks (a scan)
        self.instances_cleared = 0
        self.tasks_migrated = 0
        # incremental: with a view that reports changes (ClusterView.watch_instances), an
        # instance is looked at again only when it or this tick's plan changed it
        self._watching = False  # asked the view for its watch set this replay
        self._changed: set[int] | None = None
        self._tick = 0
        self._since: dict[int, int] = {}  # iid -> the tick from which it has been low
        self._last: Plan | None = None  # last tick's plan: what it changed was tentative

    def stats(self) -> dict:
        return {"instances_cleared": self.instances_cleared, "tasks_migrated": self.tasks_migrated}

    def quiet(self, view: ClusterView) -> tuple[float, bool]:
        """Until an instance changes when none is under the threshold (none counting its
        low ticks): a price alone makes no candidate; else never (the counts are ticks, and
        a candidate's remaining runtime changes with the clock)
        (stratus.policy.compose.ComposedScheduler.quiet)."""
        low = self.low if self._changed is None else self._since
        return (-math.inf, True) if low else (math.inf, False)

    def _is_low(self, inst: Instance, free) -> bool:
        thr = self.threshold
        return all((c - f) < thr * c for c, f in zip(inst.itype.capacity, free))

    def migrate(self, view: ClusterView, plan: Plan) -> None:
        if not self._watching:  # the first tick of this replay (reset() starts one)
            self._watching = True
            self._changed = view.watch_instances()
            self._tick, self._since, self._last = 0, {}, None
        cands = self._scan(view, plan) if self._changed is None else self._watched(view, plan)
        if not cands:
            return
        smallest = view.catalog.norm

        def cost_per_used(inst: Instance) -> float:
            used = tuple(c - f for c, f in zip(inst.itype.capacity, plan.free(inst)))
            norm = normalized_used_constraining(used, inst.itype.capacity, smallest)
            return view.price(inst.itype, inst.market) / norm if norm > 0 else float("inf")

        cands.sort(key=lambda i: (-cost_per_used(i), i.iid))
        for inst in cands:
            # all or none: nothing may have been planned onto it this tick (placements, or
            # tasks re-packed from an earlier candidate), or those would stay behind
            if plan.free(inst) != inst.free:
                continue
            if self._clear(view, plan, inst):
                self.low.pop(inst.iid, None)

    def _scan(self, view: ClusterView, plan: Plan) -> list[Instance]:
        """The candidates, from every instance (a view that does not report changes)."""
        cordoned = plan.cordoned  # cleared instances not yet gone
        low = {}
        cands = []
        prev, ticks, thr = self.low, self.ticks, self.threshold
        pfree = plan.free
        for inst in view.instances:  # every tick, every instance: kept tight
            if inst.state != READY or inst.market == RESERVED:
                continue  # a reserved instance is paid for to the end: never cleared
            iid = inst.iid
            if iid in cordoned:
                continue
            for c, f in zip(inst.itype.capacity, pfree(inst)):
                if (c - f) >= thr * c:
                    break
            else:  # below the threshold in every dimension (as _is_low)
                n = prev.get(iid, 0) + 1
                low[iid] = n
                if n > ticks:
                    cands.append(inst)
        self.low = low
        return cands

    def _watched(self, view: ClusterView, plan: Plan) -> list[Instance]:
        """The candidates, as ``_scan`` finds them, looking only at the instances that
        changed since the last tick (reported by the view, or planned on, then or now):
        an instance's count of low ticks is the ticks since it became low."""
        self._tick = tick = self._tick + 1
        cordoned = plan.cordoned
        since = self._since
        todo = self._changed | set(plan.touched())
        if self._last is not None:
            todo.update(self._last.touched())
        self._changed.clear()
        self._last = plan
        thr = self.threshold
        pfree = plan.free
        for iid in todo:
            try:
                inst = view.instance(iid)
            except KeyError:  # gone
                since.pop(iid, None)
                continue
            # (a cordon lasts until the instance is gone: it is never a candidate again)
            if inst.state != READY or inst.market == RESERVED or iid in cordoned:
                since.pop(iid, None)
                continue
            for c, f in zip(inst.itype.capacity, pfree(inst)):
                if (c - f) >= thr * c:
                    since.pop(iid, None)
                    break
            else:
                if iid not in since:
                    since[iid] = tick
        cands = []
        first = tick - self.ticks  # low since then: more than ``ticks`` ticks in a row now
        for iid, t0 in list(since.items()):
            if iid in cordoned:  # cordoned by a part since it was looked at
                del since[iid]
            elif t0 <= first:
                cands.append(view.instance(iid))
        return cands

    def _clear(self, view: ClusterView, plan: Plan, inst: Instance) -> bool:
        tasks = list(inst.tasks.values())
        if not tasks:
            return False
        for t in tasks:  # all or none: every task must be running here, not moving
            if view.location(t) is not inst or view.state(t) != RUNNING or view.is_migrating(t):
                return False
        rem = {t.tid: view.remaining(t) for t in tasks}
        longest = max(rem.values())
        move_s = max(view.migration_seconds(t) for t in tasks)
        if longest <= move_s:
            return False  # would finish before the move pays off (§3.4)
        idx = self.packer.index(view, plan)
        order = sorted(tasks, key=lambda t: (-rem[t.tid], t.tid))
        chosen = []
        for t in order:  # re-pack onto running instances with the packer (§3.2)
            e = idx.choose(t.req, rem[t.tid], ready_only=True, exclude=inst.iid,
                           avoid=plan.avoid(t))
            if e is None:
                break
            chosen.append((t, e, idx.snapshot(e)))
            idx.take(e, t.req, rem[t.tid])
        if len(chosen) == len(order):
            plan.cordon(inst)  # no more tasks, this tick either (the index drops it)
            for t, e, _ in chosen:
                plan.migrate(t, e.inst)
            self._count(len(order))
            return True
        for _, e, snap in reversed(chosen):  # undo the partial re-pack
            idx.restore(e, snap)
        lo, hi = view.spinup_s
        if longest <= move_s + (lo + hi) / 2:
            return False
        home = self._cheaper_home(view, plan, inst, tasks)
        if home is None:
            return False
        plan.cordon(inst)
        plan.acquire(home[0], migrate=tasks, market=home[1])
        self._count(len(tasks))
        return True

    def _cheaper_home(self, view: ClusterView, plan: Plan, inst: Instance, tasks):
        """The best-scoring (type, market) (§3.3) cheaper than ``inst`` that holds all
        ``tasks``, or None. Under a savings plan, at marginal prices."""
        need = [0] * len(inst.itype.capacity)
        for t in tasks:
            for d, r in enumerate(t.req):
                need[d] += r
        now_price = view.price(inst.itype, inst.market)
        sp = view.savings_plan
        if sp is None:
            options = [(t, view.market, view.price(t)) for t in view.acquirable_types()]
        else:
            h = plan.savings_headroom()
            if inst.market == ON_DEMAND:  # what its release saves: the headroom it frees
                now_price = marginal_price(now_price, h + (1.0 - sp.discount) * now_price,
                                           sp.discount)
            options = [(t, m, plan_price(view, t, m, h, sp.discount))
                       for t, m in plan_options(view)]
        smallest = view.catalog.norm
        best, best_score = None, -1.0
        for itype, market, p in options:
            if p >= now_price or not fits(need, itype.capacity):
                continue
            score = normalized_used_constraining(need, itype.capacity, smallest) / p
            if score > best_score:
                best, best_score = (itype, market), score
        return best

    def _count(self, n: int) -> None:
        self.instances_cleared += 1
        self.tasks_migrated += n
