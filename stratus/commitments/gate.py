"""A waiting policy at the door of the replay's reserved instances (issue 23, item 3):
paper 000 §3-4 inside the virtual cluster, instead of a pool simulator in front of it.

``--waiting POLICY[:b=SECONDS,t=SECONDS,share=on|off]``. Each task is decided on its own
when it arrives, as the pool simulator decides each trace row (``pool.py``), on the
replay's one clock (docs/reference/reserved.md, "The clock"): a task arrives at the first
tick at or after its submit time, as without a waiting policy, and the gate acts at each
tick before the scheduler (``tick``):

* a task that fits no reserved instance's type, or that LJW or compound believe short
  (estimate < t, 000 §4.2), goes to the cloud at once;
* a task that fits the free room of a reserved instance now starts there (best fit: the
  fewest free cores that fit, 000 §5), whatever the policy;
* else NJW sends it to the cloud; AJW and LJW queue it; AJW-T queues it and sends it to
  the cloud if it is still queued b seconds later (000 Eq. 12); SWW and compound queue it
  if its predicted wait is at most b, else send it now (000 §4.1, Eq. 13).

The queue is FCFS and work-conserving: at each tick, room freed on the reserved
instances since the last tick goes to the queue first, every queued task that fits
starting in order (the pool's default); then AJW-T's tasks whose b ran out leave; then
the tick's arrivals are decided. A wait (``mean_wait_s``, AJW-T's b) counts from the tick
the task arrived at: the time the policy adds. "To the cloud" means to the scheduler's
pending queue: the virtual cluster's scheduler places it at the same tick, on spot or
on-demand, or (``share=on``, the default) on reserved room the queue leaves free.
``share=off`` cordons the reserved instances from the scheduler: the papers' pipeline,
where the pool and the cloud never meet.

SWW's and compound's prediction simulates the reserved instances forward from now with
the replay's runtime estimates (the remaining estimate of what runs there, the estimate
of what is queued), room freed at an estimated end offered at the tick at or after it:
with the oracle estimator and ``share=off`` it is the pool's oracle on the replay's clock.
One simulation serves a tick's arrivals (``stratus.commitments.forecast.Forecast``).
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass
from heapq import heappop, heappush

import numpy as np

from stratus.base.errors import ConfigError
from stratus.commitments.forecast import Forecast, best_index
from stratus.sim.events import EV_DEPART

#: the policies a replay can run (ljw-spec speculates on VMs the pool simulator bills
#: itself; the engine has no kill-and-requeue of a running task)
REPLAY_POLICIES = ("njw", "ajw", "ajw-t", "sww", "ljw", "compound")
_NEEDS_B = ("ajw-t", "sww", "compound")
_NEEDS_T = ("ljw", "compound")


@dataclass(frozen=True)
class Waiting:
    """A waiting policy for the replay's reserved instances (``REPLAY_POLICIES``; ``b``:
    seconds a task may wait, ``t``: runtime below which a task is short, as
    ``stratus.waiting.pool.WaitingPolicy``), and whether the scheduler may also place its
    tasks on their free room (``share``). ``parse_waiting`` reads and checks one."""

    name: str
    b: float = 0.0
    t: float = 0.0
    share: bool = True

    def text(self) -> str:
        opts = [f"b={self.b:g}"] if self.name in _NEEDS_B else []
        opts += [f"t={self.t:g}"] if self.name in _NEEDS_T else []
        opts += [] if self.share else ["share=off"]
        return self.name + (":" + ",".join(opts) if opts else "")


def parse_waiting(text: str | None, what: str = "--waiting") -> Waiting | None:
    """``POLICY[:b=SECONDS,t=SECONDS,share=on|off]`` to a Waiting (None for none); one
    ConfigError naming ``what`` and the part for any mistake."""
    if text is None or (isinstance(text, str) and not text.strip()):
        return None
    if isinstance(text, Waiting):
        return text
    if not isinstance(text, str):
        raise ConfigError(f"{what} takes POLICY[:b=SECONDS,t=SECONDS,share=on|off], got "
                          f"{text!r}")
    name, _, rest = text.strip().partition(":")
    name = name.strip().lower()
    if name not in REPLAY_POLICIES:
        raise ConfigError(f"{what}: unknown waiting policy {name!r}; a replay takes "
                          f"{', '.join(REPLAY_POLICIES)}")
    vals: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, v = part.partition("=")
        key = key.strip().lower()
        if not eq or key not in ("b", "t", "share"):
            raise ConfigError(f"{what}: {part!r} is not b=SECONDS, t=SECONDS or share=on|off")
        if key in vals:
            raise ConfigError(f"{what}: {key} given twice")
        vals[key] = v.strip()
    num: dict[str, float] = {}
    for key in ("b", "t"):
        if key in vals:
            try:
                num[key] = float(vals[key])
            except ValueError:
                raise ConfigError(f"{what}: {key} takes a number of seconds, got "
                                  f"{vals[key]!r}") from None
            if not (math.isfinite(num[key]) and num[key] >= 0):
                raise ConfigError(f"{what}: {key} takes a number of seconds >= 0, got "
                                  f"{vals[key]!r}")
    if name in _NEEDS_B and "b" not in num:
        raise ConfigError(f"{what}: {name} needs b=SECONDS (how long a task may wait)")
    if name in _NEEDS_T and "t" not in num:
        raise ConfigError(f"{what}: {name} needs t=SECONDS (shorter tasks are short)")
    for key in num:
        if (key == "b" and name not in _NEEDS_B) or (key == "t" and name not in _NEEDS_T):
            raise ConfigError(f"{what}: {name} takes no {key}")
    share = vals.get("share", "on").lower()
    if share not in ("on", "off"):
        raise ConfigError(f"{what}: share takes on or off, got {vals['share']!r}")
    return Waiting(name, num.get("b", 0.0), num.get("t", 0.0), share == "on")


class ReservedGate:
    """The policy's half of the replay: decides each arriving task, keeps the reserved
    queue, starts queued tasks on reserved room freed since the last tick, all at the
    engine's ticks (``tick``). ``act`` holds and starts tasks (the engine,
    ``stratus.sim.apply.Actuator``); AJW-T's timers are events on ``kernel``, so that a tick
    comes when one runs out; ``tick_s``: the engine's tick."""

    def __init__(self, waiting: Waiting, book, cloud, act, kernel, tick_s: float) -> None:
        self.policy = waiting
        self.share = waiting.share
        self.book = book
        self.cloud = cloud
        self.act = act
        self.kernel = kernel
        self.tick_s = tick_s
        self._due: list[int] = []  # AJW-T tasks whose b ran out since the last tick
        self.reserved: list = []  # the reserved instances, oldest first (set by open())
        # their free room, one row each (kept by ``sync`` whenever the engine holds or
        # frees room on one): best fit is then one vectorized scan, not a Python loop
        self.free = np.zeros((0, 2), dtype=np.int64)
        self.row: dict[int, int] = {}  # iid -> row
        # per dimension, at least the most free room of any reserved instance (None: to
        # compute): placements leave it an upper bound, so only growth raises it, and a
        # search that finds nothing makes it exact again (a task above it fits nowhere)
        self._top: tuple | None = None
        self._caps: list[tuple] = []  # the reserved types' capacities, each once
        # per dimension, a heap of (need, tid) over the queued tasks (stale entries are
        # dropped as met): a queue turn with no room for even the smallest need is O(1)
        self._low: list[list[tuple[int, int]]] = []
        # the queue's needs as rows in FCFS order (a row whose task left is stale): a turn
        # tests them all at once against the room that grew since the last turn, the only
        # room a queued task can fit (after a turn none fits anywhere)
        self._qreq = np.zeros((0, 2), dtype=np.int64)
        self._qtid = np.zeros(0, dtype=np.int64)
        self._qjob = np.zeros(0, dtype=np.int64)
        self._qlive = np.zeros(0, dtype=bool)
        self._qrow: dict[int, int] = {}  # tid -> its row
        self._qn = 0
        self._grew: set[int] = set()  # rows of reserved instances whose room grew
        self.queue: dict[int, object] = {}  # tid -> task, FCFS (dicts keep order)
        n = book.work.n
        self.arrived = array("d", [math.nan]) * n  # the tick each task arrived at
        self.wait = array("d", [math.nan]) * n  # reserved start or departure - arrival tick
        self.cloud_of = bytearray(n)  # 1: the policy sent it to the cloud (turned it away)
        self.unfit = 0  # tasks that fit no reserved instance's type
        self.short = 0  # tasks LJW or compound believed short
        self.timeouts = 0  # AJW-T tasks that left after waiting b

    def open(self) -> None:
        self.reserved = list(self.cloud.reserved.values())
        self.free = np.array([i.free for i in self.reserved], dtype=np.int64)
        self.row = {i.iid: k for k, i in enumerate(self.reserved)}
        self._caps = list(dict.fromkeys(i.itype.capacity for i in self.reserved))
        dims = self.free.shape[1]
        self._low = [[] for _ in range(dims)]
        self._qreq = np.zeros((256, dims), dtype=np.int64)
        self._qtid = np.zeros(256, dtype=np.int64)
        self._qjob = np.full(256, -1, dtype=np.int64)  # a flagged task's job, else -1
        self._qlive = np.zeros(256, dtype=bool)

    def sync(self, inst, grew: bool = False) -> None:
        """The engine changed ``inst``'s room (a reserved instance); ``grew``: freed some."""
        k = self.row[inst.iid]
        self.free[k] = inst.free
        if grew:
            self._grew.add(k)
            if self._top is not None:
                self._top = tuple(map(max, self._top, inst.free))


    # --- decisions ---------------------------------------------------------------------
    def tick(self, tasks, t: float) -> None:
        """The gate's part of the tick at ``t``, before the scheduler's, in the pool
        simulator's order at an instant: room freed since the last tick to the queue,
        then departures (AJW-T's tasks whose b ran out), then the arrivals ``tasks``."""
        self.drain(t)
        if self._due:
            due, self._due = self._due, []
            for tid in due:
                self.timeout(tid, t)
        if tasks:
            self.arrive(tasks, t)

    def due(self, tid: int) -> None:
        """AJW-T's timer for ``tid`` ran out: it leaves at the tick at or after now, if
        still queued after that tick's queue turn."""
        self._due.append(tid)

    def arrive(self, tasks, t: float) -> None:
        """Decide each task that arrives at the tick ``t`` (000 §3-4; module docstring)."""
        p = self.policy
        name, b = p.name, p.b
        est = self.book.est
        arrived = self.arrived
        # SWW's and compound's forecast of this instant: one simulation, built when first
        # asked and kept as the instant's tasks join the queue (stratus.commitments.forecast)
        forecast = None
        for task in tasks:
            tid = task.tid
            arrived[tid] = t
            if not self._fits_type(task.req):
                self.unfit += 1
                self._to_cloud(task, t)
                continue
            if name in _NEEDS_T and est[tid] < p.t:
                self.short += 1
                self._to_cloud(task, t)
                continue
            inst = self._best_fit(task)
            if inst is not None:
                self._run(task, inst, t)
                forecast = None  # room taken, not by the queue: simulated again if asked
                continue
            if name in ("sww", "compound"):
                if forecast is None:
                    forecast = Forecast(self, t, b, self.tick_s)
                if forecast.wait(task) > b:
                    self._to_cloud(task, t)
                    continue
                self._enqueue(task)
                forecast.joined(task)
                continue
            if name == "njw":
                self._to_cloud(task, t)
                continue
            self._enqueue(task)
            if name == "ajw-t":
                self.kernel.schedule(t + b, EV_DEPART, tid)

    def _enqueue(self, task) -> None:
        tid = task.tid
        self.queue[tid] = task
        for low, r in zip(self._low, task.req):
            heappush(low, (r, tid))
        if self._qn == len(self._qtid):  # full: drop the stale rows, grow if still half full
            live = np.flatnonzero(self._qlive[:self._qn])
            size = len(self._qtid) * (2 if 2 * len(live) >= len(self._qtid) else 1)
            req, tids, jobs = self._qreq[live], self._qtid[live], self._qjob[live]
            self._qreq = np.zeros((size, req.shape[1]), dtype=np.int64)
            self._qtid = np.zeros(size, dtype=np.int64)
            self._qjob = np.full(size, -1, dtype=np.int64)
            self._qjob[:len(live)] = jobs
            self._qlive = np.zeros(size, dtype=bool)
            self._qreq[:len(live)], self._qtid[:len(live)] = req, tids
            self._qlive[:len(live)] = True
            self._qrow = {int(x): k for k, x in enumerate(tids.tolist())}
            self._qn = len(live)
        k = self._qn
        self._qreq[k] = task.req
        self._qtid[k] = tid
        self._qjob[k] = task.job if task.anti_affinity else -1
        self._qlive[k] = True
        self._qrow[tid] = k
        self._qn += 1

    def _dequeue(self, tid: int):
        task = self.queue.pop(tid, None)
        if task is not None:
            self._qlive[self._qrow.pop(tid)] = False
        return task

    def timeout(self, tid: int, t: float) -> None:
        """AJW-T: a task still queued b after the tick it arrived at leaves for the cloud
        (at the tick ``t``, the first at or after then)."""
        task = self._dequeue(tid)
        if task is not None:
            self.timeouts += 1
            self._to_cloud(task, t)

    def drain(self, t: float) -> None:
        """Every queued task that fits reserved room now starts, in order. Only room that
        grew since the last turn can take one (after a turn none fits anywhere; arrivals
        queue only when they fit nowhere), so the needs are tested against it first."""
        queue, grew = self.queue, sorted(self._grew)
        self._grew.clear()
        if not queue or not grew or self._hopeless():
            return
        rows = np.flatnonzero(self._qlive[:self._qn])
        while True:
            # the queued needs the grown room could take, in FCFS order; after each start
            # the rest are tested again against what room is left
            room = self.free[grew]
            need = self._qreq[rows]
            fit = need[:, 0, None] <= room[None, :, 0]
            for d in range(1, need.shape[1]):  # column by column: faster than .all(axis=2)
                fit &= need[:, d, None] <= room[None, :, d]
            some = fit.any(axis=1)
            rows, fit = rows[some], fit[some]
            # nor may a flagged task go where a flagged task of its job is (anti-affinity):
            # checked per queued job at once, not per queued task
            jobs = self._qjob[rows]
            flagged = jobs >= 0
            if flagged.any():
                iids = [self.reserved[g].iid for g in grew]
                held = self.book.aa_where
                uj, inv = np.unique(jobs[flagged], return_inverse=True)
                on = np.array([[i in held.get(j, ()) for i in iids] for j in uj.tolist()],
                              dtype=bool)
                fit[flagged] &= ~on[inv]
            rows = rows[fit.any(axis=1)]
            tids = self._qtid[rows].tolist()
            for pos in range(len(tids)):
                task = queue[tids[pos]]
                inst = self._best_fit(task)
                if inst is not None:
                    break
            else:
                return
            self._dequeue(task.tid)
            self._run(task, inst, t)
            if self._hopeless():
                return
            rows = rows[pos + 1:]

    def _hopeless(self) -> bool:
        """No queued task can fit: in some dimension even the smallest queued need is more
        than any reserved instance has free."""
        queue = self.queue
        for low, room in zip(self._low, self._room()):
            while low and low[0][1] not in queue:
                heappop(low)
            if not low or low[0][0] > room:
                return True
        return False

    # --- the reserved room ---------------------------------------------------------------
    def _fits_type(self, req) -> bool:
        return any(all(r <= c for r, c in zip(req, cap)) for cap in self._caps)

    def _room(self) -> tuple:
        """At least the most free room per dimension over the reserved instances (a task
        larger than it in any dimension fits none; ``_top``)."""
        if self._top is None:
            self._top = tuple(self.free.max(axis=0).tolist())
        return self._top

    def _best_fit(self, task):
        """The reserved instance with the fewest free cores that ``task`` fits now (000 §5's
        best fit; ties: the oldest), or None; never one that holds a flagged task of its
        job when it is flagged itself (anti-affinity, as every placement)."""
        req = task.req
        if any(r > f for r, f in zip(req, self._room())):
            return None
        taken = self.book.aa_where.get(task.job, ()) if task.anti_affinity else ()
        k = best_index(self.free, req, [self.row[i] for i in taken if i in self.row])
        if k < 0:
            self._top = None  # the bound let this one through: make it exact
            return None
        return self.reserved[k]

    def _run(self, task, inst, t: float) -> None:
        self.wait[task.tid] = t - self.arrived[task.tid]
        self.book.loc[task.tid] = inst
        self.act.hold(inst, task, t)
        self.act.start(task, t)

    def _to_cloud(self, task, t: float) -> None:
        self.wait[task.tid] = t - self.arrived[task.tid]
        self.cloud_of[task.tid] = 1
        self.book.pending.append(task)

    # --- the report ------------------------------------------------------------------
    def summary(self, ran_on) -> dict:
        """The gate's split, as ``stratus waiting simulate`` reports a pool: the tasks it
        started on reserved room and those it turned away (sent to the scheduler), their
        share, and the mean wait over every task decided; with ``ran_on`` (the engine's
        per-task record of where each ran, ``stratus.commitments.reserved.ran_where``), how many of
        those it turned away ran on reserved room all the same (``share=on``)."""
        waits = [w for w in self.wait if w == w]
        n = len(waits)
        away = sum(self.cloud_of)
        back = sum(1 for c, r in zip(self.cloud_of, ran_on) if c and r & 1)
        return {"policy": self.policy.name, "b": self.policy.b, "t": self.policy.t,
                "share": self.share, "gate_started_on_reserved": n - away,
                "gate_turned_away": away,
                "gate_turned_away_fraction": round(away / n, 6) if n else 0.0,
                "tasks_unfit_reserved": self.unfit, "tasks_short": self.short,
                "tasks_timed_out": self.timeouts,
                "mean_wait_s": round(sum(waits) / n, 4) if n else 0.0,
                "turned_away_ran_on_reserved": back}


__all__ = ["REPLAY_POLICIES", "ReservedGate", "Waiting", "parse_waiting"]
