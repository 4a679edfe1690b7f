"""Data model: tasks and instances (jobs are tasks sharing a job id; per-job results are
in ReplayResult.jobs).

Tasks come from a trace and never change. Instances belong to the engine: policies see
them through the read-only cluster view and decide through ``Decisions``; an instance's
``tasks`` is a read-only mapping. A policy must not set an attribute of either (a test
catches one that does: ``stratus.testing.sealed``).
"""

from __future__ import annotations

from types import MappingProxyType

from stratus.base.resources import Vec
from stratus.pricing.catalog import InstanceType

# Task states (plain ints: they are compared in the event loop)
PENDING, WAITING, RUNNING, MIGRATING, DONE = range(5)
TASK_STATES = ("pending", "waiting", "running", "migrating", "done")

# Instance lifecycle: requested -> running -> released
REQUESTED, READY, RELEASED = range(3)
INSTANCE_STATES = ("requested", "running", "released")


class Task:
    """One task of a job, as submitted. ``tid`` is its row in the trace (global id).

    ``req`` is the resource vector in integer units (stratus.base.resources). ``runtime`` is
    the true runtime: only the oracle estimator and the engine read it; a policy learns
    about runtimes through the estimator in the cluster view.

    ``anti_affinity``: no two flagged tasks of one job hold resources on one instance at
    once (Stratus §4.2 assumption 2; the Google trace's ``different_machine``).
    """

    __slots__ = ("tid", "job", "index", "submit", "runtime", "req", "user", "job_name",
                 "priority", "user_estimate", "anti_affinity")

    def __init__(self, tid: int, job: int, index: int, submit: float, runtime: float, req: Vec,
                 user: str = "", job_name: str = "", priority: int = 0,
                 user_estimate: float | None = None, anti_affinity: bool = False) -> None:
        self.tid = tid
        self.job = job
        self.index = index
        self.submit = submit
        self.runtime = runtime
        self.req = req
        self.user = user
        self.job_name = job_name
        self.priority = priority
        self.user_estimate = user_estimate
        self.anti_affinity = anti_affinity

    def __repr__(self) -> str:
        return f"Task(tid={self.tid}, job={self.job}.{self.index}, req={self.req})"


class Instance:
    """A rented virtual machine. Engine-owned; read-only to policies.

    ``tasks`` maps task id -> Task for every task holding resources here: running,
    waiting for the instance to boot, migrating away (still held) or migrating in
    (reserved). ``free`` is capacity minus what those tasks hold.
    """

    __slots__ = ("iid", "itype", "market", "bid", "state", "requested_at", "ready_at",
                 "released_at", "free", "keep", "cost", "_tasks", "tasks", "used_since",
                 "used_integral", "hosted", "revoke_at", "was_kept")

    def __init__(self, iid: int, itype: InstanceType, market: str, bid: float | None,
                 requested_at: float) -> None:
        self.iid = iid
        self.itype = itype
        self.market = market
        self.bid = bid
        self.state = REQUESTED
        self.requested_at = requested_at
        self.ready_at: float | None = None
        self.released_at: float | None = None
        self.free: Vec = itype.capacity
        self.keep = False
        self.was_kept = False  # a policy asked to keep it idle at some point
        self.cost = 0.0
        self._tasks: dict[int, Task] = {}
        self.tasks = MappingProxyType(self._tasks)
        # allocated resource-time accounting (stratus.sim.accounting's, engine-owned):
        # integral of (capacity - free) while ready
        self.used_since = 0.0
        self.used_integral = [0.0] * len(itype.capacity)
        self.hosted = 0  # tasks that ever held resources here
        self.revoke_at: float | None = None

    @property
    def capacity(self) -> Vec:
        return self.itype.capacity

    def add_task(self, task: Task) -> None:
        """Record that ``task`` holds resources here (``tasks``); ``free`` is the caller's
        to set. The engine's core calls it, and whoever builds instances by hand
        (``stratus.testing.StaticView``); a policy never calls it."""
        self._tasks[task.tid] = task

    def remove_task(self, tid: int) -> None:
        """Record that task ``tid`` no longer holds resources here (the core's)."""
        del self._tasks[tid]

    def __repr__(self) -> str:
        return (f"Instance({self.iid}, {self.itype.name}, {self.market}, "
                f"{INSTANCE_STATES[self.state]}, tasks={len(self._tasks)})")
