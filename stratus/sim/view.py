"""The read-only cluster view a scheduler receives at each tick."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Protocol

from stratus.pricing.catalog import Catalog, InstanceType
from stratus.pricing.prices import ON_DEMAND, SPOT
from stratus.sim.cloud import Cloud
from stratus.sim.config import PlanTerms
from stratus.sim.estimate import remaining_estimate
from stratus.sim.model import RUNNING, Instance, Task
from stratus.sim.taskbook import TaskBook

#: the kinds of ``ClusterView.instance_forms``
FALLING, RISING, CONSTANT = 0, 1, 2


def remaining_at(kind: int, est: float, done: float, start: float, t: float) -> float:
    """The remaining runtime at time ``t`` of a form of ``ClusterView.instance_forms``."""
    if kind == FALLING:
        return est - (done + (t - start))
    return done + (t - start) if kind == RISING else est


def form_key(kind: int, est: float, done: float, start: float) -> float:
    """A number that orders the forms of one kind by remaining runtime at any time: the
    expected end (falling), minus the effective start (rising), the value (constant)."""
    if kind == FALLING:
        return start - done + est
    return done - start if kind == RISING else est


class ClusterView(Protocol):
    """What a policy may know, and all it may ask for: every view implements all of it
    (the engine's ``EngineView``, ``stratus.testing.StaticView``, the tests' views), so a
    part asks for a member by its name and never probes for it (issue 37; one narrow
    interface, as the Kubernetes scheduling framework's). Reading it never changes the
    simulation. Members are documented on ``EngineView``."""

    @property
    def now(self) -> float: ...
    @property
    def tick_s(self) -> float: ...
    @property
    def catalog(self) -> Catalog: ...
    @property
    def market(self) -> str: ...
    @property
    def markets(self) -> tuple[str, ...]: ...
    @property
    def spinup_s(self) -> tuple[float, float]: ...
    @property
    def pending(self) -> tuple[Task, ...]: ...
    @property
    def instances(self) -> Iterable[Instance]: ...
    @property
    def reserved_instances(self) -> Iterable[Instance]: ...
    @property
    def reserved_shared(self) -> bool: ...
    @property
    def savings_plan(self) -> PlanTerms | None: ...
    def instance(self, iid: int) -> Instance: ...
    def location(self, task: Task) -> Instance | None: ...
    def state(self, task: Task) -> int: ...
    def flagged_on(self, job: int) -> set[int] | tuple: ...
    def is_migrating(self, task: Task) -> bool: ...
    def elapsed(self, task: Task) -> float: ...
    def estimate(self, task: Task) -> float: ...
    def remaining(self, task: Task) -> float: ...
    def instance_remaining(self, inst: Instance) -> float: ...
    def instances_remaining(self, instances: Iterable[Instance]) -> list[float]: ...
    def instance_forms(self, instances: Iterable[Instance]
                       ) -> list[tuple[int, float, float, float, float]]: ...
    def watch_instances(self) -> set[int] | None: ...
    def migration_seconds(self, task: Task) -> float: ...
    def price(self, itype: InstanceType | str, market: str | None = None) -> float: ...
    def savings_headroom(self) -> float | None: ...
    def marginal_price(self, itype: InstanceType | str, market: str | None = None
                       ) -> float: ...
    def bid(self, itype: InstanceType) -> float: ...
    def acquirable_types(self, shortages: bool = True) -> list[InstanceType]: ...
    def unavailable_types(self) -> frozenset[str]: ...
    def failed_requests(self, since: float = -math.inf) -> list[tuple[float, str, str]]: ...


class EngineView:
    """The engine's ``ClusterView``: time, pending tasks, live instances with their tasks
    and runtime estimates, prices. Reading it never changes the simulation.

    Built from the components' public state: ``clock`` (with ``now``), the run's ``cfg``
    (tick, catalog, market, spin-up, readjust), the task book, the cloud, and the
    migration-time function."""

    __slots__ = ("_clock", "_cfg", "_book", "_cloud", "_migration")

    def __init__(self, clock, cfg, book: TaskBook, cloud: Cloud,
                 migration: Callable[[Task], float]) -> None:
        self._clock, self._cfg, self._book, self._cloud = clock, cfg, book, cloud
        self._migration = migration

    # --- time and configuration --------------------------------------------------------
    @property
    def now(self) -> float:
        return self._clock.now

    @property
    def tick_s(self) -> float:
        return self._cfg.tick_s

    @property
    def catalog(self) -> Catalog:
        return self._cfg.catalog

    @property
    def market(self) -> str:
        """The market elastic acquisitions use by default in this replay."""
        return self._cfg.market

    @property
    def markets(self) -> tuple[str, ...]:
        return self._cloud.markets

    @property
    def spinup_s(self) -> tuple[float, float]:
        """Bounds of the instance spin-up delay (uniform), for cost-benefit decisions."""
        return self._cfg.spinup_s

    # --- work ------------------------------------------------------------------------------
    @property
    def pending(self) -> tuple[Task, ...]:
        """Tasks waiting for a placement, in arrival order."""
        return tuple(self._book.pending)

    @property
    def instances(self) -> Iterable[Instance]:
        """Live (requested or running) instances, oldest first."""
        return self._cloud.alive.values()

    @property
    def reserved_instances(self) -> Iterable[Instance]:
        """The live reserved instances (stratus.commitments.reserved), oldest first: prepaid, up to the
        end of the replay; a policy may place and migrate onto them, never release them."""
        return self._cloud.reserved.values()

    @property
    def reserved_shared(self) -> bool:
        """Whether the scheduler may place tasks on reserved instances: always, unless a
        waiting policy keeps them to itself (``--waiting ...,share=off``)."""
        w = self._cfg.waiting
        return w is None or w.share

    def instance(self, iid: int) -> Instance:
        return self._cloud.alive[iid]

    def location(self, task: Task) -> Instance | None:
        return self._book.loc[task.tid]

    def state(self, task: Task) -> int:
        return self._book.state[task.tid]

    def flagged_on(self, job: int) -> set[int] | tuple:
        """Ids of the instances where a flagged (anti-affinity) task of ``job`` holds
        resources now: where another flagged task of the job may not go. Do not mutate."""
        return self._book.aa_where.get(job, ())

    def is_migrating(self, task: Task) -> bool:
        """True while a migration of the task is in flight or queued for its destination."""
        return task.tid in self._book.mig_dest

    # --- runtimes ----------------------------------------------------------------------------
    def elapsed(self, task: Task) -> float:
        """Seconds of progress the task has made."""
        b = self._book
        tid = task.tid
        done = b.done[tid]
        if b.state[tid] == RUNNING:
            done += self._clock.now - b.run_start[tid]
        return done

    def estimate(self, task: Task) -> float:
        """Predicted total runtime from the replay's estimator (made at arrival)."""
        return self._book.est[task.tid]

    def remaining(self, task: Task) -> float:
        """Estimated seconds left (readjusted when overdue, Stratus §3.4)."""
        return remaining_estimate(self._book.est[task.tid], self.elapsed(task),
                                  self._cfg.readjust)

    def instance_remaining(self, inst: Instance) -> float:
        """Remaining runtime of an instance: its longest task's estimated remaining
        runtime (Stratus §3.2)."""
        return self.instances_remaining((inst,))[0]

    def instances_remaining(self, instances: Iterable[Instance]) -> list[float]:
        """``instance_remaining`` of each instance, in one tight loop (a packer asks for
        every live instance at every tick): the arithmetic of ``remaining`` per task,
        inlined."""
        b = self._book
        now, est, done, state, start = self._clock.now, b.est, b.done, b.state, b.run_start
        readjust = self._cfg.readjust
        out = []
        append = out.append
        for inst in instances:
            best = 0.0
            for tid in inst.tasks:
                el = done[tid]
                if state[tid] == RUNNING:
                    el += now - start[tid]
                left = est[tid] - el
                r = left if left > 0 else (el if readjust else 0.0)
                if r > best:
                    best = r
            append(best)
        return out

    def instance_forms(self, instances: Iterable[Instance]
                       ) -> list[tuple[int, float, float, float, float]]:
        """Each instance's remaining runtime (``instances_remaining``) as a function of
        time, for an index that lives across ticks (packers.binning):
        ``(kind, est, done, start, until)`` of the task that sets it, where the remaining
        runtime at a time t from now until ``until`` is, with ``remaining_at``, ``est -
        (done + (t - start))`` (``FALLING``: a running task), ``done + (t - start)``
        (``RISING``: a running task that outlived its estimate, readjusted, Stratus §3.4)
        or ``est`` (``CONSTANT``: no task running; ``est`` is then the value). ``until`` is
        the first time the form may change with no event on the instance: a task
        outliving its estimate, or one part of the max overtaking another. The arithmetic
        is ``instances_remaining``'s, so both give the same numbers."""
        b = self._book
        now, est, done, state, start = self._clock.now, b.est, b.done, b.state, b.run_start
        readjust = self._cfg.readjust
        inf = math.inf
        out = []
        append = out.append
        for inst in instances:
            fv = rv = -inf  # the largest falling and rising values now
            ft = rt = -1
            c = 0.0  # the constant part
            nxt = inf  # the first expected end of a running task not yet overdue
            for tid in inst.tasks:
                d = done[tid]
                if state[tid] == RUNNING:
                    el = d + (now - start[tid])
                    left = est[tid] - el
                    if left > 0:
                        if left > fv:
                            fv, ft = left, tid
                        end = start[tid] - d + est[tid]
                        if end < nxt:
                            nxt = end
                    elif readjust and el > rv:
                        rv, rt = el, tid
                else:
                    left = est[tid] - d
                    r = left if left > 0 else (d if readjust else 0.0)
                    if r > c:
                        c = r
            # the largest part now; the rising one wins ties (it only grows), then the
            # constant one; a falling part is overtaken where the lines cross
            rk = done[rt] - start[rt] if rt >= 0 else -inf  # rising: rk + t
            if rt >= 0 and rv >= c and rv >= fv:
                append((RISING, est[rt], done[rt], start[rt], nxt))
            elif c >= fv:
                append((CONSTANT, c, 0.0, 0.0, nxt if rt < 0 else min(nxt, c - rk)))
            else:
                fk = start[ft] - done[ft] + est[ft]  # falling: fk - t
                until = min(nxt, fk - c)
                if rt >= 0:
                    until = min(until, (fk - rk) / 2)
                append((FALLING, est[ft], done[ft], start[ft], until))
        return out

    def watch_instances(self) -> set[int] | None:
        """A set the engine adds an instance's id to whenever the instance changes: it
        is acquired, comes up or goes, a task arrives, leaves, starts or stops on it. Clear
        it after reading; ``instance_forms`` of the others still hold. (A view that
        cannot report changes, as ``stratus.testing.StaticView``, returns None.)"""
        return self._cloud.watch()

    def migration_seconds(self, task: Task) -> float:
        """How long moving this task's memory takes at the configured rate (Stratus §4.1)."""
        return self._migration(task)

    # --- prices ----------------------------------------------------------------------------------
    def price(self, itype: InstanceType | str, market: str | None = None) -> float:
        """Current $/h of a type in a market (default: the replay's market)."""
        name = itype if isinstance(itype, str) else itype.name
        return self._cloud.current_price[(name, market or self._cfg.market)]

    @property
    def savings_plan(self) -> PlanTerms | None:
        """The replay's savings plan (stratus.commitments.savings), or None."""
        return self._cfg.savings_plan

    def savings_headroom(self) -> float | None:
        """$/h of the plan's commitment not taken by the on-demand instances live now
        (``instances``, requested or running) at their discounted rate: C - (1 - d) x
        their on-demand $/h. A rate, looking forward from now (the hour's usage so far does
        not enter it); negative when they exceed the plan. None without a plan."""
        plan = self._cfg.savings_plan
        return None if plan is None else plan.headroom(self._cloud.od_rate())

    def marginal_price(self, itype: InstanceType | str, market: str | None = None) -> float:
        """$/h one more instance of ``itype`` in ``market`` (default: the replay's) adds
        to the bill now. Under a savings plan, on-demand: 0 while ``savings_headroom``
        covers its discounted rate, its full price with no headroom, the uncovered part in
        between (stratus.commitments.savings.marginal_price). Otherwise ``price``."""
        p = self.price(itype, market)
        plan = self._cfg.savings_plan
        if plan is None or (market or self._cfg.market) != ON_DEMAND:
            return p
        return plan.marginal(p, self._cloud.od_rate())

    def bid(self, itype: InstanceType) -> float:
        """The default spot bid: the type's on-demand price (Stratus §3.3)."""
        return self._cloud.default_bid(itype)

    def acquirable_types(self, shortages: bool = True) -> list[InstanceType]:
        """Types worth acquiring now in the replay's market: on spot, those whose price is
        not above the bid (a spot instance bid below the price is revoked at once); and,
        unless ``shortages`` is False, not known to be short of capacity now
        (``unavailable_types``)."""
        cloud, catalog = self._cloud, self._cfg.catalog
        short = self.unavailable_types() if shortages and cloud.known_unavailable else ()
        if self._cfg.market != SPOT:
            return [t for t in catalog if t.name not in short]
        cp = cloud.current_price
        return [t for t in catalog
                if cp[(t.name, SPOT)] <= cloud.default_bid(t) and t.name not in short]

    # --- the cloud's own faults (stratus.sim.faults) -------------------------------------------
    def unavailable_types(self) -> frozenset[str]:
        """Names of the types known to be short of capacity now: a request for one was
        refused less than the ice-window ago, so a request for it now would be refused too
        (the refusal is known when the request is made, stratus.sim.faults)."""
        known = self._cloud.known_unavailable
        if not known:
            return frozenset()
        now = self._clock.now
        return frozenset(n for n, until in known.items() if until > now)

    def failed_requests(self, since: float = -math.inf) -> list[tuple[float, str, str]]:
        """Requests the provider refused (insufficient capacity) at or after ``since``: (time
        of the request, which is when it was refused; type name, market), oldest first."""
        out = self._cloud.failed_requests
        if since == -math.inf:
            return list(out)
        return [r for r in out if r[0] >= since]
