"""Per-task scale-out: each task that fits no live instance gets a new instance whose
type a ``TypeChoice`` picks for that task alone (Stratus §4.3 "Fleet", §5.1 "best-fitting
instance for a new task").

Type choices:

* ``LowestPrice``: Spot Fleet's ``lowestPrice`` allocation strategy (§2.1, §4.3): the
  currently cheapest acquirable type the task fits (the order of
  ``stratus.scalers.task_per_instance.by_price``).
* ``Diversified``: Spot Fleet's ``diversified`` strategy (§2.1: "add new instances such
  that the diversity in the spot VM pool increases"; AWS: "launches instances from all the
  Spot Instance pools that you specify"). With one region and zone a pool is a type, so
  acquisitions go round-robin over the catalog: the first acquirable type the task fits at
  or after a cursor that moves past each type chosen.
* ``BestFit``: the tightest type (§5.1 ablation): the least capacity left over after the
  task, each dimension as a share of the largest type's; ties to the cheaper type.

``copack`` (a dimension, or None): tasks left in the same tick first go on this tick's new
instances by ECS binpack on that dimension (packers/binpack.py) before another instance is
acquired, as ECS places tasks on the instances the fleet just added. Tasks are taken in the
order given (arrival order from the packers here).

Under a savings plan (scalers.marginal) ``LowestPrice`` takes the cheapest (type, market)
at the margin, covered on-demand capacity first; ``Diversified`` and ``BestFit`` keep their
type and buy it in the market cheaper for it at the margin.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from stratus.base.resources import Vec, fits
from stratus.packers.binpack import BINPACK_DIMS, BinpackIndex, JobRun
from stratus.policy.compose import Plan
from stratus.policy.params import Param, Parametric
from stratus.pricing.catalog import InstanceType
from stratus.scalers.marginal import Offer
from stratus.scalers.task_per_instance import by_price
from stratus.sim.contracts import Resets
from stratus.sim.model import Task
from stratus.sim.view import ClusterView


class TypeChoice(Protocol):
    name: str

    def begin(self, view: ClusterView) -> None:
        """Called once per scheduling event (Stratus §3.1), before ``choose``."""

    def choose(self, req: Vec) -> InstanceType | None:
        """The type to acquire for a task of request ``req`` (None: none fits; it waits;
        Stratus §3.3 bids the on-demand price, so a type above it is not acquirable).
        A choice with state kept across ticks also implements ``Resets`` (a new replay:
        ``reset()``, stratus.policy.compose)."""

    def pick(self, req: Vec, offer: Offer) -> tuple[InstanceType, str] | None:
        """Under a savings plan: the (type, market) to acquire in, at marginal prices
        (scalers.marginal)."""


def _market_at_margin(choice: TypeChoice, req: Vec, offer: Offer
                      ) -> tuple[InstanceType, str] | None:
    """A choice that does not pick by price: its type, in the market cheaper for that type
    at the margin."""
    itype = choice.choose(req)
    return None if itype is None else (itype, offer.market_for(itype))


class LowestPrice:
    name = "lowest-price"

    def begin(self, view: ClusterView) -> None:
        self._types = by_price(view)
        self._cache: dict[Vec, InstanceType | None] = {}

    def choose(self, req: Vec) -> InstanceType | None:
        if req not in self._cache:
            self._cache[req] = next((t for t in self._types if fits(req, t.capacity)), None)
        return self._cache[req]

    def pick(self, req: Vec, offer: Offer) -> tuple[InstanceType, str] | None:
        return offer.cheapest(req)  # lowestPrice at the margin: covered on-demand first


class Diversified:
    name = "diversified"

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """A new replay starts from the catalog's first pool."""
        self.cursor = 0  # index into the catalog of the next pool to draw from

    def begin(self, view: ClusterView) -> None:
        self._catalog = list(view.catalog)
        ok = {t.name for t in view.acquirable_types()}
        self._ok = [t.name in ok for t in self._catalog]

    def choose(self, req: Vec) -> InstanceType | None:
        cat, ok = self._catalog, self._ok
        n = len(cat)
        for k in range(n):
            i = (self.cursor + k) % n
            if ok[i] and fits(req, cat[i].capacity):
                self.cursor = (i + 1) % n
                return cat[i]
        return None

    pick = _market_at_margin


class BestFit:
    name = "best-fit"

    def begin(self, view: ClusterView) -> None:
        self._ref = view.catalog.max_capacity
        self._types = [(view.price(t), i, t) for i, t in enumerate(view.acquirable_types())]
        self._cache: dict[Vec, InstanceType | None] = {}

    def choose(self, req: Vec) -> InstanceType | None:
        if req not in self._cache:
            ref = self._ref
            best = min(((sum((c - r) / m for c, r, m in zip(t.capacity, req, ref)), p, i, t)
                        for p, i, t in self._types if fits(req, t.capacity)), default=None)
            self._cache[req] = None if best is None else best[3]
        return self._cache[req]

    pick = _market_at_margin


class PerTaskScaler(Parametric):
    """Scaler: a new instance per task of the type ``choice`` picks, with optional same-tick
    binpack of later tasks onto the tick's new instances (``copack``: the dimension, 0 for
    CPU or 1 for memory, or None; Stratus §4.3, §5.1)."""

    PARAMS = (Param("copack", int, choices=(0, 1), labels=BINPACK_DIMS, none=True),)

    def __init__(self, choice: TypeChoice, copack: int | None = None) -> None:
        self.choice = choice
        self.copack = copack
        self.check_init()
        self._idx: BinpackIndex | None = None  # scratch, emptied after each tick

    @property
    def label(self) -> str:
        return f"per-task-{self.choice.name}"

    @property
    def name(self) -> str:
        copack = "" if self.copack is None else f"+copack-{BINPACK_DIMS[self.copack]}"
        return self.label + copack

    def reset(self) -> None:
        if isinstance(self.choice, Resets):
            self.choice.reset()

    def scale(self, view: ClusterView, plan: Plan, tasks: Sequence[Task]) -> None:
        choice = self.choice
        choice.begin(view)
        offer = None
        if view.savings_plan is not None:  # at the margin (scalers.marginal)
            offer = Offer(view, plan, view.acquirable_types())
        if self.copack is None or not tasks:
            for task in tasks:
                itype, market = self._choose(task.req, offer)
                if itype is not None:
                    plan.acquire(itype, (task,), market)
            return
        if len(tasks[0].req) != 2:  # the index is written for (cpu, mem)
            self._copack_scan(plan, tasks, offer)
        else:
            self._copack_index(view, plan, tasks, offer)

    def _copack_index(self, view: ClusterView, plan: Plan, tasks: Sequence[Task],
                      offer: Offer | None) -> None:
        """Copack on (cpu, mem) through the tick's ``BinpackIndex`` of new instances."""
        d = self.copack
        idx = self._idx
        if idx is None or idx.dim != d or idx.tree.cap <= view.catalog.max_capacity[d]:
            idx = self._idx = BinpackIndex(view.catalog.max_capacity[d], d)
        groups: list[tuple[InstanceType, list[Task], list[int], str | None]] = []
        flagged: dict[int, set[int]] = {}  # job -> groups holding a flagged task of it
        run = JobRun(idx)
        try:
            for task in tasks:
                req = task.req
                if task.anti_affinity:
                    g = run.best(task, flagged.setdefault(task.job, set()))
                else:
                    if run.job is not None:
                        run.end()
                    g = idx.best(req)
                if g is None:
                    itype, market = self._choose(req, offer)
                    if itype is None:
                        continue  # no acquirable type fits it now: it waits
                    g = len(groups)
                    groups.append((itype, [], list(itype.capacity), market))
                _, members, free, _ = groups[g]
                members.append(task)
                for k, r in enumerate(req):
                    free[k] -= r
                if task.anti_affinity:
                    flagged[task.job].add(g)
                    run.took(g, list(free))
                else:
                    idx.update(g, free)
        finally:
            idx.clear()
        for itype, members, _, market in groups:
            plan.acquire(itype, members, market)

    def _choose(self, req: Vec, offer: Offer | None) -> tuple[InstanceType | None, str | None]:
        """The choice's type for ``req`` and its market (None: the replay's); under a
        savings plan (``offer``) the pair at the margin, which then takes headroom."""
        if offer is None:
            return self.choice.choose(req), None
        pick = self.choice.pick(req, offer)
        if pick is None:
            return None, None
        offer.take(*pick)
        return pick

    def _copack_scan(self, plan: Plan, tasks: Sequence[Task], offer: Offer | None = None
                     ) -> None:
        """The copack above in any number of dimensions, by a scan of the tick's new
        instances: the one ``BinpackIndex.best`` picks (least free ``copack`` dimension,
        then least free of the other of cpu and mem, then the first made)."""
        d = self.copack
        o = 1 - d
        groups: list[tuple[InstanceType, list[Task], list[int], str | None]] = []
        for task in tasks:
            req = task.req
            g, key = None, None
            for k, (_, _, free, _) in enumerate(groups):
                if fits(req, free) and (key is None or (free[d], free[o], k) < key):
                    g, key = k, (free[d], free[o], k)
            if g is None:
                itype, market = self._choose(req, offer)
                if itype is None:
                    continue  # no acquirable type fits it now: it waits
                g = len(groups)
                groups.append((itype, [], list(itype.capacity), market))
            _, members, free, _ = groups[g]
            members.append(task)
            for k, r in enumerate(req):
                free[k] -= r
        for itype, members, _, market in groups:
            plan.acquire(itype, members, market)
