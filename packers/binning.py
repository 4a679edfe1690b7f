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

import math
from bisect import bisect_left, insort
from collections.abc import Collection, Iterable, Sequence
from heapq import heapify, heappop, heappush
from math import frexp, ldexp

from stratus.policy.compose import Plan
from stratus.policy.params import Param, Parametric
from stratus.sim.model import READY, Instance, Task
from stratus.sim.view import CONSTANT, FALLING, RISING, ClusterView, form_key, remaining_at


def bin_of(seconds: float, unit_s: float = 1.0) -> int:
    """Index of the runtime bin of a (remaining) runtime: 0 for [0, 1), i for [2^(i-1), 2^i)."""
    x = seconds / unit_s
    return frexp(x)[1] if x >= 1.0 else 0


def availability(free: Sequence[int], ref: Sequence[int]) -> tuple[float, float]:
    """Sort key for "most available resources": (min share of ``ref`` free, total share)."""
    shares = [f / r for f, r in zip(free, ref)]
    return (min(shares), sum(shares))


_INF = math.inf
_MIN_LEVEL = 2.0 ** -12  # requests below this smallest share walk every instance


class _Entry:
    __slots__ = ("inst", "iid", "free", "kind", "a", "d", "s", "key", "bin", "avail",
                 "ready", "stamp")

    def __init__(self, inst: Instance, free, form, b: int, avail, ready: bool) -> None:
        self.inst = inst
        self.iid = inst.iid
        self.free = free
        # its remaining runtime's form (ClusterView.instance_forms): kind, est, done,
        # start; ``key`` orders the entries of one kind at any time (form_key)
        self.kind, self.a, self.d, self.s = form
        self.key = form_key(*form)
        self.bin = b
        self.avail = avail
        self.ready = ready
        self.stamp = 0  # which of its refreshes a wake-up in the index's heap is for

    def set_form(self, form) -> None:
        self.kind, self.a, self.d, self.s = form
        self.key = form_key(*form)


def _rem(e: _Entry, now: float) -> float:
    """``remaining_at`` of the entry's form, inlined (the arithmetic of
    ``ClusterView.instances_remaining``)."""
    k = e.kind
    if k == FALLING:
        return e.a - (e.d + (now - e.s))
    return e.d + (now - e.s) if k == RISING else e.a


class _Bin:
    __slots__ = ("by_key", "by_rem", "by_level", "by_avail", "bound", "shrunk", "stale",
                 "fails", "job_fails")

    def __init__(self, dims: int) -> None:
        # per form (FALLING, RISING, CONSTANT): (key, iid) ascending, which is ascending
        # remaining runtime at any one time
        self.by_key: tuple[list, list, list] = ([], [], [])
        # (remaining, iid) ascending over the forms (falling and rising ones interleave
        # anew as time passes): made in a tick's first search of the bin, then kept
        self.by_rem: list[tuple[float, int]] | None = None
        # the same restricted to the instances with at least 2^(k-1) of the largest type
        # free in every dimension, by k (made, then kept, as ``by_rem``): a request whose
        # smallest share is that much walks past no instance too full for it on a share
        self.by_level: dict[int, tuple[float, list[tuple[float, int]]]] = {}
        self.by_avail: list[tuple[float, float, int]] = []  # (-min share, -sum share, iid)
        # per dimension, at least the largest free amount of any instance in the bin:
        # raised on insert, made exact again in the first search of a tick after an
        # instance that may have held it lost room or left (``shrunk``, then ``stale``),
        # so it can only rule a bin out when no instance in it can fit (exact pruning)
        self.bound = [0] * dims
        self.shrunk = self.stale = False
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
    kept up to date as tasks are placed on them during one tick.

    An instance's remaining runtime is kept as a form (``ClusterView.instance_forms``):
    the longest task's expected *end*, or minus its effective start once it has outlived
    its estimate (readjusted, §3.4), or a constant. Keys do not change as time passes,
    so the index can live across ticks (``sync``): a bin is a range of remaining
    runtime, and only the instances that crossed a bin's bound, changed, or whose form
    ends move."""

    def __init__(self, view: ClusterView, plan: Plan, instances: Iterable[Instance],
                 unit_s: float = 1.0, reuse: dict[int, _Entry] | None = None) -> None:
        """``reuse``: last tick's entries, refreshed in place instead of allocated anew."""
        self.unit_s = unit_s
        self.now = now = view.now
        ref = self.ref = view.catalog.max_capacity
        dims = self.dims = len(ref)
        entries: dict[int, _Entry] = {}
        self.entries = entries
        bins: dict[int, _Bin] = {}
        self.bins = bins
        self._heap: list[tuple[float, int, int]] = []  # (until, stamp, iid): form ends
        self._stamp = 0
        self.touched: set[int] = set()  # ids changed by this tick's tentative placements
        old = reuse or {}
        insts = list(instances)
        forms = view.instance_forms(insts)
        planned = plan.changed_free()  # what this plan changed (nothing, when built first)
        heap = self._heap
        # one pass: bin lists are filled unsorted and sorted once at the end (the same
        # order as inserting one by one: keys are unique by instance id)
        for inst, (kind, a, dn, st, until) in zip(insts, forms):
            iid = inst.iid
            form = (kind, a, dn, st)
            free = planned.get(iid, inst.free)
            avail = availability(free, ref)
            x = remaining_at(kind, a, dn, st, now) / unit_s
            b = frexp(x)[1] if x >= 1.0 else 0
            ready = inst.state == READY
            e = old.get(iid)
            if e is None or e.inst is not inst:
                e = _Entry(inst, free, form, b, avail, ready)
            else:
                e.set_form(form)
                e.free, e.bin, e.avail, e.ready = free, b, avail, ready
            if until < _INF:
                self._stamp += 1
                e.stamp = self._stamp
                heap.append((until, e.stamp, iid))
            entries[iid] = e
            bn = bins.get(b)
            if bn is None:
                bn = bins[b] = _Bin(dims)
            bn.by_key[kind].append((e.key, iid))
            bn.by_avail.append((-avail[0], -avail[1], iid))
            _raise(bn.bound, free)
        for bn in bins.values():
            for lst in bn.by_key:
                lst.sort()
            bn.by_avail.sort()
        heapify(heap)
        self._bin_ids: list[int] = sorted(bins)  # sorted ids of non-empty bins

    def rem_of(self, e: _Entry) -> float:
        """The entry's remaining runtime now (with this tick's tentative placements)."""
        return _rem(e, self.now)

    # --- across ticks -------------------------------------------------------------------
    def sync(self, view: ClusterView, plan: Plan, changed: set[int]) -> None:
        """Bring the index to ``view``'s time and state for a new ``plan``: refresh the
        instances in ``changed`` (``ClusterView.watch_instances``, then cleared), those
        this index changed tentatively last tick, and those whose form ended; move the
        ones that crossed a bin's bound; forget last tick's failures. The result equals a
        new ``BinIndex`` of the same instances (tests/packers/test_live_binning.py)."""
        now = self.now = view.now
        entries = self.entries
        for b in self.bins.values():
            b.by_rem = None  # time moved: falling and rising forms interleave anew
            b.by_level.clear()
        cordoned = plan.cordoned
        todo = changed | self.touched if self.touched else set(changed)
        changed.clear()
        self.touched.clear()
        heap = self._heap
        while heap and heap[0][0] <= now:
            _, stamp, iid = heappop(heap)
            e = entries.get(iid)
            if e is not None and e.stamp == stamp:
                todo.add(iid)
        for iid in cordoned:  # cordoned since (a part's own plan.cordon reached discard)
            if iid in entries:
                self.discard(iid)
        if todo:
            live = []
            for iid in todo:
                try:
                    inst = view.instance(iid)
                except KeyError:  # released
                    inst = None
                if inst is None or iid in cordoned:  # a cordon lasts as long as the instance
                    self.discard(iid)
                else:
                    live.append(inst)
            for inst, form in zip(live, view.instance_forms(live)):
                self._refresh(inst, form)
        self._cross(now)
        for iid, free in plan.changed_free().items():  # earlier parts of this plan
            e = entries.get(iid)
            if e is not None and e.free != free:
                self._remove(e)
                e.free, e.avail = free, availability(free, self.ref)
                self._insert(e)
                self.touched.add(iid)
        for b in self.bins.values():
            b.fails.clear()
            b.job_fails.clear()
            if b.shrunk:
                b.stale, b.shrunk = True, False

    def _refresh(self, inst: Instance, form: tuple) -> None:
        """Read ``inst`` afresh (in ``sync``: no bin has its ``by_rem`` yet; failures and
        bounds are seen to after)."""
        until = form[4]
        form = form[:4]
        free = inst.free
        x = remaining_at(*form, self.now) / self.unit_s
        b = frexp(x)[1] if x >= 1.0 else 0
        e = self.entries.get(inst.iid)  # (instance ids are never reused in a replay)
        if e is None:
            e = self.entries[inst.iid] = _Entry(inst, free, form, b,
                                                availability(free, self.ref),
                                                inst.state == READY)
            self._insert(e)
        elif b != e.bin:
            self._remove(e)
            e.set_form(form)
            e.free, e.bin = free, b
            e.avail, e.ready = availability(free, self.ref), inst.state == READY
            self._insert(e)
        else:  # the same bin: only the lists whose order changed (most refreshes)
            e.ready = inst.state == READY
            bn = self.bins[b]
            if form != (e.kind, e.a, e.d, e.s):
                lst = bn.by_key[e.kind]
                del lst[bisect_left(lst, (e.key, e.iid))]
                e.set_form(form)
                insort(bn.by_key[e.kind], (e.key, e.iid))
            if free != e.free:
                lst = bn.by_avail
                del lst[bisect_left(lst, (-e.avail[0], -e.avail[1], e.iid))]
                _may_shrink(bn, e.free)
                e.free = free
                e.avail = avail = availability(free, self.ref)
                insort(lst, (-avail[0], -avail[1], e.iid))
                _raise(bn.bound, free)
        self._stamp += 1
        e.stamp = self._stamp
        if until < _INF:
            heappush(self._heap, (until, e.stamp, e.iid))

    def _cross(self, now: float) -> None:
        """Move the instances whose remaining runtime left their bin as time passed:
        falling ones from the low end of a bin's list down, rising ones from the high
        end up (each list is in order of remaining runtime, so they are at its ends)."""
        unit = self.unit_s
        entries = self.entries
        for bid in list(self._bin_ids):
            b = self.bins.get(bid)
            if b is None:
                continue
            fl, ri = b.by_key[FALLING], b.by_key[RISING]
            while fl:
                e = entries[fl[0][1]]
                x = (e.a - (e.d + (now - e.s))) / unit
                nb = frexp(x)[1] if x >= 1.0 else 0
                if nb == bid:
                    break
                self._move(e, nb)
            while ri:
                e = entries[ri[-1][1]]
                x = (e.d + (now - e.s)) / unit
                nb = frexp(x)[1] if x >= 1.0 else 0
                if nb == bid:
                    break
                self._move(e, nb)

    def _move(self, e: _Entry, b: int) -> None:
        self._remove(e)
        e.bin = b
        self._insert(e)

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
        insort(b.by_key[e.kind], (e.key, e.iid))
        if b.by_rem is not None:
            k = (_rem(e, self.now), e.iid)
            insort(b.by_rem, k)
            for level, lst in b.by_level.values():
                if e.avail[0] >= level:
                    insort(lst, k)
        insort(b.by_avail, (-e.avail[0], -e.avail[1], e.iid))
        _raise(b.bound, e.free)

    def _remove(self, e: _Entry) -> None:
        b = self.bins[e.bin]
        lst = b.by_key[e.kind]
        del lst[bisect_left(lst, (e.key, e.iid))]
        if b.by_rem is not None:
            k = (_rem(e, self.now), e.iid)
            lst = b.by_rem
            del lst[bisect_left(lst, k)]
            for level, lst in b.by_level.values():
                if e.avail[0] >= level:
                    del lst[bisect_left(lst, k)]
        k2 = (-e.avail[0], -e.avail[1], e.iid)
        del b.by_avail[bisect_left(b.by_avail, k2)]
        if not b.by_avail:
            del self.bins[e.bin]
            del self._bin_ids[bisect_left(self._bin_ids, e.bin)]
        else:
            _may_shrink(b, e.free)

    def take(self, e: _Entry, req: Sequence[int], rem: float) -> None:
        """Record that a task of request ``req`` and remaining runtime ``rem`` went on ``e``:
        less free room, and the instance's remaining runtime (hence bin) may grow — the
        promotion of down-packing (§3.2). Tentative: the next ``sync`` reads the instance
        afresh."""
        self._remove(e)
        old_bin = e.bin
        e.free = tuple(f - r for f, r in zip(e.free, req))
        e.avail = availability(e.free, self.ref)
        if rem > _rem(e, self.now):
            e.set_form((CONSTANT, rem, 0.0, 0.0))  # for the rest of this tick
            e.bin = bin_of(rem, self.unit_s)
        self._insert(e, shrunk=e.bin == old_bin)
        self.touched.add(e.iid)

    def snapshot(self, e: _Entry) -> tuple:
        return (e.free, (e.kind, e.a, e.d, e.s), e.bin, e.avail)

    def restore(self, e: _Entry, snap: tuple) -> None:
        """Undo ``take`` calls on ``e`` back to ``snap`` (a tentative re-pack that failed)."""
        self._remove(e)
        e.free, form, e.bin, e.avail = snap
        e.set_form(form)
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
        """Drop instance ``iid`` (cordoned, or gone): for good, as a cordon lasts until the
        instance is gone (``Plan``)."""
        e = self.entries.pop(iid, None)
        if e is not None:
            self._remove(e)
            self.touched.discard(iid)

    def _tight(self, b: _Bin) -> list[int]:
        """The bin's bound, made exact if this tick has not yet done so."""
        if b.stale:
            entries = self.entries
            bound = [0] * self.dims
            for _, _, iid in b.by_avail:
                for d, f in enumerate(entries[iid].free):
                    if f > bound[d]:
                        bound[d] = f
            b.bound = bound
            b.stale = False
        return b.bound

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
        """Same bin: the fitting instance whose remaining runtime is closest to ``rem``
        (ties: the shorter, then the lower id), walking outward from ``rem`` over the
        bin's instances in order of remaining runtime."""
        bound = self._tight(b) if b.stale else b.bound
        if any(r > u for r, u in zip(req, bound)):
            return None
        lst = b.by_rem
        if lst is None:
            lst = b.by_rem = self._merged(b)
        entries = self.entries
        # only the instances with at least a power of two below the request's smallest
        # share free in every dimension: the others cannot hold it, and leaving them out
        # keeps the walk's order (a merge of the two sides by distance)
        need = min(r / c for r, c in zip(req, self.ref))
        if need >= _MIN_LEVEL:
            k = frexp(need)[1]
            got = b.by_level.get(k)
            if got is None:
                level = ldexp(1.0, k - 1)
                got = b.by_level[k] = (level, [x for x in lst if entries[x[1]].avail[0] >= level])
            lst = got[1]
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

    def _merged(self, b: _Bin) -> list[tuple[float, int]]:
        """The bin's (remaining, iid) in order, over its forms, at this tick's time."""
        now = self.now
        entries = self.entries
        out: list[tuple[float, int]] = []
        fl, ri, co = b.by_key
        for _, iid in fl:
            e = entries[iid]
            out.append((e.a - (e.d + (now - e.s)), iid))
        for _, iid in ri:
            e = entries[iid]
            out.append((e.d + (now - e.s), iid))
        out.extend(co)  # a constant's key is its value
        out.sort()
        return out

    def _roomiest(self, b: _Bin, req, need: float, ready_only: bool,
                  exclude: int, avoid: Collection[int] = ()) -> _Entry | None:
        """Other bins: the fitting instance with the most available resources."""
        bound = self._tight(b) if b.stale else b.bound
        if any(r > u for r, u in zip(req, bound)):
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


def _raise(bound: list[int], free) -> None:
    """A bin's bound after an instance with ``free`` joined it."""
    for d, f in enumerate(free):
        if f > bound[d]:
            bound[d] = f


def _may_shrink(b: _Bin, free) -> None:
    """An instance that had ``free`` in ``b`` lost room or left: if it may have held the
    bin's bound, the next tick's first search makes the bound exact again."""
    if not b.shrunk:
        for f, u in zip(free, b.bound):
            if f >= u:
                b.shrunk = True
                break


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


#: the runtime bins' unit (``unit_s``): from a microsecond to about 30 years; a runtime over
#: a smaller unit could overflow a float (no bin at all)
UNIT_S = Param("unit_s", float, 1e-6, 1e9, what="seconds")


class RuntimeBinPacker(Parametric):
    """Stratus's packer (§3.2). Cordoned instances (being cleared, §3.4) get no tasks."""

    label = "runtime-binning"
    PARAMS = (UNIT_S,)

    def __init__(self, unit_s: float = 1.0) -> None:
        self.unit_s = unit_s
        self.check_init()
        self.reset()

    def reset(self) -> None:
        """A new replay: instance ids start again."""
        self._index: BinIndex | None = None
        self._index_plan: Plan | None = None
        self._changed: set[int] | None = None  # the view's watch set, for ``sync``

    def index(self, view: ClusterView, plan: Plan) -> BinIndex:
        """The tick's bin index (once per plan, shared with instance clearing), without
        the cordoned instances, now or later in the plan. Built once per replay and kept
        up to date from the view's changes (``BinIndex.sync``) when the view reports them;
        built anew for each plan otherwise (a hand-made view)."""
        if self._index_plan is not plan:
            if self._index is not None and self._changed is not None:
                self._index.sync(view, plan, self._changed)
            else:
                changed = view.watch_instances()
                bl = plan.cordoned
                insts = [i for i in view.instances if i.iid not in bl] if bl else view.instances
                reuse = self._index.entries if self._index is not None else None
                self._index = BinIndex(view, plan, insts, self.unit_s, reuse)
                self._changed = changed
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
