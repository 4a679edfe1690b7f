"""The live loop's state: the engine's own state machine (stratus.engine.Engine), fed by
what the loop observes instead of by its event heap.

In a replay the engine predicts when a task finishes, an instance comes up or a transfer
ends, and its kernel delivers those events. Live, the world says when they happen: the
mirror's kernel is a clock that drops what the engine schedules, and the loop
(stratus.live.loop) calls the engine's handlers (``_on_finish``, ``_on_ready``,
``_on_migrated``, ``_on_revoke``, ``_on_crash``) at the times it observes. The view a
policy sees (stratus.view.ClusterView) and the checks its decisions go through
(stratus.apply.DecisionApplier) are the engine's, unchanged.

What must reach the world is sent through ``world`` (the loop): a pod bound to a node, a
task moved (delete and re-create with a checkpoint), a task sent back to the queue, an
instance launched or terminated. Without a world (shadow mode) nothing is sent.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol

import numpy as np

from stratus.accounting import Accounting
from stratus.apply import DecisionApplier
from stratus.base.errors import ConfigError
from stratus.cloud import Cloud
from stratus.engine import Engine, ReplayConfig
from stratus.estimators import Estimator
from stratus.footprint import footprint_fraction
from stratus.model import DONE, PENDING, READY, RUNNING, WAITING, Instance, Task
from stratus.pricing.catalog import InstanceType
from stratus.pricing.prices import SPOT
from stratus.taskbook import TaskBook
from stratus.view import EngineView


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
    """``stratus.taskbook.Workload`` for tasks that are not known ahead: they are added as
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
    engine's ICE model, stratus.faults); a launch that failed otherwise leaves its tasks
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

    def refresh_prices(self, t: float) -> None:
        """Prices now, from the price book (live, prices are read at each tick)."""
        for key in list(self.current_price):
            self.current_price[key] = self.prices.price(key[0], key[1], t)


class Mirror(Engine):
    """The engine's state of a live cluster at the loop's clock. Built empty (no trace);
    tasks are added as pods appear (``add_task``), instances as they are launched or
    adopted (``adopt``)."""

    def __init__(self, scheduler, cfg: ReplayConfig, t0: float, world: World | None = None,
                 ice_window_s: float = 300.0) -> None:  # not Engine.__init__: no trace
        cfg.validate()
        if cfg.reserved or cfg.waiting is not None or cfg.savings_plan is not None:
            raise ConfigError("the live loop does not take reserved instances, waiting "
                              "policies or savings plans yet")
        if cfg.faults is not None:
            raise ConfigError("the live loop takes its faults from the real world, not from "
                              "a fault model (--faults)")
        # no crash model: the crash-loop guard's arithmetic needs one (Engine._lose)
        cfg = replace(cfg, max_restarts=2**62)
        if cfg.prices is None:
            from stratus.markets import configure_market

            configure_market(cfg, cfg.market)
        cfg.catalog = cfg.prices.catalog
        if cfg.estimator is None:
            cfg.estimator = AnnotationEstimator()
        self.cfg = cfg
        self.scheduler = scheduler
        self.world = world
        self.estimator = cfg.estimator
        self._mig_bits_per_s = cfg.migration_mbps * 1e6
        self._mig_fraction = footprint_fraction(cfg.migration_footprint)
        markets = tuple(cfg.markets or (cfg.market,))
        self.kernel = k = _Clockwork(t0)
        self.work = LiveWorkload()
        self.book = TaskBook(self.work, self.estimator.learns_online)
        self.cloud = LiveCloud(self, k, cfg.catalog, cfg.prices, markets, cfg.spinup_s,
                               cfg.seed, None, False, ice_window_s=ice_window_s)
        self.acct = Accounting(len(cfg.catalog.types[0].capacity), False)
        self.acquire = self.cloud.request
        self.applier = DecisionApplier(self.book, self.cloud, self, k, scheduler)
        self.view = EngineView(k, cfg, self.book, self.cloud, self.migration_duration)
        self.gate = None
        self.ran_on = None  # what ran where: reserved instances only (refused above)
        self.ticks = 0
        self.on_decisions = None
        self.start_s = t0
        self.ended_early = None
        self._idle_ticks = self._done_at_tick = 0
        self._tick_at, self._tick_no = math.inf, 0  # (Engine._wake: the loop ticks itself)
        self._restarts: dict[int, int] = {}
        self._crash_loop = None
        self.cloud.open_prices(t0)
        self.vanished = 0  # tasks whose pods went away while the mirror had them

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
            j = work.job_index[job] = len(book.job_left)
            book.job_left.append(job_size or 0)
            book.job_end.append(math.nan)
            work.sized.append(job_size is not None)
        work.job_of.append(j)
        if not work.sized[j]:
            book.job_left[j] += 1
        book.tasks.append(task)
        book.state.append(PENDING)
        book.loc.append(None)
        book.done.append(0.0)
        book.run_start.append(math.nan)
        book.epoch.append(0)
        book.est.append(math.nan)
        book.first_start.append(math.nan)
        book.finish.append(math.nan)
        book.n_migrations.append(0)
        book.n_migrations_overrun.append(0)
        return task

    def arrive(self, tasks: list[Task]) -> None:
        """Tasks join the pending queue now, in order, with their estimates."""
        book = self.book
        for task, e in zip(tasks, self.estimator.predict(tasks)):
            book.est[task.tid] = e
        book.pending.extend(tasks)
        book.next_arrival = self.work.n

    def adopt(self, itype: InstanceType, market: str, bid: float | None, keep: bool,
              requested_at: float, ready_at: float | None) -> Instance:
        """An instance that exists already (a restart, or shadow mode): in the mirror
        with no launch, up from ``ready_at`` (None: still coming up)."""
        inst = Cloud.request(self.cloud, itype, market, bid, keep, requested_at)  # no launch
        if ready_at is not None:
            self.cloud.ready(inst, ready_at)
        return inst

    def place(self, task: Task, inst: Instance, started: float | None, progress_s: float,
              t: float) -> None:
        """An adopted task on an adopted instance: running since ``started`` with
        ``progress_s`` seconds done before (its checkpoint), or waiting for the instance."""
        book, tid = self.book, task.tid
        book.pending.remove(task)
        book.loc[tid] = inst
        book.done[tid] = progress_s
        Engine.hold(self, inst, task, t)  # its pod is bound already: nothing to bind
        if started is not None and inst.state == READY:
            self.start(task, started)
        else:
            book.state[tid] = WAITING

    # --- the world's part of the engine's transitions ------------------------------------
    def hold(self, inst: Instance, task: Task, t: float) -> None:
        super().hold(inst, task, t)
        if self.world is not None and self.book.loc[task.tid] is inst:
            self.world.bind(task.tid, inst)  # a placement (not a migration's destination)

    def begin_transfer(self, task: Task, t: float) -> None:
        super().begin_transfer(task, t)
        if self.world is not None:
            tid = task.tid
            self.world.move(tid, self.book.mig_dest[tid], self.book.done[tid])

    def _send_back(self, task: Task) -> None:
        super()._send_back(task)
        if self.world is not None:
            self.world.requeue(task.tid)

    def release(self, inst: Instance, t: float) -> None:
        super().release(inst, t)
        if self.world is not None:
            self.world.terminate(inst)

    # --- what the world did, at the time it did it ----------------------------------------
    def at(self, t: float) -> None:
        self.kernel.now = t

    def finished(self, tid: int, t: float) -> None:
        """The task's pod ended at ``t`` (succeeded, failed, or went away)."""
        book = self.book
        self.at(t)
        st = book.state[tid]
        if st == PENDING:  # a queued pod went away
            book.pending.remove(book.tasks[tid])
            book.tasks[tid] = None
            book.state[tid] = DONE
            book.finish[tid] = t
            book.n_done += 1
            return
        if st != RUNNING:  # waiting for its instance, or in transfer: it ends from here
            if tid in book.transfer:
                self._abort_transfer(tid, t)
            book.run_start[tid] = t
            book.state[tid] = RUNNING
        # its runtime is known now: what an estimator that learns (history) learns from
        task = book.tasks[tid]
        task.runtime = self.work.runtime[tid] = book.done[tid] + (t - book.run_start[tid])
        self._on_finish(tid, book.epoch[tid], t)

    def unplace(self, tid: int, t: float) -> None:
        """A placement the world refused (its binding): the task is pending again, on no
        instance, and its instance is released if that left it empty."""
        book = self.book
        self.at(t)
        inst, task = book.loc[tid], book.tasks[tid]
        if inst is None or book.state[tid] not in (WAITING, RUNNING) or tid in book.mig_dest:
            return
        if book.state[tid] == RUNNING:
            self._stop_progress(tid, t)
        self.unhold(inst, task, t)
        Engine._send_back(self, task)  # its pod is pending already: nothing to re-create
        self.maybe_release(inst, t)

    def migrated(self, tid: int, t: float) -> None:
        self.at(t)
        self._on_migrated(tid, self.book.epoch[tid], t)

    def ready(self, inst: Instance, t: float) -> None:
        self.at(t)
        self._on_ready(inst, None, t)

    def revoked(self, inst: Instance, t: float) -> None:
        self.at(t)
        self._on_revoke(inst, None, t)

    def crashed(self, inst: Instance, t: float) -> None:
        self.at(t)
        self._on_crash(inst.iid, None, t)


__all__ = ["AnnotationEstimator", "LiveCloud", "LiveWorkload", "Mirror", "Refused",
           "Shortage", "Unavailable", "World"]
