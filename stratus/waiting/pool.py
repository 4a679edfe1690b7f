"""A fixed (reserved) pool of identical servers under a waiting policy, event by event
(paper 000 §5: the trace-driven simulator). Each trace row is one job here: it needs
``cpu`` cores and ``mem_gib`` GiB on one server for ``runtime_s`` seconds.

On arrival the policy sends a job to the cloud at once or lets it queue for the pool; an
AJW-T or compound job that has waited ``b`` leaves for the cloud then (000 Eqs. 12-13).
The pool advances from arrival and finish to arrival and finish, no ticks; at equal times
finishes come first, then departures for the cloud, then arrivals. Its servers are
identical, or each of its own shape (``PoolSpec.mixed``: a reserved mix of types).

Two exact paths give the same answers where both apply:
* *unit* pools of identical servers, where no two jobs ever share a server, with FCFS
  order: the Kiefer-Wolfowitz recursion (each arrival takes the earliest server to free up), two heap
  operations a job, which is what an M/M/s trace of millions of jobs needs;
* the general path: several jobs per server, best-fit or first-fit placement, FCFS or SJF
  queues, work-conserving or not.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from stratus.base.errors import ConfigError

POLICIES = ("njw", "ajw", "ajw-t", "sww", "ljw", "compound", "ljw-spec")
PLACEMENTS = ("best-fit", "first-fit")
ORDERS = ("fcfs", "sjf")
_EPS = 1e-9
#: pools of at least this many servers also keep their free room as arrays, where one
#: vectorized scan places a job faster than a loop over the servers
_WIDE = 128
#: a queue pass over more rows than this tests them as arrays, fewer one by one
_FEW = 128


@dataclass(frozen=True)
class PoolSpec:
    """``servers`` identical servers of ``cores`` and ``mem_gib``; or, with ``shapes``, one
    (cores, GiB) per server in that order (a reserved mix, ``PoolSpec.mixed``). Then
    ``servers`` is ``len(shapes)`` and ``cores``/``mem_gib`` are derived, not given: the
    largest cores and the largest GiB of any server (a bound on any server's room; the
    shape of every server when all are equal)."""

    servers: int
    cores: float
    mem_gib: float
    placement: str = "best-fit"  # 000 §5: fewest free cores that fit
    order: str = "fcfs"
    work_conserving: bool = True  # the first queued job that fits starts, not only the head
    shapes: tuple[tuple[float, float], ...] | None = None

    @classmethod
    def mixed(cls, shapes, placement: str = "best-fit", order: str = "fcfs",
              work_conserving: bool = True) -> PoolSpec:
        """A pool of servers of these (cores, GiB) shapes, in this order (the order best
        fit breaks ties by and first fit scans in)."""
        shapes = _shapes(shapes)
        return cls(len(shapes), max(c for c, _ in shapes), max(m for _, m in shapes),
                   placement, order, work_conserving, shapes)

    def __post_init__(self) -> None:
        if not (isinstance(self.servers, int) and 0 <= self.servers <= 1_000_000):
            raise ConfigError(f"--reserved must be a whole number from 0 to 1,000,000, got "
                              f"{self.servers!r}")
        for name, v in (("--reserved-cores", self.cores), ("--reserved-mem-gb", self.mem_gib)):
            if not (v > 0 and math.isfinite(v)):
                raise ConfigError(f"{name} must be a positive number, got {v}")
        if self.placement not in PLACEMENTS:
            raise ConfigError(f"--packing takes {' or '.join(PLACEMENTS)}, got {self.placement!r}")
        if self.order not in ORDERS:
            raise ConfigError(f"--scheduling takes {' or '.join(ORDERS)}, got {self.order!r}")
        if self.shapes is not None:
            shapes = _shapes(self.shapes)
            object.__setattr__(self, "shapes", shapes)
            top = (len(shapes), max(c for c, _ in shapes), max(m for _, m in shapes))
            if (self.servers, self.cores, self.mem_gib) != top:
                raise ConfigError(f"a pool of {len(shapes)} shapes has {top[0]} servers of "
                                  f"at most {top[1]:g} cores and {top[2]:g} GiB, not "
                                  f"{self.servers} of {self.cores:g} and {self.mem_gib:g} "
                                  f"(PoolSpec.mixed derives them)")

    @property
    def uniform(self) -> bool:
        """Every server has the same shape (``cores`` and ``mem_gib``)."""
        return self.shapes is None or all(x == self.shapes[0] for x in self.shapes)

    def server_shapes(self) -> list[tuple[float, float]]:
        """(cores, GiB) of each server, in order."""
        if self.shapes is None:
            return [(float(self.cores), float(self.mem_gib))] * self.servers
        return list(self.shapes)

    def total_cores(self) -> float:
        return float(self.servers * self.cores) if self.shapes is None else float(
            sum(c for c, _ in self.shapes))

    def fits(self, cpu: np.ndarray, mem: np.ndarray) -> np.ndarray:
        """Per job, whether it fits one server at all (an empty pool: none)."""
        cpu = np.asarray(cpu, dtype=np.float64)
        mem = np.asarray(mem, dtype=np.float64)
        if self.servers == 0:
            return np.zeros(len(cpu), dtype=bool)
        if self.uniform:
            return (cpu <= self.cores + _EPS) & (mem <= self.mem_gib + _EPS)
        out = np.zeros(len(cpu), dtype=bool)
        for c, m in dict.fromkeys(self.shapes):
            out |= (cpu <= c + _EPS) & (mem <= m + _EPS)
        return out


def _shapes(shapes) -> tuple[tuple[float, float], ...]:
    """At least one (cores, GiB) pair of positive finite numbers, as a tuple of floats."""
    try:
        out = tuple((float(c), float(m)) for c, m in shapes)
    except (TypeError, ValueError):
        raise ConfigError(f"server shapes are (cores, GiB) pairs, got {shapes!r}") from None
    if not out:
        raise ConfigError("a pool of server shapes needs at least one server")
    for c, m in out:
        if not (c > 0 and m > 0 and math.isfinite(c) and math.isfinite(m)):
            raise ConfigError(f"a server's cores and GiB must be positive numbers, got "
                              f"({c:g}, {m:g})")
    return out


@dataclass(frozen=True)
class WaitingPolicy:
    """A waiting policy of 000 §3-4. ``b``: seconds a job may wait (AJW-T, SWW, compound);
    ``t``: runtime below which a job is short and goes to the cloud (LJW, compound).
    ``ljw-spec`` is LJW by speculative execution (003 §3.1): a job that finds no free
    server starts at once on an on-demand VM; if it is still running at ``t`` it is killed
    (the VM's t seconds are wasted) and queues for the pool.
    ``short``: per job, whether the policy *believes* it short (None: runtime < t, the
    oracle); ``over``/``under``: per job, a misprediction of its wait (SWW, compound:
    over-predicted jobs go to the cloud at once, under-predicted ones wait b, §4.1.1)."""

    name: str
    b: float = 0.0
    t: float = 0.0

    def __post_init__(self) -> None:
        if self.name not in POLICIES:
            raise ConfigError(f"unknown waiting policy {self.name!r}; known: "
                              f"{', '.join(POLICIES)}")
        for key, v in (("--b", self.b), ("--t", self.t)):
            if not (v >= 0 and math.isfinite(v)):
                raise ConfigError(f"{key} must be a number of seconds ≥ 0, got {v}")


@dataclass
class PoolRun:
    """Per job: where it ran (True: cloud), when it started (reserved) or left (cloud),
    and how long it waited."""

    cloud: np.ndarray  # bool
    start: np.ndarray  # float: start on the pool, or departure for the cloud
    wait: np.ndarray  # float
    fits: np.ndarray  # bool: the job fits one server at all
    server: np.ndarray | None = None  # the pool server each job ran on (-1: cloud); general path
    killed: np.ndarray | None = None  # ljw-spec: ran t seconds in the cloud, then the pool
    # ljw-spec: every speculative cloud run, (job, start, end, outcome), outcome "done"
    # (the job ended there), "killed" (at t) or "revoked" (spot, before it ended)
    speculations: list[tuple[int, float, float, str]] | None = None


def _unit_pool(spec: PoolSpec, cpu: np.ndarray, mem: np.ndarray, fits: np.ndarray) -> bool:
    """No two jobs that fit a server can share one."""
    if not fits.any():
        return True
    c, m = cpu[fits], mem[fits]
    return bool(2 * c.min() > spec.cores + _EPS or 2 * m.min() > spec.mem_gib + _EPS)


def simulate(spec: PoolSpec, policy: WaitingPolicy, submit: np.ndarray, runtime: np.ndarray,
             cpu: np.ndarray, mem: np.ndarray, short: np.ndarray | None = None,
             over: np.ndarray | None = None, under: np.ndarray | None = None,
             estimate: np.ndarray | None = None, predictor=None, observe=None,
             short_first: bool = False, timer: bool = False, revocation=None) -> PoolRun:
    """Run the pool; jobs must be in submission order. ``estimate``: SJF's runtime key
    (None: the true runtime). SWW and compound ask ``predictor(features)`` for a job's
    wait instead of the oracle (003 §3.2; features: ``STATE_FEATURES``); ``observe(j,
    features, oracle_wait)`` sees every such decision (a training run, or scoring one).
    Either forces the event path (the fast one has no queue to describe).
    ``short_first``: a short job (LJW, compound) takes a free server when the queue lets it
    pass, else leaves for the cloud at once (004 §5 read as in the spec's B.2), instead of
    always leaving. ``timer``: compound queues a long job that cannot start and sends it to
    the cloud at b if still queued (AJW-T's timer, 000 Eq. 12; 004 §5 "wait ... less than
    24 hours"), instead of asking the wait oracle.
    ``revocation(j, t)``: ljw-spec speculates on spot, and a speculation of job j begun at
    t is revoked then (inf: never; ``stratus.waiting.spot``); a revoked job restarts as if
    it arrived then; it forces the event path."""
    n = len(submit)
    submit = np.asarray(submit, dtype=np.float64)
    if n and np.any(np.diff(submit) < 0):
        raise ConfigError("pool simulation: jobs must be in submission order")
    fits = spec.fits(cpu, mem)
    if short is None:
        short = runtime < policy.t if policy.name in ("ljw", "compound") else np.zeros(n, bool)
    elif policy.name not in ("ljw", "compound"):
        short = np.zeros(n, bool)
    over = np.zeros(n, bool) if over is None else np.asarray(over, bool)
    under = np.zeros(n, bool) if under is None else np.asarray(under, bool)
    hooks = predictor is not None or observe is not None
    if revocation is not None and policy.name == "ljw-spec":
        hooks = True
    else:
        revocation = None
    if spec.order == "fcfs" and not hooks and spec.uniform and _unit_pool(spec, cpu, mem, fits):
        return _unit_fcfs(spec.servers, policy, submit, runtime, fits, short, over, under,
                          short_first, timer)
    key = runtime if estimate is None else np.asarray(estimate, dtype=np.float64)
    return _general(spec, policy, submit, runtime, cpu, mem, fits, short, over, under, key,
                    predictor, observe, short_first, timer, revocation)


#: cluster state when a job arrives (paper 003 Table 1), then the job's own request
STATE_FEATURES = ("runq_count", "waitq_count", "runq_mean_cpu", "runq_mean_time",
                  "waitq_mean_cpu", "waitq_mean_time", "num_cores", "free_cores",
                  "job_cpu", "job_mem")


def _unit_fcfs(s, policy, submit, runtime, fits, short, over, under, short_first=False,
               timer=False) -> PoolRun:
    """Kiefer-Wolfowitz: ``free`` holds when each server next frees, given every job that
    will run on the pool so far. FCFS with one job per server makes a job's start the
    earliest of those (or its arrival), so a job's wait is known when it arrives: exact
    for every policy here (a job that leaves after b never held a server)."""
    n = len(submit)
    cloud = np.zeros(n, dtype=bool)
    start = np.empty(n)
    wait = np.zeros(n)
    free = [0.0] * s
    name, b = policy.name, policy.b
    heappushpop = heapq.heappushpop
    sub = submit.tolist()
    rt = runtime.tolist()
    fit = fits.tolist()
    sh = short.tolist()
    ov = over.tolist()
    un = under.tolist()
    if name == "ljw-spec":
        return _unit_speculative(s, policy.t, submit, runtime, fits)
    for i in range(n):
        t = sub[i]
        if not fit[i] or (sh[i] and not short_first):
            cloud[i] = True
            start[i] = t
            continue
        f = free[0]
        begin = t if f <= t else f
        w = begin - t
        if name == "njw" or sh[i]:  # (a short job here: short_first)
            go = w > 0
            leave_at = t
        elif name == "ajw" or name == "ljw":
            go = False
            leave_at = t
        elif name == "ajw-t":
            go = w > b
            leave_at = t + b
        else:  # sww, compound: the oracle's prediction is w itself
            if ov[i]:  # over-predicted: to the cloud at once, even if a server is free
                go, leave_at = True, t
            elif w > b:
                go = True
                leave_at = t + b if un[i] or timer else t  # under-predicted: waits b first
            else:
                go = False
                leave_at = t
        if go:
            cloud[i] = True
            start[i] = leave_at
            wait[i] = leave_at - t
        else:
            heappushpop(free, begin + rt[i])
            start[i] = begin
            wait[i] = w
    return PoolRun(cloud, start, wait, fits)


def _unit_speculative(s, tt, submit, runtime, fits) -> PoolRun:
    """ljw-spec on a unit FCFS pool: arrivals and re-queued killed jobs (at submit + t)
    merged in time order through the Kiefer-Wolfowitz recursion."""
    n = len(submit)
    cloud = np.zeros(n, dtype=bool)
    killed = np.zeros(n, dtype=bool)
    start = np.empty(n)
    wait = np.zeros(n)
    free = [0.0] * s
    requeue: list[tuple[float, int]] = []
    runs: list[tuple[int, float, float, str]] = []
    sub = submit.tolist()
    rt = runtime.tolist()
    fit = fits.tolist()
    i = 0
    while i < n or requeue:
        if requeue and (i >= n or requeue[0][0] <= sub[i]):
            t, j = heapq.heappop(requeue)
            begin = max(t, free[0])
            heapq.heappushpop(free, begin + rt[j])
            start[j] = begin
            wait[j] = begin - sub[j]
            continue
        j = i
        i += 1
        t = sub[j]
        if fit[j] and free[0] <= t:  # a server is free: run there
            heapq.heappushpop(free, t + rt[j])
            start[j] = t
            continue
        if not fit[j] or rt[j] < tt:  # speculation finishes it (or it must go anyway)
            cloud[j] = True
            start[j] = t
            if fit[j]:
                runs.append((j, t, t + rt[j], "done"))
            continue
        killed[j] = True  # long: killed at t, then queued for the pool
        runs.append((j, t, t + tt, "killed"))
        heapq.heappush(requeue, (t + tt, j))
    return PoolRun(cloud, start, wait, fits, None, killed, runs)


def _general(spec, policy, submit, runtime, cpu, mem, fits, short, over, under, key,
             predictor=None, observe=None, short_first=False, timer=False,
             revocation=None) -> PoolRun:
    """Event by event: several jobs per server, either placement, either order
    (``_EventPool``)."""
    return _EventPool(spec, policy, submit, runtime, cpu, mem, fits, short, over, under, key,
                      predictor=predictor, observe=observe, short_first=short_first,
                      timer=timer, revocation=revocation).run()


def _first_fit(c: float, m: float, fc: list[float], fm: list[float]) -> int:
    """The first server (of free cores ``fc``, GiB ``fm``) a job of c cores, m GiB fits;
    -1: none."""
    for k in range(len(fc)):
        if fc[k] + _EPS >= c and fm[k] + _EPS >= m:
            return k
    return -1


def _best_fit(c: float, m: float, fc: list[float], fm: list[float]) -> int:
    """The server with the fewest free cores that a job of c cores, m GiB fits (the first
    such); -1: none."""
    chosen = -1
    room = math.inf
    for k in range(len(fc)):
        f = fc[k]
        if f + _EPS >= c and fm[k] + _EPS >= m and f < room:
            room, chosen = f, k
    return chosen


# A work-conserving FCFS pass (``_EventPool.one_pass``) needs only the servers whose room
# grew since the last pass: after it no queued job fits any server, and until the next the
# room of every other server only shrinks, so a queued job fits one of those or none, and
# best or first fit over them is best or first fit over all. (The real window under AJW-T
# with 749 servers: up to 7,296 queued, 240 on average at each of 362,403 finishes, each
# of which scanned all 749 servers per queued job before.)
def _grown(fc: list[float], fm: list[float], grew: set[int],
           floor: tuple[float, float]) -> tuple | None:
    """The servers ``grew`` in order and their free cores and GiB, or None when not even
    ``floor`` (at most the smallest queued cores and GiB) fits them."""
    if not grew:
        return None
    g = sorted(grew)
    gcl = [fc[k] for k in g]
    gml = [fm[k] for k in g]
    if floor[0] > max(gcl) + _EPS or floor[1] > max(gml) + _EPS:
        return None
    return g, gcl, gml


class _EventPool:
    """The general path: the pool from event to event, one step per kind of event at an
    instant, in this order: ``finish`` (and a queue pass, ``drain``), ``leave`` (AJW-T's
    patience), ``requeue`` and ``restart`` (ljw-spec), then ``arrive``. A job reaches the
    servers outside a queue pass in three ways, an arrival, a re-queued speculation and a
    restarted one; each asks one queue rule, ``may_pass``. SWW's and compound's oracle is
    ``predict_wait``, on a copy of the pool (``_Forecast``).

    State: per job the outcome (``cloud``, ``start``, ``wait``, ``server``, ``killed``,
    ``runs``); per server its free room (``free_c``, ``free_m``; a wide pool also as
    arrays); the event heap; the queue (``waiting``, and FCFS's ``fifo`` or SJF's heap
    ``queue``, with the smallest queued cores and GiB); ``agg``, the sums behind
    ``STATE_FEATURES``. Used once: ``run`` returns the ``PoolRun``."""

    __slots__ = ("n", "cloud", "start", "wait", "server", "killed", "runs", "fits", "sub", "rt",
                 "cp", "mm", "ky", "fit_ok", "short", "over", "under", "name", "b", "t_short",
                 "best", "fit", "wc", "sjf", "predictor", "observe", "short_first", "timer",
                 "revocation", "free_c", "free_m", "num_cores", "wide", "room_c", "room_ce",
                 "room_me", "events", "waiting", "queue", "fifo", "low_c", "low_m", "agg", "now")

    def __init__(self, spec: PoolSpec, policy: WaitingPolicy, submit, runtime, cpu, mem,
                 fits, short, over, under, key, *, predictor=None, observe=None,
                 short_first: bool = False, timer: bool = False, revocation=None) -> None:
        n = self.n = len(submit)
        self.cloud = np.zeros(n, dtype=bool)
        self.start = np.full(n, np.nan)
        self.wait = np.zeros(n)
        self.server = np.full(n, -1, dtype=np.int64)
        self.killed = np.zeros(n, dtype=bool)
        self.runs: list[tuple[int, float, float, str]] = []
        self.fits = fits
        # the jobs as Python scalars (the loops read them one at a time; the same doubles,
        # so every sum and wait is the same as with numpy's)
        self.sub = submit.tolist()
        self.rt = runtime.tolist()
        self.cp = cpu.tolist()
        self.mm = mem.tolist()
        self.ky = key.tolist()
        self.fit_ok = np.asarray(fits, dtype=bool).tolist()
        self.short = np.asarray(short, dtype=bool).tolist()
        self.over = np.asarray(over, dtype=bool).tolist()
        self.under = np.asarray(under, dtype=bool).tolist()
        # the rules
        self.name, self.b, self.t_short = policy.name, policy.b, policy.t
        self.best = spec.placement == "best-fit"
        self.fit = _best_fit if self.best else _first_fit  # (c, m, free cores, free GiB)
        self.wc = spec.work_conserving
        self.sjf = spec.order == "sjf"
        self.predictor, self.observe = predictor, observe
        self.short_first, self.timer, self.revocation = short_first, timer, revocation
        # the servers: each one's room starts at its own shape
        shapes = spec.server_shapes()
        self.free_c = [c for c, _ in shapes]
        self.free_m = [m for _, m in shapes]
        self.num_cores = spec.total_cores()
        # a wide pool mirrors its free cores, and both rooms plus _EPS (the same floats the
        # loop compares), in arrays for ``place`` (749 servers on the real window)
        self.wide = spec.servers >= _WIDE
        self.room_c = np.array(self.free_c)
        self.room_ce = self.room_c + _EPS
        self.room_me = np.array(self.free_m) + _EPS
        # (time, kind, job, server): 0 finish, 1 leave for the cloud, 2 re-queue (ljw-spec),
        # 3 restart (ljw-spec on spot: a revoked speculation)
        self.events: list[tuple[float, int, int, int]] = []
        self.waiting: set[int] = set()
        self.queue: list = []  # SJF: heap of (key, job) (lazy deletion)
        self.fifo = None if self.sjf else _Fifo()  # FCFS: the queued jobs' rows, in order
        # the smallest cores and GiB among queued jobs (lazy heaps): no pass starts, or goes
        # on, when no server has room for even those
        self.low_c: list[tuple[float, int]] = []
        self.low_m: list[tuple[float, int]] = []
        # running and waiting jobs' counts and sums, for STATE_FEATURES
        self.agg = [0, 0.0, 0.0, 0, 0.0, 0.0]  # run n, cpu, start; wait n, cpu, submit
        self.now = 0.0  # the instant a queue pass starts jobs at

    # --- the event loop ------------------------------------------------------------------

    def run(self) -> PoolRun:
        """Every job, arrival by arrival; at equal times the events first, by kind."""
        sub, events, n = self.sub, self.events, self.n
        finish, leave, requeue, restart, arrive = (
            self.finish, self.leave, self.requeue, self.restart, self.arrive)
        i = 0
        while i < n or events:
            t_next = sub[i] if i < n else math.inf
            if events and events[0][0] <= t_next:
                t = events[0][0]
                finish(t)
                if events and events[0][0] <= t:  # (most instants hold finishes alone)
                    leave(t)
                    requeue(t)
                    restart(t)
                continue
            arrive(i, t_next)
            i += 1
        return PoolRun(self.cloud, self.start, self.wait, self.fits, self.server, self.killed,
                       self.runs if self.name == "ljw-spec" else None)

    def finish(self, t: float) -> None:
        """The jobs that finish at t free their room; then a queue pass."""
        events, free_c, free_m, cp, mm = self.events, self.free_c, self.free_m, self.cp, self.mm
        agg, start, wide = self.agg, self.start, self.wide
        grew: set[int] = set()
        while events and events[0][0] <= t and events[0][1] == 0:
            _, _, j, k = heapq.heappop(events)
            free_c[k] += cp[j]
            free_m[k] += mm[j]
            if wide:
                self.moved(k)
            agg[0] -= 1
            agg[1] -= cp[j]
            agg[2] -= start.item(j)
            grew.add(k)
        if grew:
            self.drain(t, grew)

    def leave(self, t: float) -> None:
        """AJW-T's (and compound's timer's) jobs still queued at their patience go to the
        cloud (000 Eq. 12)."""
        events = self.events
        while events and events[0][0] <= t and events[0][1] == 1:
            _, _, j, _ = heapq.heappop(events)
            if j in self.waiting:
                self.off_queue(j)
                self.to_cloud(j, t)
                self.wait[j] = t - self.sub[j]

    def requeue(self, t: float) -> None:
        """Speculations killed at t (ljw-spec, 003 §3.1) join the pool: a server now if the
        queue rule lets them pass and one fits, else the queue."""
        self._rejoin(t, 2, False)

    def restart(self, t: float) -> None:
        """Speculations revoked at t restart as arrivals: a server now if the queue rule
        lets them pass and one fits, else another speculation."""
        self._rejoin(t, 3, True)

    def _rejoin(self, t: float, kind: int, speculate: bool) -> None:
        """The jobs of event ``kind`` at t: a server now if the queue rule lets them pass
        and one fits, else another speculation or the queue."""
        events = self.events
        while events and events[0][0] <= t and events[0][1] == kind:
            _, _, j, _ = heapq.heappop(events)
            k = self.server_now(j)
            if k >= 0:
                self.run_job(j, k, t)
            elif speculate:
                self.speculate(j, t)
            else:
                self.to_queue(j)

    def arrive(self, j: int, t: float) -> None:
        """Job j arrives: the policy sends it to the cloud, starts it, or queues it."""
        short = self.short[j]
        if not self.fit_ok[j] or (short and not self.short_first):
            self.to_cloud(j, t)
            return
        k = self.server_now(j)
        name = self.name
        if name == "njw" or short:  # (a short job here: short_first)
            if k >= 0:
                self.run_job(j, k, t)
            else:
                self.to_cloud(j, t)
            return
        if name in ("sww", "compound") and not self.timer:
            if self.over[j]:  # over-predicted: to the cloud at once, even if a server is free
                self.to_cloud(j, t)
                return
            w = 0.0 if k >= 0 else self.ask_wait(j, t)
            if w > self.b:
                if self.under[j]:  # under-predicted: waits b for nothing (000 §4.1.1)
                    self.to_cloud(j, t + self.b)
                    self.wait[j] = self.b
                else:
                    self.to_cloud(j, t)
                return
        if k >= 0:
            self.run_job(j, k, t)
            return
        if name == "ljw-spec":
            self.speculate(j, t)
            return
        self.to_queue(j)
        if name == "ajw-t" or (self.timer and name == "compound"):
            heapq.heappush(self.events, (t + self.b, 1, j, -1))

    # --- the queue rule and placement ----------------------------------------------------

    def may_pass(self, j: int) -> bool:
        """The queue rule: may job j, reaching the pool now outside a queue pass (an
        arrival, a re-queue, a restart), start before the jobs waiting? Always when
        work-conserving (those ahead do not fit now: every event drains the queue), else
        only as the new head: an empty queue, or SJF's shortest."""
        return self.wc or not self.waiting or (
            self.sjf and (self.ky[j], j) < _head(self.queue, self.waiting))

    def server_now(self, j: int) -> int:
        """The server job j starts on now: it may pass the queue and fits one; else -1."""
        return self.place(j) if self.may_pass(j) else -1

    def place(self, j: int) -> int:
        """``fit`` on the pool's free room now."""
        if not self.wide:
            return self.fit(self.cp[j], self.mm[j], self.free_c, self.free_m)
        c, m = self.cp[j], self.mm[j]
        ok = (self.room_ce >= c) & (self.room_me >= m)
        k = int(np.where(ok, self.room_c, math.inf).argmin() if self.best else ok.argmax())
        return k if ok[k] else -1

    def moved(self, k: int) -> None:
        """Server k's room changed: its mirror too (a wide pool)."""
        c = self.free_c[k]
        self.room_c[k] = c
        self.room_ce[k] = c + _EPS
        self.room_me[k] = self.free_m[k] + _EPS

    # --- where a job goes ----------------------------------------------------------------

    def run_job(self, j: int, k: int, t: float) -> None:
        """Job j starts on server k at t."""
        cp = self.cp[j]
        agg = self.agg
        agg[0] += 1
        agg[1] += cp
        agg[2] += t
        self.free_c[k] -= cp
        self.free_m[k] -= self.mm[j]
        if self.wide:
            self.moved(k)
        self.start[j] = t
        self.wait[j] = t - self.sub[j]
        self.server[j] = k
        heapq.heappush(self.events, (t + self.rt[j], 0, j, k))

    def to_cloud(self, j: int, t: float) -> None:
        """Job j leaves for the cloud at t (its wait: the caller's)."""
        self.cloud[j] = True
        self.start[j] = t

    def to_queue(self, j: int) -> None:
        """Job j joins the queue's end (SJF: its place by key)."""
        self.waiting.add(j)
        c = self.cp[j]
        if self.fifo is not None:
            self.fifo.push(j, c, self.mm[j])
        heapq.heappush(self.low_c, (c, j))
        heapq.heappush(self.low_m, (self.mm[j], j))
        agg = self.agg
        agg[3] += 1
        agg[4] += c
        agg[5] += self.sub[j]
        if self.sjf:
            heapq.heappush(self.queue, (self.ky[j], j))

    def off_queue(self, j: int) -> None:
        """Job j leaves the queue (SJF's heap drops it lazily)."""
        self.waiting.discard(j)
        if self.fifo is not None:
            self.fifo.drop(j)
        agg = self.agg
        agg[3] -= 1
        agg[4] -= self.cp[j]
        agg[5] -= self.sub[j]

    def queue_floor(self) -> tuple[float, float]:
        """The smallest cores and GiB of any queued job (inf: none queued)."""
        low_c, low_m, waiting = self.low_c, self.low_m, self.waiting
        while low_c and low_c[0][1] not in waiting:
            heapq.heappop(low_c)
        while low_m and low_m[0][1] not in waiting:
            heapq.heappop(low_m)
        return (low_c[0][0] if low_c else math.inf), (low_m[0][0] if low_m else math.inf)

    def speculate(self, j: int, t: float) -> None:
        """003 §3.1: run j in the cloud now; it ends there if shorter than t, else it is
        killed at t and queues for the pool. On spot a revocation before either ends the
        run, and the job restarts then (003 §3.1: revoked jobs "have to restart")."""
        rt = self.rt[j]
        end = t + rt
        kill = t + self.t_short
        gone = self.revocation(j, t) if self.revocation is not None else math.inf
        if gone < end and gone < kill:  # a finish or a kill at the same instant comes first
            self.runs.append((j, t, gone, "revoked"))
            heapq.heappush(self.events, (gone, 3, j, -1))
        elif rt < self.t_short:  # speculation runs it to the end
            self.to_cloud(j, t)
            self.wait[j] = t - self.sub[j]
            self.runs.append((j, t, end, "done"))
        else:  # killed at t, then queued (003 §3.1)
            self.killed[j] = True
            self.runs.append((j, t, kill, "killed"))
            heapq.heappush(self.events, (kill, 2, j, -1))

    def features(self, j: int, t: float) -> list[float]:
        """``STATE_FEATURES`` of the pool at t for job j (003 Table 1)."""
        rn, rc, rs, wn, wcpu, ws = self.agg
        return [rn, wn, rc / rn if rn else 0.0, t - rs / rn if rn else 0.0,
                wcpu / wn if wn else 0.0, t - ws / wn if wn else 0.0, self.num_cores,
                sum(self.free_c), self.cp[j], self.mm[j]]

    # --- queue passes ----------------------------------------------------------------------

    def drain(self, t: float, grew: set[int]) -> None:
        """Start queued jobs: the head only, or (work-conserving) every one that fits.
        ``grew``: the servers whose room grew since the last drain (this instant's
        finishes)."""
        self.now = t
        if self.sjf:
            self.drain_sjf(t)
        elif not self.waiting:
            return
        elif self.wc:
            self.drain_grown(grew)
        else:
            self.one_pass(self.fifo.jobs(), self.free_c, self.free_m, self.start_queued,
                          self.queue_floor())

    def drain_sjf(self, t: float) -> None:
        """SJF's pass: the shortest first, the head only unless work-conserving. Room only
        shrinks during a pass, so a job larger than the most room fails without a scan
        (a long queue's pass is most of a crowded SJF run)."""
        queue, waiting, wc, wide, fit = self.queue, self.waiting, self.wc, self.wide, self.fit
        cp, mm, free_c, free_m = self.cp, self.mm, self.free_c, self.free_m
        top_c = top_m = math.inf  # (a head-only pass tests one job: no bound worth a max)
        if wc:
            top_c = max(free_c, default=0.0) + _EPS
            top_m = max(free_m, default=0.0) + _EPS
        skipped = []
        while queue:
            j = queue[0][1]
            if j not in waiting:
                heapq.heappop(queue)
                continue
            c, m = cp[j], mm[j]
            if c > top_c or m > top_m:
                k = -1
            elif wide:
                k = self.place(j)
            else:
                k = fit(c, m, free_c, free_m)
            if k < 0:
                if not wc:
                    break
                skipped.append(heapq.heappop(queue))
                continue
            heapq.heappop(queue)
            self.off_queue(j)
            self.run_job(j, k, t)
            if wc:
                top_c = max(free_c) + _EPS
                top_m = max(free_m) + _EPS
        for item in skipped:
            heapq.heappush(queue, item)

    def drain_grown(self, grew: set[int]) -> None:
        """FCFS, work-conserving: a queue pass over the servers that grew alone (no queued
        job fits any server after the last drain, and a job queues only when it fits
        none; ``_grown``)."""
        room = _grown(self.free_c, self.free_m, grew, self.queue_floor())
        if room is None:
            return
        if len(self.waiting) <= _FEW:
            self.few_pass(self.fifo.jobs(), self.free_c, self.free_m, room,
                          self.start_queued)
        else:
            fifo = self.fifo
            self.rows_pass(fifo.rows(), fifo.c, fifo.m, self.free_c, self.free_m, room,
                           self.start_row)

    def start_queued(self, j: int, k: int) -> bool:
        """A drain's ``start``: queued job j starts on server k now; the pass goes on."""
        self.off_queue(j)
        self.run_job(j, k, self.now)
        return False

    def start_row(self, r: int, k: int) -> bool:
        """``start_queued`` for the job in FCFS row r."""
        return self.start_queued(int(self.fifo.job[r]), k)

    def one_pass(self, q: list[int], fc: list[float], fm: list[float], start,
                 floor: tuple[float, float] = (0.0, 0.0)) -> list[int]:
        """Start queued jobs ``q`` in order on servers ``fc``/``fm``: the head only, or
        (work-conserving) every one that fits. ``start(j, k)`` takes the room and returns
        True to end the pass there. Returns the jobs left, in order. Capacity only shrinks
        during a pass, so the largest room stays an upper bound: a job larger than it, or
        at least as large as one that failed, fails without a scan; once not even
        ``floor`` (the smallest queued cores and GiB) has room, the rest stay."""
        cp = self.cp  # (locals: a forecast makes this pass at each of its instants)
        mm = self.mm
        wc = self.wc
        fit = self.fit
        rest: list[int] = []
        fails: list[tuple[float, float]] = []
        top_c = max(fc, default=0.0) + _EPS
        top_m = max(fm, default=0.0) + _EPS
        for i, j in enumerate(q):
            if floor[0] > top_c or floor[1] > top_m:
                rest.extend(q[i:])
                break
            c, m = cp[j], mm[j]
            k = -1
            if c <= top_c and m <= top_m and not any(c >= a and m >= z for a, z in fails):
                k = fit(c, m, fc, fm)
            if k < 0:
                if not wc:  # strict FCFS: the head that cannot start holds the rest
                    rest.extend(q[i:])
                    break
                rest.append(j)
                if len(fails) < 8:
                    fails.append((c, m))
                continue
            if start(j, k):
                rest.extend(q[i + 1:])
                break
            top_c = max(fc) + _EPS
            top_m = max(fm) + _EPS
        return rest

    def few_pass(self, q: list[int], fc: list[float], fm: list[float], room: tuple,
                 start) -> list[int]:
        """A work-conserving ``one_pass`` of jobs ``q`` over the grown servers alone
        (``room``, from ``_grown``; ``start(job, k)``, True ends the pass): a job larger
        than their most room fails at once. Returns the jobs left, in order."""
        cp, mm, fit = self.cp, self.mm, self.fit
        g, gcl, gml = room
        top_c = max(gcl) + _EPS
        top_m = max(gml) + _EPS
        rest: list[int] = []
        for i, j in enumerate(q):
            c, m = cp[j], mm[j]
            x = -1
            if c <= top_c and m <= top_m:
                x = fit(c, m, gcl, gml)
            if x < 0:
                rest.append(j)
                continue
            k = g[x]
            if start(j, k):
                rest.extend(q[i + 1:])
                break
            gcl[x], gml[x] = fc[k], fm[k]
            top_c = max(gcl) + _EPS
            top_m = max(gml) + _EPS
        return rest

    def rows_pass(self, rows: np.ndarray, qc: np.ndarray, qm: np.ndarray, fc: list[float],
                  fm: list[float], room: tuple, start) -> None:
        """``few_pass`` for a long queue, as arrays: the queued ``rows`` (in order; of
        cores ``qc`` and GiB ``qm``) are tested against the grown room at once, the first
        that fits starts (``start(row, k)``, True ends the pass), then the rest are
        tested against the room left."""
        g, gcl, gml = room
        gc, gm = np.array(gcl), np.array(gml)
        while len(rows):
            ok = (qc[rows, None] <= gc[None, :] + _EPS) & (qm[rows, None] <= gm[None, :] + _EPS)
            hit = np.flatnonzero(ok.any(axis=1))
            if not len(hit):
                return
            first = ok[hit[0]]  # the grown servers the first job that fits fits
            x = int(np.where(first, gc, math.inf).argmin() if self.best else first.argmax())
            k = g[x]
            if start(int(rows[hit[0]]), k):
                return
            gc[x], gm[x] = fc[k], fm[k]
            rows = rows[hit[1:]]  # those before it or not fitting fit no less room now

    # --- SWW's and compound's wait -------------------------------------------------------

    def ask_wait(self, j: int, t: float) -> float:
        """The wait job j, fitting no server now, expects: the model's (``predictor``) or
        the oracle's; ``observe`` sees the features and the oracle's answer 4b ahead."""
        predictor, observe, b = self.predictor, self.observe, self.b
        if predictor is not None:
            x = self.features(j, t)
            w = predictor(x)
            if observe is not None:
                observe(j, x, self.predict_wait(j, t, horizon=4.0 * b))
            return w
        w = self.predict_wait(j, t) if observe is None else self.predict_wait(j, t, 4.0 * b)
        if observe is not None:
            observe(j, self.features(j, t), w)
        return w

    def predict_wait(self, j: int, t: float, horizon: float | None = None) -> float:
        """The oracle: simulate the pool forward with true runtimes until j would start
        (SWW, 000 §4.1), at most ``horizon`` (default b) ahead: inf beyond it. j must fit
        no server now (the callers ask only then)."""
        limit = self.b if horizon is None else horizon
        f = _Forecast(self, j, t)
        if self.wc and not self.sjf:
            return self.predict_grown(f, limit)
        if self.sjf:
            q = [x[1] for x in sorted(self.queue) if x[1] in self.waiting]
        else:
            q = self.fifo.jobs()
        q.append(j)
        ev, fc, fm, cp, mm = f.ev, f.fc, f.fm, self.cp, self.mm
        one_pass, start = self.one_pass, f.start
        while True:
            # start what can start now, in order (head only unless work-conserving)
            rest = one_pass(q, fc, fm, start)
            if f.found is not None:
                return f.found
            q = rest
            if not ev or ev[0][0] - t > limit:
                return math.inf
            now = f.clock = ev[0][0]
            while ev and ev[0][0] <= now:
                _, kind, x, k = heapq.heappop(ev)
                if kind == 0:  # a finish (departures and re-queues change no server)
                    fc[k] += cp[x]
                    fm[k] += mm[x]

    def predict_grown(self, f: _Forecast, limit: float) -> float:
        """``predict_wait`` for an FCFS work-conserving queue, each pass over the servers
        that grew alone (``_grown``): no queued job fits any server now (the last drain),
        nor j, so the first pass would start nothing."""
        j, t, cp, mm = f.j, f.t, self.cp, self.mm
        long = len(self.waiting) >= _FEW
        if long:  # as rows, j's the last
            fifo = self.fifo
            rows = fifo.rows()
            qc = np.append(fifo.c[rows], cp[j])
            qm = np.append(fifo.m[rows], mm[j])
            f.jobs = np.append(fifo.job[rows], j)
            f.live = np.ones(len(f.jobs), dtype=bool)
            floor = (float(qc.min()), float(qm.min()))  # a bound still as jobs start
        else:
            q = self.fifo.jobs() + [j]
            floor = (min(cp[x] for x in q), min(mm[x] for x in q))
        ev, fc, fm = f.ev, f.fc, f.fm
        while True:
            if not ev or ev[0][0] - t > limit:
                return math.inf
            now = f.clock = ev[0][0]
            grew = set()
            while ev and ev[0][0] <= now:
                _, kind, x, k = heapq.heappop(ev)
                if kind == 0:  # a finish (departures and re-queues change no server)
                    fc[k] += cp[x]
                    fm[k] += mm[x]
                    grew.add(k)
            room = _grown(fc, fm, grew, floor)
            if room is None:
                continue
            if long:
                self.rows_pass(np.flatnonzero(f.live), qc, qm, fc, fm, room, f.start_row)
            else:
                q = self.few_pass(q, fc, fm, room, f.start)
            if f.found is not None:
                return f.found


class _Forecast:
    """The oracle's copy of the pool (``_EventPool.predict_wait``): free room, the event
    heap (a copy of a heap is a heap; departures are skipped as they come) and its clock,
    run forward until job ``j``, arrived at ``t``, would start; then ``found`` is its
    wait. In a long FCFS queue's forecast, ``jobs`` are the queued rows' jobs (j the last)
    and ``live`` those not started."""

    __slots__ = ("j", "t", "clock", "cp", "mm", "rt", "fc", "fm", "ev", "found", "jobs", "live")

    def __init__(self, pool: _EventPool, j: int, t: float) -> None:
        self.j, self.t, self.clock = j, t, t
        self.cp, self.mm, self.rt = pool.cp, pool.mm, pool.rt
        self.fc, self.fm = list(pool.free_c), list(pool.free_m)
        self.ev = list(pool.events)
        self.found: float | None = None
        self.jobs: np.ndarray | None = None
        self.live: np.ndarray | None = None

    def start(self, x: int, k: int) -> bool:
        """A pass's ``start``: j's start ends the forecast (its wait found); another job
        takes its room on server k until its true finish."""
        now = self.clock
        if x == self.j:
            self.found = now - self.t
            return True
        self.fc[k] -= self.cp[x]
        self.fm[k] -= self.mm[x]
        heapq.heappush(self.ev, (now + self.rt[x], 0, x, k))
        return False

    def start_row(self, r: int, k: int) -> bool:
        """``start`` for the job in row r."""
        self.live[r] = False
        return self.start(int(self.jobs[r]), k)


class _Fifo:
    """An FCFS queue as rows of (cores, GiB, job) in arrival order; a job that leaves
    leaves a stale row (``live`` False) until the rows fill and are compacted. A long
    queue's pass tests all rows at once; a short one's goes through ``jobs``, a plain
    list (of stale entries too, dropped as it is read: no arrays to read for a few)."""

    def __init__(self, size: int = 256) -> None:
        self.c = np.zeros(size)
        self.m = np.zeros(size)
        self.job = np.zeros(size, dtype=np.int64)
        self.live = np.zeros(size, dtype=bool)
        self.n = 0
        self.row: dict[int, int] = {}  # job -> its row
        self.order: list[int] = []  # the jobs in order, and some that left (none returns)

    def push(self, j: int, c: float, m: float) -> None:
        if self.n == len(self.job):
            self._compact()
        k = self.n
        self.c[k], self.m[k], self.job[k], self.live[k] = c, m, j, True
        self.row[j] = k
        self.n += 1
        self.order.append(j)

    def drop(self, j: int) -> None:
        k = self.row.pop(j, None)
        if k is not None:
            self.live[k] = False

    def rows(self) -> np.ndarray:
        """The live rows, in order."""
        return np.flatnonzero(self.live[:self.n])

    def jobs(self) -> list[int]:
        """The queued jobs, in order (a new list)."""
        row = self.row
        self.order = [j for j in self.order if j in row]
        return list(self.order)

    def _compact(self) -> None:
        """Drop the stale rows; double the size if at least half are still live."""
        live = self.rows()
        size = len(self.job) * (2 if 2 * len(live) >= len(self.job) else 1)
        c, m, job = self.c[live], self.m[live], self.job[live]
        self.__init__(size)
        n = len(live)
        self.c[:n], self.m[:n], self.job[:n], self.live[:n] = c, m, job, True
        self.order = job.tolist()
        self.row = {x: k for k, x in enumerate(self.order)}
        self.n = n


def _head(queue: list, waiting: set[int]) -> tuple:
    """SJF's first live entry (stale ones are dropped on the way)."""
    while queue and queue[0][1] not in waiting:
        heapq.heappop(queue)
    return queue[0] if queue else (math.inf, -1)


def steady_mask(n: int, fraction: float) -> np.ndarray:
    """Jobs kept for the wait mean: all but the first and last ``fraction`` (000 §3.1)."""
    if not (0 <= fraction < 0.5):
        raise ConfigError(f"--steady-state takes a fraction in [0, 0.5), got {fraction}")
    cut = int(n * fraction)
    mask = np.zeros(n, dtype=bool)
    mask[cut:n - cut] = True
    return mask


def opportunity_cost(total: float, cpu: np.ndarray, runtime: np.ndarray,
                     mean_wait: float) -> float | None:
    """000 §4.1.1: P × w, P the bill per core-hour of the jobs' work, w the mean wait."""
    core_hours = float((cpu * runtime).sum()) / 3600.0
    return None if core_hours <= 0 else round(total / core_hours * mean_wait, 6)


def summarize(run: PoolRun, submit: np.ndarray, runtime: np.ndarray, cpu: np.ndarray,
              reserved_rate: float | Sequence[float], servers: int,
              cloud_cost: Sequence[float] | np.ndarray,
              ondemand_usd: float, steady_fraction: float = 0.0,
              speculation_s: float = 0.0, waste_usd: float | None = None) -> dict:
    """The bill and the waits. ``reserved_rate``: $/h per server, or one rate per server
    (a mix: ``servers`` of them), paid over the whole horizon; ``cloud_cost``: $ per job if
    it runs in the cloud; ``ondemand_usd``: what the same jobs cost all on demand (each on
    the cheapest VM that fits it, ``stratus.waiting.bill.smallest_vm_costs``), the unit of
    ``normalized_price``: 1 is the all-on-demand bill, whatever the servers' shape.
    Speculation's waste is ``waste_usd`` when given (spot:
    ``stratus.waiting.spot.speculation_bill``), else ``speculation_s`` of each killed
    job's on-demand run."""
    n = len(submit)
    if n == 0:
        return {"jobs": 0, "mean_wait_s": 0.0, "normalized_price": None, "on_demand_fraction": 0.0,
                "total_cost_usd": 0.0, "reserved_cost_usd": 0.0, "cloud_cost_usd": 0.0,
                "opportunity_cost": 0.0, "horizon_h": 0.0}
    end = run.start + runtime  # on the pool or in the cloud, it runs from ``start``
    horizon_h = float(end.max() - submit.min()) / 3600.0
    if isinstance(reserved_rate, (int, float)):
        reserved = servers * reserved_rate * horizon_h
    else:
        if len(reserved_rate) != servers:
            raise ConfigError(f"{len(reserved_rate)} reserved rates for {servers} servers")
        reserved = float(sum(reserved_rate)) * horizon_h
    cloud = float(np.asarray(cloud_cost, dtype=np.float64)[run.cloud].sum())
    waste = 0.0
    if waste_usd is not None:
        waste = float(waste_usd)
    elif run.killed is not None and run.killed.any() and speculation_s > 0:
        k = run.killed
        waste = float((np.asarray(cloud_cost, dtype=np.float64)[k] * speculation_s
                       / runtime[k]).sum())
    total = reserved + cloud + waste
    keep = steady_mask(n, steady_fraction)
    mean_wait = float(run.wait[keep].mean()) if keep.any() else 0.0
    norm = total / ondemand_usd if ondemand_usd > 0 else None
    return {
        "jobs": n,
        "jobs_unfit": int((~run.fits).sum()),
        "mean_wait_s": round(mean_wait, 4),
        "normalized_price": None if norm is None else round(norm, 6),
        "on_demand_fraction": round(float(run.cloud.mean()), 6),
        "total_cost_usd": round(total, 4),
        "reserved_cost_usd": round(reserved, 4),
        "cloud_cost_usd": round(cloud, 4),
        # 003 §3.1: VM time of speculations killed at t, billed but wasted
        "speculation_waste_usd": round(waste, 4),
        "jobs_killed": int(run.killed.sum()) if run.killed is not None else 0,
        # 000 §4.1.1: P × w, with P the price per core-hour of work
        "opportunity_cost": opportunity_cost(total, cpu, runtime, mean_wait),
        "horizon_h": round(horizon_h, 4),
    }
