"""Stratus runtime binning (Chung et al., SoCC'18, §3.2).

Bins have exponential bounds over *remaining* runtime: bin 0 is [0, 1) and bin i >= 1 is
[2^(i-1), 2^i), in units of ``unit_s`` seconds. An instance sits in the bin of its
longest remaining task. Tasks are placed longest first. For each task:

* up-packing: the task's own bin, choosing the instance whose remaining runtime is
  closest to the task's; then progressively greater bins, choosing the instance with the
  most available resources;
* down-packing: then progressively lesser bins, most available resources first; the
  instance is promoted to the task's bin.

"Most available resources" for a vector: ``min_d free_d / ref_d`` where ``ref`` is the
capacity of the largest type in the catalog, ties broken by ``sum_d free_d / ref_d`` and
then by instance id (docs/decisions.md). Dividing by a common reference makes dimensions
comparable and keeps absolute room meaningful: a half-empty 64-vCPU instance has more
room than an empty 2-vCPU one; the minimum is the room in the dimension that runs out first.

Indexes: per bin, instances sorted by remaining runtime (for the closest-runtime search,
which walks outward from a bisection point) and by availability (scanned from the top,
stopping at the first instance that fits). Nothing scans every instance per task.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Collection, Iterable, Sequence
from math import frexp

from stratus.compose import Plan
from stratus.model import READY, Instance, Task
from stratus.view import ClusterView


def bin_of(seconds: float, unit_s: float = 1.0) -> int:
    """Index of the runtime bin of a (remaining) runtime: 0 for [0, 1), i for [2^(i-1), 2^i)."""
    x = seconds / unit_s
    return frexp(x)[1] if x >= 1.0 else 0


def availability(free: Sequence[int], ref: Sequence[int]) -> tuple[float, float]:
    """Sort key for "most available resources": (min share of ``ref`` free, total share)."""
    shares = [f / r for f, r in zip(free, ref)]
    return (min(shares), sum(shares))


class _Entry:
    __slots__ = ("inst", "iid", "free", "rem", "bin", "avail", "ready")

    def __init__(self, inst: Instance, free, rem: float, b: int, avail, ready: bool) -> None:
        self.inst = inst
        self.iid = inst.iid
        self.free = free
        self.rem = rem
        self.bin = b
        self.avail = avail
        self.ready = ready


class _Bin:
    __slots__ = ("by_rem", "by_avail", "bound", "fails", "job_fails")

    def __init__(self, dims: int) -> None:
        self.by_rem: list[tuple[float, int]] = []  # (remaining, iid) ascending
        self.by_avail: list[tuple[float, float, int]] = []  # (-min share, -sum share, iid)
        # per dimension, at least the largest free amount of any instance in the bin: raised
        # on insert, never lowered until the next tick's rebuild, so it can only rule a bin
        # out when no instance in it can fit (exact pruning, no rescans)
        self.bound = [0] * dims
        # requests that fit no instance of the bin since it last gained room: a request at
        # least as large in every dimension cannot fit either (tasks of a job share one
        # request, so this answers most failed searches without a scan)
        self.fails: list[tuple[int, ...]] = []
        # the same for flagged tasks, per job, under that job's anti-affinity avoid set:
        # within a tick that set only grows (the plan adds to it), so such a failure holds
        # for the job's later tasks until the bin gains room
        self.job_fails: dict[int, list[tuple[int, ...]]] = {}


class BinIndex:
    """Live instances by runtime bin, with tentative free capacity and remaining runtime
    kept up to date as tasks are placed on them during one tick."""

    def __init__(self, view: ClusterView, plan: Plan, instances: Iterable[Instance],
                 unit_s: float = 1.0, reuse: dict[int, _Entry] | None = None,
                 general: bool = False) -> None:
        """``reuse``: last tick's entries, refreshed in place instead of allocated anew;
        ``general``: no unrolled (cpu, mem) path (the tests compare the two)."""
        self.unit_s = unit_s
        ref = self.ref = view.catalog.max_capacity
        dims = self.dims = len(ref)
        entries: dict[int, _Entry] = {}
        self.entries = entries
        bins: dict[int, _Bin] = {}
        self.bins = bins
        old = reuse or {}
        insts = list(instances)
        rems = view.instances_remaining(insts)
        planned = plan.changed_free()  # what this plan changed (nothing, when built first)
        fast = dims == 2 and not general
        r0, r1 = (ref[0], ref[1]) if fast else (0, 0)
        # one pass: bin lists are filled unsorted and sorted once at the end (the same
        # order as inserting one by one: keys are unique by instance id)
        for inst, rem in zip(insts, rems):
            iid = inst.iid
            free = planned.get(iid, inst.free)
            if fast:  # the common case, unrolled: availability(free, ref)
                s0, s1 = free[0] / r0, free[1] / r1
                avail = (s0 if s0 < s1 else s1, s0 + s1)
            else:
                avail = availability(free, ref)
            x = rem / unit_s
            b = frexp(x)[1] if x >= 1.0 else 0
            ready = inst.state == READY
            e = old.get(iid)
            if e is None or e.inst is not inst:
                e = _Entry(inst, free, rem, b, avail, ready)
            else:
                e.free, e.rem, e.bin, e.avail, e.ready = free, rem, b, avail, ready
            entries[iid] = e
            bn = bins.get(b)
            if bn is None:
                bn = bins[b] = _Bin(dims)
            bn.by_rem.append((rem, iid))
            bn.by_avail.append((-avail[0], -avail[1], iid))
            bound = bn.bound
            for d, f in enumerate(free):
                if f > bound[d]:
                    bound[d] = f
        for bn in bins.values():
            bn.by_rem.sort()
            bn.by_avail.sort()
        self._bin_ids: list[int] = sorted(bins)  # sorted ids of non-empty bins

    # --- maintenance ---------------------------------------------------------------------
    def _insert(self, e: _Entry, shrunk: bool = False) -> None:
        """``shrunk``: the entry was in this bin with at least this much room a moment
        ago, so the bin gained nothing and its failed requests still fail."""
        b = self.bins.get(e.bin)
        if b is None:
            b = self.bins[e.bin] = _Bin(self.dims)
            insort(self._bin_ids, e.bin)
        elif not shrunk:
            b.fails.clear()
            b.job_fails.clear()
        insort(b.by_rem, (e.rem, e.iid))
        insort(b.by_avail, (-e.avail[0], -e.avail[1], e.iid))
        bound = b.bound
        for d, f in enumerate(e.free):
            if f > bound[d]:
                bound[d] = f

    def _remove(self, e: _Entry) -> None:
        b = self.bins[e.bin]
        k = (e.rem, e.iid)
        del b.by_rem[bisect_left(b.by_rem, k)]
        k2 = (-e.avail[0], -e.avail[1], e.iid)
        del b.by_avail[bisect_left(b.by_avail, k2)]
        if not b.by_rem:
            del self.bins[e.bin]
            del self._bin_ids[bisect_left(self._bin_ids, e.bin)]

    def take(self, e: _Entry, req: Sequence[int], rem: float) -> None:
        """Record that a task of request ``req`` and remaining runtime ``rem`` went on ``e``:
        less free room, and the instance's remaining runtime (hence bin) may grow — the
        promotion of down-packing (§3.2)."""
        self._remove(e)
        old_bin = e.bin
        e.free = tuple(f - r for f, r in zip(e.free, req))
        e.avail = availability(e.free, self.ref)
        if rem > e.rem:
            e.rem = rem
            e.bin = bin_of(rem, self.unit_s)
        self._insert(e, shrunk=e.bin == old_bin)

    def snapshot(self, e: _Entry) -> tuple:
        return (e.free, e.rem, e.bin, e.avail)

    def restore(self, e: _Entry, snap: tuple) -> None:
        """Undo ``take`` calls on ``e`` back to ``snap`` (a tentative re-pack that failed)."""
        self._remove(e)
        e.free, e.rem, e.bin, e.avail = snap
        self._insert(e)

    def hide(self, e: _Entry) -> None:
        """Take ``e`` out of its bin's lists until ``unhide`` (anti-affinity: an instance
        a run of one job's flagged tasks may not use). Failures found meanwhile must be
        remembered per job only (``choose`` with ``avoid`` and ``job``)."""
        self._remove(e)

    def unhide(self, e: _Entry) -> None:
        """Put a hidden entry back: it has no more room than when it was hidden (or than
        when a ``take`` last inserted it), so its bin's failed requests still fail."""
        self._insert(e, shrunk=True)

    def discard(self, iid: int) -> None:
        e = self.entries.pop(iid, None)
        if e is not None:
            self._remove(e)

    # --- choice ------------------------------------------------------------------------------
    def choose(self, req: Sequence[int], rem: float, ready_only: bool = False,
               exclude: int = -1, avoid: Collection[int] = (), job: int | None = None
               ) -> _Entry | None:
        """The instance Stratus §3.2 puts a task of request ``req`` and (remaining) runtime
        ``rem`` on, or None if it fits nowhere. ``avoid``: instance ids it may not go on
        (anti-affinity, ``Plan.avoid`` for a flagged task of ``job``)."""
        b = bin_of(rem, self.unit_s)
        ids = self._bin_ids
        bins = self.bins
        # No instance whose smallest free share is below the request's smallest share can
        # hold it (the dimension of its smallest share would fall short): scans in order of
        # availability stop there.
        need = min(r / c for r, c in zip(req, self.ref))
        memo = not ready_only and exclude < 0  # failures under a filter prove nothing
        # a known failure holds under ``avoid`` too (it only removes candidates), but a
        # failure found while avoiding some instances is not remembered
        learn = memo and not avoid
        job_memo = memo and avoid and job is not None
        req = tuple(req)
        if b in bins:
            bin_ = bins[b]
            if not (memo and _known_fail(bin_, req)) and not (
                    job_memo and _known_fail(bin_, req, job)):
                # under an avoid set a bin is often all avoided or full: the availability
                # order finds that without walking every instance by runtime
                e = None if avoid and self._roomiest(bin_, req, need, ready_only, exclude,
                                                      avoid) is None \
                    else self._closest(bin_, req, rem, ready_only, exclude, avoid)
                if e is not None:
                    return e
                if learn:
                    _remember_fail(bin_, req)
                elif job_memo:
                    _remember_fail(bin_, req, job)
        pos = bisect_left(ids, b)
        start = pos + 1 if pos < len(ids) and ids[pos] == b else pos
        # up-packing into greater bins, then down-packing into lesser ones
        for bb in (*ids[start:], *reversed(ids[:pos])):
            bin_ = bins[bb]
            if memo and _known_fail(bin_, req) or job_memo and _known_fail(bin_, req, job):
                continue
            e = self._roomiest(bin_, req, need, ready_only, exclude, avoid)
            if e is not None:
                return e
            if learn:
                _remember_fail(bin_, req)
            elif job_memo:
                _remember_fail(bin_, req, job)
        return None

    def _closest(self, b: _Bin, req, rem: float, ready_only: bool, exclude: int,
                 avoid: Collection[int] = ()) -> _Entry | None:
        """Same bin: the fitting instance whose remaining runtime is closest to ``rem``."""
        if any(r > u for r, u in zip(req, b.bound)):
            return None
        entries = self.entries
        lst = b.by_rem
        hi = bisect_left(lst, (rem, -1))
        lo = hi - 1
        n = len(lst)
        while lo >= 0 or hi < n:
            if hi >= n or (lo >= 0 and rem - lst[lo][0] <= lst[hi][0] - rem):
                iid = lst[lo][1]
                lo -= 1
            else:
                iid = lst[hi][1]
                hi += 1
            e = entries[iid]
            if iid == exclude or (ready_only and not e.ready) or iid in avoid:
                continue
            for r, f in zip(req, e.free):
                if r > f:
                    break
            else:
                return e
        return None

    def _roomiest(self, b: _Bin, req, need: float, ready_only: bool,
                  exclude: int, avoid: Collection[int] = ()) -> _Entry | None:
        """Other bins: the fitting instance with the most available resources."""
        if any(r > u for r, u in zip(req, b.bound)):
            return None
        entries = self.entries
        for neg_min, _, iid in b.by_avail:
            if -neg_min < need:
                return None  # from here on every instance is short in some dimension
            e = entries[iid]
            if iid == exclude or (ready_only and not e.ready) or iid in avoid:
                continue
            for r, f in zip(req, e.free):
                if r > f:
                    break
            else:
                return e
        return None


_MAX_FAILS = 8


def _known_fail(b: _Bin, req: tuple[int, ...], job: int | None = None) -> bool:
    for f in (b.fails if job is None else b.job_fails.get(job, ())):
        for r, x in zip(req, f):
            if r < x:
                break
        else:
            return True
    return False


def _remember_fail(b: _Bin, req: tuple[int, ...], job: int | None = None) -> None:
    fails = b.fails if job is None else b.job_fails.setdefault(job, [])
    if len(fails) >= _MAX_FAILS:
        del fails[0]
    fails.append(req)


class RuntimeBinPacker:
    """Stratus's packer (§3.2). Cordoned instances (being cleared, §3.4) get no tasks."""

    name = "runtime-binning"
    general = False  # True: no unrolled (cpu, mem) path in the index (for the tests)

    def __init__(self, unit_s: float = 1.0) -> None:
        self.unit_s = unit_s
        self.reset()

    @staticmethod
    def check_params(p: dict, where: str) -> None:
        from stratus.base.errors import ConfigError

        if p["unit_s"] <= 0:
            raise ConfigError(f"{where}.unit_s: seconds > 0, got {p['unit_s']}")

    def reset(self) -> None:
        """A new replay: instance ids start again."""
        self._index: BinIndex | None = None
        self._index_plan: Plan | None = None

    def index(self, view: ClusterView, plan: Plan) -> BinIndex:
        """The tick's bin index (built once per plan, shared with instance clearing),
        without the cordoned instances, now or later in the plan."""
        if self._index_plan is not plan:
            bl = plan.cordoned
            insts = [i for i in view.instances if i.iid not in bl] if bl else view.instances
            reuse = self._index.entries if self._index is not None else None
            self._index = BinIndex(view, plan, insts, self.unit_s, reuse, self.general)
            self._index_plan = plan
            plan.on_cordon(self._index.discard)
        return self._index

    def pack(self, view: ClusterView, plan: Plan, tasks: Sequence[Task]) -> list[Task]:
        idx = self.index(view, plan)
        left = []
        est = view.estimate
        # anti-affinity: while consecutive flagged tasks of one job are placed, the
        # instances it must avoid are hidden from the index, so a search does not walk
        # past them (they are the closest in runtime: the job's other tasks)
        run: int | None = None
        hidden: list = []
        # longest first (§3.2); ties by arrival for determinism
        for task in sorted(tasks, key=lambda t: (-est(t), t.tid)):
            r = est(task)
            job = task.job if task.anti_affinity else None
            if job != run:
                for e in hidden:
                    idx.unhide(e)
                hidden.clear()
                run = job
                if job is not None:
                    for iid in plan.avoid(task):
                        e = idx.entries.get(iid)
                        if e is not None:
                            idx.hide(e)
                            hidden.append(e)
            e = (idx.choose(task.req, r) if job is None
                 else idx.choose(task.req, r, avoid=plan.avoid(task), job=job))
            if e is None:
                left.append(task)
            else:
                plan.place(task, e.inst)
                idx.take(e, task.req, r)
                if job is not None:
                    idx.hide(e)
                    hidden.append(e)
        for e in hidden:
            idx.unhide(e)
        return left
