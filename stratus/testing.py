"""A cluster view built by hand, for testing a policy without the engine (issue 21, item 5).

``StaticView`` answers everything ``stratus.sim.view.ClusterView`` does, from state you set:
the time, the catalog and prices, live instances with the tasks on them (each with its
state, elapsed seconds and estimate) and the pending tasks. Hand it to ``schedule(view)``
and check the ``Decisions``::

    from stratus.testing import StaticView, task
    v = StaticView(market="on-demand")
    a = v.add_instance("m4.xlarge", tasks=[(task(0, cpu=2, mem=8), 600.0, 3600.0)])
    v.add_pending(task(1, cpu=1, mem=4), estimate=1800.0)
    decisions = my_scheduler.schedule(v)
    assert decisions.placements[0].instance is a

The engine's rules still apply to what a policy may do with it: instances and tasks are
read-only (``sealed`` is on while you call ``schedule`` through ``decide``). To check that a
policy keeps to that in a whole replay, replay ``Sealed(scheduler)``.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

from stratus.base.errors import DecisionError
from stratus.base.resources import to_units
from stratus.commitments.savings import SavingsPlan, marginal_price
from stratus.pricing.catalog import M4, Catalog, InstanceType
from stratus.pricing.prices import ON_DEMAND, RESERVED, SPOT
from stratus.sim.estimate import remaining_estimate
from stratus.sim.footprint import DEFAULT as DEFAULT_FOOTPRINT
from stratus.sim.footprint import footprint_fraction
from stratus.sim.model import READY, REQUESTED, RUNNING, WAITING, Instance, Task
from stratus.sim.view import CONSTANT

MIB_BITS = 8 * 1024 * 1024


# --- read-only while a policy decides: a check for tests, not the engine's cost -------------
_SEALED = threading.local()  # per thread: replays in other threads write on undisturbed
_LOCK = threading.Lock()
_INSTALLED = [0]


def _guarded_setattr(self, name: str, value) -> None:
    if getattr(_SEALED, "on", False):
        try:  # a new object (a policy may build a Task to ask about) sets its slots once
            object.__getattribute__(self, name)
        except AttributeError:
            object.__setattr__(self, name, value)
            return
        raise DecisionError(f"a policy set {type(self).__name__}.{name} on {self!r}: instances "
                            f"and tasks belong to the engine; decide through Decisions "
                            f"(e.g. Acquire(keep=True), Decisions.keep, releases)")
    object.__setattr__(self, name, value)


@contextmanager
def sealed() -> Iterator[None]:
    """Instances and tasks read-only in this thread for the duration (a policy's
    ``schedule(view)``): setting an attribute of one raises a DecisionError. A setter is
    installed on the two classes only while some thread is inside."""
    with _LOCK:
        if _INSTALLED[0] == 0:
            Instance.__setattr__ = _guarded_setattr
            Task.__setattr__ = _guarded_setattr
        _INSTALLED[0] += 1
    _SEALED.on = True
    try:
        yield
    finally:
        _SEALED.on = False
        with _LOCK:
            _INSTALLED[0] -= 1
            if _INSTALLED[0] == 0:
                del Instance.__setattr__
                del Task.__setattr__


class Sealed:
    """``scheduler`` for a replay in a test: each ``schedule(view)`` runs ``sealed``, so a
    policy that sets an attribute of an instance or a task (behind ``Decisions``) stops
    the replay with a DecisionError. Everything else is the scheduler's own."""

    def __init__(self, scheduler) -> None:
        self.scheduler = scheduler

    def schedule(self, view):
        with sealed():
            return self.scheduler.schedule(view)

    def __getattr__(self, name: str):  # name, reset, start, stats, quiet, ...: its own
        return getattr(self.scheduler, name)


def task(tid: int, cpu: float = 1.0, mem: float = 4.0, job: int | None = None,
         index: int = 0, submit: float = 0.0, runtime: float = 3600.0, gpus: float = 0.0,
         anti_affinity: bool = False, dims: int = 2) -> Task:
    """A task with a request of ``cpu`` vCPU and ``mem`` GiB (and ``gpus`` on a GPU
    catalog: ``dims=3``), in the engine's integer units."""
    req = to_units(cpu, mem, gpus) if dims == 3 else to_units(cpu, mem)
    return Task(tid, tid if job is None else job, index, submit, runtime, req,
                anti_affinity=anti_affinity)


class StaticView:
    """A ClusterView whose state is set by hand (see the module docstring)."""

    def __init__(self, catalog: Catalog = M4, now: float = 0.0, market: str = ON_DEMAND,
                 tick_s: float = 60.0, spinup_s: tuple[float, float] = (30.0, 160.0),
                 prices: dict[tuple[str, str], float] | None = None, readjust: bool = True,
                 migration_mbps: float = 160.0,
                 migration_footprint: str = DEFAULT_FOOTPRINT,
                 savings_plan: SavingsPlan | None = None) -> None:
        self.now, self.tick_s, self.catalog, self.market = now, tick_s, catalog, market
        self.savings_plan = savings_plan  # stratus.commitments.savings; on-demand prices are always set
        self.spinup_s = spinup_s
        self.markets = (ON_DEMAND, SPOT) if market == SPOT else (ON_DEMAND,)
        self.readjust = readjust
        # spot at 30% of on-demand unless set (set_price): a stand-in, not a market model
        self._price = {(t.name, m): (t.ondemand_hourly if m == ON_DEMAND else
                                     t.ondemand_hourly * 0.3) for t in catalog
                       for m in self.markets}
        self._price.update(prices or {})
        self._bits_per_s = migration_mbps * 1e6  # as the engine: ReplayConfig's defaults
        self._fraction = footprint_fraction(migration_footprint)
        self._alive: dict[int, Instance] = {}
        self._pending: list[Task] = []
        self._where: dict[int, Instance] = {}
        self._state: dict[int, int] = {}
        self._elapsed: dict[int, float] = {}
        self._est: dict[int, float] = {}
        self._migrating: set[int] = set()
        self._unavailable: dict[str, float] = {}
        self._failed: list[tuple[float, str, str]] = []

    # --- building the state -------------------------------------------------------------
    def add_instance(self, itype: InstanceType | str,
                     tasks: Sequence[tuple[Task, float, float]] = (),
                     market: str | None = None, ready: bool = True,
                     iid: int | None = None) -> Instance:
        """A live instance holding ``tasks``, each ``(task, elapsed_s, estimate_s)``
        (running if the instance is ready, else waiting for it to boot). ``market``
        "reserved" makes it a reserved instance (stratus.commitments.reserved), priced as the engine
        prices one unless ``set_price`` says otherwise."""
        t = self.catalog[itype] if isinstance(itype, str) else itype
        if market == RESERVED:
            from stratus.commitments.reserved import reserved_rate

            self._price.setdefault((t.name, RESERVED), reserved_rate(t, None))
        iid = len(self._alive) if iid is None else iid
        if iid in self._alive:
            raise ValueError(f"instance id {iid} is taken")
        inst = Instance(iid, t, market or self.market, None, self.now)
        if ready:
            inst.state, inst.ready_at = READY, self.now
        else:
            inst.state = REQUESTED
        free = list(t.capacity)
        for task, elapsed, estimate in tasks:
            inst.add_task(task)
            free = [f - r for f, r in zip(free, task.req)]
            if min(free) < 0:
                raise ValueError(f"{task!r} does not fit on {t.name} with the others")
            self._where[task.tid] = inst
            self._state[task.tid] = RUNNING if ready else WAITING
            self._elapsed[task.tid], self._est[task.tid] = float(elapsed), float(estimate)
            inst.hosted += 1
        inst.free = tuple(free)
        self._alive[iid] = inst
        return inst

    def add_pending(self, task: Task, estimate: float | None = None) -> Task:
        """A task waiting for a placement (``estimate``: its predicted runtime, default
        the true one)."""
        self._pending.append(task)
        self._where[task.tid] = None
        self._state[task.tid] = 0  # PENDING
        self._elapsed[task.tid] = 0.0
        self._est[task.tid] = float(task.runtime if estimate is None else estimate)
        return task

    def set_price(self, itype: str, price: float, market: str | None = None) -> None:
        self._price[(itype, market or self.market)] = price

    def set_migrating(self, task: Task) -> None:
        self._migrating.add(task.tid)

    def set_unavailable(self, itype: str, until: float) -> None:
        """A request for ``itype`` failed: it is short of capacity until ``until``."""
        self._unavailable[itype] = until
        self._failed.append((self.now, itype, self.market))

    def decide(self, scheduler):
        """``scheduler.schedule(self)`` with instances and tasks read-only, as the engine
        calls it."""
        with sealed():
            return scheduler.schedule(self)

    # --- ClusterView ---------------------------------------------------------------------
    @property
    def pending(self) -> tuple[Task, ...]:
        return tuple(self._pending)

    @property
    def instances(self) -> Iterable[Instance]:
        return self._alive.values()

    @property
    def reserved_instances(self) -> Iterable[Instance]:
        return [i for i in self._alive.values() if i.market == RESERVED]

    @property
    def reserved_shared(self) -> bool:
        return True

    def instance(self, iid: int) -> Instance:
        return self._alive[iid]

    def location(self, task: Task) -> Instance | None:
        return self._where.get(task.tid)

    def state(self, task: Task) -> int:
        return self._state[task.tid]

    def flagged_on(self, job: int) -> set[int]:
        return {i.iid for i in self._alive.values()
                if any(t.job == job and t.anti_affinity for t in i.tasks.values())}

    def is_migrating(self, task: Task) -> bool:
        return task.tid in self._migrating

    def elapsed(self, task: Task) -> float:
        return self._elapsed[task.tid]

    def estimate(self, task: Task) -> float:
        return self._est[task.tid]

    def remaining(self, task: Task) -> float:
        return remaining_estimate(self._est[task.tid], self._elapsed[task.tid], self.readjust)

    def instance_remaining(self, inst: Instance) -> float:
        return max((self.remaining(t) for t in inst.tasks.values()), default=0.0)

    def instances_remaining(self, instances: Iterable[Instance]) -> list[float]:
        return [self.instance_remaining(i) for i in instances]

    def instance_forms(self, instances: Iterable[Instance]) -> list[tuple]:
        """Constants (``CONSTANT``): a hand-set state does not run on by itself."""
        return [(CONSTANT, r, 0.0, 0.0, math.inf) for r in self.instances_remaining(instances)]

    def watch_instances(self) -> None:
        """None: state set by hand is not reported as it changes, so an index that lives
        across ticks (packers.binning) is built anew for every ``schedule`` call."""
        return None

    def migration_seconds(self, task: Task) -> float:
        return task.req[1] * self._fraction * MIB_BITS / self._bits_per_s

    def price(self, itype: InstanceType | str, market: str | None = None) -> float:
        name = itype if isinstance(itype, str) else itype.name
        return self._price[(name, market or self.market)]

    def savings_headroom(self) -> float | None:
        if self.savings_plan is None:
            return None
        rate = sum(self._price[(i.itype.name, ON_DEMAND)] for i in self._alive.values()
                   if i.market == ON_DEMAND)
        return self.savings_plan.headroom(rate)

    def marginal_price(self, itype: InstanceType | str, market: str | None = None) -> float:
        p = self.price(itype, market)
        if self.savings_plan is None or (market or self.market) != ON_DEMAND:
            return p
        return marginal_price(p, self.savings_headroom(), self.savings_plan.discount)

    def bid(self, itype: InstanceType) -> float:
        return itype.ondemand_hourly

    def acquirable_types(self, shortages: bool = True) -> list[InstanceType]:
        short = self.unavailable_types() if shortages else ()
        if self.market != SPOT:
            return [t for t in self.catalog if t.name not in short]
        return [t for t in self.catalog
                if self._price[(t.name, SPOT)] <= self.bid(t) and t.name not in short]

    def unavailable_types(self) -> frozenset[str]:
        return frozenset(n for n, until in self._unavailable.items() if until > self.now)

    def failed_requests(self, since: float = -math.inf) -> list[tuple[float, str, str]]:
        return [r for r in self._failed if r[0] >= since]
