"""Eva's greedy fill of one instance (spec ``../shared/specs/eva.md``, "Top-down provisioning" step 3; artifact
``top_down_provisioning``), over a pool of tasks kept in sorted structures.

The fill ranks the tasks that fit by (1) the group's value with the task, (2) whether the
task already runs on the instance, (3) alignment, sum over resources of (demand / capacity)
x (free / capacity); ties by task id (docs/reference/schedulers.md, "eva"). Reservation
prices are positive, so (1) is the task's own reservation price: the pool groups its tasks
by price level, then by shape (request, and the job of a flagged task, which may not join
another flagged task of its job). Within a level the best shape is found by one numpy test
over the level's shapes, and a shape's tasks sit in a heap by id: a step costs a few array
operations, not a scan of every task (a Full reconfiguration re-packs thousands of tasks
every round)."""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence

import numpy as np


class Pool:
    """Tasks waiting for a place in a plan being drawn: ``(tid, r, req, flag_job, iid)``
    each, ``flag_job`` the job of a flagged task (-1: not flagged), ``iid`` the instance it
    runs on (-1: queued). ``take`` and ``put_back`` move tasks out and in.

    A shape is (price level, request, flag job); its tasks sit in a heap by id. The shapes'
    requests, levels and counts are arrays: a step of ``fill`` is one pass over them."""

    def __init__(self, items: Iterable[tuple[int, float, tuple, int, int]], dims: int) -> None:
        self.r: dict[int, float] = {}
        self.req: dict[int, tuple] = {}
        self.loc: dict[int, int] = {}
        self.flag: dict[int, int] = {}
        self.slot: dict[int, int] = {}  # tid -> its shape
        self.on: dict[int, set[int]] = {}  # iid -> pool tasks running there
        self.alive: set[int] = set()
        shapes: dict[tuple, list[int]] = {}
        for tid, r, req, fj, iid in items:
            shapes.setdefault((-r, req, fj), []).append(tid)
            self.r[tid], self.req[tid], self.loc[tid], self.flag[tid] = r, req, iid, fj
            self.alive.add(tid)
            if iid >= 0:
                self.on.setdefault(iid, set()).add(tid)
        keys = sorted(shapes)  # (most valuable level first; the order within is immaterial)
        prices = sorted({k[0] for k in keys})
        level = {p: i for i, p in enumerate(prices)}
        self.dims = dims
        self.nlevels = len(prices)
        self.keys = keys
        self.heaps = [shapes[k] for k in keys]
        for k, h in enumerate(self.heaps):
            heapq.heapify(h)
            for t in h:
                self.slot[t] = k
        self.lvl = np.array([level[k[0]] for k in keys], dtype=np.int64)
        self.reqs = np.array([k[1] for k in keys], dtype=np.int64).reshape(-1, dims)
        self.cols = [np.ascontiguousarray(self.reqs[:, d]) for d in range(dims)]
        self.counts = np.array([len(h) for h in self.heaps], dtype=np.int64)
        self.shape_level = [level[k[0]] for k in keys]
        self.has = self.counts > 0  # shapes with a task left
        # shapes are sorted by level: level i is the slice bounds[i]:bounds[i + 1]
        self.bounds = [int(x) for x in np.searchsorted(self.lvl, np.arange(len(prices) + 1))]
        by_job: dict[int, list[int]] = {}  # job -> its flagged shapes
        for k, key in enumerate(keys):
            if key[2] >= 0:
                by_job.setdefault(key[2], []).append(k)
        self.by_job = {j: np.array(ks, dtype=np.int64) for j, ks in by_job.items()}
        # per dimension, no task left asks for less (recomputed when a shape runs out)
        self._low = tuple(int(x) for x in self.reqs.min(axis=0)) if keys else (0,) * dims
        self._low_stale = False

    @property
    def low(self) -> tuple[int, ...]:
        """Per dimension, the least any task left asks for (a bound: a room below it in
        some dimension holds no task)."""
        if self._low_stale:
            self._low_stale = False
            has = self.has
            if has.any():
                self._low = tuple(int(x) for x in self.reqs[has].min(axis=0))
        return self._low

    def __len__(self) -> int:
        return len(self.alive)

    def count_on(self, iid: int) -> int:
        s = self.on.get(iid)
        return len(s) if s else 0

    def take(self, tid: int) -> None:
        self.alive.remove(tid)
        k = self.slot[tid]
        self.counts[k] -= 1
        if not self.counts[k]:
            self.has[k] = False
            self._low_stale = True
        iid = self.loc[tid]
        if iid >= 0:
            self.on[iid].discard(tid)

    def put_back(self, tid: int) -> None:
        self.alive.add(tid)
        k = self.slot[tid]
        self.counts[k] += 1
        if self.counts[k] == 1:
            self.has[k] = True
            self._low_stale = True
        heapq.heappush(self.heaps[k], tid)  # a stale copy of it may stay below: skipped
        iid = self.loc[tid]
        if iid >= 0:
            self.on[iid].add(tid)

    def _head(self, k: int) -> int:
        h, alive = self.heaps[k], self.alive
        while h[0] not in alive:
            heapq.heappop(h)
        return h[0]

    def value(self, tids: Iterable[int]) -> float:
        r = self.r
        return sum(r[t] for t in tids)

    def _run(self, a: int, b: int, k: int, fit, al, free: list[int], inv: list[float]) -> int:
        """How many more tasks of shape ``a + k`` the fill would take next in a row, after
        the one it picks now: while it still fits and stays strictly the best aligned of
        the shapes of its level that fit now (taking n of it lowers a shape j's alignment
        by n x sum over resources of req_j x req_k / capacity^2). The same picks as
        one step at a time, without a pass over the shapes for each."""
        q = self.keys[a + k][1]
        n = self.counts[a + k] - 1
        for f, x in zip(free, q):
            if x > 0:
                n = min(n, f // x - 1)
        if n <= 0:
            return 0
        reqs = self.reqs[a:b]
        c = reqs @ np.asarray([x * i for x, i in zip(q, inv)])
        gap_c = c[k] - c  # > 0: j closes in on k by that much per task taken
        gap_a = al[k] - al
        closing = fit & (gap_c > 0)
        closing[k] = False
        if closing.any():
            # after m takes in all, k stays strictly ahead of j while m * gap_c < gap_a
            bound = np.ceil(gap_a[closing] / gap_c[closing]) - 1  # the largest such m
            n = min(n, int(bound.min()) - 1)
        return max(n, 0)

    def fill(self, cap: Sequence[int], free: Sequence[int], iid: int = -1,
             banned: Iterable[int] = ()) -> list[int]:
        """Fill an instance of capacity ``cap`` with ``free`` room (instance ``iid``, -1 a
        new one; ``banned``: jobs whose flagged tasks may not come) greedily, in rank
        order, until no task fits; the tasks taken, in order (taken out of the pool)."""
        free = list(free)
        inv = [1.0 / (c * c) if c > 0 else 0.0 for c in cap]
        banned = set(banned)
        req_of, flag, alive, slot = self.req, self.flag, self.alive, self.slot
        level_of = self.shape_level
        # the pool's tasks on this instance, by shape: few shapes, each a heap
        mine: dict[int, list[int]] = {}
        for t in self.on.get(iid, ()) if iid >= 0 else ():
            mine.setdefault(slot[t], []).append(t)
        for h in mine.values():
            heapq.heapify(h)
        taken: list[int] = []  # (no value test: prices are positive, a task never lowers it)
        keys, cols, lvl = self.keys, self.cols, self.lvl
        by_job, has, bounds, reqs = self.by_job, self.has, self.bounds, self.reqs
        allowed = None  # shapes not barred by a flagged task's job (None: all)
        for j in banned:
            ks = by_job.get(j)
            if ks is not None:
                if allowed is None:
                    allowed = np.ones(len(keys), dtype=bool)
                allowed[ks] = False
        while alive:
            if any(f < lo for f, lo in zip(free, self.low)):
                break
            w = [f * i for f, i in zip(free, inv)]
            best_mine = None  # (level, -alignment, tid)
            for k, h in list(mine.items()):
                while h and h[0] not in alive:
                    heapq.heappop(h)
                if not h:
                    del mine[k]
                    continue
                _, q, fj = keys[k]
                if (fj >= 0 and fj in banned) or any(x > f for x, f in zip(q, free)):
                    continue
                cand = (level_of[k], -sum(x * y for x, y in zip(q, w)), h[0])
                if best_mine is None or cand < best_mine:
                    best_mine = cand
            pick, more = -1, 0
            if best_mine is None or best_mine[0] > 0:
                end = len(keys) if best_mine is None else bounds[best_mine[0]]
                ok = has[:end] & (cols[0][:end] <= free[0])
                for col, f in zip(cols[1:], free[1:]):
                    ok &= col[:end] <= f
                if allowed is not None:
                    ok &= allowed[:end]
                k = int(ok.argmax()) if end else 0
                if end and ok[k]:  # the first fit is in the most valuable level with one
                    a, b = bounds[lvl[k]], bounds[lvl[k] + 1]
                    sub = ok[a:b]
                    al = np.where(sub, reqs[a:b] @ np.asarray(w), -1.0)
                    k = int(al.argmax())
                    ks = np.flatnonzero(al == al[k])
                    if len(ks) == 1:
                        pick = self._head(a + k)
                        if keys[a + k][2] < 0:  # unflagged: maybe more of it in a row
                            more = self._run(a, b, k, sub, al, free, inv)
                    else:
                        pick = min(self._head(a + int(x)) for x in ks)
            if pick < 0:
                if best_mine is None:
                    break
                pick = best_mine[2]
            self.take(pick)
            taken.append(pick)
            q = req_of[pick]
            free = [f - x for f, x in zip(free, q)]
            for _ in range(more):
                t = self._head(slot[pick])
                self.take(t)
                taken.append(t)
                free = [f - x for f, x in zip(free, q)]
            more = 0
            fj = flag[pick]
            if fj >= 0 and fj not in banned:
                banned.add(fj)
                ks = by_job.get(fj)
                if ks is not None:
                    if allowed is None:
                        allowed = np.ones(len(keys), dtype=bool)
                    allowed[ks] = False
        return taken
