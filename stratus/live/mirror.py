"""The live loop's state: the engine core (stratus.sim.core.Core) that a replay runs, held by
the mirror and fed by what the loop observes instead of by an event heap.

In a replay the engine predicts when a task finishes, an instance comes up or a transfer
ends, and its kernel delivers those events. Live, the world says when they happen: the
core's kernel is a clock that drops what the core schedules, and the loop
(stratus.live.loop) has the mirror call the core's transitions (``finish``, ``ready``,
``migrated``, ``revoke``, ``crash``) at the times it observes. The configuration is
resolved as a replay's (``stratus.sim.config.resolve``). The view a
policy sees (stratus.sim.view.ClusterView) and the checks its decisions go through
(stratus.sim.apply.DecisionApplier) are the engine's, unchanged.

What must reach the world is sent through ``world`` (the loop), by the mirror's add-on
(``WorldLink``, at the core's hooks) and its cloud (``LiveCloud``): a pod bound to a node,
a task moved (delete and re-create with a checkpoint), a task sent back to the queue, an
instance launched or terminated. Without a world (shadow mode) nothing is sent.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol

import numpy as np

from stratus.base.errors import ConfigError
from stratus.pricing.catalog import InstanceType
from stratus.pricing.prices import SPOT
from stratus.sim.cloud import Cloud
from stratus.sim.config import ReplayConfig, resolve
from stratus.sim.core import Core
from stratus.sim.estimate import Estimator
from stratus.sim.hooks import AddOn
from stratus.sim.model import PENDING, READY, RUNNING, WAITING, Instance, Task
from stratus.sim.taskbook import TaskBook


class Shortage(Exception):
    """The provider refused a launch for insufficient capacity (EC2's
    InsufficientInstanceCapacity)."""


class Unavailable(Exception):
    """An API call failed after its retries (throttling, 5xx, a connection): the loop
    skips what needed it and tries again later."""


class Refused(Unavailable):
    """The API refused a call for good (a 4xx other than throttling: permission, a bad
    request, a conflict not meant): trying again will not help; the loop says so and
    drops it."""


class World(Protocol):
    """What the mirror asks of the world (the loop and its backends)."""

    def launch(self, iid: int, itype: InstanceType, market: str, bid: float | None,
               keep: bool) -> None: ...

    def bind(self, tid: int, inst: Instance) -> None: ...

    def move(self, tid: int, dest: Instance, checkpoint_s: float) -> None: ...

    def requeue(self, tid: int) -> None: ...

    def terminate(self, inst: Instance) -> None: ...


class AnnotationEstimator(Estimator):
    """A task's runtime estimate is the one its pod carries (``user_estimate``, from the
    annotation ``stratus.io/estimate-s``); ``default_s`` for a pod without one."""

    def __init__(self, default_s: float = 3600.0) -> None:
        if not (default_s > 0 and math.isfinite(default_s)):
            raise ConfigError(f"the default runtime estimate must be a positive number of "
                              f"seconds, got {default_s!r}")
        self.default_s = default_s

    def predict(self, tasks: Sequence[Task]) -> list[float]:
        d = self.default_s
        return [d if t.user_estimate is None else t.user_estimate for t in tasks]


class _Clockwork:
    """The mirror's kernel: the time, set by the loop. What the engine schedules (a
    finish, a ready instance, a transfer's end) is dropped: the world tells when."""

    __slots__ = ("now",)

    def __init__(self, now: float) -> None:
        self.now = now

    def schedule(self, t: float, kind: int, a=None, b=None) -> None:
        pass

    def stop(self) -> None:
        pass


class _Ids:
    """Instance ids in order; the next one can be read before it is taken (a launch is
    tagged with the id its instance will have)."""

    def __init__(self, start: int = 0) -> None:
        self.next = start

    def __iter__(self):
        return self

    def __next__(self) -> int:
        n = self.next
        self.next += 1
        return n


class LiveWorkload:
    """``stratus.sim.taskbook.Workload`` for tasks that are not known ahead: they are added as
    their pods appear. A runtime is unknown (NaN) until the task ends."""

    def __init__(self) -> None:
        self.n = 0
        self.runtime: list[float] = []
        self.job_of: list[int] = []
        self.job_tasks = np.zeros(0, dtype=np.int64)
        self.job_index: dict[int, int] = {}
        self.sized: list[bool] = []  # per job: its size was given (else counted on arrival)


class LiveCloud(Cloud):
    """The engine's cloud, whose launches go to the world. A launch refused for
    insufficient capacity starts a shortage of the type for ``ice_window_s`` (as the
    engine's ICE model, stratus.sim.faults); a launch that failed otherwise leaves its tasks
    pending, with no shortage."""

    def __init__(self, mirror: Mirror, *args, ice_window_s: float) -> None:
        super().__init__(*args)
        self.mirror = mirror
        self._iid = _Ids()
        self.ice_window_s = ice_window_s
        self.launch_failures = 0

    def request(self, itype: InstanceType, market: str, bid: float | None, keep: bool,
                t: float) -> Instance | None:
        if self.known_unavailable.get(itype.name, -math.inf) > t:
            self.refused(itype.name, market, t)  # a known shortage: no call
            return None
        if market == SPOT and bid is None:
            bid = self.default_bid(itype)
        world = self.mirror.world
        if world is not None:
            try:
                world.launch(self._iid.next, itype, market, bid, keep)
            except Shortage:
                self.shortage(itype.name, t, self.ice_window_s)
                self.refused(itype.name, market, t)
                return None
            except Unavailable:
                self.launch_failures += 1
                return None
        return super().request(itype, market, bid, keep, t)

    def adopt(self, itype: InstanceType, market: str, bid: float | None, keep: bool,
              t: float) -> Instance:
        """An instance that exists already: in the cloud with no launch."""
        return super().request(itype, market, bid, keep, t)

    @property
    def next_iid(self) -> int:
        """The id the next instance will have."""
        return self._iid.next

    def number_from(self, iid: int) -> None:
        """The next instance's id is ``iid`` (after a restart: past every id seen)."""
        self._iid.next = iid

    def refresh_prices(self, t: float) -> None:
        """Prices now, from the price book (live, prices are read at each tick)."""
        for key in list(self.current_price):
            self.current_price[key] = self.prices.price(key[0], key[1], t)


class WorldLink(AddOn):
    """The mirror's add-on (stratus.sim.hooks): what the core does that must reach the world.
    A placement binds a pod, a transfer moves one, a task sent back is re-queued, a
    released instance is terminated; nothing while ``muted`` (the world did it already),
    nor without a world (shadow mode)."""

    def __init__(self, world: World | None) -> None:
        self.world = world
        self.muted = False
        self.book: TaskBook | None = None

    def attach(self, core) -> None:
        self.book = core.book

    def held(self, inst: Instance, task: Task, t: float) -> None:
        if self.world is not None and not self.muted and self.book.loc[task.tid] is inst:
            self.world.bind(task.tid, inst)  # a placement (not a migration's destination)

    def moving(self, task: Task, t: float) -> None:
        if self.world is not None:
            tid = task.tid
            self.world.move(tid, self.book.mig_dest[tid], self.book.done[tid])

    def sent_back(self, task: Task) -> None:
        if self.world is not None and not self.muted:
            self.world.requeue(task.tid)

    def released(self, inst: Instance, t: float) -> None:
        if self.world is not None:
            self.world.terminate(inst)


class Mirror:
    """The engine core's state of a live cluster at the loop's clock (it holds a
    ``stratus.sim.core.Core``). Built empty (no trace); tasks are added as pods appear
    (``add_task``), instances as they are launched or adopted (``adopt``)."""

    def __init__(self, scheduler, cfg: ReplayConfig, t0: float, world: World | None = None,
                 ice_window_s: float = 300.0) -> None:
        cfg.validate()
        if cfg.reserved or cfg.waiting is not None or cfg.savings_plan is not None:
            raise ConfigError("the live loop does not take reserved instances, waiting "
                              "policies or savings plans yet")
        if cfg.faults is not None:
            raise ConfigError("the live loop takes its faults from the real world, not from "
                              "a fault model (--faults)")
        # no crash model: the crash-loop guard's arithmetic needs one (Core._lose); no
        # audit logs (record). A learning estimator is the loop's own, carried from one
        # mirror to the next (a restart, a shadow look): not copied.
        cfg = resolve(replace(cfg, max_restarts=2**62, record=False),
                      default_estimator=AnnotationEstimator, copy_learner=False)
        self.world = world
        self.link = WorldLink(world)
        self.work = LiveWorkload()
        kernel = _Clockwork(t0)
        self.cloud = LiveCloud(self, kernel, cfg.catalog, cfg.prices, cfg.markets,
                               cfg.spinup_s, cfg.seed, None, False, ice_window_s=ice_window_s)
        self.core = Core(cfg, kernel, self.work, self.cloud, scheduler, (self.link,))
        self.cloud.open_prices(t0)
        self.ticks = 0  # the loop's ticks
        self.vanished = 0  # tasks whose pods went away while the mirror had them

    # --- the core's parts, read ----------------------------------------------------------
    @property
    def cfg(self) -> ReplayConfig:
        return self.core.cfg  # resolved (prices, catalog, estimator)

    @property
    def book(self) -> TaskBook:
        return self.core.book

    @property
    def acct(self):
        return self.core.acct

    @property
    def estimator(self) -> Estimator:
        return self.core.estimator

    def decide(self):
        """One decision of the policy now (``Core.decide``)."""
        return self.core.decide()

    def watch_decisions(self, fn) -> None:
        self.core.watch_decisions(fn)

    def maybe_release(self, inst: Instance, t: float) -> None:
        self.core.maybe_release(inst, t)

    # --- growth ------------------------------------------------------------------------
    def add_task(self, job: int, index: int, submit: float, req: tuple[int, ...],
                 user: str = "", job_name: str = "", priority: int = 0,
                 estimate: float | None = None, anti_affinity: bool = False,
                 job_size: int | None = None) -> Task:
        """A new task (a pod that appeared), with the next id; not yet pending.
        ``job_size``: the job's number of tasks, when its pods say it; else a job ends
        when the tasks of it seen so far have (what a learning estimator learns from)."""
        work, book = self.work, self.book
        tid = work.n
        task = Task(tid, job, index, submit, math.nan, req, user, job_name, priority,
                    estimate, anti_affinity)
        work.n += 1
        work.runtime.append(math.nan)
        j = work.job_index.get(job)
        if j is None:
            j = work.job_index[job] = book.add_job(job_size or 0)
            work.sized.append(job_size is not None)
        work.job_of.append(j)
        book.add(task, j, count_in=not work.sized[j])
        return task

    def arrive(self, tasks: list[Task]) -> None:
        """Tasks join the pending queue now, in order, with their estimates."""
        self.book.enqueue(tasks, self.estimator.predict(tasks))

    def adopt(self, itype: InstanceType, market: str, bid: float | None, keep: bool,
              requested_at: float, ready_at: float | None) -> Instance:
        """An instance that exists already (a restart, or shadow mode): in the mirror
        with no launch, up from ``ready_at`` (None: still coming up)."""
        inst = self.cloud.adopt(itype, market, bid, keep, requested_at)
        if ready_at is not None:
            self.cloud.ready(inst, ready_at)
        return inst

    def place(self, task: Task, inst: Instance, started: float | None, progress_s: float,
              t: float) -> None:
        """An adopted task on an adopted instance: running since ``started`` with
        ``progress_s`` seconds done before (its checkpoint), or waiting for the instance."""
        self.link.muted = True  # its pod is bound already: nothing to bind
        try:
            self.core.adopt(task, inst, progress_s, t)
        finally:
            self.link.muted = False
        if started is not None and inst.state == READY:
            self.core.start(task, started)

    # --- what the world did, at the time it did it ----------------------------------------
    def at(self, t: float) -> None:
        self.core.kernel.now = t

    def finished(self, tid: int, t: float) -> None:
        """The task's pod ended at ``t`` (succeeded, failed, or went away)."""
        book = self.book
        self.at(t)
        if book.state[tid] == PENDING:  # a queued pod went away
            book.withdraw(book.tasks[tid], t)
            return
        self.core.ended(tid, t)

    def unplace(self, tid: int, t: float) -> None:
        """A placement the world refused (its binding): the task is pending again, on no
        instance, and its instance is released if that left it empty."""
        book, core = self.book, self.core
        self.at(t)
        inst, task = book.loc[tid], book.tasks[tid]
        if inst is None or book.state[tid] not in (WAITING, RUNNING) or tid in book.mig_dest:
            return
        if book.state[tid] == RUNNING:
            core.stop_progress(tid, t)
        core.unhold(inst, task, t)
        self.link.muted = True  # its pod is pending already: nothing to re-create
        try:
            core.send_back(task)
        finally:
            self.link.muted = False
        core.maybe_release(inst, t)

    def migrated(self, tid: int, t: float) -> None:
        self.at(t)
        self.core.migrated(tid, self.book.epoch[tid], t)

    def ready(self, inst: Instance, t: float) -> None:
        self.at(t)
        self.core.ready(inst, None, t)

    def revoked(self, inst: Instance, t: float) -> None:
        self.at(t)
        self.core.revoke(inst, None, t)

    def crashed(self, inst: Instance, t: float) -> None:
        self.at(t)
        self.core.crash(inst.iid, None, t)


__all__ = ["AnnotationEstimator", "LiveCloud", "LiveWorkload", "Mirror", "Refused",
           "Shortage", "Unavailable", "World", "WorldLink"]
