"""Schedulers composed of parts: a packer places pending tasks on live instances, a
scaler acquires instances for what is left, a migrator moves running tasks. Parts write
into a ``Plan``, which tracks the capacity they have already promised this tick, and the
anti-affinity rule: no two flagged tasks of one job on one instance (docs/decisions.md)."""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from operator import sub
from types import MappingProxyType
from typing import Protocol, runtime_checkable

import numpy as np

from stratus.base.errors import DecisionError
from stratus.base.resources import Vec, fits
from stratus.pricing.catalog import InstanceType
from stratus.pricing.prices import ON_DEMAND
from stratus.sim.contracts import Quiets, Reports, Resets, Starts
from stratus.sim.decisions import Acquire, Decisions, Migrate, Place
from stratus.sim.model import Instance, Task
from stratus.sim.view import ClusterView


class Plan:
    """Decisions being built at one tick, with tentative free capacity per instance, and
    the cordons the scheduler keeps across ticks (the state parts share, as Kubernetes'
    CycleState and a node's unschedulable flag): a cordoned instance gets no new tasks
    (Stratus §3.4 blacklists an instance being cleared) until it is gone."""

    __slots__ = ("view", "decisions", "_free", "_aa", "cordoned", "_on_cordon")

    def __init__(self, view: ClusterView, cordoned: set[int] | None = None) -> None:
        self.view = view
        self.decisions = Decisions()
        self._free: dict[int, Vec] = {}
        # job -> instances a flagged task of it holds or this plan put one on (once it has)
        self._aa: dict[int, set[int]] = {}
        #: ids of the cordoned instances (the scheduler's set, kept across ticks; read it,
        #: change it through ``cordon``)
        self.cordoned: set[int] = set() if cordoned is None else cordoned
        self._on_cordon: list[Callable[[int], None]] = []

    def cordon(self, inst: Instance | int) -> None:
        """No new tasks on ``inst`` from now on, this tick included: every index a part
        built for this plan drops it (``on_cordon``)."""
        iid = inst if isinstance(inst, int) else inst.iid
        self.cordoned.add(iid)
        for drop in self._on_cordon:
            drop(iid)

    def is_cordoned(self, iid: int) -> bool:
        return iid in self.cordoned

    def on_cordon(self, drop: Callable[[int], None]) -> None:
        """Call ``drop(iid)`` when an instance is cordoned later in this plan (a packer's
        index for this tick registers its ``discard``)."""
        self._on_cordon.append(drop)

    def free(self, inst: Instance) -> Vec:
        """Free capacity of ``inst`` after what this plan already put on or took off it."""
        return self._free.get(inst.iid, inst.free)

    def touched(self) -> Iterable[int]:
        """Ids of the instances whose free capacity this plan has changed."""
        return self._free.keys()

    def changed_free(self) -> Mapping[int, Vec]:
        """Instance id -> free capacity, for the instances this plan has changed (an index
        built mid-plan reads it in one pass). Read-only."""
        return MappingProxyType(self._free)

    def fits(self, task: Task, inst: Instance) -> bool:
        """Room for ``task`` on ``inst``, and no anti-affinity conflict there."""
        if task.anti_affinity and inst.iid in self.avoid(task):
            return False
        return fits(task.req, self._free.get(inst.iid, inst.free))

    def avoid(self, task: Task) -> Collection[int]:
        """Ids of the live instances ``task`` may not go on by anti-affinity: where a
        flagged task of its job holds resources, or this plan put one. Empty unless
        ``task`` is flagged. Do not mutate."""
        if not task.anti_affinity:
            return ()
        mine = self._aa.get(task.job)
        return self.view.flagged_on(task.job) if mine is None else mine

    def _flag(self, task: Task, inst: Instance) -> None:
        mine = self._aa.get(task.job)
        if mine is None:  # the engine's set, copied once per job and tick, then grown
            mine = self._aa[task.job] = set(self.view.flagged_on(task.job))
        if inst.iid in mine:
            raise DecisionError(f"plan: anti-affinity: {task!r} would join another flagged "
                                f"task of job {task.job} on {inst!r}")
        mine.add(inst.iid)

    def _take(self, inst: Instance, req: Vec) -> Vec:
        free = self._free.get(inst.iid, inst.free)
        left = tuple(map(sub, free, req))
        if min(left) < 0:  # some request above what is free
            raise DecisionError(f"plan: {req} does not fit on {inst!r} (free {free})")
        self._free[inst.iid] = left
        return left

    def place(self, task: Task, inst: Instance) -> Vec:
        """Put a pending task on ``inst``; returns what is free there now."""
        if task.anti_affinity:
            self._flag(task, inst)
        left = self._take(inst, task.req)
        self.decisions.placements.append(Place(task, inst))
        return left

    def migrate(self, task: Task, dest: Instance) -> Vec:
        """Move a running task to ``dest``; returns what is free there now."""
        if task.anti_affinity:
            self._flag(task, dest)
        left = self._take(dest, task.req)
        self.decisions.migrations.append(Migrate(task, dest))
        return left

    def release(self, inst: Instance) -> None:
        """Release ``inst`` (idle: e.g. a kept node that has settled empty)."""
        self.decisions.releases.append(inst)

    def keep(self, inst: Instance, keep: bool = True) -> None:
        """Keep ``inst`` when it goes idle (``keep``), or release it as soon as its last
        task leaves (not ``keep``)."""
        self.decisions.keep[inst.iid] = keep

    def savings_headroom(self) -> float | None:
        """The savings plan's headroom (``ClusterView.savings_headroom``, $/h) less the
        discounted rate of this plan's on-demand acquisitions so far; None without a plan
        (stratus.commitments.savings)."""
        view = self.view
        sp = view.savings_plan
        if sp is None:
            return None
        h = view.savings_headroom()
        for acq in self.decisions.acquisitions:
            if acq.market == ON_DEMAND:
                h -= (1.0 - sp.discount) * view.price(acq.itype, ON_DEMAND)
        return h

    def acquire(self, itype: InstanceType, tasks: Sequence[Task] = (), market: str | None = None,
                migrate: Sequence[Task] = (), bid: float | None = None, keep: bool = False) -> Acquire:
        acq = Acquire(itype, market or self.view.market, list(tasks), list(migrate), bid, keep)
        if conflicts((*acq.tasks, *acq.migrate)):
            raise DecisionError(f"plan: anti-affinity: acquisition of {itype.name} lists two "
                                f"flagged tasks of one job")
        self.decisions.acquisitions.append(acq)
        return acq


def first_fit(plan: Plan, instances: Iterable[Instance], tasks: Sequence[Task]) -> list[Task]:
    """Each task (in order) on the first of ``instances`` it fits in ``plan``; the tasks
    left, in order. A request that fitted none is not tried again this call (placements only
    take room), except for a flagged task, whose fit depends on its job."""
    insts = list(instances)
    left: list[Task] = []
    failed: set = set()
    for task in tasks:
        if not insts or (task.req in failed and not task.anti_affinity):
            left.append(task)
            continue
        for inst in insts:
            if plan.fits(task, inst):
                plan.place(task, inst)
                break
        else:
            left.append(task)
            if not task.anti_affinity:
                failed.add(task.req)
    return left


#: from this many instances on, ``fill_reserved`` tests each task against all of them at
#: once (numpy) instead of a loop of ``Plan.fits``: the same answers as ``first_fit``
VECTOR_MIN = 32


def first_fit_vector(plan: Plan, instances: Iterable[Instance], tasks: Sequence[Task]) -> list[Task]:
    """``first_fit``'s answers, each task's oldest fitting instance found by one numpy test
    over every instance's tentative free capacity (kept here as the placements take it).
    A failure is remembered per request, and per (job, request) for a flagged task: room
    only shrinks and a job's avoided instances only grow during the call, so a task like
    one that fitted nowhere fits nowhere either. (A fleet of reserved instances, mostly
    full, made the per-task scans 70% of a real-window replay.)"""
    insts = list(instances)
    if not insts or not tasks:
        return list(tasks)
    changed = plan.changed_free()
    free = np.array([changed.get(i.iid, i.free) for i in insts], dtype=np.int64)
    cols = [free[:, d] for d in range(free.shape[1])]  # views: updates reach ``free``
    rows: dict[int, int] | None = None  # iid -> row, at the first flagged task
    masks: dict[int, np.ndarray] = {}  # job -> the rows its flagged tasks must avoid
    left: list[Task] = []
    failed: set = set()
    for task in tasks:
        req = task.req
        aa = task.anti_affinity
        if req in failed or (aa and (task.job, req) in failed):
            left.append(task)
            continue
        ok = cols[0] >= req[0]
        for col, r in zip(cols[1:], req[1:]):
            ok &= col >= r
        if aa:
            m = masks.get(task.job)
            if m is None:
                if rows is None:
                    rows = {inst.iid: k for k, inst in enumerate(insts)}
                m = masks[task.job] = np.zeros(len(insts), dtype=bool)
                for iid in plan.avoid(task):
                    k = rows.get(iid)
                    if k is not None:
                        m[k] = True
            ok &= ~m
        k = int(ok.argmax())
        if not ok[k]:
            failed.add((task.job, req) if aa else req)
            left.append(task)
            continue
        plan.place(task, insts[k])
        free[k] -= req
        if aa:
            m[k] = True
    return left


def fill_reserved(plan: Plan, reserved: Iterable[Instance], tasks: Sequence[Task]) -> list[Task]:
    """First fit of ``tasks`` onto the reserved instances (oldest first, none cordoned):
    prepaid capacity costs nothing more to use, so every composition fills it before its
    own parts run (docs/decisions.md, "Reserved instances"). Returns the tasks left."""
    cordoned = plan.cordoned
    insts = [i for i in reserved if i.iid not in cordoned]
    fit = first_fit_vector if len(insts) >= VECTOR_MIN else first_fit
    return fit(plan, insts, tasks)


def conflicts(tasks: Iterable[Task]) -> bool:
    """Whether ``tasks`` hold two flagged tasks of one job (they may not share an instance)."""
    seen: set[int] = set()
    for t in tasks:
        if t.anti_affinity:
            if t.job in seen:
                return True
            seen.add(t.job)
    return False


class Scheduler(Protocol):
    """What the engine replays: ``schedule(view)`` once per scheduling tick. Optional
    hooks, called when present:

    * ``reset()``: at the start of every replay, before any other call. Forget everything
      from an earlier replay (counters, caches, indexes keyed by instance id, cursors), so
      that one object replays the same trace twice alike. Parts with such state implement
      it too (``Resets``); ``ComposedScheduler`` forwards it. It is the one sign of a new
      replay: no part compares views to find out.
    * ``start(view)``: then, with the new replay's view, before the first tick.
    * ``stats()``: at the end, a dict merged into the replay's summary.
    """

    name: str

    def schedule(self, view: ClusterView) -> Decisions:
        """This tick's decisions."""


class Packer(Protocol):
    """One extension point of a composed scheduler. Its parameters are declared in
    ``PARAMS`` (``stratus.policy.params.Declares``; a plug-in that declares none has those its
    signature shows). Optional hooks, each a protocol of its own below: ``Resets``,
    ``Starts``, ``Reports``; a migrator may add ``Quiets``."""

    name: str

    def pack(self, view: ClusterView, plan: Plan, tasks: Sequence[Task]) -> list[Task]:
        """Place what fits on live instances; return the tasks left unplaced."""


class TickIndex(Protocol):
    """What a packer's per-tick index offers the parts that re-pack with it (instance
    clearing, §3.4): entries hold an instance (``e.inst``) and its tentative free
    capacity; ``take`` and ``restore`` keep a trial re-pack undoable."""

    def choose(self, req: Sequence[int], rem: float, ready_only: bool = False,
               exclude: int = -1, avoid: Collection[int] = ()):
        """The packer's pick for a task of request ``req`` and (estimated) remaining
        runtime ``rem``, or None."""

    def take(self, e, req: Sequence[int], rem: float) -> None:
        """Tentatively place ``req`` on entry ``e``."""

    def snapshot(self, e):
        """What ``restore`` needs to undo the next ``take`` on ``e``."""

    def restore(self, e, snap) -> None:
        ...

    def discard(self, iid: int) -> None:
        """Drop instance ``iid`` from the index (for the rest of the tick)."""


class IndexedPacker(Packer, Protocol):
    """A packer whose per-tick index other parts may re-pack with (runtime binning,
    dot product); built once per plan, it drops what the plan cordons."""

    def index(self, view: ClusterView, plan: Plan) -> TickIndex:
        """The index of ``view`` as ``plan`` has changed it so far."""


class Scaler(Protocol):
    """Parameters and optional hooks as a ``Packer``'s."""

    name: str

    def scale(self, view: ClusterView, plan: Plan, tasks: Sequence[Task]) -> None:
        """Acquire instances for ``tasks`` (each must end up placed or acquired for)."""


class Migrator(Protocol):
    """Parameters and optional hooks as a ``Packer``'s, and ``Quiets``."""

    name: str

    def migrate(self, view: ClusterView, plan: Plan) -> None:
        """Move running tasks (e.g. to clear under-used instances)."""


# --- optional hooks: one small protocol each (as the Kubernetes scheduling framework's
# extension points; Resets, Starts, Reports, Quiets are the core's: stratus.sim.contracts);
# a part implements those it needs, and is asked through them only

@runtime_checkable
class Composite(Protocol):
    """A part made of parts (``scalers.chain.MigratorChain``): each is listed on its own
    (parameters, statistics)."""

    parts: tuple


@runtime_checkable
class Keyed(Protocol):
    """A part whose parameters and statistics go under its own ``key`` (e.g.
    ``clearing``) instead of its role."""

    key: str


class Part:
    """A packer's, scaler's or migrator's optional hooks, as no-ops: ``reset()`` (a new
    replay: forget ids, counts, caches), ``start(view)`` (before the first tick) and
    ``stats()`` (merged into the summary). A part may derive from it; one that does not,
    or lacks a hook, gets these no-ops when it is composed."""

    def reset(self) -> None:
        pass

    def start(self, view: ClusterView) -> None:
        pass

    def stats(self) -> dict:
        return {}


_NO_OPS = Part()


def part_hooks(part) -> tuple:
    """``part``'s (reset, start, stats), its own or Part's no-ops: looked up once."""
    return (part.reset if isinstance(part, Resets) else _NO_OPS.reset,
            part.start if isinstance(part, Starts) else _NO_OPS.start,
            part.stats if isinstance(part, Reports) else _NO_OPS.stats)


def flat_stats(by_part: Mapping[str, Mapping]) -> dict:
    """The parts' statistics (``{part key: {name: value}}``) as one flat dict, as the
    summary shows them: a name one part reports keeps its name; a name several report
    goes under each one's key (``clearing.tasks_migrated``, ``migrator.tasks_migrated``),
    so that no part's count overwrites another's."""
    count: dict[str, int] = {}
    for stats in by_part.values():
        for name in stats:
            count[name] = count.get(name, 0) + 1
    out: dict = {}
    for key, stats in by_part.items():
        for name, v in stats.items():
            out[name if count[name] == 1 else f"{key}.{name}"] = v
    return out


def part_list(role: str, part) -> list[tuple[str, object]]:
    """(key, part) for ``part`` (of ``role``), or for each of its parts if it has some."""
    if part is None:
        return []
    parts = part.parts if isinstance(part, Composite) else (part,)
    return [(p.key if isinstance(p, Keyed) else role, p) for p in parts]


class ComposedScheduler:
    """A ``Scheduler``: packer -> scaler -> migrator, once per tick. It keeps the
    cordoned instances (``Plan.cordon``) across ticks, and drops those that are gone."""

    def __init__(self, name: str, scaler: Scaler, packer: Packer | None = None,
                 migrator: Migrator | None = None, description: str = "") -> None:
        self.name = name
        self.packer = packer
        self.scaler = scaler
        self.migrator = migrator
        self.description = description
        self.cordoned: set[int] = set()

    @property
    def _hooks(self) -> list[tuple]:
        return [part_hooks(p) for p in (self.packer, self.scaler, self.migrator) if p is not None]

    def reset(self) -> None:
        """Forward to the parts (each resets its own state only); no cordons."""
        self.cordoned.clear()
        for reset, _, _ in self._hooks:
            reset()

    def start(self, view: ClusterView) -> None:
        if not view.reserved_shared:  # a waiting policy's own pool: never ours to use
            self.cordoned.update(i.iid for i in view.reserved_instances)
        for _, start, _ in self._hooks:
            start(view)

    def schedule(self, view: ClusterView) -> Decisions:
        cordoned = self.cordoned
        if cordoned:  # instances that are gone: their ids never come back in a replay
            alive = view.instance
            for iid in list(cordoned):
                try:
                    alive(iid)
                except KeyError:
                    cordoned.discard(iid)
        plan = Plan(view, cordoned)
        pending = view.pending
        if pending:
            reserved = view.reserved_instances
            if reserved and view.reserved_shared:  # prepaid capacity first (stratus.commitments.reserved)
                pending = fill_reserved(plan, reserved, pending)
        if pending:
            left = self.packer.pack(view, plan, pending) if self.packer else list(pending)
            if left:
                self.scaler.scale(view, plan, left)
        if self.migrator is not None:
            self.migrator.migrate(view, plan)
        return plan.decisions

    def part_stats(self) -> dict[str, dict]:
        """Each part's statistics under its key (``parts``)."""
        return {key: part_hooks(p)[2]() for key, p in self.parts().items()}

    def stats(self) -> dict:
        """The parts' statistics, flat (``flat_stats``): merged into the summary."""
        return flat_stats(self.part_stats())

    def quiet(self, view: ClusterView) -> tuple[float, bool]:
        """(until, prices): with nothing pending, this scheduler's ticks decide nothing
        before ``until`` unless an event comes first (an arrival, a finish, a revocation,
        an instance up, ...; a price change too if ``prices``). ``math.inf``: until such an
        event. The engine asks after a tick that decided nothing and skips to the tick at
        or after the earliest. The packer and the scaler act on pending tasks only (no
        price change alone gives them any); a migrator says it itself (``quiet(view)``,
        asked after its ``migrate`` this tick); one that does not is asked every tick."""
        if self.migrator is None:
            return math.inf, False
        m = self.migrator
        return m.quiet(view) if isinstance(m, Quiets) else (-math.inf, True)

    def parts(self) -> dict[str, object]:
        """The parts by the key their parameters go under: a part's own ``key`` (e.g.
        ``clearing``), else its role (packer, scaler, migrator); a chain's parts each."""
        out: dict[str, object] = {}
        for role, part in (("packer", self.packer), ("scaler", self.scaler),
                           ("migrator", self.migrator)):
            for key, p in part_list(role, part):
                while key in out:  # two parts of one role: migrator, migrator2
                    key = f"{key}{sum(k.startswith(key) for k in out) + 1}"
                out[key] = p
        return out

    def get_params(self) -> dict:
        """Every part's parameters as ``KEY.NAME``: value (sklearn's get_params)."""
        from stratus.policy.params import part_params

        return {f"{k}.{n}": v for k, p in self.parts().items()
                for n, v in part_params(p).items()}

    def set_params(self, **params) -> ComposedScheduler:
        """Set ``KEY.NAME`` parameters (values as text or typed), each checked first."""
        from stratus.base.errors import ConfigError
        from stratus.policy.params import set_part_params

        parts = self.parts()
        by_part: dict[str, dict] = {}
        for full, v in params.items():
            key, dot, name = full.partition(".")
            if not dot or key not in parts:
                raise ConfigError(f"{self.name}: no parameter {full!r} (known: "
                                  f"{', '.join(sorted(self.get_params())) or 'none'})")
            by_part.setdefault(key, {})[name] = v
        for key, ps in by_part.items():
            set_part_params(parts[key], f"{self.name}: {key}", ps)
        return self
