"""Schedulers composed of parts: a packer places pending tasks on live instances, a
scaler acquires instances for what is left, a migrator moves running tasks. Parts write
into a ``Plan``, which tracks the capacity they have already promised this tick, and the
anti-affinity rule: no two flagged tasks of one job on one instance (docs/decisions.md)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from operator import sub
from typing import Protocol

from pricing.catalog import InstanceType
from stratus.decisions import Acquire, Decisions, Migrate, Place
from stratus.errors import DecisionError
from stratus.model import Instance, Task
from stratus.resources import Vec, fits
from stratus.view import ClusterView


class Plan:
    """Decisions being built at one tick, with tentative free capacity per instance."""

    __slots__ = ("view", "decisions", "_free", "_aa")

    def __init__(self, view: ClusterView) -> None:
        self.view = view
        self.decisions = Decisions()
        self._free: dict[int, Vec] = {}
        # job -> instances a flagged task of it holds or this plan put one on (once it has)
        self._aa: dict[int, set[int]] = {}

    def free(self, inst: Instance) -> Vec:
        """Free capacity of ``inst`` after what this plan already put on or took off it."""
        return self._free.get(inst.iid, inst.free)

    def touched(self) -> Iterable[int]:
        """Ids of the instances whose free capacity this plan has changed."""
        return self._free.keys()

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

    def acquire(self, itype: InstanceType, tasks: Sequence[Task] = (), market: str | None = None,
                migrate: Sequence[Task] = (), bid: float | None = None, keep: bool = False) -> Acquire:
        acq = Acquire(itype, market or self.view.market, list(tasks), list(migrate), bid, keep)
        if conflicts((*acq.tasks, *acq.migrate)):
            raise DecisionError(f"plan: anti-affinity: acquisition of {itype.name} lists two "
                                f"flagged tasks of one job")
        self.decisions.acquisitions.append(acq)
        return acq


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
      it too; ``ComposedScheduler`` forwards it.
    * ``start(view)``: then, with the new replay's view, before the first tick.
    * ``stats()``: at the end, a dict merged into the replay's summary.
    """

    name: str

    def schedule(self, view: ClusterView) -> Decisions:
        """This tick's decisions."""


class Packer(Protocol):
    """Optional hooks as a ``Scheduler``'s: ``reset()``, ``start(view)``, ``stats()``."""

    name: str

    def pack(self, view: ClusterView, plan: Plan, tasks: Sequence[Task]) -> list[Task]:
        """Place what fits on live instances; return the tasks left unplaced."""


class Scaler(Protocol):
    """Optional hooks as a ``Scheduler``'s: ``reset()``, ``start(view)``, ``stats()``."""

    name: str

    def scale(self, view: ClusterView, plan: Plan, tasks: Sequence[Task]) -> None:
        """Acquire instances for ``tasks`` (each must end up placed or acquired for)."""


class Migrator(Protocol):
    """Optional hooks as a ``Scheduler``'s: ``reset()``, ``start(view)``, ``stats()``."""

    name: str

    def migrate(self, view: ClusterView, plan: Plan) -> None:
        """Move running tasks (e.g. to clear under-used instances)."""


class ComposedScheduler:
    """A ``Scheduler``: packer -> scaler -> migrator, once per tick."""

    def __init__(self, name: str, scaler: Scaler, packer: Packer | None = None,
                 migrator: Migrator | None = None, description: str = "") -> None:
        self.name = name
        self.packer = packer
        self.scaler = scaler
        self.migrator = migrator
        self.description = description

    def reset(self) -> None:
        """Forward to the parts (each resets its own state only: the packer a migrator
        blacklists through is reset here, as the packer)."""
        for part in (self.packer, self.scaler, self.migrator):
            if part is not None and hasattr(part, "reset"):
                part.reset()

    def start(self, view: ClusterView) -> None:
        for part in (self.packer, self.scaler, self.migrator):
            if part is not None and hasattr(part, "start"):
                part.start(view)

    def schedule(self, view: ClusterView) -> Decisions:
        plan = Plan(view)
        pending = view.pending
        if pending:
            left = self.packer.pack(view, plan, pending) if self.packer else list(pending)
            if left:
                self.scaler.scale(view, plan, left)
        if self.migrator is not None:
            self.migrator.migrate(view, plan)
        return plan.decisions

    def stats(self) -> dict:
        out: dict = {}
        for part in (self.packer, self.scaler, self.migrator):
            if part is not None and hasattr(part, "stats"):
                out.update(part.stats())
        return out

    def parts(self) -> dict[str, object]:
        """The parts by the key their parameters go under: a part's own ``key`` (e.g.
        ``clearing``), else its role (packer, scaler, migrator); a chain's parts each."""
        out: dict[str, object] = {}
        for role, part in (("packer", self.packer), ("scaler", self.scaler),
                           ("migrator", self.migrator)):
            for p in getattr(part, "parts", None) or ((part,) if part is not None else ()):
                key = getattr(p, "key", None) or role
                while key in out:  # two parts of one role: migrator, migrator2
                    key = f"{key}{sum(k.startswith(key) for k in out) + 1}"
                out[key] = p
        return out

    def get_params(self) -> dict:
        """Every part's parameters as ``KEY.NAME``: value (sklearn's get_params)."""
        from stratus.params import part_params

        return {f"{k}.{n}": v for k, p in self.parts().items()
                for n, v in part_params(p).items()}

    def set_params(self, **params) -> ComposedScheduler:
        """Set ``KEY.NAME`` parameters (values as text or typed), each checked first."""
        from stratus.errors import ConfigError
        from stratus.params import set_part_params

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
