"""Decision application: a policy's ``Decisions`` checked against the task book and the
cloud, then carried out through an ``Actuator`` (the engine in a replay). A decision that
cannot be carried out raises a DecisionError naming the policy, the time and what is
wrong; nothing of a bad decision is applied after the check that refuses it.

The provider may refuse an acquisition (insufficient capacity, stratus.sim.faults): the
actuator's ``acquire`` then returns None at once, as EC2 answers a launch request. Its tasks
stay pending, in their place in the queue, and its migrations are void. They come back to
the policy at its next tick, never within this one: the policy is asked once per tick, so
a policy that keeps asking for a short type cannot spin at one instant."""

from __future__ import annotations

from typing import Protocol

from stratus.base.errors import DecisionError
from stratus.pricing.catalog import InstanceType
from stratus.sim.cloud import Cloud
from stratus.sim.contracts import name_of
from stratus.sim.decisions import Decisions
from stratus.sim.model import PENDING, READY, RUNNING, TASK_STATES, WAITING, Instance, Task
from stratus.sim.taskbook import TaskBook


class Actuator(Protocol):
    """What applying decisions needs done: the engine's task and instance transitions."""

    def acquire(self, itype: InstanceType, market: str, bid: float | None, keep: bool,
                t: float) -> Instance | None: ...

    def refused(self, tasks: int, migrations: int) -> None: ...

    def hold(self, inst: Instance, task: Task, t: float) -> None: ...

    def start(self, task: Task, t: float) -> None: ...

    def begin_transfer(self, task: Task, t: float) -> None: ...

    def release(self, inst: Instance, t: float) -> None: ...

    def maybe_release(self, inst: Instance, t: float) -> None: ...


class DecisionApplier:
    """Checks and applies one policy's decisions. ``clock`` has ``now``; ``policy`` is
    named in errors."""

    def __init__(self, book: TaskBook, cloud: Cloud, act: Actuator, clock, policy) -> None:
        self.book = book
        self.cloud = cloud
        self.act = act
        self.clock = clock
        self.policy = policy
        # market -> why the scheduler may not use it (an add-on's, stratus.sim.hooks)
        self.cordoned: dict[str, str] = {}
        # market -> why its instances run to the end: never released, keep ignored
        self.pinned: dict[str, str] = {}

    def cordon(self, market: str, why: str) -> None:
        """The scheduler may no longer place or move tasks onto ``market``'s instances;
        ``why`` completes the refusal (after the instance)."""
        self.cordoned[market] = why

    def pin(self, market: str, why: str) -> None:
        """``market``'s instances run to the end: a policy may not release them, and its
        keep flags for them are ignored; ``why`` completes the refusal."""
        self.pinned[market] = why

    def bad(self, what: str) -> DecisionError:
        name = name_of(self.policy)
        return DecisionError(f"scheduler {name!r} at t={self.clock.now:.3f}s: {what}")

    def check_live(self, inst: Instance) -> None:
        if self.cloud.alive.get(getattr(inst, "iid", -1)) is not inst:
            raise self.bad(f"instance {inst!r} is not live")

    def check_fits(self, inst: Instance, task: Task) -> None:
        if self.cordoned:
            why = self.cordoned.get(inst.market)
            if why is not None:
                raise self.bad(f"{inst!r} {why}")
        for r, f in zip(task.req, inst.free):
            if r > f:
                raise self.bad(f"{task!r} does not fit on {inst!r} (free {inst.free})")
        if task.anti_affinity and inst.iid in self.book.aa_where.get(task.job, ()):
            raise self.bad(f"anti-affinity: {task!r} would join another flagged task of "
                           f"job {task.job} on {inst!r}")

    def claim_pending(self, task: Task) -> None:
        book = self.book
        if not book.known(task):
            raise self.bad(f"{task!r} is not a task of this replay")
        if book.state[task.tid] != PENDING:
            raise self.bad(f"{task!r} is not pending (state {TASK_STATES[book.state[task.tid]]})")
        book.state[task.tid] = WAITING

    def check_migratable(self, task: Task, dest: Instance | None) -> None:
        book, tid = self.book, task.tid
        if not book.known(task) or book.state[tid] != RUNNING or tid in book.mig_dest:
            raise self.bad(f"{task!r} cannot migrate: it is not running or already migrating")
        if book.loc[tid] is dest:
            raise self.bad(f"{task!r} is already on {dest!r}")

    def check_acquisition(self, acq) -> None:
        itype, cloud = acq.itype, self.cloud
        if itype.name not in cloud.catalog or cloud.catalog[itype.name] != itype:
            raise self.bad(f"instance type {itype.name!r} is not in the replay's catalog")
        if acq.market not in cloud.markets:
            raise self.bad(f"market {acq.market!r} is not allowed (allowed: {cloud.markets})")
        if not acq.tasks and not acq.migrate and not acq.keep:
            raise self.bad(f"acquisition of {itype.name} with no tasks")
        total = [0] * len(itype.capacity)
        flagged: set[int] | None = None
        for task in (*acq.tasks, *acq.migrate):
            for d, r in enumerate(task.req):
                total[d] += r
            if task.anti_affinity:
                flagged = flagged if flagged is not None else set()
                if task.job in flagged:
                    raise self.bad(f"anti-affinity: acquisition of {itype.name} lists two "
                                   f"flagged tasks of job {task.job}")
                flagged.add(task.job)
        if any(x > c for x, c in zip(total, itype.capacity)):
            raise self.bad(f"tasks of {tuple(total)} do not fit a {itype.name} {itype.capacity}")

    def apply(self, dec: Decisions) -> None:
        """Acquisitions, placements, migrations, releases, then keep flags, in that order."""
        t = self.clock.now
        book, act = self.book, self.act
        claimed = False
        # tasks of refused acquisitions: claimed (so that no later decision of this batch
        # may take them) until the batch is applied, then pending again
        refused: list[Task] = []
        refused_moves: set[int] = set()
        for acq in dec.acquisitions:
            self.check_acquisition(acq)
            for task in acq.tasks:
                self.claim_pending(task)
            if len({t.tid for t in acq.migrate}) != len(acq.migrate):
                raise self.bad(f"acquisition of {acq.itype.name} lists a task to migrate twice")
            for task in acq.migrate:
                self.check_migratable(task, None)
                if task.tid in refused_moves:
                    raise self.bad(f"{task!r} cannot migrate: it is already migrating")
            inst = act.acquire(acq.itype, acq.market, acq.bid, acq.keep, t)
            if inst is None:  # refused: insufficient capacity (stratus.sim.faults)
                refused.extend(acq.tasks)
                refused_moves.update(task.tid for task in acq.migrate)
                act.refused(len(acq.tasks), len(acq.migrate))
                continue
            for task in acq.tasks:
                book.loc[task.tid] = inst
                act.hold(inst, task, t)
                claimed = True
            for task in acq.migrate:
                book.mig_dest[task.tid] = inst
                act.hold(inst, task, t)
        for pl in dec.placements:
            task, inst = pl.task, pl.instance
            self.check_live(inst)
            self.claim_pending(task)
            self.check_fits(inst, task)
            book.loc[task.tid] = inst
            act.hold(inst, task, t)
            claimed = True
            if inst.state == READY:
                act.start(task, t)
        for mg in dec.migrations:
            task, dest = mg.task, mg.dest
            self.check_live(dest)
            self.check_migratable(task, dest)
            if task.tid in refused_moves:
                raise self.bad(f"{task!r} cannot migrate: it is already migrating")
            self.check_fits(dest, task)
            book.mig_dest[task.tid] = dest
            act.hold(dest, task, t)
            if dest.state == READY:
                act.begin_transfer(task, t)
        for inst in dec.releases:
            self.check_live(inst)
            if inst.market in self.pinned:
                raise self.bad(f"cannot release {inst!r}: {self.pinned[inst.market]}")
            if inst.tasks:
                raise self.bad(f"cannot release {inst!r}: it still holds tasks")
            act.release(inst, t)
        for iid, keep in dec.keep.items():
            inst = self.cloud.alive.get(iid)
            if inst is None:
                raise self.bad(f"keep: instance {iid} is not live")
            if inst.market in self.pinned:
                continue  # kept to the end whatever a policy says
            inst.keep = bool(keep)
            inst.was_kept |= inst.keep
            act.maybe_release(inst, t)
        for task in refused:
            book.state[task.tid] = PENDING
        if claimed:
            book.pending = [p for p in book.pending if book.state[p.tid] == PENDING]


__all__ = ["Actuator", "DecisionApplier"]
