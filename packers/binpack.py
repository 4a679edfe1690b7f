"""ECS ``binpack`` placement (Stratus §2.1, §4.3 "Fleet"): a task goes on the instance
with the least remaining amount of the binpack resource (CPU by default, or memory) that
still fits it.

ECS's documentation: "The binpack strategy places tasks on available candidates that have
the least available amount of the resource that's specified with the field parameter. For
example, if you binpack on memory, a task is placed on the instance with the least amount
of remaining memory but still enough to run the task." Ties (equal remaining binpack
resource) go to the least remaining other resource, then to the oldest instance
(docs/decisions.md).

``BinpackIndex`` answers "least remaining key resource that still fits" without a scan:
instances are bucketed by their free amount of the key dimension (integer units, so a
bucket per possible amount), and a segment tree over the buckets (``FreeTree`` of
packers/free_index.py) holds, per bucket, the largest free amount of the other dimension.
The leftmost bucket at or above the request's key amount whose maximum covers the
request's other amount is the least-remaining fitting bucket; inside it, instances are
sorted by (other free, id). The packer keeps one index across ticks, reloading only the
instances whose free capacity changed.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Collection, Sequence

from stratus.base.resources import Vec
from stratus.packers.free_index import DEAD, FreeTree
from stratus.policy.compose import Plan
from stratus.policy.params import Param, Parametric
from stratus.sim.model import RELEASED, Instance, Task
from stratus.sim.view import ClusterView

#: the dimensions ECS binpack takes (its ``field``: cpu or memory), by index
BINPACK_DIMS = ("cpu", "memory")


class BinpackIndex:
    """Items (integer ids) with a free vector of two dimensions; ``best(req)`` is the item
    with the least free amount of dimension ``dim`` among those ``req`` fits, ties to the
    least free amount of the other dimension, then to the smallest id (ECS binpack, Stratus
    §2.1, §4.3)."""

    __slots__ = ("dim", "other", "tree", "buckets", "where")

    def __init__(self, key_max: int, dim: int = 0) -> None:
        """``key_max``: the largest free amount of dimension ``dim`` an item can have (§4.1
        catalog: the largest type's)."""
        self.dim = dim
        self.other = 1 - dim
        self.tree = FreeTree(cap=key_max + 1)
        self.buckets: dict[int, list[tuple[int, int]]] = {}  # key amount -> [(other, id)]
        self.where: dict[int, tuple[int, int]] = {}  # id -> (key amount, other amount)

    def __len__(self) -> int:
        return len(self.where)

    def __contains__(self, item: int) -> bool:
        return item in self.where

    def _refresh(self, k: int) -> None:
        b = self.buckets.get(k)
        if b:
            self.tree.set(k, 0, b[-1][0])
        else:
            self.buckets.pop(k, None)
            self.tree.set(k, DEAD, DEAD)

    def add(self, item: int, free: Sequence[int]) -> None:
        k, o = free[self.dim], free[self.other]
        self.where[item] = (k, o)
        b = self.buckets.get(k)
        if b is None:
            b = self.buckets[k] = []
        insort(b, (o, item))
        if b[-1][1] == item:  # a new maximum of the other dimension in this bucket
            self.tree.set(k, 0, o)

    def remove(self, item: int) -> None:
        k, o = self.where.pop(item)
        b = self.buckets[k]
        i = bisect_left(b, (o, item))
        last = i == len(b) - 1
        del b[i]
        if last:
            self._refresh(k)

    def update(self, item: int, free: Sequence[int]) -> None:
        old = self.where.get(item)
        if old is not None:
            if old[0] == free[self.dim] and old[1] == free[self.other]:
                return
            self.remove(item)
        self.add(item, free)

    def best(self, req: Sequence[int]) -> int | None:
        rk, ro = req[self.dim], req[self.other]
        if rk >= self.tree.cap:
            return None
        k = self.tree.find(0, ro, rk)
        if k < 0:
            return None
        b = self.buckets[k]
        return b[bisect_left(b, (ro, -1))][1]

    def clear(self) -> None:
        for k in self.buckets:
            self.tree.set(k, DEAD, DEAD)
        self.buckets.clear()
        self.where.clear()


class JobRun:
    """Anti-affinity over a ``BinpackIndex``: while consecutive flagged tasks of one job are
    placed, the items that job must avoid stay out of the index (and each item a task of
    the run goes on joins them), so each task costs one query; ``end`` puts them back with
    their current free room. A job's tasks arrive together, so runs are long."""

    __slots__ = ("idx", "job", "out")

    def __init__(self, idx: BinpackIndex) -> None:
        self.idx = idx
        self.job: int | None = None
        self.out: dict[int, Sequence[int]] = {}  # item kept out -> its free room

    def best(self, task: Task, avoid: Collection[int]) -> int | None:
        """``idx.best`` for flagged ``task`` among the items not in ``avoid``."""
        idx = self.idx
        if task.job != self.job:
            self.end()
            self.job = task.job
            for i in avoid:
                if i in idx.where:
                    k, o = idx.where[i]
                    free = [0, 0]
                    free[idx.dim], free[idx.other] = k, o
                    self.out[i] = free
                    idx.remove(i)
        return idx.best(task.req)

    def took(self, item: int, free: Sequence[int]) -> None:
        """A task of the run went on ``item``, which has ``free`` left: it stays out."""
        if item in self.idx.where:
            self.idx.remove(item)
        self.out[item] = free

    def end(self) -> None:
        for i, free in self.out.items():
            self.idx.add(i, free)
        self.out.clear()
        self.job = None


class Binpack(Parametric):
    """Packer: ECS binpack on ``dim`` (0: CPU, 1: memory) over every live instance,
    booting ones included (a task placed there starts when it is ready, as for first fit;
    Stratus §4.3 "Fleet"); none that is cordoned."""

    label = "binpack"
    PARAMS = (Param("dim", int, choices=(0, 1), labels=BINPACK_DIMS),)

    def __init__(self, dim: int = 0) -> None:
        self.dim = dim
        self.check_init()
        self.reset()

    @property
    def name(self) -> str:
        return f"binpack-{BINPACK_DIMS[self.dim]}"

    def reset(self) -> None:
        """A new replay: drop the index of the last one's instances."""
        self._idx: BinpackIndex | None = None
        self._insts: dict[int, Instance] = {}
        self._seen: dict[int, Vec] = {}

    def _sync(self, view: ClusterView) -> BinpackIndex:
        if self._idx is None:
            self._idx = BinpackIndex(view.catalog.max_capacity[self.dim], self.dim)
            self._insts, self._seen = {}, {}
        idx, insts, seen = self._idx, self._insts, self._seen
        n = 0
        for inst in view.instances:
            n += 1
            iid = inst.iid
            f = inst.free
            if seen.get(iid) != f:
                seen[iid] = f
                insts[iid] = inst
                idx.update(iid, f)
        if n != len(insts):  # some were released since the last look
            for iid in [i for i, inst in insts.items() if inst.state == RELEASED]:
                del insts[iid]
                seen.pop(iid, None)
                idx.remove(iid)
        return idx

    def pack(self, view: ClusterView, plan: Plan, tasks: Sequence[Task]) -> list[Task]:
        if not tasks:
            return []
        if len(tasks[0].req) != 2:  # the index is written for (cpu, mem)
            return self._scan(view, plan, tasks)
        idx = self._sync(view)
        insts = self._insts
        for iid in plan.touched():  # capacity this tick's plan already promised
            if iid in insts:
                idx.update(iid, plan.free(insts[iid]))
        for iid in plan.cordoned:  # no new tasks there (reloaded at the next sync)
            if iid in insts:
                del insts[iid]
                self._seen.pop(iid, None)
                idx.remove(iid)
        left = []
        best, update, place = idx.best, idx.update, plan.place
        run = JobRun(idx)  # anti-affinity
        for task in tasks:
            if task.anti_affinity:
                iid = run.best(task, plan.avoid(task))
            else:
                if run.job is not None:
                    run.end()
                iid = best(task.req)
            if iid is None:
                left.append(task)
            elif task.anti_affinity:
                run.took(iid, place(task, insts[iid]))
            else:
                update(iid, place(task, insts[iid]))
        run.end()
        # the plan's promises are not the instances' free capacity: reload them next tick
        for iid in plan.touched():
            self._seen.pop(iid, None)
        return left

    def _scan(self, view: ClusterView, plan: Plan, tasks: Sequence[Task]) -> list[Task]:
        """Any number of dimensions: least free ``dim``, then least free of the other of
        cpu and mem, then the oldest (further dimensions only need to fit)."""
        d, o = self.dim, 1 - self.dim if len(tasks[0].req) > 1 else 0
        cordoned = plan.cordoned
        insts = [i for i in view.instances if i.iid not in cordoned]
        left = []
        for task in tasks:
            fitting = [i for i in insts if plan.fits(task, i)]
            if not fitting:
                left.append(task)
                continue
            inst = min(fitting, key=lambda i: (plan.free(i)[d], plan.free(i)[o], i.iid))
            plan.place(task, inst)
        return left
