"""The discrete-event virtual-cluster engine. It owns time, state and money.

The engine wires components together and moves tasks between states:

- ``stratus.kernel.Kernel``: the clock, one event heap and the handler table;
- ``stratus.taskbook``: the trace's tasks (``Workload``) and their states (``TaskBook``);
- ``stratus.cloud.Cloud``: instances, markets, prices, billing, revocations and faults;
- ``stratus.accounting.Accounting``: the idle breakdown, run segments and audit logs;
- ``stratus.apply.DecisionApplier``: a policy's decisions checked, then carried out;
- ``stratus.view.ClusterView``: what a policy sees, built from those components.

Events (``stratus.events``) at equal times run in this order: price change, task finish,
migration done, revocation, crash (an instance lost to the cloud's own fault,
stratus.faults), insufficient capacity (a request the provider cannot fill), instance
ready, scheduling tick. Arrivals are not heap events: tasks are queued as they arrive and
only a tick can place them (Stratus §3.1: pending tasks are scheduled in batches at
periodic scheduling events), so they are taken from the sorted trace at each tick; a task
that arrives at the same instant as a tick is seen by that tick.

One clock for every replay (docs/reference/reserved.md, "The clock"): a task can first be
placed at the first tick at or after its submit time, and room freed on an instance is
offered at the next tick, with or without a waiting policy. Under one, the gate acts at
the tick before the scheduler (``ReservedGate.tick``): room freed since the last tick to
its queue, then the queued tasks whose wait ran out leave, then the tick's arrivals are
decided; the scheduler then places what the gate sent on, at the same tick.

Every instance is billed from request to release at its prevailing price, per second
(Stratus §4.1). An instance left with no tasks is released at once unless a policy keeps
it (Stratus §4.1, "VM acquisition/termination").
"""

from __future__ import annotations

import copy
import math
import time as _time
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from operator import add, sub

import numpy as np

from stratus.accounting import Accounting
from stratus.apply import DecisionApplier
from stratus.base.bounds import MAX_HOURS, MAX_SPINUP_S, MAX_TICK_S
from stratus.base.errors import ConfigError, StratusError
from stratus.cloud import SPOT_WARNING_S, Cloud
from stratus.decisions import Decisions
from stratus.estimators import Estimator, OracleEstimator
from stratus.events import (
    EV_CRASH,
    EV_DEPART,
    EV_FINISH,
    EV_MIGRATED,
    EV_PRICE,
    EV_READY,
    EV_REVOKE,
    EV_TICK,
)
from stratus.faults import Faults
from stratus.footprint import DEFAULT as DEFAULT_FOOTPRINT
from stratus.footprint import footprint_fraction
from stratus.gcpause import rare_gc
from stratus.kernel import Kernel
from stratus.model import (
    DONE,
    MIGRATING,
    PENDING,
    RELEASED,
    RUNNING,
    WAITING,
    Instance,
    Task,
)
from stratus.pricing.catalog import M4, Catalog
from stratus.pricing.prices import ON_DEMAND, RESERVED, SPOT, PriceBook, PriceSeries
from stratus.reserved import check_discount, check_reserved, ran_where, reserved_rate
from stratus.result import ReplayResult
from stratus.savings import SavingsPlan, check_plan
from stratus.taskbook import TaskBook, Workload
from stratus.traces.schema import Trace
from stratus.view import EngineView
from stratus.waiting_gate import ReservedGate, Waiting

MIB_BITS = 8 * 1024 * 1024  # bits in one MiB (the memory unit of resource vectors)
HOPELESS_RUNS = 1000  # crash-loop guard: a task expected to need more runs than this


@dataclass
class ReplayConfig:
    """Everything about the simulated cloud that is not the workload or the policy.

    A replay reads it and never writes it, so one config serves any number of replays
    alike; an online-learning ``estimator`` learns on the replay's own copy (``Engine``)."""

    tick_s: float = 60.0
    spinup_s: tuple[float, float] = (30.0, 160.0)  # Stratus §4.1
    migration_mbps: float = 160.0  # Stratus §4.1 (HotSpot's measured rate)
    # Stratus §4.1: a migration moves the container's memory footprint. "request" takes the
    # memory request as the footprint; "usage:F" a fraction F of it (docs/decisions.md).
    migration_footprint: str = DEFAULT_FOOTPRINT
    market: str = SPOT  # Stratus §3.3/§4.1: spot instances, bid = on-demand price
    markets: tuple[str, ...] | None = None  # markets acquisitions may use; default (market,)
    seed: int = 0
    catalog: Catalog = M4
    prices: PriceBook | None = None
    estimator: Estimator | None = None  # None: perfect knowledge (an OracleEstimator)
    readjust: bool = True  # Stratus §3.4 heuristic 1
    record: bool = False  # keep per-interval logs for invariant checks
    # stall guard: ticks in a row with no task finishing and none running without loss
    max_idle_ticks: int = 100_000
    max_hours: float | None = None  # guard: stop this many simulated hours after the start
    faults: Faults | None = None  # the cloud's own faults (stratus.faults); None: none
    max_restarts: int = 100  # crash-loop guard: stop when a hopeless task lost this many runs
    anti_affinity: bool = True  # honour the trace's anti_affinity column (docs/decisions.md)
    # reserved instances (stratus.reserved): ((type name, count), ...), ready from the first
    # tick to the end, billed for that whole horizon; parse_reserved reads TYPE:COUNT,...
    reserved: tuple[tuple[str, int], ...] = ()
    # their rate: (1 - D) x on-demand; None: the catalog's reserved rate, else 0.4 x on-demand
    reserved_discount: float | None = None
    # a waiting policy at the door of the reserved instances (stratus.waiting_gate.Waiting;
    # parse_waiting reads POLICY[:b=,t=,share=]); None: every task goes to the scheduler
    waiting: Waiting | None = None
    # a savings plan (stratus.savings): C $/hour committed from the first tick to the end,
    # discounting on-demand usage up to it; on-demand joins the allowed markets
    savings_plan: SavingsPlan | None = None
    # called at every tick with (simulated time, tasks done, tasks); its close(), if it has
    # one, when the replay ends, however it ends (stratus.progress.ProgressBar)
    progress: Callable[[float, int, int], None] | None = field(default=None, repr=False)

    def validate(self) -> None:
        # the ranges the options take (stratus.base.bounds); below 1 s only for tests of the
        # engine's own arithmetic, which the options never reach
        if not (0 < self.tick_s <= MAX_TICK_S):
            raise ConfigError(f"tick takes a number of seconds > 0 and <= {MAX_TICK_S:g}, got "
                              f"{self.tick_s}")
        lo, hi = self.spinup_s
        if not (0 <= lo <= hi <= MAX_SPINUP_S):
            raise ConfigError(f"spin-up range must satisfy 0 <= lo <= hi <= {MAX_SPINUP_S:g} "
                              f"s, got {self.spinup_s}")
        if not self.migration_mbps > 0:
            raise ConfigError(f"migration rate must be positive, got {self.migration_mbps}")
        if self.max_hours is not None and not 0 < self.max_hours <= MAX_HOURS:
            raise ConfigError(f"--max-hours takes a number of hours > 0 and <= "
                              f"{MAX_HOURS:g}, got {self.max_hours}")
        footprint_fraction(self.migration_footprint)
        if not (isinstance(self.max_restarts, int) and self.max_restarts >= 1):
            raise ConfigError(f"max_restarts must be an integer >= 1, got {self.max_restarts!r}")
        if self.faults is not None:
            if not isinstance(self.faults, Faults):
                raise ConfigError(f"ReplayConfig.faults takes a Faults object, got "
                                  f"{self.faults!r} (stratus.faults.parse_faults reads a spec)")
            self.faults.validate()
        check_reserved(self.reserved, self.catalog, "ReplayConfig.reserved")
        check_discount(self.reserved_discount, "ReplayConfig.reserved_discount")
        check_plan(self.savings_plan, "ReplayConfig.savings_plan")
        if self.waiting is not None:
            if not isinstance(self.waiting, Waiting):
                raise ConfigError(f"ReplayConfig.waiting takes a Waiting object, got "
                                  f"{self.waiting!r} (stratus.waiting_gate.parse_waiting "
                                  f"reads POLICY[:b=,t=])")
            if not self.reserved:
                raise ConfigError("a waiting policy (--waiting) needs reserved instances to "
                                  "wait for (--reserved TYPE:COUNT)")


class Engine:
    """One replay of one trace under one scheduler. Use ``replay()``.

    ``cfg`` is copied, never written: ``self.cfg`` is the resolved copy (prices, catalog,
    estimator filled in). ``self.estimator`` is the estimator this replay used: for an
    online learner, a copy of the caller's with what it learned here (pass it in the next
    replay's config to carry that learning over)."""

    def __init__(self, trace: Trace, scheduler, cfg: ReplayConfig) -> None:
        with rare_gc():
            self._init(trace, scheduler, cfg)

    def _init(self, trace: Trace, scheduler, cfg: ReplayConfig) -> None:
        cfg.validate()
        # a private copy, resolved here (prices, catalog, estimator): the caller's config is
        # never written, so one config replays any number of times alike
        cfg = replace(cfg)
        self.cfg = cfg
        self.trace = trace
        self.scheduler = scheduler
        if cfg.prices is None:
            from stratus.markets import configure_market

            configure_market(cfg, cfg.market)
        prices = cfg.prices
        if prices.catalog is not cfg.catalog:
            cfg.catalog = prices.catalog
        if cfg.reserved:  # their rates (stratus.reserved); without, the book is untouched
            check_reserved(cfg.reserved, cfg.catalog, "ReplayConfig.reserved")
            prices = cfg.prices = prices.with_series(
                {(name, RESERVED): PriceSeries.constant(
                    reserved_rate(cfg.catalog[name], cfg.reserved_discount))
                 for name, _ in cfg.reserved})
        markets = tuple(cfg.markets or (cfg.market,))
        if cfg.savings_plan is not None and ON_DEMAND not in markets:
            markets = (*markets, ON_DEMAND)  # what the plan covers (stratus.savings)
        if cfg.market not in markets:
            raise ConfigError(f"default market {cfg.market!r} is not among allowed markets {markets}")
        for m in markets:
            missing = [t.name for t in cfg.catalog if not prices.has(t.name, m)]
            if missing:
                raise ConfigError(f"no {m} prices for {', '.join(missing)} in price book {prices.name!r}")
        if cfg.estimator is None:
            cfg.estimator = OracleEstimator()
        elif not isinstance(cfg.estimator, Estimator):  # names are the application's to resolve
            raise ConfigError(f"ReplayConfig.estimator takes an Estimator object, got "
                              f"{cfg.estimator!r} (stratus.app.registry.make_estimator "
                              f"resolves a name)")
        elif cfg.estimator.learns_online:
            # an online learner learns on a copy: the caller's keeps its warm-up fit and
            # learns nothing from this replay (docs/decisions.md, "Reusable objects")
            cfg.estimator = copy.deepcopy(cfg.estimator)
        self.estimator: Estimator = cfg.estimator
        self._mig_bits_per_s = cfg.migration_mbps * 1e6
        self._mig_fraction = footprint_fraction(cfg.migration_footprint)

        self.kernel = k = Kernel()
        self.work = Workload(trace, cfg.catalog, cfg.anti_affinity)
        self.book = TaskBook(self.work, self.estimator.learns_online)
        self.cloud = Cloud(k, cfg.catalog, prices, markets, cfg.spinup_s, cfg.seed, cfg.faults,
                           cfg.record)
        if cfg.savings_plan is not None:  # the view's headroom counts live on-demand ones
            self.cloud.od_live = {}
        self.acct = Accounting(len(cfg.catalog.types[0].capacity), cfg.record)
        # the Actuator's acquire is the cloud's request itself: no layer between, once a task
        self.acquire = self.cloud.request
        self.applier = DecisionApplier(self.book, self.cloud, self, k, scheduler)
        self.view = EngineView(k, cfg, self.book, self.cloud, self.migration_duration)
        for kind, handler in ((EV_PRICE, self._on_price), (EV_FINISH, self._on_finish),
                              (EV_MIGRATED, self._on_migrated), (EV_REVOKE, self._on_revoke),
                              (EV_CRASH, self._on_crash),
                              (EV_READY, self._on_ready), (EV_TICK, self._on_tick)):
            k.on(kind, handler)
        # a waiting policy decides each arrival at the tick it arrives at, before the
        # scheduler (stratus.waiting_gate); an AJW-T timer is an event, so that a tick
        # comes when it runs out even while the ticks are skipped
        self.gate: ReservedGate | None = None
        if cfg.waiting is not None:
            self.gate = gate = ReservedGate(cfg.waiting, self.book, self.cloud, self, k,
                                            cfg.tick_s)
            self.applier.exclusive = not cfg.waiting.share
            k.on(EV_DEPART, lambda tid, _b, _t: gate.due(tid))
        # per task, where it ran (with reserved instances): bit 1 on a reserved instance,
        # bit 2 on a rented one (spot, on-demand); set as each run starts
        self.ran_on: bytearray | None = bytearray(self.work.n) if cfg.reserved else None
        self.ticks = 0
        self.on_decisions: Callable[[float, Decisions], None] | None = None
        self.start_s: float | None = None  # the replay's start (its first tick): origin of
        # the savings plan's hours
        self.ended_early: str | None = None  # why the replay stopped with tasks unfinished
        self._idle_ticks = 0  # ticks in a row with no task finishing (the stall guard)
        self._done_at_tick = 0  # tasks finished as of the last tick
        # a scheduler that says when its ticks would decide nothing (ComposedScheduler.quiet)
        self._quiet = getattr(scheduler, "quiet", None)
        self._tick_at = math.inf  # when the next tick is due (one tick on the heap counts)
        self._tick_no = 0  # its number: a tick brought forward leaves a stale one behind
        self._last_tick = -math.inf  # when the last tick ran
        self._skipped = False  # whether the ticks from the last to the next were skipped
        self._restarts: dict[int, int] = {}  # tid -> runs lost to crashes
        self._crash_loop: str | None = None  # why the crash-loop guard stops the replay

    @property
    def now(self) -> float:
        return self.kernel.now

    def migration_duration(self, task: Task) -> float:
        """Seconds to move the task's memory footprint (its request in MiB times the
        configured used fraction) at the migration rate (Stratus §4.1)."""
        return task.req[1] * self._mig_fraction * MIB_BITS / self._mig_bits_per_s

    # ------------------------------------------------------------------ instances
    def hold(self, inst: Instance, task: Task, t: float) -> None:
        """``task`` holds its request on ``inst`` from ``t`` (running, waiting for the
        instance, or reserved as a migration's destination)."""
        self.acct.touch(inst, t)
        inst._tasks[task.tid] = task
        inst.free = tuple(map(sub, inst.free, task.req))
        inst.hosted += 1
        self.cloud.changed(inst)
        gate = self.gate
        if gate is not None and inst.market == RESERVED:
            gate.sync(inst)
        if task.anti_affinity:
            self.book.aa_where.setdefault(task.job, set()).add(inst.iid)
        if self.acct.holds is not None:
            self.acct.hold_open[(inst.iid, task.tid)] = t

    def unhold(self, inst: Instance, task: Task, t: float) -> None:
        acct = self.acct
        acct.touch(inst, t)
        del inst._tasks[task.tid]
        inst.free = tuple(map(add, inst.free, task.req))
        self.cloud.changed(inst)
        if self.gate is not None and inst.market == RESERVED:
            self.gate.sync(inst, grew=True)
        if task.anti_affinity:
            where = self.book.aa_where[task.job]
            where.discard(inst.iid)
            if not where:
                del self.book.aa_where[task.job]
        if acct.holds is not None:
            s = acct.hold_open.pop((inst.iid, task.tid))
            acct.holds.append((inst.iid, task.tid, s, t))

    def release(self, inst: Instance, t: float) -> None:
        if inst._tasks:
            raise StratusError(f"engine bug: releasing instance {inst.iid} with tasks")
        self.acct.touch(inst, t)
        self.cloud.release(inst, t)

    def maybe_release(self, inst: Instance, t: float) -> None:
        if not inst._tasks and not inst.keep and inst.state != RELEASED:
            self.release(inst, t)

    # ------------------------------------------------------------------ task life
    def start(self, task: Task, t: float) -> None:
        book, tid = self.book, task.tid
        book.state[tid] = RUNNING
        book.run_start[tid] = t
        self._changed(tid)
        if self.ran_on is not None:
            self.ran_on[tid] |= 1 if book.loc[tid].market == RESERVED else 2
        if book.first_start[tid] != book.first_start[tid]:  # NaN: first start
            book.first_start[tid] = t
        self.kernel.schedule(t + self.work.runtime[tid] - book.done[tid], EV_FINISH, tid,
                             book.epoch[tid])

    def _stop_progress(self, tid: int, t: float) -> None:
        book = self.book
        start = book.run_start[tid]
        book.done[tid] += t - start
        self.acct.segment(tid, start, t, book.loc[tid].iid)
        book.run_start[tid] = math.nan
        book.epoch[tid] += 1
        self._changed(tid)

    def _changed(self, tid: int) -> None:
        """The task's progress started or stopped: tell the watchers of the instances
        that hold it (ClusterView.watch_instances)."""
        if self.cloud.watchers:
            book = self.book
            self.cloud.changed(book.loc[tid])
            self.cloud.changed(book.mig_dest.get(tid))

    def begin_transfer(self, task: Task, t: float) -> None:
        book, acct, tid = self.book, self.acct, task.tid
        self._stop_progress(tid, t)
        book.state[tid] = MIGRATING
        dur = self.migration_duration(task)
        acct.migrations += 1
        acct.transfer(task.req, dur)
        book.n_migrations[tid] += 1
        if book.done[tid] > book.est[tid]:
            book.n_migrations_overrun[tid] += 1
        self.kernel.schedule(t + dur, EV_MIGRATED, tid, book.epoch[tid])
        log = acct.mig_log
        book.transfer[tid] = (t + dur, len(log) if log is not None else -1)
        if log is not None:
            log.append((tid, book.loc[tid].iid, book.mig_dest[tid].iid, t, t + dur))

    def _abort_transfer(self, tid: int, t: float) -> None:
        """A transfer cut short at ``t`` (an end was revoked): count only the time it took."""
        end, k = self.book.transfer.pop(tid)
        acct = self.acct
        acct.transfer(self.book.tasks[tid].req, -(end - t))
        acct.aborted_migrations += 1
        if k >= 0:
            rec = acct.mig_log[k]
            acct.mig_log[k] = (*rec[:4], t)

    def _send_back(self, task: Task) -> None:
        """The task is pending again, on no instance."""
        self.book.state[task.tid] = PENDING
        self.book.loc[task.tid] = None
        self.book.pending.append(task)

    def _end_if_done(self) -> None:
        # reserved instances stay to the end: only the others keep a replay going
        if self.book.n_done == self.work.n and len(self.cloud.alive) == self.cloud.n_reserved:
            self.kernel.stop()

    # ------------------------------------------------------------------ events
    def _on_finish(self, tid: int, epoch: int, t: float) -> None:
        book = self.book
        if epoch != book.epoch[tid]:
            return  # superseded by a migration or revocation
        task = book.tasks[tid]
        book.tasks[tid] = None  # done for good: the engine keeps no task object it won't use
        inst = book.loc[tid]
        self._stop_progress(tid, t)
        book.loc[tid] = None  # else every instance a task ended on stays alive to the end
        book.state[tid] = DONE
        book.finish[tid] = t
        book.n_done += 1
        self.unhold(inst, task, t)
        dest = book.mig_dest.pop(tid, None)
        if dest is not None:  # finished before its queued migration could start
            self.acct.cancelled_migrations += 1
            self.unhold(dest, task, t)
            self.maybe_release(dest, t)
        self.maybe_release(inst, t)
        tasks = book.job_finished(tid, task, t)
        if tasks is not None:
            self.estimator.observe(tasks, t)
        if book.n_done == self.work.n:  # tested here first: the call only at the last finish
            self._end_if_done()

    def _on_migrated(self, tid: int, epoch: int, t: float) -> None:
        book = self.book
        if epoch != book.epoch[tid]:
            return
        task = book.tasks[tid]
        src = book.loc[tid]
        dst = book.mig_dest.pop(tid)
        del book.transfer[tid]
        self.unhold(src, task, t)
        book.loc[tid] = dst
        self.start(task, t)
        self.maybe_release(src, t)
        self._end_if_done()

    def _on_ready(self, inst: Instance, _b, t: float) -> None:
        if inst.state == RELEASED:  # released (emptied or revoked) before it came up
            return
        self.cloud.ready(inst, t)
        book = self.book
        for task in list(inst._tasks.values()):
            tid = task.tid
            if book.state[tid] == WAITING:
                self.start(task, t)
            elif book.mig_dest.get(tid) is inst and book.state[tid] == RUNNING:
                self.begin_transfer(task, t)

    def _on_price(self, key: tuple[str, str], _b, t: float) -> None:
        self.cloud.on_price(key, t)

    def _on_revoke(self, inst: Instance, _b, t: float) -> None:
        """The provider takes a spot instance back. Tasks on it lose their progress and
        return to pending; tasks merely reserved on it as a migration target stay where
        they run (an in-flight transfer into it is aborted and the task resumes)."""
        if inst.state == RELEASED:
            return
        self.cloud.revocations += 1
        self._evict(inst, t, False)
        self._wake(t)
        self._end_if_done()

    def _on_crash(self, iid: int, _b, t: float) -> None:
        """An instance dies (stratus.faults): as a revocation without notice. Its bill stops
        now; its tasks lose their progress, which is counted as lost work."""
        inst = self.cloud.alive.get(iid)
        if inst is None:  # released before its crash time
            return
        self.cloud.crashes += 1
        if self.acct.crash_log is not None:
            self.acct.crash_log[iid] = t
        self._evict(inst, t, True)
        self._wake(t)
        self._end_if_done()

    def refused(self, tasks: int, migrations: int) -> None:
        """The provider refused an acquisition (insufficient capacity, stratus.faults):
        ``tasks`` tasks meant for it stay pending, ``migrations`` moves to it are void."""
        self.acct.ice_returned += tasks
        self.acct.cancelled_migrations += migrations

    def _evict(self, inst: Instance, t: float, crash: bool) -> None:
        """Take ``inst`` away at ``t`` (revoked or crashed) and send its tasks back."""
        book, acct = self.book, self.acct
        for task in list(inst._tasks.values()):
            tid = task.tid
            dest = book.mig_dest.get(tid)
            if book.loc[tid] is not inst:  # reserved here as a migration target
                del book.mig_dest[tid]
                self.unhold(inst, task, t)
                if book.state[tid] == MIGRATING:  # in flight to here: resume at the source
                    self._abort_transfer(tid, t)
                    book.epoch[tid] += 1
                    self.start(task, t)
                else:
                    acct.cancelled_migrations += 1
                continue
            if dest is not None:  # a migration away from here (queued or in flight) is void
                del book.mig_dest[tid]
                if book.state[tid] == MIGRATING:
                    self._abort_transfer(tid, t)
                else:
                    acct.cancelled_migrations += 1
                self.unhold(dest, task, t)
                self.maybe_release(dest, t)
            if book.state[tid] == RUNNING:
                self._stop_progress(tid, t)
            else:
                book.epoch[tid] += 1  # waiting or migrating: drop its pending events
            self.unhold(inst, task, t)
            if crash:
                self._lose(inst, task)
            else:
                acct.tasks_revoked += 1
            book.done[tid] = 0.0
            self._send_back(task)
        inst.keep = False
        self.release(inst, t)

    def _lose(self, inst: Instance, task: Task) -> None:
        """Book a crashed task's lost progress: seconds, vCPU-seconds, and dollars -- the
        seconds at the crashed instance's price, times the task's dominant share of it."""
        lost = self.book.done[task.tid]
        self.acct.crash_restarts += 1
        k = self._restarts[task.tid] = self._restarts.get(task.tid, 0) + 1
        crash_mean_s = self.cloud.crash_mean_s
        if k >= self.cfg.max_restarts and self._crash_loop is None:
            # a run survives with probability exp(-rate x runtime): a task expected to need
            # more than HOPELESS_RUNS runs is in a crash loop; any other task only has a
            # long streak of bad luck, which ends (a geometric number of runs)
            exponent = task.runtime / crash_mean_s
            if exponent > math.log(HOPELESS_RUNS):
                runs = f"{math.exp(exponent):.3g}" if exponent < 700 else "more than 1e300"
                self._crash_loop = (f"crash loop: task {task.tid} (job {task.job}, runtime "
                                    f"{task.runtime:g} s) lost {k} runs to crashes at "
                                    f"{self.cfg.faults.crash_per_hour:g} per instance-hour "
                                    f"and would need about {runs} runs to finish once")
        if lost > 0:
            share = max(r / c for r, c in zip(task.req, inst.itype.capacity) if c)
            price = self.cloud.current_price[(inst.itype.name, inst.market)]
            # milli-vCPU (stratus.base.resources)
            self.acct.lose(lost, lost * task.req[0] / 1000.0,
                           lost * price / 3600.0 * min(share, 1.0))

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
            # a shortage's end (stratus.faults) changes what can be acquired: not an event
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

    def decide(self) -> Decisions | None:
        """One decision of the policy at a tick: it decides on the view (instances and tasks
        are read-only to it: a test checks it, stratus.testing.Sealed); its decisions are
        checked and applied. The live loop (stratus.live) calls this too, on a state it
        keeps from what it observes.
        ``on_decisions(t, dec)``, when set, sees each non-empty batch before it is applied."""
        dec = self.scheduler.schedule(self.view)
        if dec:
            if self.on_decisions is not None:
                self.on_decisions(self.kernel.now, dec)
            self.applier.apply(dec)
        return dec

    def _schedule_tick(self, t: float) -> None:
        self._tick_no += 1
        self._tick_at = t
        self.kernel.schedule(t, EV_TICK, self._tick_no)

    def _wake(self, t: float) -> None:
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
            return  # brought forward by _wake: this one is stale
        book, cloud, n = self.book, self.cloud, self.work.n
        if self.gate is None:
            book.arrive(t, self.estimator)
        else:  # the gate first: its queue, its timers, the arrivals (module docstring)
            self.gate.tick(book.arrive(t, self.estimator, pend=False), t)
        self.ticks += 1
        dec = None
        if book.pending or cloud.busy():
            dec = self.decide()
        if book.n_done == n and all(not i._tasks for i in cloud.alive.values()):
            self.kernel.stop()
            return
        starved = self._starved() or self._crash_loop
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
        return (f"stalled: scheduler {getattr(self.scheduler, 'name', '?')!r}: no task "
                f"finished for {self._idle_ticks - 1} ticks and {why}; "
                f"{len(book.pending)} pending")

    # ------------------------------------------------------------------ the run
    def run(self) -> ReplayResult:
        with rare_gc():
            try:
                return self._run()
            finally:  # a progress hook that draws (stratus.progress) ends its bar
                close = getattr(self.cfg.progress, "close", None)
                if close is not None:
                    close()

    def _run(self) -> ReplayResult:
        wall0 = _time.perf_counter()
        cfg, book, n = self.cfg, self.book, self.work.n
        self.estimator.bind(self.trace)
        # the scheduler forgets any earlier replay (stratus.compose.Scheduler), before the
        # empty-trace return too: its stats() go into this replay's summary
        reset = getattr(self.scheduler, "reset", None)
        if reset is not None:
            reset()
        if n == 0:
            return self._result(_time.perf_counter() - wall0)
        first_tick = math.ceil(self.work.submit_list[0] / cfg.tick_s - 1e-9) * cfg.tick_s
        # the first tick, with or without a waiting policy (one clock: module docstring)
        t0 = first_tick
        self.kernel.now = self.start_s = t0
        self.cloud.open_prices(t0)
        for name, count in cfg.reserved:  # prepaid: up from the start (stratus.reserved)
            for _ in range(count):
                self.cloud.add_reserved(cfg.catalog[name], t0)
        if self.gate is not None:
            self.gate.open()
        if hasattr(self.scheduler, "start"):
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
        if self.ran_on is not None:  # what ran where (docs/reference/reserved.md)
            res.summary.update(ran_where(self.ran_on))
        if self.gate is not None:  # as `stratus waiting simulate` reports a pool
            s = res.summary
            s["waiting"] = {**self.gate.summary(self.ran_on),
                            "reserved_cost_usd": s["reserved_cost_usd"],
                            "cloud_cost_usd": round(s["total_cost_usd"]
                                                    - s["reserved_cost_usd"], 4)}
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
        if any(all(r <= c for r, c in zip(task.req, inst.itype.capacity))
               for task in book.pending for inst in cloud.reserved.values()):
            return None  # idle reserved instances: the next tick places what fits them
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
            for task in list(inst._tasks.values()):
                tid = task.tid
                if book.loc[tid] is inst:
                    if book.state[tid] == RUNNING:
                        self._stop_progress(tid, t)
                    elif book.state[tid] == MIGRATING:
                        self._abort_transfer(tid, t)
                        book.epoch[tid] += 1
                    book.state[tid] = PENDING
                self.unhold(inst, task, t)
            inst.keep = False
            self.release(inst, t)
        book.mig_dest.clear()
        self.kernel.stop()


def replay(trace: Trace, scheduler, cfg: ReplayConfig | None = None, **overrides) -> ReplayResult:
    """Replay ``trace`` under ``scheduler``, an object with ``schedule(view)`` (names are
    resolved by the application layer, ``stratus.app.registry.make_scheduler``; see
    ``stratus.compose.Scheduler``). ``overrides`` set fields of a copy of ``cfg``: neither
    ``cfg`` nor ``scheduler`` carries anything into the next replay."""
    cfg = cfg or ReplayConfig()
    known = {f.name for f in fields(cfg)}
    for k in overrides:
        if k not in known:
            raise ConfigError(f"unknown replay option {k!r}")
    if overrides:
        cfg = replace(cfg, **overrides)
    if isinstance(scheduler, str) or not callable(getattr(scheduler, "schedule", None)):
        raise ConfigError(f"replay takes a scheduler object, got {scheduler!r} "
                          f"(stratus.app.registry.make_scheduler resolves a name)")
    return Engine(trace, scheduler, cfg).run()


__all__ = ["MIB_BITS", "SPOT_WARNING_S", "Engine", "ReplayConfig", "replay"]
