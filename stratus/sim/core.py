"""The engine core: one cluster's state machine, its public transitions, and its add-ons.

A ``Core`` is built from its parts and owns nothing of time but the clock it is given:

- ``kernel``: the clock (``now``), and ``schedule``/``stop`` (``stratus.sim.kernel.Kernel``
  in a replay; in the live loop a clock that drops what is scheduled, stratus.live);
- ``work``: the tasks as the trace gives them (``stratus.sim.taskbook.Workload``, or the live
  loop's growing one), and ``book`` (``TaskBook``) their states;
- ``cloud``: instances, markets, prices, billing (``stratus.sim.cloud.Cloud``);
- ``acct``: the idle breakdown, run segments and audit logs (``stratus.sim.accounting``);
- ``applier``: a policy's decisions checked, then carried out (``stratus.sim.apply``);
- ``view``: what a policy sees (``stratus.sim.view.ClusterView``);
- ``addons``: the add-ons (``stratus.sim.hooks.AddOn``), called at their hooks.

Its transitions are public and named for what they do. The event ones take the kernel's
handler arguments ``(a, b, t)``: ``finish(tid, epoch, t)``, ``migrated(tid, epoch, t)``,
``ready(inst, _, t)``, ``revoke(inst, _, t)``, ``crash(iid, _, t)``. The others:
``hold``, ``unhold``, ``start``, ``stop_progress``, ``begin_transfer``,
``abort_transfer``, ``send_back``, ``evict``, ``release``, ``maybe_release``,
``refused``, and ``decide`` (one decision of the policy). The replay's driver
(stratus.sim.engine.Engine) adds the event heap's ticks and guards; the live mirror
(stratus.live.mirror) holds a core and calls its transitions when the world reports.

Every instance is billed from request to release at its prevailing price, per second
(Stratus §4.1). An instance left with no tasks is released at once unless a policy keeps
it (Stratus §4.1, "VM acquisition/termination").
"""

from __future__ import annotations

import math
from collections.abc import Callable
from operator import add, sub

from stratus.base.errors import StratusError
from stratus.sim.accounting import Accounting
from stratus.sim.apply import DecisionApplier
from stratus.sim.decisions import Decisions
from stratus.sim.events import EV_FINISH, EV_MIGRATED
from stratus.sim.footprint import footprint_fraction
from stratus.sim.hooks import Hooks
from stratus.sim.model import (
    DONE,
    MIGRATING,
    PENDING,
    RELEASED,
    RUNNING,
    WAITING,
    Instance,
    Task,
)
from stratus.sim.taskbook import TaskBook
from stratus.sim.view import EngineView

MIB_BITS = 8 * 1024 * 1024  # bits in one MiB (the memory unit of resource vectors)
HOPELESS_RUNS = 1000  # crash-loop guard: a task expected to need more runs than this


class Core:
    """One cluster's state and its transitions. ``cfg``: a resolved config
    (``stratus.sim.config.resolve``); ``kernel``, ``work``, ``cloud``: its clock, its tasks
    and its cloud; ``scheduler``: the policy; ``addons``: ``stratus.sim.hooks.AddOn``s, each
    attached (``AddOn.attach``) once the core is built."""

    def __init__(self, cfg, kernel, work, cloud, scheduler, addons=()) -> None:
        self.cfg = cfg
        self.kernel = kernel
        self.work = work
        self.cloud = cloud
        self.scheduler = scheduler
        self.estimator = cfg.estimator
        self._mig_bits_per_s = cfg.migration_mbps * 1e6
        self._mig_fraction = footprint_fraction(cfg.migration_footprint)
        self.book = TaskBook(work, self.estimator.learns_online)
        self.acct = Accounting(len(cfg.catalog.types[0].capacity), cfg.record)
        # the Actuator's acquire is the cloud's request itself: no layer between, once a task
        self.acquire = cloud.request
        self.applier = DecisionApplier(self.book, cloud, self, kernel, scheduler)
        self.view = EngineView(kernel, cfg, self.book, cloud, self.migration_duration)
        self.on_decisions: Callable[[float, Decisions], None] | None = None
        self.crash_loop: str | None = None  # why the crash-loop guard stops the run
        self._restarts: dict[int, int] = {}  # tid -> runs lost to crashes
        self.addons = tuple(addons)
        self.hooks = hooks = Hooks(self.addons)
        # the hooks of the hot transitions, kept at hand (empty tuples without add-ons)
        self._held, self._freed, self._started = hooks.held, hooks.freed, hooks.started
        self._moving, self._sent_back, self._released = (hooks.moving, hooks.sent_back,
                                                          hooks.released)
        for addon in self.addons:
            addon.attach(self)

    @property
    def now(self) -> float:
        return self.kernel.now

    def watch_decisions(self, fn: Callable[[float, Decisions], None] | None) -> None:
        """``fn(t, dec)`` sees each non-empty batch of decisions before it is applied."""
        self.on_decisions = fn

    def migration_duration(self, task: Task) -> float:
        """Seconds to move the task's memory footprint (its request in MiB times the
        configured used fraction) at the migration rate (Stratus §4.1)."""
        return task.req[1] * self._mig_fraction * MIB_BITS / self._mig_bits_per_s

    def woke(self, t: float) -> None:
        """Tasks went back to pending at ``t`` (a revocation, a crash): a driver that
        skips ticks brings its next one forward (stratus.sim.engine.Engine)."""

    # ------------------------------------------------------------------ instances
    def hold(self, inst: Instance, task: Task, t: float) -> None:
        """``task`` holds its request on ``inst`` from ``t`` (running, waiting for the
        instance, or reserved as a migration's destination)."""
        self.acct.touch(inst, t)
        inst.add_task(task)
        inst.free = tuple(map(sub, inst.free, task.req))
        inst.hosted += 1
        self.cloud.changed(inst)
        if task.anti_affinity:
            self.book.aa_where.setdefault(task.job, set()).add(inst.iid)
        if self.acct.holds is not None:
            self.acct.hold_open[(inst.iid, task.tid)] = t
        for hook in self._held:
            hook(inst, task, t)

    def unhold(self, inst: Instance, task: Task, t: float) -> None:
        """``task`` gives back its request on ``inst`` at ``t``."""
        acct = self.acct
        acct.touch(inst, t)
        inst.remove_task(task.tid)
        inst.free = tuple(map(add, inst.free, task.req))
        self.cloud.changed(inst)
        if task.anti_affinity:
            where = self.book.aa_where[task.job]
            where.discard(inst.iid)
            if not where:
                del self.book.aa_where[task.job]
        if acct.holds is not None:
            s = acct.hold_open.pop((inst.iid, task.tid))
            acct.holds.append((inst.iid, task.tid, s, t))
        for hook in self._freed:
            hook(inst, task, t)

    def release(self, inst: Instance, t: float) -> None:
        """End ``inst`` at ``t`` and bill it (it holds no task)."""
        if inst.tasks:
            raise StratusError(f"engine bug: releasing instance {inst.iid} with tasks")
        self.acct.touch(inst, t)
        self.cloud.release(inst, t)
        for hook in self._released:
            hook(inst, t)

    def maybe_release(self, inst: Instance, t: float) -> None:
        """Release ``inst`` if it holds no task and no policy keeps it."""
        if not inst.tasks and not inst.keep and inst.state != RELEASED:
            self.release(inst, t)

    # ------------------------------------------------------------------ task life
    def start(self, task: Task, t: float) -> None:
        """A run of ``task`` begins at ``t`` on its instance (``book.loc``)."""
        book, tid = self.book, task.tid
        book.state[tid] = RUNNING
        book.run_start[tid] = t
        self._changed(tid)
        for hook in self._started:
            hook(task, book.loc[tid], t)
        if book.first_start[tid] != book.first_start[tid]:  # NaN: first start
            book.first_start[tid] = t
        self.kernel.schedule(t + self.work.runtime[tid] - book.done[tid], EV_FINISH, tid,
                             book.epoch[tid])

    def adopt(self, task: Task, inst: Instance, done_s: float, t: float) -> None:
        """A pending ``task`` found on ``inst`` already (the live mirror's adoption, after a
        restart): it holds its request there from ``t`` with ``done_s`` seconds done
        before (a checkpoint), waiting for the instance until ``start``."""
        book, tid = self.book, task.tid
        book.pending.remove(task)
        book.loc[tid] = inst
        book.done[tid] = done_s
        book.state[tid] = WAITING
        self.hold(inst, task, t)

    def ended(self, tid: int, t: float) -> None:
        """The task's run ended at ``t`` as its world saw it (the live mirror), also from
        waiting for its instance or from a transfer: a runtime not known before is known
        now (what a learning estimator learns from), and the task finishes."""
        book = self.book
        if book.state[tid] != RUNNING:
            if tid in book.transfer:
                self.abort_transfer(tid, t)
            book.run_start[tid] = t
            book.state[tid] = RUNNING
        task = book.tasks[tid]
        task.runtime = self.work.runtime[tid] = book.done[tid] + (t - book.run_start[tid])
        self.finish(tid, book.epoch[tid], t)

    def stop_progress(self, tid: int, t: float) -> None:
        """The task's run stops at ``t``: its progress so far is kept (a run segment)."""
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
        """The transfer of ``task`` to its migration destination begins at ``t``."""
        book, acct, tid = self.book, self.acct, task.tid
        self.stop_progress(tid, t)
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
        for hook in self._moving:
            hook(task, t)

    def abort_transfer(self, tid: int, t: float) -> None:
        """A transfer cut short at ``t`` (an end was revoked): count only the time it took."""
        end, k = self.book.transfer.pop(tid)
        acct = self.acct
        acct.transfer(self.book.tasks[tid].req, -(end - t))
        acct.aborted_migrations += 1
        if k >= 0:
            rec = acct.mig_log[k]
            acct.mig_log[k] = (*rec[:4], t)

    def send_back(self, task: Task) -> None:
        """The task is pending again, on no instance."""
        self.book.state[task.tid] = PENDING
        self.book.loc[task.tid] = None
        self.book.pending.append(task)
        for hook in self._sent_back:
            hook(task)

    def _end_if_done(self) -> None:
        # instances kept to the end by the cloud (prepaid) do not keep a replay going
        if self.book.n_done == self.work.n and not self.cloud.busy():
            self.kernel.stop()

    # ------------------------------------------------------------------ events
    def finish(self, tid: int, epoch: int, t: float) -> None:
        """The task's run ends at ``t`` (void if its ``epoch`` is no longer current)."""
        book = self.book
        if epoch != book.epoch[tid]:
            return  # superseded by a migration or revocation
        task = book.tasks[tid]
        book.tasks[tid] = None  # done for good: the engine keeps no task object it won't use
        inst = book.loc[tid]
        self.stop_progress(tid, t)
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

    def migrated(self, tid: int, epoch: int, t: float) -> None:
        """The task's transfer ends at ``t``: it runs on at its destination."""
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

    def ready(self, inst: Instance, _b, t: float) -> None:
        """``inst`` is up at ``t``: tasks waiting for it start, transfers into it begin."""
        if inst.state == RELEASED:  # released (emptied or revoked) before it came up
            return
        self.cloud.ready(inst, t)
        book = self.book
        for task in list(inst.tasks.values()):
            tid = task.tid
            if book.state[tid] == WAITING:
                self.start(task, t)
            elif book.mig_dest.get(tid) is inst and book.state[tid] == RUNNING:
                self.begin_transfer(task, t)

    def revoke(self, inst: Instance, _b, t: float) -> None:
        """The provider takes a spot instance back. Tasks on it lose their progress and
        return to pending; tasks merely reserved on it as a migration target stay where
        they run (an in-flight transfer into it is aborted and the task resumes)."""
        if inst.state == RELEASED:
            return
        self.cloud.revocations += 1
        self.evict(inst, t, False)
        self.woke(t)
        self._end_if_done()

    def crash(self, iid: int, _b, t: float) -> None:
        """An instance dies (stratus.sim.faults): as a revocation without notice. Its bill stops
        now; its tasks lose their progress, which is counted as lost work."""
        inst = self.cloud.alive.get(iid)
        if inst is None:  # released before its crash time
            return
        self.cloud.crashes += 1
        if self.acct.crash_log is not None:
            self.acct.crash_log[iid] = t
        self.evict(inst, t, True)
        self.woke(t)
        self._end_if_done()

    def refused(self, tasks: int, migrations: int) -> None:
        """The provider refused an acquisition (insufficient capacity, stratus.sim.faults):
        ``tasks`` tasks meant for it stay pending, ``migrations`` moves to it are void."""
        self.acct.ice_returned += tasks
        self.acct.cancelled_migrations += migrations

    def evict(self, inst: Instance, t: float, crash: bool) -> None:
        """Take ``inst`` away at ``t`` (revoked or crashed) and send its tasks back."""
        book, acct = self.book, self.acct
        for task in list(inst.tasks.values()):
            tid = task.tid
            dest = book.mig_dest.get(tid)
            if book.loc[tid] is not inst:  # reserved here as a migration target
                del book.mig_dest[tid]
                self.unhold(inst, task, t)
                if book.state[tid] == MIGRATING:  # in flight to here: resume at the source
                    self.abort_transfer(tid, t)
                    book.epoch[tid] += 1
                    self.start(task, t)
                else:
                    acct.cancelled_migrations += 1
                continue
            if dest is not None:  # a migration away from here (queued or in flight) is void
                del book.mig_dest[tid]
                if book.state[tid] == MIGRATING:
                    self.abort_transfer(tid, t)
                else:
                    acct.cancelled_migrations += 1
                self.unhold(dest, task, t)
                self.maybe_release(dest, t)
            if book.state[tid] == RUNNING:
                self.stop_progress(tid, t)
            else:
                book.epoch[tid] += 1  # waiting or migrating: drop its pending events
            self.unhold(inst, task, t)
            if crash:
                self._lose(inst, task)
            else:
                acct.tasks_revoked += 1
            book.done[tid] = 0.0
            self.send_back(task)
        inst.keep = False
        self.release(inst, t)

    def _lose(self, inst: Instance, task: Task) -> None:
        """Book a crashed task's lost progress: seconds, vCPU-seconds, and dollars -- the
        seconds at the crashed instance's price, times the task's dominant share of it."""
        lost = self.book.done[task.tid]
        self.acct.crash_restarts += 1
        k = self._restarts[task.tid] = self._restarts.get(task.tid, 0) + 1
        crash_mean_s = self.cloud.crash_mean_s
        if k >= self.cfg.max_restarts and self.crash_loop is None:
            # a run survives with probability exp(-rate x runtime): a task expected to need
            # more than HOPELESS_RUNS runs is in a crash loop; any other task only has a
            # long streak of bad luck, which ends (a geometric number of runs)
            exponent = task.runtime / crash_mean_s
            if exponent > math.log(HOPELESS_RUNS):
                runs = f"{math.exp(exponent):.3g}" if exponent < 700 else "more than 1e300"
                self.crash_loop = (f"crash loop: task {task.tid} (job {task.job}, runtime "
                                    f"{task.runtime:g} s) lost {k} runs to crashes at "
                                    f"{self.cfg.faults.crash_per_hour:g} per instance-hour "
                                    f"and would need about {runs} runs to finish once")
        if lost > 0:
            share = max(r / c for r, c in zip(task.req, inst.itype.capacity) if c)
            price = self.cloud.current_price[(inst.itype.name, inst.market)]
            # milli-vCPU (stratus.base.resources)
            self.acct.lose(lost, lost * task.req[0] / 1000.0,
                           lost * price / 3600.0 * min(share, 1.0))


    # ------------------------------------------------------------------ decisions
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



__all__ = ["HOPELESS_RUNS", "MIB_BITS", "Core"]
