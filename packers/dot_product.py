"""Online vector packing with the dot-product heuristic (Panigrahy et al. 2011 [42], Gandhi
et al. [23]), the packer Stratus §5.2 adds to SCloud ("SCloud + on-line packing", Fig. 6).

Pending tasks are taken in arrival order (online). Each goes on the live instance, among
those it fits, that maximizes the dot product of its request and the instance's free
capacity, both normalized by *that instance's* capacity (Panigrahy et al. normalize every
bin to unit capacity; with heterogeneous bins this is the direct generalization,
docs/decisions.md). Ties go to the oldest instance. Tasks that fit nowhere are left to the
scaler. Runtimes play no part.

The search is a branch and bound over one capacity index per instance type, the index
first fit uses (packers/free_index.py): every node of that tree holds the largest free
amount per dimension below it, which bounds the dot product of anything below it (the
weights ``req_d / cap_d^2`` are >= 0 and fixed within a type), and rules out subtrees whose
maxima are below the request. Cordoned instances (``Plan.cordon``: being vacated by
instance clearing or hopping) get no tasks.

``index(view, plan)`` exposes the same tick index to instance clearing
(scalers/clearing.py) so that clearing re-packs by dot product, without runtime binning
(Fig. 6, "+ instance clearing").
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from stratus.base.resources import fits
from stratus.packers.free_index import DEAD, LiveIndex
from stratus.policy.compose import Plan
from stratus.policy.params import Parametric
from stratus.sim.model import READY, Instance, Task
from stratus.sim.view import ClusterView


def dot_weights(req: Sequence[int], cap: Sequence[int]) -> list[float]:
    """``req_d / cap_d^2`` per dimension; 0 where the type has none (a CPU type's GPUs:
    a request that fits it asks for none either)."""
    return [r / (c * c) if c else 0.0 for r, c in zip(req, cap)]


def dot_score(req: Sequence[int], free: Sequence[int], cap: Sequence[int]) -> float:
    """Σ_d (req_d / cap_d) (free_d / cap_d), rounded as the index computes it
    (Σ_d w_d free_d, left to right)."""
    return sum(w * f for w, f in zip(dot_weights(req, cap), free))


def best_dot(tree, r0: int, r1: int, w0: float, w1: float, ok=None) -> int:
    """Slot maximizing ``w0 * free0 + w1 * free1`` among slots with free >= (r0, r1) and
    ``ok(slot)`` (if given); ties to the lowest slot; -1 if none fits."""
    m0, m1, cap = tree.m0, tree.m1, tree.cap
    depth = cap.bit_length()
    best_s, best_v = -1, -1.0
    stack = [1]
    pop, push = stack.pop, stack.append
    while stack:
        node = pop()
        a, b = m0[node], m1[node]
        if a < r0 or b < r1:
            continue
        v = w0 * a + w1 * b
        if v < best_v:
            continue
        if node >= cap:
            s = node - cap
            if v == best_v and s > best_s:
                continue
            if ok is not None and not ok(s):
                continue
            best_s, best_v = s, v
            continue
        if v == best_v and (node << (depth - node.bit_length())) - cap > best_s:
            continue  # only ties, all right of the best so far
        left, right = 2 * node, 2 * node + 1
        vl = w0 * m0[left] + w1 * m1[left]
        vr = w0 * m0[right] + w1 * m1[right]
        if vr > vl:  # the stack pops the last push first: explore the better child first
            push(left)
            push(right)
        else:
            push(right)
            push(left)
    return best_s


class _Entry:
    __slots__ = ("inst", "live", "slot")

    def __init__(self, inst: Instance, live: LiveIndex, slot: int) -> None:
        self.inst = inst
        self.live = live
        self.slot = slot


class DotIndex:
    """The tick's index: tentative free capacity of every live, non-blacklisted instance,
    one capacity tree per type. Offers the calls instance clearing makes on a packer index
    (``choose``, ``take``, ``snapshot``, ``restore``, ``discard``); runtimes are ignored."""

    def __init__(self, by_type: list[tuple[tuple[int, ...], LiveIndex]]) -> None:
        self.by_type = by_type  # (capacity, index) per type with live instances
        # per type, requests that fit none of its instances while free capacity only
        # shrinks (packing): a request at least as large in both dimensions fails too
        self.fails: list[list[tuple[int, int]]] | None = None
        # the same per (type, job) for flagged tasks under the job's avoid set, which only
        # grows while packing (anti-affinity)
        self.job_fails: dict[tuple[int, int], list[tuple[int, int]]] = {}

    def choose(self, req: Sequence[int], rem: float = 0.0, ready_only: bool = False,
               exclude: int = -1, avoid: Collection[int] = (), job: int | None = None
               ) -> _Entry | None:
        """``avoid``: instance ids the task may not go on (anti-affinity, ``Plan.avoid``
        for a flagged task of ``job``)."""
        if len(req) != 2:  # the trees hold (cpu, mem) only
            return self._choose_scan(req, ready_only, exclude, avoid)
        r0, r1 = req[0], req[1]
        best, best_v, best_iid = None, -1.0, -1
        fails = self.fails if not (ready_only or exclude >= 0) else None
        for k, ((c0, c1), live) in enumerate(self.by_type):
            if fails is not None:
                known = fails[k]
                if any(r0 >= f0 and r1 >= f1 for f0, f1 in known):
                    continue
                if avoid and job is not None:
                    known = self.job_fails.setdefault((k, job), [])
                    if any(r0 >= f0 and r1 >= f1 for f0, f1 in known):
                        continue
            insts = live.insts
            ok = None
            if ready_only or exclude >= 0 or avoid:
                def ok(s: int, insts=insts) -> bool:
                    inst = insts[s]
                    return (inst.iid != exclude and (not ready_only or inst.state == READY)
                            and inst.iid not in avoid)
            w0, w1 = r0 / (c0 * c0), r1 / (c1 * c1)
            s = best_dot(live.tree, r0, r1, w0, w1, ok)
            if s < 0:
                # (a failure while avoiding is remembered for the job only)
                if fails is not None and (not avoid or job is not None):
                    if len(known) >= 8:
                        del known[0]
                    known.append((r0, r1))
                continue
            f = live.seen[s]
            v = w0 * f[0] + w1 * f[1]
            iid = insts[s].iid
            if v > best_v or (v == best_v and iid < best_iid):
                best, best_v, best_iid = (live, s), v, iid
        if best is None:
            return None
        live, s = best
        return _Entry(live.insts[s], live, s)

    def _choose_scan(self, req: Sequence[int], ready_only: bool, exclude: int,
                     avoid: Collection[int] = ()) -> _Entry | None:
        """``choose`` in any number of dimensions, by a scan of every live slot: the same
        answer (largest product, ties to the oldest instance), the same rounding."""
        best, best_v, best_iid = None, -1.0, -1
        for cap, live in self.by_type:
            w = dot_weights(req, cap)
            insts = live.insts
            for s, f in enumerate(live.seen):
                if f is None or not fits(req, f):
                    continue
                inst = insts[s]
                if (inst.iid == exclude or (ready_only and inst.state != READY)
                        or inst.iid in avoid):
                    continue
                v = sum(wd * fd for wd, fd in zip(w, f))
                if v > best_v or (v == best_v and inst.iid < best_iid):
                    best, best_v, best_iid = (live, s), v, inst.iid
        if best is None:
            return None
        live, s = best
        return _Entry(live.insts[s], live, s)

    def take(self, e: _Entry, req: Sequence[int], rem: float = 0.0) -> None:
        free = e.live.seen[e.slot]
        e.live.took(e.slot, tuple(f - r for f, r in zip(free, req)))

    def snapshot(self, e: _Entry):
        return e.live.seen[e.slot]

    def restore(self, e: _Entry, snap) -> None:
        e.live.update(e.inst, snap)

    def discard(self, iid: int) -> None:
        for _, live in self.by_type:
            s = live.slot.get(iid)
            if s is not None:
                if live.seen[s] is not None:
                    live.seen[s] = None  # the next sync reloads it from the instance
                    live.tree.set(s, DEAD, DEAD)
                return


class DotProductPacker(Parametric):
    """Packer: online vector packing, dot-product heuristic (Stratus §5.2)."""

    label = "dot-product"
    PARAMS = ()

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """A new replay: instance ids start again."""
        self._lives: dict[str, LiveIndex] = {}
        self._index: DotIndex | None = None
        self._plan: Plan | None = None

    def index(self, view: ClusterView, plan: Plan) -> DotIndex:
        """The tick's index (synced once per plan, shared with instance clearing and
        HSpot's moves), without the cordoned instances, now or later in the plan."""
        if self._plan is plan and self._index is not None:
            return self._index
        bl = plan.cordoned
        groups: dict[str, list[Instance]] = {t.name: [] for t in view.catalog}
        for inst in view.instances:  # age order within each type, as the indexes expect
            groups[inst.itype.name].append(inst)
        by_type = []
        for t in view.catalog:
            insts = groups[t.name]
            live = self._lives.get(t.name)
            if live is None:
                if not insts:
                    continue
                live = self._lives[t.name] = LiveIndex()
            live.sync(insts)
            if insts:
                by_type.append((t.capacity, live))
        for iid in plan.touched():  # capacity this tick's plan already promised
            if iid not in bl:
                inst = view.instance(iid)
                self._lives[inst.itype.name].update(inst, plan.free(inst))
        idx = DotIndex(by_type)
        for iid in bl:
            idx.discard(iid)
        self._index, self._plan = idx, plan
        plan.on_cordon(idx.discard)
        return idx

    def pack(self, view: ClusterView, plan: Plan, tasks: Sequence[Task]) -> list[Task]:
        if not tasks:
            return []
        idx = self.index(view, plan)
        idx.fails = [[] for _ in idx.by_type]  # valid while this loop only takes capacity
        idx.job_fails = {}
        choose, take, place = idx.choose, idx.take, plan.place
        left = []
        for task in tasks:  # arrival order: online packing
            e = (choose(task.req, avoid=plan.avoid(task), job=task.job) if task.anti_affinity
                 else choose(task.req))
            if e is None:
                left.append(task)
            else:
                place(task, e.inst)
                take(e, task.req)
        idx.fails = None
        return left
