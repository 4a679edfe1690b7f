"""The discrete-event virtual-cluster engine. It owns time, state and money.

Events live on one heap ordered by (time, kind, sequence). At equal times kinds run in
this order: price change, task finish, migration done, revocation, crash (an instance
lost to the cloud's own fault, stratus.faults), insufficient capacity (a request the
provider cannot fill), instance ready, scheduling tick. Arrivals are not heap events: tasks are queued as they arrive and only a
tick can place them (Stratus §3.1: pending tasks are scheduled in batches at periodic
scheduling events), so they are taken from the sorted trace at each tick; a task that
arrives at the same instant as a tick is seen by that tick.

Every instance is billed from request to release at its prevailing price, per second
(Stratus §4.1). An instance left with no tasks is released at once unless a policy keeps
it (Stratus §4.1, "VM acquisition/termination").
"""

from __future__ import annotations

import copy
import gc
import math
import time as _time
from array import array
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, replace
from heapq import heappop, heappush
from itertools import count
from operator import add, sub

import numpy as np

from stratus.base.errors import ConfigError, DecisionError, StratusError
from stratus.base.resources import request_units
from stratus.decisions import Decisions
from stratus.estimators import Estimator, OracleEstimator
from stratus.faults import Faults
from stratus.footprint import DEFAULT as DEFAULT_FOOTPRINT
from stratus.footprint import footprint_fraction
from stratus.ledger import Ledger
from stratus.model import (
    DONE,
    MIGRATING,
    PENDING,
    READY,
    RELEASED,
    RUNNING,
    TASK_STATES,
    WAITING,
    Instance,
    Task,
    sealed,
)
from stratus.pricing.catalog import M4, Catalog
from stratus.pricing.prices import ON_DEMAND, SPOT, PriceBook
from stratus.result import ReplayResult
from stratus.traces.schema import Trace, fit_to_catalog, gpu_requests
from stratus.view import ClusterView

# event kinds, in processing order at equal timestamps (a crash or a failed request is
# seen by a tick at the same instant)
EV_PRICE, EV_FINISH, EV_MIGRATED, EV_REVOKE, EV_CRASH, EV_ICE, EV_READY, EV_TICK = range(8)
MIB_BITS = 8 * 1024 * 1024  # bits in one MiB (the memory unit of resource vectors)
SPOT_WARNING_S = 120.0  # AWS two-minute interruption notice
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
    max_idle_ticks: int = 100_000  # stall guard: ticks in a row with no task finishing
    max_hours: float | None = None  # guard: stop this many simulated hours after the start
    faults: Faults | None = None  # the cloud's own faults (stratus.faults); None: none
    max_restarts: int = 100  # crash-loop guard: stop when a hopeless task lost this many runs
    anti_affinity: bool = True  # honour the trace's anti_affinity column (docs/decisions.md)
    # called at every tick with (simulated time, tasks done, tasks); its close(), if it has
    # one, when the replay ends, however it ends (stratus.progress.ProgressBar)
    progress: Callable[[float, int, int], None] | None = field(default=None, repr=False)

    def validate(self) -> None:
        if not (self.tick_s > 0 and math.isfinite(self.tick_s)):
            raise ConfigError(f"tick must be a positive number of seconds, got {self.tick_s}")
        lo, hi = self.spinup_s
        if not (0 <= lo <= hi and math.isfinite(hi)):
            raise ConfigError(f"spin-up range must satisfy 0 <= lo <= hi, got {self.spinup_s}")
        if not self.migration_mbps > 0:
            raise ConfigError(f"migration rate must be positive, got {self.migration_mbps}")
        if self.max_hours is not None and not self.max_hours > 0:
            raise ConfigError(f"--max-hours must be a positive number, got {self.max_hours}")
        footprint_fraction(self.migration_footprint)
        if not (isinstance(self.max_restarts, int) and self.max_restarts >= 1):
            raise ConfigError(f"max_restarts must be an integer >= 1, got {self.max_restarts!r}")
        if self.faults is not None:
            if not isinstance(self.faults, Faults):
                raise ConfigError(f"ReplayConfig.faults takes a Faults object, got "
                                  f"{self.faults!r} (stratus.faults.parse_faults reads a spec)")
            self.faults.validate()


@contextmanager
def rare_gc():
    """The engine allocates millions of small acyclic objects; with the default thresholds
    the cyclic collector rescans every live task and instance over and over (a third of the
    run time, measured). Collect rarely inside, restore the thresholds afterwards."""
    old = gc.get_threshold()
    gc.set_threshold(200_000, 50, 50)
    try:
        yield
    finally:
        gc.set_threshold(*old)


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
        self.prices = cfg.prices
        if self.prices.catalog is not cfg.catalog:
            cfg.catalog = self.prices.catalog
        self.markets = tuple(cfg.markets or (cfg.market,))
        if cfg.market not in self.markets:
            raise ConfigError(f"default market {cfg.market!r} is not among allowed markets {self.markets}")
        for m in self.markets:
            missing = [t.name for t in cfg.catalog if not self.prices.has(t.name, m)]
            if missing:
                raise ConfigError(f"no {m} prices for {', '.join(missing)} in price book {self.prices.name!r}")
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
        self.now = 0.0
        self._rng = np.random.default_rng([cfg.seed, 0xC10D])
        self._spin: list[float] = []
        self._mig_bits_per_s = cfg.migration_mbps * 1e6
        self._mig_fraction = footprint_fraction(cfg.migration_footprint)

        n = len(trace)
        f = trace.frame
        self.n = n
        self._submit = f["submit_s"].to_numpy(dtype=np.float64)
        # per-task columns read by index: compact arrays where a value is only read when
        # a task is made (a Python list holds an object per value: ~30 bytes more a task)
        self._submit_list = array("d", self._submit.tobytes())
        self._runtime = f["runtime_s"].tolist()
        fit_to_catalog(trace, cfg.catalog, drop=False)  # oversized tasks: an error naming rows
        # the catalog's dimensions (stratus.base.resources): GPUs only when it has a GPU type
        units = request_units(f["cpu"], f["mem_gib"], gpu_requests(f) if cfg.catalog.has_gpus else None)
        # tasks of a job share a request: one tuple per distinct request, not per task
        shared: dict[tuple[int, ...], tuple[int, ...]] = {}
        self._req = [shared.setdefault(r, r)
                     for r in zip(*(units[:, d].tolist() for d in range(units.shape[1])))]
        job_ids = f["job_id"].to_numpy()
        uniq, job_idx = np.unique(job_ids, return_inverse=True)
        self._job_ids = uniq
        self._job_of = array("q", job_idx.astype(np.int64).tobytes())
        self._task_index = array("q", f["task_id"].to_numpy(dtype=np.int64).tobytes())
        self._user = f["user"].tolist()
        self._job_name = f["job_name"].tolist()
        self._priority = f["priority"].tolist()
        self._user_est = f["estimate_s"].tolist() if "estimate_s" in f.columns else None
        # anti-affinity flags (Stratus §4.2 assumption 2), read only when a task is made
        self._aa = (f["anti_affinity"].to_numpy(dtype=bool).tolist()
                    if cfg.anti_affinity and "anti_affinity" in f.columns else None)
        # job id -> ids of the instances a flagged task of that job holds resources on:
        # kept by _hold/_unhold, read only for flagged tasks (placement checks, the view)
        self.aa_where: dict[int, set[int]] = {}
        nj = len(uniq)
        self.job_left = np.bincount(job_idx, minlength=nj).tolist()
        self.job_submit = np.full(nj, np.inf)
        np.minimum.at(self.job_submit, job_idx, self._submit)
        self.job_maxrt = np.zeros(nj)
        np.maximum.at(self.job_maxrt, job_idx, f["runtime_s"].to_numpy())
        self.job_end = [math.nan] * nj
        self._job_tasks: dict[int, list[Task]] | None = {} if self.estimator.learns_online else None

        # per-task state, indexed by tid (row in the trace)
        self.tasks: list[Task | None] = [None] * n
        self.state = [PENDING] * n
        self.loc: list[Instance | None] = [None] * n
        self.done = [0.0] * n
        self.run_start = [math.nan] * n
        self.epoch = [0] * n
        self.est = [math.nan] * n
        self.first_start = array("d", [math.nan]) * n  # written once or twice a task
        self.finish = array("d", [math.nan]) * n
        self.n_migrations = [0] * n
        self.mig_dest: dict[int, Instance] = {}  # queued or in-flight migrations
        self._transfer: dict[int, tuple[float, int]] = {}  # in flight: (planned end, log index)

        self.pending: list[Task] = []
        self.alive: dict[int, Instance] = {}
        self._spot_live: dict[str, dict[int, Instance]] = {}  # type -> live spot instances
        self.ledger = Ledger(len(cfg.catalog.types[0].capacity))  # released instances, as rows
        self.released: list[Instance] = []  # the objects too, only when recording
        self.current_price: dict[tuple[str, str], float] = {}
        self._heap: list[tuple] = []
        self._seq = count()
        self._next_arrival = 0
        self._iid = count()
        self.n_done = 0
        self.migrations = 0
        self.migration_seconds = 0.0
        dims = len(cfg.catalog.types[0].capacity)
        # idle resource-time on ready instances by state (see _touch), and resource-time
        # held by tasks in transfer (on each end), for the breakdown of the bill
        self._idle_frag = [0.0] * dims
        self._idle_shape = [0.0] * dims
        self._idle_low = [0.0] * dims
        self._idle_single = [0.0] * dims
        self.transfer_rt = [0.0] * dims
        # per instance, its fuller dimension's allocated share, weighted by its capacity in
        # the first dimension (proportional to size on m4/m5): the utilization a two-resource
        # workload can reach when every instance is full in *some* dimension
        self._fullest_rt = 0.0
        self.aborted_migrations = 0
        self.cancelled_migrations = 0  # decided, but void before the transfer began
        self.revocations = 0
        self.tasks_revoked = 0
        self.ticks = 0
        self._price_events = 0  # price changes on the heap: none left, prices are final
        self.ended_early: str | None = None  # why the replay stopped with tasks unfinished
        # run segments (progress intervals) for the fluid lower bound and audits
        self.seg_start = array("d")  # compact: one entry per run segment, read at the end
        self.seg_end = array("d")
        self.seg_tid = array("q")
        # optional audit logs
        self.holds: list[tuple[int, int, float, float]] | None = [] if cfg.record else None
        self._hold_open: dict[tuple[int, int], float] = {}
        self.mig_log: list[tuple[int, int, int, float, float]] | None = [] if cfg.record else None
        self.seg_iid: list[int] | None = [] if cfg.record else None
        # the cloud's own faults: their own random stream, so that a replay without them
        # draws exactly what it drew before they existed
        self.faults = cfg.faults
        self._frng = (np.random.default_rng([cfg.seed, 0xFA175]) if cfg.faults is not None
                      else None)
        self._crash_mean_s = (3600.0 / cfg.faults.crash_per_hour
                              if cfg.faults is not None and cfg.faults.crash_per_hour > 0 else 0.0)
        self.crashes = 0
        self.crash_restarts = 0  # tasks on a crashed instance, sent back to pending
        self.lost_task_s = 0.0  # progress those tasks lost, task-seconds
        self.lost_core_s = 0.0  # the same in vCPU-seconds
        self.lost_usd = 0.0  # dollars spent on that lost progress (docs/decisions.md)
        self.ice_failures = 0
        self.ice_returned = 0  # tasks of failed requests, sent back to pending
        self.failed_requests: list[tuple[float, str, str]] = []  # (reported at, type, market)
        self._short_until: dict[str, float] = {}  # type -> its shortage ends (requests fail)
        self.known_unavailable: dict[str, float] = {}  # type -> until when policies know it
        self._ice_end: dict[int, float] = {}  # failed request -> end of its type's shortage
        self.crash_log: dict[int, float] | None = {} if cfg.record else None
        self._restarts: dict[int, int] = {}  # tid -> runs lost to crashes
        self._crash_loop: str | None = None  # why the crash-loop guard stops the replay
        self.view = ClusterView(self)

    # ------------------------------------------------------------------ helpers
    def _push(self, t: float, kind: int, a=None, b=None) -> None:
        heappush(self._heap, (t, kind, next(self._seq), a, b))

    def _spinup(self) -> float:
        lo, hi = self.cfg.spinup_s
        if lo == hi:
            return lo
        if not self._spin:
            self._spin = self._rng.uniform(lo, hi, size=4096).tolist()[::-1]
        return self._spin.pop()

    def default_bid(self, itype) -> float:
        """The spot bid when a policy names none: the on-demand price (Stratus §3.3)."""
        return self.current_price.get((itype.name, ON_DEMAND), itype.ondemand_hourly)

    def migration_duration(self, task: Task) -> float:
        """Seconds to move the task's memory footprint (its request in MiB times the
        configured used fraction) at the migration rate (Stratus §4.1)."""
        return task.req[1] * self._mig_fraction * MIB_BITS / self._mig_bits_per_s

    def _make_task(self, tid: int) -> Task:
        t = Task(tid, int(self._job_ids[self._job_of[tid]]), self._task_index[tid],
                 self._submit_list[tid], self._runtime[tid], self._req[tid], self._user[tid],
                 self._job_name[tid], self._priority[tid],
                 None if self._user_est is None else self._user_est[tid],
                 self._aa is not None and self._aa[tid])
        self.tasks[tid] = t
        return t

    # ------------------------------------------------------------------ accounting
    def _touch(self, inst: Instance, t: float) -> None:
        """Accrue allocated and idle resource-time up to ``t`` before the instance's load
        changes. Idle capacity is booked by the instance's state over the interval: below
        half used in every dimension (the §3.4 clearing threshold: a *low* instance, kept
        alive by what is left on it), with a single task on it or several; else, in the
        instance's fullest dimension, room its packing left (fragmentation), and in its
        other dimensions, capacity its tasks' shape does not need (shape). Ties for the fullest
        dimension go to the first."""
        if inst.state == READY:
            dt = t - inst._used_since
            if dt > 0:
                integ = inst._used_integral
                cap, free = inst.itype.capacity, inst.free
                low = True
                fullest, top = 0.0, 0
                for d, (c, f) in enumerate(zip(cap, free)):
                    integ[d] += (c - f) * dt
                    if c and 2 * (c - f) >= c:  # a dimension the type lacks (0 GPUs) is not "used"
                        low = False
                    if c and (c - f) / c > fullest:
                        fullest, top = (c - f) / c, d
                self._fullest_rt += fullest * cap[0] * dt
                if low:
                    idle = self._idle_single if len(inst._tasks) == 1 else self._idle_low
                    for d, f in enumerate(free):
                        idle[d] += f * dt
                else:
                    for d, f in enumerate(free):
                        if d == top:
                            self._idle_frag[d] += f * dt
                        else:
                            self._idle_shape[d] += f * dt
            inst._used_since = t

    def _hold(self, inst: Instance, task: Task, t: float) -> None:
        self._touch(inst, t)
        inst._tasks[task.tid] = task
        inst.free = tuple(map(sub, inst.free, task.req))
        inst.hosted += 1
        if task.anti_affinity:
            self.aa_where.setdefault(task.job, set()).add(inst.iid)
        if self.holds is not None:
            self._hold_open[(inst.iid, task.tid)] = t

    def _unhold(self, inst: Instance, task: Task, t: float) -> None:
        self._touch(inst, t)
        del inst._tasks[task.tid]
        inst.free = tuple(map(add, inst.free, task.req))
        if task.anti_affinity:
            where = self.aa_where[task.job]
            where.discard(inst.iid)
            if not where:
                del self.aa_where[task.job]
        if self.holds is not None:
            s = self._hold_open.pop((inst.iid, task.tid))
            if not inst.failed:  # a failed request never existed: it holds nothing
                self.holds.append((inst.iid, task.tid, s, t))

    def _release(self, inst: Instance, t: float) -> None:
        if inst._tasks:
            raise StratusError(f"engine bug: releasing instance {inst.iid} with tasks")
        if inst.failed:  # a request the provider could not fill: nothing to bill or record
            inst.state = RELEASED
            inst.released_at = t
            del self.alive[inst.iid]
            self._ice_end.pop(inst.iid, None)
            return
        self._touch(inst, t)
        inst.state = RELEASED
        inst.released_at = t
        inst.cost = self.prices.cost(inst.itype.name, inst.market, inst.requested_at, t)
        del self.alive[inst.iid]
        if inst.market == SPOT:
            del self._spot_live[inst.itype.name][inst.iid]
        self.ledger.add(inst)
        if self.cfg.record:  # the audit checks every instance object
            self.released.append(inst)

    def _maybe_release(self, inst: Instance, t: float) -> None:
        if not inst._tasks and not inst.keep and inst.state != RELEASED:
            self._release(inst, t)

    # ------------------------------------------------------------------ task life
    def _start(self, task: Task, t: float) -> None:
        tid = task.tid
        self.state[tid] = RUNNING
        self.run_start[tid] = t
        if self.first_start[tid] != self.first_start[tid]:  # NaN: first start
            self.first_start[tid] = t
        self._push(t + self._runtime[tid] - self.done[tid], EV_FINISH, tid, self.epoch[tid])

    def _stop_progress(self, tid: int, t: float) -> None:
        start = self.run_start[tid]
        self.done[tid] += t - start
        if t > start:
            self.seg_start.append(start)
            self.seg_end.append(t)
            self.seg_tid.append(tid)
            if self.seg_iid is not None:
                self.seg_iid.append(self.loc[tid].iid)
        self.run_start[tid] = math.nan
        self.epoch[tid] += 1

    def _begin_transfer(self, task: Task, t: float) -> None:
        tid = task.tid
        self._stop_progress(tid, t)
        self.state[tid] = MIGRATING
        dur = self.migration_duration(task)
        self.migrations += 1
        self.migration_seconds += dur
        for d, r in enumerate(task.req):
            self.transfer_rt[d] += r * dur
        self.n_migrations[tid] += 1
        self._push(t + dur, EV_MIGRATED, tid, self.epoch[tid])
        self._transfer[tid] = (t + dur, len(self.mig_log) if self.mig_log is not None else -1)
        if self.mig_log is not None:
            self.mig_log.append((tid, self.loc[tid].iid, self.mig_dest[tid].iid, t, t + dur))

    def _abort_transfer(self, tid: int, t: float) -> None:
        """A transfer cut short at ``t`` (an end was revoked): count only the time it took."""
        end, k = self._transfer.pop(tid)
        self.migration_seconds -= end - t
        for d, r in enumerate(self.tasks[tid].req):
            self.transfer_rt[d] -= r * (end - t)
        self.aborted_migrations += 1
        if k >= 0:
            rec = self.mig_log[k]
            self.mig_log[k] = (*rec[:4], t)

    def _on_finish(self, tid: int, epoch: int, t: float) -> None:
        if epoch != self.epoch[tid]:
            return  # superseded by a migration or revocation
        task = self.tasks[tid]
        self.tasks[tid] = None  # done for good: the engine keeps no task object it won't use
        inst = self.loc[tid]
        self._stop_progress(tid, t)
        self.loc[tid] = None  # else every instance a task ended on stays alive to the end
        self.state[tid] = DONE
        self.finish[tid] = t
        self.n_done += 1
        self._unhold(inst, task, t)
        dest = self.mig_dest.pop(tid, None)
        if dest is not None:  # finished before its queued migration could start
            self.cancelled_migrations += 1
            self._unhold(dest, task, t)
            self._maybe_release(dest, t)
        self._maybe_release(inst, t)
        j = self._job_of[tid]
        self.job_left[j] -= 1
        if self._job_tasks is not None:
            self._job_tasks.setdefault(j, []).append(task)
        if self.job_left[j] == 0:
            self.job_end[j] = t
            if self._job_tasks is not None:
                self.estimator.observe(self._job_tasks.pop(j), t)

    def _on_migrated(self, tid: int, epoch: int, t: float) -> None:
        if epoch != self.epoch[tid]:
            return
        task = self.tasks[tid]
        src = self.loc[tid]
        dst = self.mig_dest.pop(tid)
        del self._transfer[tid]
        self._unhold(src, task, t)
        self.loc[tid] = dst
        self._start(task, t)
        self._maybe_release(src, t)

    def _on_ready(self, inst: Instance, t: float) -> None:
        if inst.state == RELEASED:  # released (emptied or revoked) before it came up
            return
        inst.state = READY
        inst.ready_at = t
        inst._used_since = t
        if self._crash_mean_s:  # Poisson crashes from the moment it is up (memoryless)
            self._push(t + self._frng.exponential(self._crash_mean_s), EV_CRASH, inst.iid)
        for task in list(inst._tasks.values()):
            tid = task.tid
            if self.state[tid] == WAITING:
                self._start(task, t)
            elif self.mig_dest.get(tid) is inst and self.state[tid] == RUNNING:
                self._begin_transfer(task, t)

    def _on_price(self, key: tuple[str, str], t: float) -> None:
        self._price_events -= 1
        price = self.prices.price(key[0], key[1], t)
        self.current_price[key] = price
        nxt = self.prices.next_change(key[0], key[1], t)
        if nxt < math.inf:
            self._push(nxt, EV_PRICE, key)
            self._price_events += 1
        if key[1] == SPOT:
            for inst in self._spot_live.get(key[0], {}).values():
                if inst.revoke_at is None and price > inst.bid:
                    inst.revoke_at = t + SPOT_WARNING_S
                    self._push(inst.revoke_at, EV_REVOKE, inst)

    def _on_revoke(self, inst: Instance, t: float) -> None:
        """The provider takes a spot instance back. Tasks on it lose their progress and
        return to pending; tasks merely reserved on it as a migration target stay where
        they run (an in-flight transfer into it is aborted and the task resumes)."""
        if inst.state == RELEASED:
            return
        self.revocations += 1
        self._evict(inst, t, False)

    def _on_crash(self, iid: int, t: float) -> None:
        """An instance dies (stratus.faults): as a revocation without notice. Its bill stops
        now; its tasks lose their progress, which is counted as lost work."""
        inst = self.alive.get(iid)
        if inst is None:  # released before its crash time
            return
        self.crashes += 1
        if self.crash_log is not None:
            self.crash_log[iid] = t
        self._evict(inst, t, True)

    def _ice_fails(self, name: str, t: float, delay: float) -> bool:
        """Whether a request for type ``name`` made at ``t`` fails (insufficient capacity),
        its failure reported ``delay`` seconds later. A fresh failure starts a shortage of
        the type that lasts until ice-window seconds after it is reported."""
        f = self.faults
        if self._short_until.get(name, -math.inf) > t:
            return True
        if f.ice_prob > 0 and self._frng.random() < f.ice_prob:
            if f.ice_window_s:
                self._short_until[name] = t + delay + f.ice_window_s
            return True
        return False

    def _on_ice(self, inst: Instance, t: float) -> None:
        """A failed request is reported: its tasks go back to pending (nothing ran, nothing
        is billed), reservations on it as a migration target are cancelled, and with an
        ice-window the type is known unavailable for that long."""
        if inst.state == RELEASED:  # emptied and released before the failure was known
            return
        name = inst.itype.name
        self.ice_failures += 1
        self.failed_requests.append((t, name, inst.market))
        end = self._ice_end.pop(inst.iid, t)
        if end > t:  # known short until the shortage this failure belongs to ends
            self.known_unavailable[name] = max(self.known_unavailable.get(name, -math.inf), end)
        for task in list(inst._tasks.values()):
            tid = task.tid
            self._unhold(inst, task, t)
            if self.loc[tid] is not inst:  # a migration target that never came up
                del self.mig_dest[tid]
                self.cancelled_migrations += 1
                continue
            self.state[tid] = PENDING
            self.loc[tid] = None
            self.pending.append(task)
            self.ice_returned += 1
        inst.keep = False
        self._release(inst, t)

    def _evict(self, inst: Instance, t: float, crash: bool) -> None:
        """Take ``inst`` away at ``t`` (revoked or crashed) and send its tasks back."""
        for task in list(inst._tasks.values()):
            tid = task.tid
            dest = self.mig_dest.get(tid)
            if self.loc[tid] is not inst:  # reserved here as a migration target
                del self.mig_dest[tid]
                self._unhold(inst, task, t)
                if self.state[tid] == MIGRATING:  # in flight to here: resume at the source
                    self._abort_transfer(tid, t)
                    self.epoch[tid] += 1
                    self._start(task, t)
                else:
                    self.cancelled_migrations += 1
                continue
            if dest is not None:  # a migration away from here (queued or in flight) is void
                del self.mig_dest[tid]
                if self.state[tid] == MIGRATING:
                    self._abort_transfer(tid, t)
                else:
                    self.cancelled_migrations += 1
                self._unhold(dest, task, t)
                self._maybe_release(dest, t)
            if self.state[tid] == RUNNING:
                self._stop_progress(tid, t)
            else:
                self.epoch[tid] += 1  # waiting or migrating: drop its pending events
            self._unhold(inst, task, t)
            if crash:
                self._lose(inst, task, t)
            else:
                self.tasks_revoked += 1
            self.done[tid] = 0.0
            self.state[tid] = PENDING
            self.loc[tid] = None
            self.pending.append(task)
        inst.keep = False
        self._release(inst, t)

    def _lose(self, inst: Instance, task: Task, t: float) -> None:
        """Book a crashed task's lost progress: seconds, vCPU-seconds, and dollars -- the
        seconds at the crashed instance's price, times the task's dominant share of it."""
        lost = self.done[task.tid]
        self.crash_restarts += 1
        k = self._restarts[task.tid] = self._restarts.get(task.tid, 0) + 1
        if k >= self.cfg.max_restarts and self._crash_loop is None:
            # a run survives with probability exp(-rate x runtime): a task expected to need
            # more than HOPELESS_RUNS runs is in a crash loop; any other task only has a
            # long streak of bad luck, which ends (a geometric number of runs)
            exponent = task.runtime / self._crash_mean_s
            if exponent > math.log(HOPELESS_RUNS):
                runs = f"{math.exp(exponent):.3g}" if exponent < 700 else "more than 1e300"
                self._crash_loop = (f"crash loop: task {task.tid} (job {task.job}, runtime "
                                    f"{task.runtime:g} s) lost {k} runs to crashes at "
                                    f"{self.faults.crash_per_hour:g} per instance-hour and "
                                    f"would need about {runs} runs to finish once")
        if lost > 0:
            self.lost_task_s += lost
            self.lost_core_s += lost * task.req[0] / 1000.0  # milli-vCPU (stratus.base.resources)
            share = max(r / c for r, c in zip(task.req, inst.itype.capacity) if c)
            price = self.current_price[(inst.itype.name, inst.market)]
            self.lost_usd += lost * price / 3600.0 * min(share, 1.0)

    # ------------------------------------------------------------------ decisions
    def _bad(self, what: str) -> DecisionError:
        name = getattr(self.scheduler, "name", type(self.scheduler).__name__)
        return DecisionError(f"scheduler {name!r} at t={self.now:.3f}s: {what}")

    def _check_live(self, inst: Instance) -> None:
        if self.alive.get(getattr(inst, "iid", -1)) is not inst:
            raise self._bad(f"instance {inst!r} is not live")

    def _check_fits(self, inst: Instance, task: Task) -> None:
        for r, f in zip(task.req, inst.free):
            if r > f:
                raise self._bad(f"{task!r} does not fit on {inst!r} (free {inst.free})")
        if task.anti_affinity and inst.iid in self.aa_where.get(task.job, ()):
            raise self._bad(f"anti-affinity: {task!r} would join another flagged task of "
                            f"job {task.job} on {inst!r}")

    def _known(self, task: Task) -> bool:
        tid = getattr(task, "tid", -1)
        if not 0 <= tid < self.n:
            return False
        known = self.tasks[tid]
        # a finished task's object is dropped; its state still says it is done
        return known is task or (known is None and self.state[tid] == DONE)

    def _claim_pending(self, task: Task) -> None:
        if not self._known(task):
            raise self._bad(f"{task!r} is not a task of this replay")
        if self.state[task.tid] != PENDING:
            raise self._bad(f"{task!r} is not pending (state {TASK_STATES[self.state[task.tid]]})")
        self.state[task.tid] = WAITING

    def _check_migratable(self, task: Task, dest: Instance) -> None:
        tid = task.tid
        if not self._known(task) or self.state[tid] != RUNNING or tid in self.mig_dest:
            raise self._bad(f"{task!r} cannot migrate: it is not running or already migrating")
        if self.loc[tid] is dest:
            raise self._bad(f"{task!r} is already on {dest!r}")

    def _apply(self, dec: Decisions) -> None:
        t = self.now
        claimed = False
        for acq in dec.acquisitions:
            itype = acq.itype
            if itype.name not in self.cfg.catalog or self.cfg.catalog[itype.name] != itype:
                raise self._bad(f"instance type {itype.name!r} is not in the replay's catalog")
            if acq.market not in self.markets:
                raise self._bad(f"market {acq.market!r} is not allowed (allowed: {self.markets})")
            if not acq.tasks and not acq.migrate and not acq.keep:
                raise self._bad(f"acquisition of {itype.name} with no tasks")
            total = [0] * len(itype.capacity)
            flagged: set[int] | None = None
            for task in (*acq.tasks, *acq.migrate):
                for d, r in enumerate(task.req):
                    total[d] += r
                if task.anti_affinity:
                    flagged = flagged if flagged is not None else set()
                    if task.job in flagged:
                        raise self._bad(f"anti-affinity: acquisition of {itype.name} lists two "
                                        f"flagged tasks of job {task.job}")
                    flagged.add(task.job)
            if any(x > c for x, c in zip(total, itype.capacity)):
                raise self._bad(f"tasks of {tuple(total)} do not fit a {itype.name} {itype.capacity}")
            bid = acq.bid
            if acq.market == SPOT and bid is None:
                bid = self.default_bid(itype)
            for task in acq.tasks:
                self._claim_pending(task)
            if len({t.tid for t in acq.migrate}) != len(acq.migrate):
                raise self._bad(f"acquisition of {itype.name} lists a task to migrate twice")
            for task in acq.migrate:
                self._check_migratable(task, None)
            inst = Instance(next(self._iid), itype, acq.market, bid, t)
            inst.keep = inst.was_kept = acq.keep
            self.alive[inst.iid] = inst
            delay = self._spinup()
            if self.faults is not None and self._ice_fails(itype.name, t, delay):
                inst.failed = True  # known after the delay it would have taken to come up
                self._ice_end[inst.iid] = self._short_until.get(itype.name, t)
                self._push(t + delay, EV_ICE, inst)
            else:
                if acq.market == SPOT:
                    self._spot_live.setdefault(itype.name, {})[inst.iid] = inst
                self._push(t + delay, EV_READY, inst)
            for task in acq.tasks:
                self.loc[task.tid] = inst
                self._hold(inst, task, t)
                claimed = True
            for task in acq.migrate:
                self.mig_dest[task.tid] = inst
                self._hold(inst, task, t)
            if acq.market == SPOT and not inst.failed and self.current_price[(itype.name, SPOT)] > bid:
                inst.revoke_at = t + SPOT_WARNING_S
                self._push(inst.revoke_at, EV_REVOKE, inst)
        for pl in dec.placements:
            task, inst = pl.task, pl.instance
            self._check_live(inst)
            self._claim_pending(task)
            self._check_fits(inst, task)
            self.loc[task.tid] = inst
            self._hold(inst, task, t)
            claimed = True
            if inst.state == READY:
                self._start(task, t)
        for mg in dec.migrations:
            task, dest = mg.task, mg.dest
            self._check_live(dest)
            self._check_migratable(task, dest)
            self._check_fits(dest, task)
            self.mig_dest[task.tid] = dest
            self._hold(dest, task, t)
            if dest.state == READY:
                self._begin_transfer(task, t)
        for inst in dec.releases:
            self._check_live(inst)
            if inst._tasks:
                raise self._bad(f"cannot release {inst!r}: it still holds tasks")
            self._release(inst, t)
        for iid, keep in dec.keep.items():
            inst = self.alive.get(iid)
            if inst is None:
                raise self._bad(f"keep: instance {iid} is not live")
            inst.keep = bool(keep)
            inst.was_kept |= inst.keep
            self._maybe_release(inst, t)
        if claimed:
            self.pending = [p for p in self.pending if self.state[p.tid] == PENDING]

    # ------------------------------------------------------------------ main loop
    def _ingest_arrivals(self, t: float) -> None:
        i = self._next_arrival
        j = int(np.searchsorted(self._submit, t, side="right"))
        if j > i:
            new = [self._make_task(tid) for tid in range(i, j)]
            est = self.estimator.predict(new)
            for task, e in zip(new, est):
                self.est[task.tid] = e
            self.pending.extend(new)
            self._next_arrival = j

    def _next_tick_after(self, t: float) -> float:
        tick = self.cfg.tick_s
        if self.alive or self.pending or self._next_arrival >= self.n:
            return (math.floor(t / tick + 1e-9) + 1) * tick
        nxt = self._submit_list[self._next_arrival]
        return max(math.ceil(nxt / tick - 1e-9) * tick, (math.floor(t / tick + 1e-9) + 1) * tick)

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
        cfg = self.cfg
        self.estimator.bind(self.trace)
        # the scheduler forgets any earlier replay (stratus.compose.Scheduler), before the
        # empty-trace return too: its stats() go into this replay's summary
        reset = getattr(self.scheduler, "reset", None)
        if reset is not None:
            reset()
        if self.n == 0:
            return self._result(_time.perf_counter() - wall0)
        first_tick = math.ceil(self._submit_list[0] / cfg.tick_s - 1e-9) * cfg.tick_s
        self.now = first_tick
        for itype in cfg.catalog:
            for market in self.prices.markets():
                if not self.prices.has(itype.name, market):
                    continue
                key = (itype.name, market)
                self.current_price[key] = self.prices.price(itype.name, market, first_tick)
                nxt = self.prices.next_change(itype.name, market, first_tick)
                if nxt < math.inf:
                    self._push(nxt, EV_PRICE, key)
                    self._price_events += 1
        if hasattr(self.scheduler, "start"):
            self.scheduler.start(self.view)
        self._push(first_tick, EV_TICK)
        heap = self._heap
        idle_ticks = 0
        progress = cfg.progress
        n = self.n
        done_at_tick = 0  # tasks finished as of the last tick, for the stall guard
        limit = math.inf if cfg.max_hours is None else first_tick + cfg.max_hours * 3600.0
        while heap:
            t, kind, _, a, b = heappop(heap)
            if t > limit:  # the max_hours guard: stop at the limit, not at the next event
                self.now = limit
                if self.n_done != n:  # all done, only kept-idle instances left: not early
                    self._halt(limit, f"stopped at the max-hours guard ({cfg.max_hours:g} h "
                                      f"of simulated time)")
                break
            self.now = t
            if kind == EV_FINISH:
                self._on_finish(a, b, t)
            elif kind == EV_TICK:
                self._ingest_arrivals(t)
                self.ticks += 1
                if self.pending or self.alive:
                    with sealed():  # instances and tasks read-only to the policy
                        dec = self.scheduler.schedule(self.view)
                    if dec:
                        self._apply(dec)
                if self.n_done == n and all(not i._tasks for i in self.alive.values()):
                    break
                starved = self._starved() or self._crash_loop
                if starved:
                    self._halt(t, starved)
                    break
                # a scheduler that never places, or a market that revokes everything it
                # gets, would tick forever: stop when no task has finished for too long
                if self.n_done == done_at_tick:
                    idle_ticks += 1
                    if idle_ticks > cfg.max_idle_ticks:
                        self._halt(t, f"scheduler {getattr(self.scheduler, 'name', '?')!r}: no "
                                      f"task finished for {idle_ticks - 1} ticks "
                                      f"({len(self.pending)} pending); raise max_idle_ticks "
                                      f"for longer tasks")
                        break
                else:
                    idle_ticks = 0
                done_at_tick = self.n_done
                if progress is not None:
                    progress(t, self.n_done, n)
                self._push(self._next_tick_after(t), EV_TICK)
            elif kind == EV_READY:
                self._on_ready(a, t)
            elif kind == EV_MIGRATED:
                self._on_migrated(a, b, t)
            elif kind == EV_PRICE:
                self._on_price(a, t)
            elif kind == EV_REVOKE:
                self._on_revoke(a, t)
            elif kind == EV_CRASH:
                self._on_crash(a, t)
            elif kind == EV_ICE:
                self._on_ice(a, t)
            if self.n_done == n and not self.alive and kind != EV_TICK:
                break
        for inst in list(self.alive.values()):  # kept-idle instances end with the replay
            inst.keep = False
            self._release(inst, self.now)
        if self.n_done != n and self.ended_early is None:
            raise StratusError(f"engine bug: replay ended with {n - self.n_done} unfinished "
                               f"task(s) and no reason")
        if progress is not None:
            progress(self.now, self.n_done, n)
        return self._result(_time.perf_counter() - wall0)

    def _result(self, wall_s: float) -> ReplayResult:
        res = ReplayResult.build(self, wall_s)
        res.summary["tasks_unfinished"] = self.n - self.n_done
        res.summary["ended_early"] = self.ended_early
        if "anti_affinity" in self.trace.frame.columns:  # only for traces that carry flags
            aa = self.trace.frame["anti_affinity"].to_numpy(dtype=bool)
            res.summary["anti_affinity"] = {
                "honoured": self._aa is not None, "flagged_tasks": int(aa.sum()),
                "flagged_jobs": int(np.unique(self.trace.frame["job_id"].to_numpy()[aa]).size)}
        return res

    def _starved(self) -> str | None:
        """Why no task can ever run again, or None. With no instance alive and no price
        change ahead, the state can only change by acquiring; if no type is acquirable in
        any allowed market (spot: price above the bid), or every task left fits none of
        those that are and no more arrive, capacity can never be had."""
        if self.faults is not None and self.faults.ice_prob >= 1 and self.ice_failures \
                and all(i.failed for i in self.alive.values()):
            return "capacity can never be had: every acquisition request fails (ice:1)"
        if self.alive:
            return None
        if not self.pending and self._next_arrival >= self.n:
            return None
        if self._price_events or ON_DEMAND in self.markets:
            return None
        ok = self.view.acquirable_types(shortages=False) if SPOT in self.markets else []
        if ok and (self._next_arrival < self.n or any(
                all(r <= c for r, c in zip(task.req, it.capacity))
                for task in self.pending for it in ok)):
            return None
        what = ("every instance type's spot price stays above the bid"
                if not ok else "no task left fits a type whose spot price is within the bid")
        return f"capacity can never be had: {what} to the end of the price trace"

    def _halt(self, t: float, why: str) -> None:
        """End the replay at ``t`` with tasks unfinished: running tasks stop (their progress
        so far is kept in the run segments), transfers abort, every instance is released and
        billed to ``t``. ``why`` is reported in the summary (``ended_early``)."""
        self.ended_early = why
        for inst in list(self.alive.values()):
            for task in list(inst._tasks.values()):
                tid = task.tid
                if self.loc[tid] is inst:
                    if self.state[tid] == RUNNING:
                        self._stop_progress(tid, t)
                    elif self.state[tid] == MIGRATING:
                        self._abort_transfer(tid, t)
                        self.epoch[tid] += 1
                    self.state[tid] = PENDING
                self._unhold(inst, task, t)
            inst.keep = False
            self._release(inst, t)
        self.mig_dest.clear()


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


__all__ = ["Engine", "ReplayConfig", "replay"]
