"""The discrete-event replay: the engine core (stratus.sim.core.Core) driven by an event heap.

The engine builds a core from a trace and a resolved config (``stratus.sim.config.resolve``)
and drives it with its kernel:

- ``stratus.sim.kernel.Kernel``: the clock, one event heap and the handler table, whose
  handlers are the core's public transitions (finish, migrated, revoke, crash, ready);
- ``stratus.sim.core.Core``: the state machine (task book, cloud, accounting, applier, view)
  and its add-ons (``stratus.sim.hooks``; the commitments, ``stratus.commitments``);
- here: the scheduling ticks, the guards (stall, starvation, crash loop, max hours) and
  the run's end and result.

Events (``stratus.sim.events``) at equal times run in this order: price change, task finish,
migration done, revocation, crash (an instance lost to the cloud's own fault,
stratus.sim.faults), insufficient capacity (a request the provider cannot fill), instance
ready, scheduling tick. Arrivals are not heap events: tasks are queued as they arrive and
only a tick can place them (Stratus §3.1: pending tasks are scheduled in batches at
periodic scheduling events), so they are taken from the sorted trace at each tick; a task
that arrives at the same instant as a tick is seen by that tick.

One clock for every replay (docs/reference/reserved.md, "The clock"): a task can first be
placed at the first tick at or after its submit time, and room freed on an instance is
offered at the next tick, with or without a waiting policy. An add-on that admits the
arrivals (``AddOn.admit``; the waiting gate, ``ReservedGate.tick``) acts at the tick before
the scheduler: room freed since the last tick to its queue, then the queued tasks whose
wait ran out leave, then the tick's arrivals are decided; the scheduler then places what
the gate sent on, at the same tick.
"""

from __future__ import annotations

import math
import time as _time

import numpy as np

from stratus.base.errors import StratusError
from stratus.pricing.prices import ON_DEMAND, SPOT
from stratus.sim.cloud import SPOT_WARNING_S, Cloud
from stratus.sim.config import ReplayConfig, resolve
from stratus.sim.contracts import Quiets, Resets, Starts, name_of
from stratus.sim.core import MIB_BITS, Core
from stratus.sim.events import (
    EV_CRASH,
    EV_FINISH,
    EV_MIGRATED,
    EV_PRICE,
    EV_READY,
    EV_REVOKE,
    EV_TICK,
)
from stratus.sim.gcpause import rare_gc
from stratus.sim.kernel import Kernel
from stratus.sim.model import MIGRATING, PENDING, RUNNING
from stratus.sim.result import ReplayResult
from stratus.sim.taskbook import Workload
from stratus.traces.schema import Trace


class Engine(Core):
    """One replay of one trace under one scheduler (``stratus.replays.replay`` builds one
    with the add-ons its config asks for, and runs it).

    ``cfg`` is copied, never written: ``self.cfg`` is the resolved copy (prices, catalog,
    estimator filled in; ``stratus.sim.config.resolve``). ``self.estimator`` is the estimator
    this replay used: for an online learner, a copy of the caller's with what it learned
    here (pass it in the next replay's config to carry that learning over). ``addons``:
    the run's add-ons (stratus.sim.hooks); a config field only an add-on acts on (its
    commitments) is refused unless one claims it: ``stratus.replays.engine`` builds an
    engine with the add-ons its config asks for. ``run()`` runs once."""

    def __init__(self, trace: Trace, scheduler, cfg: ReplayConfig, addons=()) -> None:
        with rare_gc():
            self._init(trace, scheduler, cfg, addons)

    def _init(self, trace: Trace, scheduler, cfg: ReplayConfig, addons) -> None:
        cfg = resolve(cfg, addons)
        self.trace = trace
        k = Kernel()
        work = Workload(trace, cfg.catalog, cfg.anti_affinity)
        cloud = Cloud(k, cfg.catalog, cfg.prices, cfg.markets, cfg.spinup_s, cfg.seed,
                      cfg.faults, cfg.record)
        super().__init__(cfg, k, work, cloud, scheduler, addons)
        for kind, handler in ((EV_PRICE, self._on_price), (EV_FINISH, self.finish),
                              (EV_MIGRATED, self.migrated), (EV_REVOKE, self.revoke),
                              (EV_CRASH, self.crash),
                              (EV_READY, self.ready), (EV_TICK, self._on_tick)):
            k.on(kind, handler)
        # the add-on that takes each tick's arrivals before the scheduler, if one does
        self._admit = self.hooks.admit[0] if self.hooks.admit else None
        self.ticks = 0
        self.start_s: float | None = None  # the replay's start (its first tick): origin of
        # the savings plan's hours
        self.ended_early: str | None = None  # why the replay stopped with tasks unfinished
        self._ran = False  # run() runs once
        self._idle_ticks = 0  # ticks in a row with no task finishing (the stall guard)
        self._done_at_tick = 0  # tasks finished as of the last tick
        # a scheduler that says when its ticks would decide nothing (ComposedScheduler.quiet)
        self._quiet = scheduler.quiet if isinstance(scheduler, Quiets) else None
        self._tick_at = math.inf  # when the next tick is due (one tick on the heap counts)
        self._tick_no = 0  # its number: a tick brought forward leaves a stale one behind
        self._last_tick = -math.inf  # when the last tick ran
        self._skipped = False  # whether the ticks from the last to the next were skipped

    def _on_price(self, key: tuple[str, str], _b, t: float) -> None:
        self.cloud.on_price(key, t)

    # ------------------------------------------------------------------ the tick
    def _next_tick_after(self, t: float, quiet: tuple[float, bool] = (-math.inf, True)
                         ) -> float:
        """The next tick: the next on the grid, unless no tick before some later time can
        do anything. Nothing alive and nothing pending: the tick of the next arrival. Tasks
        running, none pending, and a scheduler ``quiet`` (its ticks decide nothing before
        some time unless an event comes first, ComposedScheduler.quiet): the tick at or
        after the earliest of that time, the next event (a finish, an instance up, a
        revocation, ...; a price change only if the scheduler reads prices then) and the
        next arrival, so a task of months is not months of empty ticks."""
        tick = self.cfg.tick_s
        book = self.book
        nxt = (math.floor(t / tick + 1e-9) + 1) * tick
        if book.pending:
            return nxt
        if self.cloud.busy():
            until, prices = quiet
            if until <= t:
                return nxt
            # a shortage's end (stratus.sim.faults) changes what can be acquired: not an event
            ends = [e for e in self.cloud.known_unavailable.values() if e > t]
            events = self.kernel.peek() if prices else self.kernel.peek_except(EV_PRICE)
            when = min(events, until, *ends)
            if not book.all_arrived:
                when = min(when, self.work.submit_list[book.next_arrival])
        elif book.all_arrived:
            return nxt
        else:
            when = self.work.submit_list[book.next_arrival]
        if when == math.inf:
            return nxt
        return max(math.ceil(when / tick - 1e-9) * tick, nxt)

    def _schedule_tick(self, t: float) -> None:
        self._tick_no += 1
        self._tick_at = t
        self.kernel.schedule(t, EV_TICK, self._tick_no)

    def woke(self, t: float) -> None:
        """Tasks went back to pending at ``t`` (a revocation that a price change scheduled
        after the tick that skipped ahead was computed): the tick at or after ``t``, unless
        one is due by then; the later one goes stale."""
        tick = self.cfg.tick_s
        at = math.ceil(t / tick - 1e-9) * tick
        if at < self._tick_at:
            self._schedule_tick(at)

    def _on_tick(self, no: int, _b, t: float) -> None:
        """Arrivals join the pending queue, the policy decides on the view (instances and
        tasks read-only meanwhile), its decisions are applied; then the guards."""
        if no != self._tick_no:
            return  # brought forward by woke: this one is stale
        book, cloud, n = self.book, self.cloud, self.work.n
        admit = self._admit
        if admit is None:
            book.arrive(t, self.estimator)
        else:  # an add-on takes the arrivals first (a waiting gate: module docstring)
            admit(book.arrive(t, self.estimator, pend=False), t)
        self.ticks += 1
        dec = None
        if book.pending or cloud.busy():
            dec = self.decide()
        if book.n_done == n and all(not i.tasks for i in cloud.alive.values()):
            self.kernel.stop()
            return
        starved = self._starved() or self.crash_loop
        if starved:
            self._halt(t, starved)
            return
        # a scheduler that never places, or a market that revokes everything it gets,
        # would tick forever: stop when no task has finished for too long and none is on
        # its way to (a task of months is: its finish is on the heap, nothing took it away).
        # Ticks skipped while the scheduler was quiet count as ticks: the guard acts on the
        # same tick, with or without the skip.
        tick = self.cfg.tick_s
        k = round((t - self._last_tick) / tick) if self._skipped else 1
        self._last_tick = t
        if book.n_done == self._done_at_tick:
            self._idle_ticks += k
            if self._idle_ticks > self.cfg.max_idle_ticks:
                if self._long_task():
                    self._idle_ticks = 0  # looked at again max_idle_ticks ticks on
                else:
                    self._halt(t, self._stall_text())
                    return
        else:
            self._idle_ticks = 0
        self._done_at_tick = book.n_done
        if self.cfg.progress is not None:
            self.cfg.progress(t, book.n_done, n)
        quiet = (-math.inf, True)  # (until when the scheduler's ticks would decide nothing)
        if not dec and not book.pending and self._quiet is not None:
            until, prices = self._quiet(self.view)
            # never past the tick the stall guard looks at
            guard = t + (self.cfg.max_idle_ticks + 1 - self._idle_ticks) * tick
            quiet = (min(until, guard), prices)
        at = self._next_tick_after(t, quiet)
        self._skipped = quiet[0] > t and self.cloud.busy()
        self._schedule_tick(at)

    def _long_task(self) -> bool:
        """Whether a task is on its way to finishing: running with its finish on the heap
        and no revocation of its instance before it, or moving (its progress kept). The
        replay then waits for a long task; it is not stalled. (Looked at once per
        max_idle_ticks ticks: a scan of the states is cheap at that rate.)"""
        book, runtime = self.book, self.work.runtime
        for tid, s in enumerate(book.state):
            if s == MIGRATING:
                return True
            if s == RUNNING:
                revoke = book.loc[tid].revoke_at
                end = book.run_start[tid] + runtime[tid] - book.done[tid]
                if revoke is None or revoke > end:
                    return True
        return False

    def _stall_text(self) -> str:
        book = self.book
        running = sum(s == RUNNING for s in book.state)
        why = (f"the {running} running are on instances being revoked before they finish"
               if running else "none is running")
        return (f"stalled: scheduler {name_of(self.scheduler)!r}: no task "
                f"finished for {self._idle_ticks - 1} ticks and {why}; "
                f"{len(book.pending)} pending")

    # ------------------------------------------------------------------ the run
    def run(self) -> ReplayResult:
        """The replay, once: a second call is refused (its state is the first's end)."""
        if self._ran:
            raise StratusError("Engine.run() was called twice: an engine replays once; "
                               "build a new Engine (or call replay()) for another run")
        self._ran = True
        with rare_gc():
            try:
                return self._run()
            finally:  # a progress hook that draws (stratus.app.progress) ends its bar
                close = getattr(self.cfg.progress, "close", None)
                if close is not None:
                    close()

    def _run(self) -> ReplayResult:
        wall0 = _time.perf_counter()
        cfg, book, n = self.cfg, self.book, self.work.n
        self.estimator.bind(self.trace)
        # the scheduler forgets any earlier replay (stratus.policy.compose.Scheduler), before the
        # empty-trace return too: its stats() go into this replay's summary
        if isinstance(self.scheduler, Resets):
            self.scheduler.reset()
        if n == 0:
            return self._result(_time.perf_counter() - wall0)
        first_tick = math.ceil(self.work.submit_list[0] / cfg.tick_s - 1e-9) * cfg.tick_s
        # the first tick, with or without a waiting policy (one clock: module docstring)
        t0 = first_tick
        self.kernel.now = self.start_s = t0
        self.cloud.open_prices(t0)
        for hook in self.hooks.open:  # e.g. prepaid instances up from the start
            hook(t0)
        if isinstance(self.scheduler, Starts):
            self.scheduler.start(self.view)
        self._schedule_tick(first_tick)
        limit = math.inf if cfg.max_hours is None else first_tick + cfg.max_hours * 3600.0
        if self.kernel.run(until=limit) and book.n_done != n:
            # the max-hours guard; all done with only kept-idle instances left is no early end
            self._halt(limit, f"stopped at the max-hours guard ({cfg.max_hours:g} h of "
                              f"simulated time)")
        now = self.kernel.now
        for inst in list(self.cloud.alive.values()):  # kept-idle instances end with the replay
            inst.keep = False
            self.release(inst, now)
        if book.n_done != n and self.ended_early is None:
            raise StratusError(f"engine bug: replay ended with {n - book.n_done} unfinished "
                               f"task(s) and no reason")
        if cfg.progress is not None:
            cfg.progress(now, book.n_done, n)
        return self._result(_time.perf_counter() - wall0)

    def _result(self, wall_s: float) -> ReplayResult:
        res = ReplayResult.build(self, wall_s)
        res.summary["tasks_unfinished"] = self.work.n - self.book.n_done
        for hook in self.hooks.summary:
            hook(res.summary)
        res.summary["ended_early"] = self.ended_early
        frame = self.trace.frame
        if "anti_affinity" in frame.columns:  # only for traces that carry flags
            aa = frame["anti_affinity"].to_numpy(dtype=bool)
            res.summary["anti_affinity"] = {
                "honoured": self.work.anti_affinity is not None, "flagged_tasks": int(aa.sum()),
                "flagged_jobs": int(np.unique(frame["job_id"].to_numpy()[aa]).size)}
        return res

    def _starved(self) -> str | None:
        """Why no task can ever run again, or None. With no instance alive and no price
        change ahead, the state can only change by acquiring; if no type is acquirable in
        any allowed market (spot: price above the bid), or every task left fits none of
        those that are and no more arrive, capacity can never be had."""
        cloud, book = self.cloud, self.book
        if cloud.shortage_forever():
            return "capacity can never be had: every acquisition request fails (ice:1)"
        if cloud.busy():
            return None
        if not book.pending and book.all_arrived:
            return None
        if cloud.price_events or ON_DEMAND in cloud.markets:
            return None
        # not busy: what is alive is idle and kept to the end (prepaid); the next tick
        # places what fits it
        if any(all(r <= c for r, c in zip(task.req, inst.itype.capacity))
               for task in book.pending for inst in cloud.alive.values()):
            return None
        ok = self.view.acquirable_types(shortages=False) if SPOT in cloud.markets else []
        if ok and (not book.all_arrived or any(
                all(r <= c for r, c in zip(task.req, it.capacity))
                for task in book.pending for it in ok)):
            return None
        what = ("every instance type's spot price stays above the bid"
                if not ok else "no task left fits a type whose spot price is within the bid")
        return f"capacity can never be had: {what} to the end of the price trace"

    def _halt(self, t: float, why: str) -> None:
        """End the replay at ``t`` with tasks unfinished: running tasks stop (their progress
        so far is kept in the run segments), transfers abort, every instance is released and
        billed to ``t``. ``why`` is reported in the summary (``ended_early``)."""
        self.ended_early = why
        book = self.book
        for inst in list(self.cloud.alive.values()):
            for task in list(inst.tasks.values()):
                tid = task.tid
                if book.loc[tid] is inst:
                    if book.state[tid] == RUNNING:
                        self.stop_progress(tid, t)
                    elif book.state[tid] == MIGRATING:
                        self.abort_transfer(tid, t)
                        book.epoch[tid] += 1
                    book.state[tid] = PENDING
                self.unhold(inst, task, t)
            inst.keep = False
            self.release(inst, t)
        book.mig_dest.clear()
        self.kernel.stop()


__all__ = ["MIB_BITS", "SPOT_WARNING_S", "Engine", "ReplayConfig"]
