"""Accounting: where a replay's resource-time went (the idle breakdown of the bill, tasks
in transfer), the run segments the lower bounds are computed from, migration and loss
tallies, and the optional audit logs. The engine books; ``snapshot()`` is what the result
is built from."""

from __future__ import annotations

from array import array
from dataclasses import dataclass

from stratus.sim.model import READY, Instance


@dataclass(frozen=True)
class Snapshot:
    """Accounting's totals at the end of a replay (``Accounting.snapshot``), per dimension
    where a field is a list. Idle resource-time is on ready instances, by the instance's
    state at the time (``Accounting.touch``)."""

    idle_fragmentation: list[float]
    idle_shape: list[float]
    idle_low_one_task: list[float]
    idle_low_several_tasks: list[float]
    transfer: list[float]  # resource-time held by tasks in transfer, on each end
    fullest: float  # per instance, its fullest dimension's share x first-dimension capacity
    seg_start: array  # run segments: a task making progress from start to end
    seg_end: array
    seg_tid: array
    migrations: int
    migration_seconds: float
    migrations_aborted: int
    migrations_cancelled: int
    tasks_revoked: int
    crash_restarts: int
    lost_task_s: float
    lost_core_s: float
    lost_usd: float
    ice_returned: int


class Accounting:
    """The books of one replay. ``record`` keeps the per-interval audit logs (holds,
    migrations, segments' instances, crashes) for invariant checks."""

    def __init__(self, dims: int, record: bool) -> None:
        self.idle_frag = [0.0] * dims
        self.idle_shape = [0.0] * dims
        self.idle_low = [0.0] * dims
        self.idle_single = [0.0] * dims
        self.transfer_rt = [0.0] * dims
        # per instance, its fuller dimension's allocated share, weighted by its capacity in
        # the first dimension (proportional to size on m4/m5): the utilization a two-resource
        # workload can reach when every instance is full in *some* dimension
        self.fullest_rt = 0.0
        self.seg_start = array("d")  # compact: one entry per run segment, read at the end
        self.seg_end = array("d")
        self.seg_tid = array("q")
        self.migrations = 0
        self.migration_seconds = 0.0
        self.aborted_migrations = 0
        self.cancelled_migrations = 0  # decided, but void before the transfer began
        self.tasks_revoked = 0
        self.crash_restarts = 0  # tasks on a crashed instance, sent back to pending
        self.lost = [0.0, 0.0, 0.0]  # progress lost to crashes: task-s, vCPU-s, dollars
        self.ice_returned = 0  # tasks of failed requests, sent back to pending
        # optional audit logs
        self.holds: list[tuple[int, int, float, float]] | None = [] if record else None
        self.hold_open: dict[tuple[int, int], float] = {}
        self.mig_log: list[tuple[int, int, int, float, float]] | None = [] if record else None
        self.seg_iid: list[int] | None = [] if record else None
        self.crash_log: dict[int, float] | None = {} if record else None

    def touch(self, inst: Instance, t: float) -> None:
        """Accrue allocated and idle resource-time up to ``t`` before the instance's load
        changes. Idle capacity is booked by the instance's state over the interval: below
        half used in every dimension (the §3.4 clearing threshold: a *low* instance, kept
        alive by what is left on it), with a single task on it or several; else, in the
        instance's fullest dimension, room its packing left (fragmentation), and in its
        other dimensions, capacity its tasks' shape does not need (shape). Ties for the
        fullest dimension go to the first."""
        if inst.state == READY:
            dt = t - inst.used_since
            if dt > 0:
                integ = inst.used_integral
                cap, free = inst.itype.capacity, inst.free
                low = True
                fullest, top = 0.0, 0
                for d, (c, f) in enumerate(zip(cap, free)):
                    integ[d] += (c - f) * dt
                    if c and 2 * (c - f) >= c:  # a dimension the type lacks (0 GPUs) is not "used"
                        low = False
                    if c and (c - f) / c > fullest:
                        fullest, top = (c - f) / c, d
                self.fullest_rt += fullest * cap[0] * dt
                if low:
                    idle = self.idle_single if len(inst.tasks) == 1 else self.idle_low
                    for d, f in enumerate(free):
                        idle[d] += f * dt
                else:
                    for d, f in enumerate(free):
                        if d == top:
                            self.idle_frag[d] += f * dt
                        else:
                            self.idle_shape[d] += f * dt
            inst.used_since = t

    def segment(self, tid: int, start: float, end: float, iid: int) -> None:
        """A run segment: task ``tid`` made progress on instance ``iid`` over [start, end)."""
        if end > start:
            self.seg_start.append(start)
            self.seg_end.append(end)
            self.seg_tid.append(tid)
            if self.seg_iid is not None:
                self.seg_iid.append(iid)

    def transfer(self, req, seconds: float) -> None:
        """A transfer of a task holding ``req`` for ``seconds`` (negative: cut short)."""
        self.migration_seconds += seconds
        for d, r in enumerate(req):
            self.transfer_rt[d] += r * seconds

    def lose(self, seconds: float, core_seconds: float, usd: float) -> None:
        """Progress a crash took from a task: seconds, vCPU-seconds and dollars."""
        self.lost[0] += seconds
        self.lost[1] += core_seconds
        self.lost[2] += usd

    def snapshot(self) -> Snapshot:
        return Snapshot(list(self.idle_frag), list(self.idle_shape), list(self.idle_single),
                        list(self.idle_low), list(self.transfer_rt), self.fullest_rt,
                        self.seg_start, self.seg_end, self.seg_tid, self.migrations,
                        self.migration_seconds, self.aborted_migrations,
                        self.cancelled_migrations, self.tasks_revoked, self.crash_restarts,
                        self.lost[0], self.lost[1], self.lost[2], self.ice_returned)


__all__ = ["Accounting", "Snapshot"]
