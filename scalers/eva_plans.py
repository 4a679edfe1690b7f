"""Eva's two plans of a round (the spec, ``../shared/specs/eva.md``, "The round"; artifact
``top_down_provisioning``, ``global_update_planned_config``, ``local_update_planned_config``),
drawn over a snapshot of the cluster (``Snapshot``). A plan (``Draft``) says which tasks
each existing instance it keeps holds and which new instances it buys; the scheduler
(scalers.eva) weighs the two and turns the better one into decisions."""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field

from stratus.base.resources import fits
from stratus.pricing.catalog import InstanceType
from stratus.scalers.eva_pool import Pool


@dataclass
class Draft:
    """A plan: existing instances kept, with the tasks each will hold (frozen ones
    included), and new instances with theirs."""

    kept: dict[int, list[int]] = field(default_factory=dict)
    new: list[tuple[InstanceType, list[int]]] = field(default_factory=list)
    #: told of each instance as it is planned, ``(iid or -1, type, tasks)``; False: the
    #: plan cannot win any more, stop drawing it (``GiveUp``)
    watch: Callable[[int, InstanceType, list[int]], bool] | None = None


class GiveUp(Exception):
    """A plan's watcher said it cannot win."""


class Snapshot:
    """What both plans of a round read: the tasks Eva may place (``pending``), those running
    that it may move (``movable``, by instance), those it may not (``frozen``: waiting for
    a booting instance, or migrating: planned where they are going), every task's
    reservation price and cheapest type, and the prices.

    ``types``: the types that may be bought now; ``price``: a type's list $/h in the
    replay's market; ``inst_price``: an existing instance's $/h in its own market."""

    def __init__(self, types: list[InstanceType], price: dict[str, float], dims: int) -> None:
        self.types = types
        self.price = price
        self.dims = dims
        #: most to least expensive, ties by name (the visit order of top-down provisioning)
        self.desc = sorted(types, key=lambda t: (-price[t.name], t.name))
        #: cheapest first, ties by name: the shrink step's and the reservation price's order
        self.asc = sorted(types, key=lambda t: (price[t.name], t.name))
        self._cheapest: dict[tuple, InstanceType | None] = {}
        self.tasks: dict = {}  # tid -> Task
        self.r: dict[int, float] = {}
        self.cheap: dict[int, str] = {}
        self.loc: dict[int, int] = {}  # tid -> instance it runs on (-1: queued)
        self.pending: list[int] = []
        self.mobile: set[int] = set()  # the tasks a plan may place or move: pending, movable
        self.movable: dict[int, list[int]] = {}  # iid -> movable tasks running there
        self.frozen: dict[int, list[int]] = {}  # iid -> frozen tasks planned there
        self.insts: dict = {}  # iid -> Instance (live, not reserved)
        self.inst_price: dict[int, float] = {}

    def cheapest(self, need) -> InstanceType | None:
        """The cheapest type that may be bought and holds ``need`` (ties by name)."""
        need = tuple(need)
        c = self._cheapest
        if need not in c:
            c[need] = next((t for t in self.asc if fits(need, t.capacity)), None)
        return c[need]

    def add_instance(self, inst, price: float) -> None:
        self.insts[inst.iid] = inst
        self.inst_price[inst.iid] = price
        self.movable.setdefault(inst.iid, [])
        self.frozen.setdefault(inst.iid, [])

    def priced(self, task) -> bool:
        """Record ``task``'s reservation price; False if no type that may be bought fits it."""
        t = self.cheapest(task.req)
        if t is None:
            return False
        self.tasks[task.tid] = task
        self.r[task.tid] = self.price[t.name]
        self.cheap[task.tid] = t.name
        return True

    def hold(self, task, iid: int) -> None:
        """``task`` stays planned on instance ``iid`` (frozen)."""
        t = self.cheapest(task.req)
        self.tasks[task.tid] = task
        self.r[task.tid] = self.price[t.name] if t is not None else 0.0
        self.frozen[iid].append(task.tid)

    def item(self, tid: int) -> tuple:
        task = self.tasks[tid]
        return (tid, self.r[tid], task.req, task.job if task.anti_affinity else -1,
                self.loc.get(tid, -1))

    def load(self, tids) -> list[int]:
        out = [0] * self.dims
        for t in tids:
            for d, x in enumerate(self.tasks[t].req):
                out[d] += x
        return out

    def banned(self, tids) -> set[int]:
        tasks = self.tasks
        return {tasks[t].job for t in tids if tasks[t].anti_affinity}


def _fill_kept(snap: Snapshot, pool: Pool, draft: Draft, iids) -> None:
    """Pack the pool onto instances ``draft`` already keeps, oldest first."""
    for iid in iids:
        if not len(pool):
            return
        held = draft.kept[iid]
        cap = snap.insts[iid].itype.capacity
        free = [c - x for c, x in zip(cap, snap.load(held))]
        if any(f < lo for f, lo in zip(free, pool.low)):
            continue  # no task left fits (the fill's own first test, without its set-up)
        held.extend(pool.fill(cap, free, iid, snap.banned(held)))


def top_down(snap: Snapshot, pool: Pool, draft: Draft, reusable: list[int]) -> None:
    """Top-down provisioning (spec, "Top-down provisioning") of the pool's tasks into ``draft``, reusing the
    instances ``reusable`` (ids) where it can."""
    by_type: dict[str, list[int]] = {}
    reuse = set(reusable)
    for iid in reusable:
        by_type.setdefault(snap.insts[iid].itype.name, []).append(iid)
    used: set[int] = set()
    own: dict[str, list[int]] = {}  # type -> pool tasks whose cheapest type it is
    for tid in sorted(pool.alive):
        own.setdefault(snap.cheap[tid], []).append(tid)
    price = snap.price
    for itype in snap.desc:
        if not len(pool):
            break
        name = itype.name
        heap = [(-pool.count_on(i), i) for i in by_type.get(name, ())]
        heapq.heapify(heap)
        while len(pool):
            inst = _most_tasks(pool, heap, used)
            taken = pool.fill(itype.capacity, itype.capacity, inst)
            if not taken:
                if inst >= 0:
                    heapq.heappush(heap, (-pool.count_on(inst), inst))
                break
            if price[name] <= pool.value(taken) or (len(taken) == 1 and
                                                     snap.cheap[taken[0]] == name):
                shrunk = snap.cheapest(snap.load(taken))
                if shrunk is not None and shrunk.name != name:
                    if inst >= 0:  # not this one after all
                        heapq.heappush(heap, (-pool.count_on(inst), inst))
                    _place(snap, draft, used, shrunk, taken,
                           _holder(snap, taken, shrunk, used, reuse))
                else:
                    _place(snap, draft, used, itype, taken, inst)
                continue
            for t in taken:  # not worth the type: back to the pool
                pool.put_back(t)
            if inst >= 0:
                heapq.heappush(heap, (-pool.count_on(inst), inst))
            break
        for tid in own.get(name, ()):  # each task whose cheapest type this is, alone
            if tid in pool.alive:
                pool.take(tid)
                here = snap.loc.get(tid, -1)
                ok = here in reuse and here not in used and \
                    snap.insts[here].itype.name == name
                _place(snap, draft, used, itype, [tid], here if ok else -1)


def _most_tasks(pool: Pool, heap: list, used: set[int]) -> int:
    """The unused instance of the heap's type holding most pool tasks (ties: the lower id),
    taken off the heap; -1 if none."""
    while heap:
        neg, iid = heapq.heappop(heap)
        if iid in used:
            continue
        now = pool.count_on(iid)
        if -neg != now:  # stale: counts only fell since it was pushed
            heapq.heappush(heap, (-now, iid))
            continue
        return iid
    return -1


def _holder(snap: Snapshot, tids: list[int], itype: InstanceType, used: set[int],
            reuse: set[int]) -> int:
    """An unused live instance of ``itype`` that runs the most of ``tids`` (ties: lower
    id), -1 if none runs any: a group shrunk to a cheaper type stays where it can."""
    count: dict[int, int] = {}
    for t in tids:
        i = snap.loc.get(t, -1)
        if i in reuse and i not in used and snap.insts[i].itype.name == itype.name:
            count[i] = count.get(i, 0) + 1
    if not count:
        return -1
    return min(count, key=lambda i: (-count[i], i))


def _place(snap: Snapshot, draft: Draft, used: set[int], itype: InstanceType,
           tids: list[int], inst: int) -> None:
    if inst >= 0:
        used.add(inst)
        draft.kept[inst] = list(tids)
    else:
        draft.new.append((itype, list(tids)))
    if draft.watch is not None and not draft.watch(inst, itype, tids):
        raise GiveUp


def full_plan(snap: Snapshot, watch=None) -> Draft | None:
    """Full reconfiguration (spec, "Full reconfiguration"; ``global_update_planned_config``):
    every movable task, queued or running, is planned again; first onto the instances that hold frozen
    tasks, then by top-down provisioning over every other instance. ``watch``: see
    ``Draft.watch``; None if it gave up."""
    draft = Draft(watch=watch)
    items = [snap.item(t) for t in snap.pending]
    for iid in snap.insts:
        items.extend(snap.item(t) for t in snap.movable[iid])
    pool = Pool(items, snap.dims)
    anchored = sorted(i for i in snap.insts if snap.frozen[i])
    for iid in anchored:
        draft.kept[iid] = list(snap.frozen[iid])
    _fill_kept(snap, pool, draft, anchored)
    try:
        for iid in anchored:
            if watch is not None and not watch(iid, snap.insts[iid].itype, draft.kept[iid]):
                return None
        top_down(snap, pool, draft, sorted(i for i in snap.insts if not snap.frozen[i]))
    except GiveUp:
        return None
    return draft


def stays(snap: Snapshot, iid: int) -> bool:
    """Partial reconfiguration's test (spec, "Partial reconfiguration"): an instance stays when its tasks' value
    covers its price, or it holds one task on that task's cheapest type; one holding a
    frozen task stays too (that task cannot move)."""
    if snap.frozen[iid]:
        return True
    tids = snap.movable[iid]
    if not tids:
        return False
    if len(tids) == 1 and snap.cheap[tids[0]] == snap.insts[iid].itype.name:
        return True
    return sum(snap.r[t] for t in tids) >= snap.inst_price[iid]


def partial_plan(snap: Snapshot, keep_all: bool = False) -> Draft:
    """Partial reconfiguration (spec, "Partial reconfiguration"; ``local_update_planned_config``): the instances
    that pay for themselves stay as they are; queued tasks and those of the other instances
    are packed onto them first, the rest by top-down provisioning over the others.
    ``keep_all``: every instance stays (no reconfiguration: only queued tasks are placed)."""
    draft = Draft()
    items = [snap.item(t) for t in snap.pending]
    kept, rest = [], []
    for iid in sorted(snap.insts):
        if keep_all or stays(snap, iid):
            kept.append(iid)
            draft.kept[iid] = [*snap.frozen[iid], *snap.movable[iid]]
        else:
            rest.append(iid)
            items.extend(snap.item(t) for t in snap.movable[iid])
    pool = Pool(items, snap.dims)
    _fill_kept(snap, pool, draft, kept)
    top_down(snap, pool, draft, rest)
    return draft
