"""Which is the oldest live instance with room for a request? A capacity index for first fit.

``FreeTree`` is a segment tree over slots in age order (oldest leftmost). Each node holds
the largest free capacity in each dimension among the slots below it, so a query skips a
subtree whose maximum in some dimension is below the request. The two maxima of a node may
come from different instances: a descent can find nothing below a node that passed, and it
then moves on to the next subtree to the right (backtracking). Answers are exactly a
left-to-right scan's.

``LiveIndex`` keeps a tree in step with a cluster view across ticks: new instances take the
next slot (instance ids, hence view order, only grow), released ones leave a dead slot,
and free capacity is reloaded where it changed since the last look.

The tree holds two dimensions (cpu, mem). With more (a GPU catalog), ``LiveIndex.find``
uses it as a filter on the first two and checks the others on each slot it finds, going on
to the right while they fall short: still exactly a left-to-right scan's answer.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from itertools import compress, count
from operator import attrgetter, ne

from stratus.base.resources import Vec, fits
from stratus.sim.model import RELEASED, Instance

DEAD = -1  # the free capacity of an empty slot: below every request (requests are >= 0)


class FreeTree:
    """Per-dimension maxima over ``cap`` slots (a power of two); leaves at [cap, 2 cap)."""

    __slots__ = ("cap", "m0", "m1")

    def __init__(self, values: Iterable[tuple[int, int]] = (), cap: int = 64) -> None:
        self.build(list(values), cap)

    def build(self, values: list[tuple[int, ...]], cap: int = 64) -> None:
        """Slots 0.. hold ``values``, the rest are dead; ``cap`` is rounded up to a power
        of two that fits them. Only the first two dimensions are kept (as in ``set``)."""
        cap = 1 << (max(cap, len(values), 1) - 1).bit_length()
        m0 = [DEAD] * (2 * cap)
        m1 = [DEAD] * (2 * cap)
        for i, (a, b, *_rest) in enumerate(values, cap):
            m0[i] = a
            m1[i] = b
        if not values:  # all dead: so are the maxima (a 2^19-slot tree costs 0.15 s to fold)
            self.cap, self.m0, self.m1 = cap, m0, m1
            return
        for i in range(cap - 1, 0, -1):
            a, b = m0[2 * i], m0[2 * i + 1]
            m0[i] = a if a > b else b
            a, b = m1[2 * i], m1[2 * i + 1]
            m1[i] = a if a > b else b
        self.cap, self.m0, self.m1 = cap, m0, m1

    def set(self, slot: int, f0: int, f1: int, *_rest: int) -> None:
        """Load a slot's free capacity and refresh the maxima above it (the first two
        dimensions; further ones, ``_rest``, are not kept)."""
        m0, m1 = self.m0, self.m1
        i = slot + self.cap
        m0[i] = f0
        m1[i] = f1
        i >>= 1
        while i:
            a, b = m0[2 * i], m0[2 * i + 1]
            v0 = a if a > b else b
            a, b = m1[2 * i], m1[2 * i + 1]
            v1 = a if a > b else b
            if m0[i] == v0 and m1[i] == v1:
                break  # unchanged here, so unchanged above
            m0[i] = v0
            m1[i] = v1
            i >>= 1

    def find(self, r0: int, r1: int, lo: int = 0) -> int:
        """The leftmost slot from ``lo`` on with free >= (r0, r1) in both dimensions, or -1."""
        m0, m1, cap = self.m0, self.m1, self.cap
        # from the root, or from leaf lo: the same walk then visits, left to right, the
        # subtrees that cover the slots after it
        node = lo + cap if lo else 1
        while True:
            if m0[node] >= r0 and m1[node] >= r1:
                if node >= cap:
                    return node - cap
                node <<= 1  # try the left child first
            else:
                # nothing here: climb past right children, then take the right sibling
                while node & 1:
                    node >>= 1
                if not node:
                    return -1
                node += 1


class SlotRun:
    """Anti-affinity over a ``LiveIndex`` (as ``stratus.packers.binpack.JobRun``): while consecutive
    flagged tasks of one job are placed, the slots that job must avoid are dead in the tree
    (and each slot a task of the run goes on joins them), so each task costs one search
    instead of a walk past every avoided slot; ``end`` reloads them from ``seen``."""

    __slots__ = ("index", "job", "out")

    def __init__(self, index: LiveIndex) -> None:
        self.index = index
        self.job: int | None = None
        self.out: list[int] = []

    def find(self, task, avoid: Collection[int]) -> int:
        ix = self.index
        if task.job != self.job:
            self.end()
            self.job = task.job
            for iid in avoid:
                s = ix.slot.get(iid)
                if s is not None and ix.seen[s] is not None:  # not blacklisted or gone
                    self.out.append(s)
                    ix.tree.set(s, DEAD, DEAD)
        return ix.find(task.req)

    def took(self, s: int, free: Vec) -> None:
        self.index.seen[s] = free
        self.index.tree.set(s, DEAD, DEAD)
        self.out.append(s)

    def end(self) -> None:
        ix = self.index
        if self.out:
            for s in self.out:
                f = ix.seen[s]
                ix.tree.set(s, f[0], f[1])
            ix._after.clear()  # room came back: earlier answers are no lower bounds now
            self.out.clear()
        self.job = None


free_of = attrgetter("free")


class _Gone:
    """Stands in a dead slot so reconciliation can read every slot the same way."""

    __slots__ = ()
    free = None
    state = RELEASED


GONE = _Gone()


class LiveIndex:
    """A ``FreeTree`` over a view's live instances, in view (age) order."""

    def __init__(self, min_cap: int = 64) -> None:
        self.min_cap = min_cap
        self.tree = FreeTree(cap=min_cap)
        self.insts: list[Instance | _Gone] = []  # slot -> instance
        self.seen: list[Vec | None] = []  # slot -> free capacity loaded into the tree
        self.slot: dict[int, int] = {}  # iid -> slot
        self.last_iid = -1
        self.live = 0
        self._after: dict[Vec, int] = {}  # request -> slot of its last answer (-1: none)

    def _rebuild(self, instances: Iterable[Instance]) -> None:
        self.insts = list(instances)
        self.seen = [i.free for i in self.insts]
        self.slot = {inst.iid: s for s, inst in enumerate(self.insts)}
        self.live = len(self.insts)
        self.last_iid = max(self.slot, default=self.last_iid)
        self.tree.build(self.seen, max(self.min_cap, 2 * self.live))

    def _add(self, inst: Instance) -> None:
        s = len(self.insts)
        if s == self.tree.cap:  # full: drop dead slots, and grow if still over half full
            self._rebuild([i for i in self.insts if i is not GONE])
            s = len(self.insts)
        self.insts.append(inst)
        self.seen.append(inst.free)
        self.slot[inst.iid] = s
        self.live += 1
        self.last_iid = inst.iid
        self.tree.set(s, *inst.free)

    def _drop(self, s: int) -> None:
        del self.slot[self.insts[s].iid]
        self.insts[s] = GONE
        self.seen[s] = None
        self.live -= 1
        self.tree.set(s, DEAD, DEAD)

    def sync(self, instances: Iterable[Instance]) -> None:
        """Catch up with ``instances`` (the view's live instances, oldest first).

        Reading every slot's free capacity is one pass in C (``map``), not a Python loop;
        only slots whose capacity changed, and new instances, cost Python work."""
        self._after.clear()
        insts, seen, put = self.insts, self.seen, self.tree.set
        for s in list(compress(count(), map(ne, map(free_of, insts), seen))):
            inst = insts[s]
            if inst.state == RELEASED:
                self._drop(s)
            else:
                f = seen[s] = inst.free
                put(s, f[0], f[1])
        try:
            newest = reversed(instances)  # a dict view: new instances are at its end
        except TypeError:
            instances = list(instances)
            newest = reversed(instances)
        new = []
        for inst in newest:
            if inst.iid <= self.last_iid:
                break
            new.append(inst)
        for inst in reversed(new):
            self._add(inst)
        if self.live != len(instances):
            # a release that left the free capacity as it was (an idle kept instance)
            # or an order this index does not expect: start again from the view
            self._rebuild(instances)
        elif len(self.insts) > 4 * self.min_cap and 4 * self.live < len(self.insts):
            self._rebuild([i for i in self.insts if i is not GONE])  # mostly dead: shrink

    def find(self, req: Vec) -> int:
        """The slot of the oldest instance ``req`` fits on (``self.insts[slot]``), or -1."""
        # While free capacity only shrinks, nothing left of the last answer for the same
        # request can fit it (a job's tasks often share one): search on from there.
        lo = self._after.get(req, 0)
        if lo < 0:
            return -1
        tree = self.tree
        s = tree.find(req[0], req[1], lo)
        if len(req) > 2:  # the tree knows cpu and mem only: check the rest, go on right
            seen = self.seen
            while s >= 0 and not fits(req, seen[s]):
                s = tree.find(req[0], req[1], s + 1) if s + 1 < tree.cap else -1
        self._after[req] = s
        return s

    def find_avoiding(self, req: Vec, avoid: Collection[int]) -> int:
        """``find``, skipping the instances whose ids are in ``avoid`` (anti-affinity):
        the oldest instance ``req`` fits on that is not avoided, or -1."""
        s = self.find(req)
        insts, find = self.insts, self.tree.find
        while s >= 0 and insts[s].iid in avoid:
            s = find(req[0], req[1], s + 1)
        return s

    def first_fit(self, req: Vec) -> Instance | None:
        s = self.find(req)
        return None if s < 0 else self.insts[s]

    def took(self, s: int, free: Vec) -> None:
        """Slot ``s`` has only ``free`` left now (less than before: a placement)."""
        self.seen[s] = free
        self.tree.set(s, free[0], free[1])

    def retire(self, iid: int) -> None:
        """No answer is instance ``iid`` for the rest of this tick (cordoned, or deleted):
        its slot is dead in the tree and reloaded from the view at the next ``sync``."""
        s = self.slot.get(iid)
        if s is not None:
            self.seen[s] = None
            self.tree.set(s, DEAD, DEAD)

    def hide(self, s: int) -> None:
        """Slot ``s`` answers nothing until ``restore`` (a trial without it); its free
        capacity is kept."""
        self.tree.set(s, DEAD, DEAD)

    def restore(self, s: int, free: Vec | None = None) -> None:
        """Slot ``s`` has ``free`` again (default: what it had before ``hide``): undoes a
        trial's ``took`` and ``hide``. Room came back, so earlier answers are no lower
        bounds any more."""
        if free is None:
            free = self.seen[s]
        else:
            self.seen[s] = free
        self.tree.set(s, *free)
        self._after.clear()

    def update(self, inst: Instance, free: Vec) -> None:
        """``inst`` now has ``free`` (e.g. after a tentative placement)."""
        s = self.slot[inst.iid]
        old = self.seen[s]
        if free[0] > old[0] or free[1] > old[1] or (len(free) > 2 and not fits(free, old)):
            self._after.clear()  # it grew: earlier answers are no lower bounds now
        self.seen[s] = free
        self.tree.set(s, *free)
