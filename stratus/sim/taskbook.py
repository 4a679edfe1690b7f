"""The task book: a replay's tasks as per-task arrays indexed by task id (the trace's row),
their states and where they are. ``Workload`` holds what the trace says and never changes;
``TaskBook`` what happens to each task. The engine moves tasks between states; the cluster
view and the result read the book's public fields."""

from __future__ import annotations

import math
from array import array

import numpy as np

from stratus.base.errors import StratusError
from stratus.base.resources import request_units
from stratus.pricing.catalog import Catalog
from stratus.sim.model import DONE, PENDING, Instance, Task
from stratus.traces.schema import Trace, fit_to_catalog, gpu_requests


class Workload:
    """The trace's tasks as columns, in the catalog's resource units, and its jobs.

    Columns read only when a task is made are compact arrays (a Python list holds an
    object per value: ~30 bytes more a task)."""

    def __init__(self, trace: Trace, catalog: Catalog, anti_affinity: bool) -> None:
        f = trace.frame
        self.n = len(trace)
        self.submit = f["submit_s"].to_numpy(dtype=np.float64)
        self.submit_list = array("d", self.submit.tobytes())
        self.runtime = f["runtime_s"].tolist()
        fit_to_catalog(trace, catalog, drop=False)  # oversized tasks: an error naming rows
        # the catalog's dimensions (stratus.base.resources): GPUs only when it has a GPU type
        units = request_units(f["cpu"], f["mem_gib"],
                              gpu_requests(f) if catalog.has_gpus else None)
        # tasks of a job share a request: one tuple per distinct request, not per task
        shared: dict[tuple[int, ...], tuple[int, ...]] = {}
        self.req = [shared.setdefault(r, r)
                    for r in zip(*(units[:, d].tolist() for d in range(units.shape[1])))]
        uniq, job_idx = np.unique(f["job_id"].to_numpy(), return_inverse=True)
        self.job_ids = uniq
        self.job_of = array("q", job_idx.astype(np.int64).tobytes())
        self.task_index = array("q", f["task_id"].to_numpy(dtype=np.int64).tobytes())
        self.user = f["user"].tolist()
        self.job_name = f["job_name"].tolist()
        self.priority = f["priority"].tolist()
        self.user_est = f["estimate_s"].tolist() if "estimate_s" in f.columns else None
        # anti-affinity flags (Stratus §4.2 assumption 2), read only when a task is made
        self.anti_affinity = (f["anti_affinity"].to_numpy(dtype=bool).tolist()
                              if anti_affinity and "anti_affinity" in f.columns else None)
        self.job_tasks = np.bincount(job_idx, minlength=len(uniq))
        self.job_submit = np.full(len(uniq), np.inf)
        np.minimum.at(self.job_submit, job_idx, self.submit)
        self.job_maxrt = np.zeros(len(uniq))
        np.maximum.at(self.job_maxrt, job_idx, f["runtime_s"].to_numpy())

    def make_task(self, tid: int) -> Task:
        aa = self.anti_affinity
        return Task(tid, int(self.job_ids[self.job_of[tid]]), self.task_index[tid],
                    self.submit_list[tid], self.runtime[tid], self.req[tid], self.user[tid],
                    self.job_name[tid], self.priority[tid],
                    None if self.user_est is None else self.user_est[tid],
                    aa is not None and aa[tid])


class TaskBook:
    """Per-task state (``state``, ``loc``, progress, estimates, times), the pending queue,
    migrations in progress, and per-job progress. Task objects are made as tasks arrive
    and dropped once they finish."""

    def __init__(self, work: Workload, keep_job_tasks: bool) -> None:
        n = work.n
        self.work = work
        self.tasks: list[Task | None] = [None] * n
        self.state = [PENDING] * n
        self.loc: list[Instance | None] = [None] * n
        self.done = [0.0] * n  # seconds of progress before the current run
        self.run_start = [math.nan] * n
        self.epoch = [0] * n  # bumped when a task's queued events become void
        self.est = [math.nan] * n
        self.first_start = array("d", [math.nan]) * n  # written once or twice a task
        self.finish = array("d", [math.nan]) * n
        self.n_migrations = [0] * n
        # migrations begun after the task had run past its estimate: the scheduler then
        # thought it done (or, readjusted, half done), so these follow an underestimate
        self.n_migrations_overrun = [0] * n
        self.mig_dest: dict[int, Instance] = {}  # queued or in-flight migrations
        self.transfer: dict[int, tuple[float, int]] = {}  # in flight: (planned end, log index)
        self.pending: list[Task] = []
        self.next_arrival = 0  # the first task of the trace not yet arrived
        self.n_done = 0
        self.job_left = work.job_tasks.tolist()
        self.job_end = [math.nan] * len(self.job_left)
        # a job's finished tasks, for an estimator that learns online (None: not kept)
        self.job_done: dict[int, list[Task]] | None = {} if keep_job_tasks else None
        # job id -> ids of the instances a flagged task of that job holds resources on:
        # kept by the engine's hold/unhold, read only for flagged tasks (placements, view)
        self.aa_where: dict[int, set[int]] = {}

    def arrive(self, t: float, estimator, pend: bool = True) -> list[Task]:
        """Tasks submitted up to ``t`` arrive, with their runtime estimates, and (``pend``)
        become pending; returns them (a waiting policy decides where they go instead)."""
        i = self.next_arrival
        j = int(np.searchsorted(self.work.submit, t, side="right"))
        if j <= i:
            return []
        make = self.work.make_task
        new = [make(tid) for tid in range(i, j)]
        for task in new:
            self.tasks[task.tid] = task
        for task, e in zip(new, estimator.predict(new)):
            self.est[task.tid] = e
        if pend:
            self.pending.extend(new)
        self.next_arrival = j
        return new

    def add_job(self, left: int) -> int:
        """A job not known ahead (the live loop), with ``left`` tasks to finish (more
        may be counted in as they come, ``add``); its index."""
        self.job_left.append(left)
        self.job_end.append(math.nan)
        return len(self.job_left) - 1

    def add(self, task: Task, job: int, count_in: bool) -> None:
        """A task not known ahead (the live loop), with the next id (the workload's
        ``n`` is the caller's to grow): not yet pending, no progress, no estimate.
        ``job``: its job's index (``add_job``); ``count_in``: one more task for that
        job to finish (its size was not given)."""
        if task.tid != len(self.state):
            raise StratusError(f"task book: task id {task.tid} is not the next, "
                               f"{len(self.state)}")
        if count_in:
            self.job_left[job] += 1
        self.tasks.append(task)
        self.state.append(PENDING)
        self.loc.append(None)
        self.done.append(0.0)
        self.run_start.append(math.nan)
        self.epoch.append(0)
        self.est.append(math.nan)
        self.first_start.append(math.nan)
        self.finish.append(math.nan)
        self.n_migrations.append(0)
        self.n_migrations_overrun.append(0)

    def enqueue(self, tasks: list[Task], estimates) -> None:
        """Tasks added with ``add`` join the pending queue now, in order, with their
        runtime estimates; every task added so far has then arrived."""
        for task, e in zip(tasks, estimates):
            self.est[task.tid] = e
        self.pending.extend(tasks)
        self.next_arrival = len(self.state)

    def withdraw(self, task: Task, t: float) -> None:
        """A pending task that went away at ``t`` (its pod was deleted): done, with no run."""
        self.pending.remove(task)
        tid = task.tid
        self.tasks[tid] = None
        self.state[tid] = DONE
        self.finish[tid] = t
        self.n_done += 1

    @property
    def all_arrived(self) -> bool:
        return self.next_arrival >= self.work.n

    def known(self, task: Task) -> bool:
        """Whether ``task`` is this replay's object for its id (a finished task's object is
        dropped; its state still says it is done)."""
        tid = getattr(task, "tid", -1)
        if not 0 <= tid < self.work.n:
            return False
        known = self.tasks[tid]
        return known is task or (known is None and self.state[tid] == DONE)

    def job_finished(self, tid: int, task: Task, t: float) -> list[Task] | None:
        """Count a finished task against its job; the job's tasks when it was the last one
        and they are kept (else None)."""
        j = self.work.job_of[tid]
        self.job_left[j] -= 1
        if self.job_done is not None:
            self.job_done.setdefault(j, []).append(task)
        if self.job_left[j] == 0:
            self.job_end[j] = t
            if self.job_done is not None:
                return self.job_done.pop(j)
        return None


__all__ = ["TaskBook", "Workload"]
