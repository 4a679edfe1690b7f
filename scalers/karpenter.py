"""Karpenter (kubernetes-sigs/karpenter, v1 semantics): what a practitioner runs today to
scale a Kubernetes cluster on EC2. It is the modern descendant of the Stratus §2.1/§4.3
"Spot Fleet + ECS" pairing (an instance manager plus a placement policy), and, unlike
Stratus (§3.2-§3.4), it is not runtime-aware: nothing here reads a runtime estimate.

Provisioning (``KarpenterProvisioner``, the scaler): the tick's unschedulable tasks are one
batch. They are sorted by request, CPU then memory, largest first, and packed first-fit
decreasing into new nodes whose room is the largest acquirable type; each new node then
gets the cheapest acquirable type that holds everything packed on it (Karpenter launches a
NodeClaim with every instance type that still fits its pods, and EC2 picks the
lowest-priced of them). For a fixed packing that is the least $ per packed work.

Consolidation (``KarpenterConsolidation``, the migrator), consolidationPolicy
WhenEmptyOrUnderutilized:

* a node is considered only once it is ``consolidate_after`` seconds (default 300) past
  the last time a task was added to or removed from it (Karpenter's consolidateAfter);
* empty: an empty node that has settled is deleted (nodes are acquired ``keep``: the
  engine does not release them the moment they empty);
* delete: a node is deleted when all its tasks fit on the free capacity of other live
  nodes (simulated first fit, largest task first, over the packer's index);
* replace: else, when the tasks that did not fit elsewhere fit one new node whose cheapest
  type is strictly cheaper than the node, that node is launched and they move to it;
* candidates go fewest tasks first (Karpenter's least disruption cost), then oldest; a
  drained node is tainted (cordoned, ``Plan.cordon``) until it is gone; at most
  ``budget`` (10%, Karpenter's default disruption budget) of live nodes drain at once.

Moves are the engine's migrations (Migrate, Acquire(migrate=...)), so the transfer time
is charged (Stratus §4.1).

Under a savings plan (scalers.marginal) a node's type and market are the cheapest at the
margin, and a replacement must cost less at the margin than releasing the node saves.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from stratus.base.resources import Vec, fits
from stratus.packers.first_fit import FirstFit
from stratus.packers.free_index import DEAD, FreeTree
from stratus.policy.compose import Plan
from stratus.policy.params import Param, Parametric
from stratus.pricing.catalog import InstanceType
from stratus.pricing.prices import RESERVED
from stratus.scalers.marginal import Offer
from stratus.sim.model import READY, RUNNING, Instance, Task
from stratus.sim.view import ClusterView


def by_size_desc(task: Task) -> tuple:
    """Karpenter's pod order for a scheduling simulation: larger CPU, then memory, first
    (first-fit decreasing, the vector bin packing baseline Stratus §5.2 cites)."""
    return (tuple(-r for r in task.req), task.tid)


def cheapest_fitting(view: ClusterView, types: Sequence[InstanceType], need: Sequence[int],
                     below: float = math.inf) -> InstanceType | None:
    """The cheapest of ``types`` that holds ``need`` and costs less than ``below``
    (ties to the smaller type: ``types`` are in catalog order, Stratus §4.1 Fig. 3c)."""
    best, best_p = None, below
    for t in types:
        if fits(need, t.capacity):
            p = view.price(t)
            if p < best_p:
                best, best_p = t, p
    return best


class KarpenterProvisioner(Parametric):
    """Scaler: batch first-fit decreasing into new nodes, cheapest type per node (a
    scale-out that packs first and picks types after, which Stratus §3.3 argues against)."""

    label = "karpenter-provisioner"
    PARAMS = (Param("keep", bool),)

    def __init__(self, keep: bool = True) -> None:
        self.keep = keep  # empty nodes are deleted by consolidation, not at once
        self.check_init()

    def scale(self, view: ClusterView, plan: Plan, tasks: Sequence[Task]) -> None:
        types = view.acquirable_types()
        if not types:
            return
        ref = view.catalog.max_capacity
        big = max(types, key=lambda t: sum(c / m for c, m in zip(t.capacity, ref)))
        order = sorted(tasks, key=by_size_desc)
        if len(big.capacity) != 2:  # the tree holds (cpu, mem) only
            nodes = self._ffd_scan(view, types, big, order)
        else:
            nodes = self._ffd(view, types, big, order)
        offer = None
        if view.savings_plan is not None:  # at the margin (scalers.marginal)
            offer = Offer(view, plan, types)
        for members in nodes:
            need = [sum(col) for col in zip(*(t.req for t in members))]
            if offer is None:
                itype = cheapest_fitting(view, types, need)
                plan.acquire(itype, members, keep=self.keep)
            else:
                itype, market = offer.cheapest(need)
                plan.acquire(itype, members, market, keep=self.keep)
                offer.take(itype, market)

    @staticmethod
    def _ffd(view: ClusterView, types, big: InstanceType, order: Sequence[Task]) -> list[list[Task]]:
        tree = FreeTree(cap=max(1, len(order)))
        nodes: list[list[Task]] = []
        free: list[list[int]] = []
        flagged: dict[int, set[int]] = {}  # job -> new nodes holding a flagged task of it
        run: int | None = None  # the job whose nodes are dead in the tree (anti-affinity)
        cap = big.capacity
        for task in order:
            req = task.req
            if not fits(req, cap):  # only a smaller-but-other-shaped type holds it
                if cheapest_fitting(view, types, req) is not None:
                    nodes.append([task])
                    free.append([DEAD, DEAD])
                continue
            job = task.job if task.anti_affinity else None
            if job != run:  # first fit among the nodes without a flagged task of its job
                for s in flagged.get(run, ()):
                    tree.set(s, *free[s])
                run = job
                for s in flagged.setdefault(job, set()) if job is not None else ():
                    tree.set(s, DEAD, DEAD)
            s = tree.find(req[0], req[1])
            if s < 0:
                s = len(nodes)
                nodes.append([])
                free.append(list(cap))
            nodes[s].append(task)
            f = free[s]
            f[0] -= req[0]
            f[1] -= req[1]
            if job is not None:
                flagged[job].add(s)
                tree.set(s, DEAD, DEAD)
            else:
                tree.set(s, f[0], f[1])
        return nodes

    @staticmethod
    def _ffd_scan(view: ClusterView, types, big: InstanceType,
                  order: Sequence[Task]) -> list[list[Task]]:
        nodes: list[list[Task]] = []
        free: list[list[int]] = []
        flagged: dict[int, set[int]] = {}  # job -> new nodes holding a flagged task of it
        for task in order:
            if not fits(task.req, big.capacity):
                if cheapest_fitting(view, types, task.req) is not None:
                    nodes.append([task])
                    free.append([-1] * len(task.req))
                continue
            avoid = flagged.setdefault(task.job, set()) if task.anti_affinity else ()
            for s in range(len(free)):  # noqa: B007 (s is used after the loop)
                if fits(task.req, free[s]) and s not in avoid:
                    break
            else:
                s = len(nodes)
                nodes.append([])
                free.append(list(big.capacity))
            nodes[s].append(task)
            if task.anti_affinity:
                flagged[task.job].add(s)
            free[s] = [f - r for f, r in zip(free[s], task.req)]
        return nodes


class KarpenterConsolidation(Parametric):
    """Migrator: WhenEmptyOrUnderutilized consolidation over the first-fit packer's index:
    runtime-unaware clearing (Stratus §3.4 heuristic 2 without estimates, cf. §5.2)."""

    label = "karpenter-consolidation"
    PARAMS = (Param("consolidate_after", float, 0, what="seconds"),
              Param("budget", float, 0, 1, what="a share of the nodes"),
              Param("replace", bool))

    def __init__(self, packer: FirstFit, consolidate_after: float = 300.0, budget: float = 0.10,
                 replace: bool = True) -> None:
        self.packer = packer
        self.consolidate_after = consolidate_after
        self.budget = budget
        self.replace = replace
        self.check_init()
        self.reset()

    def reset(self) -> None:
        """A new replay: instance ids and counts start again (the packer and the cordons
        are reset by their owner, stratus.policy.compose)."""
        self._sig: dict[int, tuple[Vec, int]] = {}  # iid -> (free, tasks ever hosted)
        self._since: dict[int, float] = {}  # iid -> when its task set last changed
        self.nodes_deleted = 0
        self.nodes_replaced = 0
        self.empty_deleted = 0
        self.tasks_migrated = 0

    def stats(self) -> dict:
        return {"consolidation_deleted": self.nodes_deleted,
                "consolidation_replaced": self.nodes_replaced,
                "consolidation_empty": self.empty_deleted,
                "tasks_migrated": self.tasks_migrated}

    def quiet(self, view: ClusterView) -> tuple[float, bool]:
        """Until the next node settles (``consolidate_after`` past its last change), or an
        event, a price change included (a replacement is "strictly cheaper"): nothing else
        here reads the clock (stratus.policy.compose.ComposedScheduler.quiet)."""
        settle, now = self.consolidate_after, view.now
        # a hair early: the engine wakes at the tick at or before the node settles
        return min((t0 + settle - 1e-6 for t0 in self._since.values() if now - t0 < settle),
                   default=math.inf), True

    def migrate(self, view: ClusterView, plan: Plan) -> None:
        now = view.now
        idx = self.packer.index(view, plan)
        draining = plan.cordoned  # drained nodes not yet gone (the scheduler drops those)
        sig, since = self._sig, self._since
        new_sig: dict[int, tuple[Vec, int]] = {}
        new_since: dict[int, float] = {}
        settle = self.consolidate_after
        pfree = plan.free
        cands: list[Instance] = []
        n_live = 0
        for inst in view.instances:
            n_live += 1
            iid = inst.iid
            s = (inst.free, inst.hosted)
            t0 = since.get(iid, now) if sig.get(iid) == s else now
            new_sig[iid] = s
            new_since[iid] = t0
            if (inst.state == READY and iid not in draining and now - t0 >= settle
                    and pfree(inst) == inst.free and inst.market != RESERVED):
                # nothing planned on or off it this tick; a reserved node is prepaid to the
                # end: never deleted nor replaced
                cands.append(inst)
        self._sig, self._since = new_sig, new_since
        if not cands:
            return
        allowed = math.ceil(self.budget * n_live) - len(draining)
        busy = []
        for inst in cands:
            if inst.tasks:
                busy.append(inst)
            elif inst.keep:
                plan.release(inst)  # empty and settled
                self.empty_deleted += 1
                idx.retire(inst.iid)  # not a target for moves any more
        if allowed <= 0 or not busy:
            return
        busy.sort(key=lambda i: (len(i.tasks), i.iid))
        types = view.acquirable_types() if self.replace else []
        offer = None
        if self.replace and view.savings_plan is not None:
            offer = Offer(view, plan, types)  # replacements at the margin (scalers.marginal)
        for inst in busy:
            if allowed <= 0:
                break
            if pfree(inst) != inst.free:  # took moved tasks earlier this tick
                continue
            if self._consolidate(view, plan, idx, inst, types, offer):
                allowed -= 1

    def _consolidate(self, view: ClusterView, plan: Plan, idx, inst: Instance, types,
                     offer: Offer | None = None) -> bool:
        tasks = list(inst.tasks.values())
        for t in tasks:  # every task must be running here and not already moving
            if view.location(t) is not inst or view.state(t) != RUNNING or view.is_migrating(t):
                return False
        me = idx.slot[inst.iid]
        seen, insts = idx.seen, idx.insts
        idx.hide(me)  # simulate without the node itself
        moved: list[tuple[Task, int, Vec]] = []  # (task, slot, its free before)
        rest: list[Task] = []
        for t in sorted(tasks, key=by_size_desc):
            s = idx.find_avoiding(t.req, plan.avoid(t)) if t.anti_affinity else idx.find(t.req)
            if s < 0:
                rest.append(t)
                continue
            before = seen[s]
            moved.append((t, s, before))
            idx.took(s, tuple(f - r for f, r in zip(before, t.req)))
        itype = market = None
        if rest and offer is not None:  # strictly cheaper at the margin than what it saves
            need = [sum(col) for col in zip(*(t.req for t in rest))]
            pick = offer.cheapest(need, below=offer.release_saving(inst.itype, inst.market))
            if pick is not None:
                itype, market = pick
        elif rest and types:
            need = [sum(col) for col in zip(*(t.req for t in rest))]
            itype = cheapest_fitting(view, types, need, below=view.price(inst.itype, inst.market))
        if rest and itype is None:  # neither deletable nor replaceable: undo
            for _, s, before in reversed(moved):
                idx.restore(s, before)
            idx.restore(me)
            return False
        for t, s, _ in moved:
            plan.migrate(t, insts[s])
        if rest:
            plan.acquire(itype, migrate=rest, keep=True, market=market)
            if offer is not None:
                offer.take(itype, market)
            self.nodes_replaced += 1
        else:
            self.nodes_deleted += 1
        plan.cordon(inst)  # tainted: no new tasks; its slot stays dead, reloaded next sync
        plan.keep(inst, False)  # released as soon as the last task leaves
        self.tasks_migrated += len(tasks)
        return True
