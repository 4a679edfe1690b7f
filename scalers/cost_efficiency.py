"""Stratus scale-out: co-select task groups and instance types (Chung et al., SoCC'18, §3.3).

While tasks remain unplaced, each iteration looks at the unscheduled tasks bin by bin in
descending order of runtime bins. In a bin, candidate group i is the i longest tasks;
groups grow until their aggregate request exceeds the largest allowed type. Every
(group, type) pair the group fits is scored

    score = normalized used constraining resource / price

where the constraining resource is the dimension the group would use most of on that
type, its used amount is the group's request in that dimension, normalized by the
amount the smallest allowed type offers in it (§3.3, with the paper's worked example in
the tests; for GPUs, which the smallest type may lack, the smallest non-zero amount:
``Catalog.norm``, docs/decisions.md). The best pair over all bins is acquired (in the replay's market; spot by
default, bid = the on-demand price, §3.3) and its group assigned to it; repeat.

Ties (equal scores, e.g. every m4 on-demand type costs the same per vCPU) go to the larger
group, then the higher bin, then the smaller type: fewer instances for the same money.

Under a savings plan (``stratus.commitments.savings``; docs/decisions.md, "Savings plans") the pairs
are (group, type, market) over the replay's market and on-demand, and each is scored at its
marginal price (``ClusterView.marginal_price``): a covered on-demand type costs nothing
more, so it is scored at COVERED_FLOOR (1e-6) x its on-demand price instead of 0 (no
division by zero; covered capacity ranks before anything that costs money, and covered
types among themselves by used capacity per dollar of commitment they take). Each
on-demand acquisition takes (1 - d) x its price off the plan's headroom for the rest of the
tick and the on-demand prices are read again: covered on-demand until the commitment is
used, then the cheaper of the partly covered rest and the replay's market.

Anti-affinity (docs/decisions.md): a group holds at most one flagged task per job. A bin's
candidate list holds every unflagged task and, per job, only its longest flagged task not
yet grouped; the job's next flagged task joins the list (at its place by runtime) once that
one is grouped. Groups stay prefixes of "the i longest" candidates.
"""

from __future__ import annotations

import math
from bisect import insort
from collections import deque
from collections.abc import Sequence

from stratus.commitments.savings import COVERED_FLOOR, marginal_price
from stratus.packers.binning import UNIT_S, bin_of
from stratus.policy.compose import Plan
from stratus.policy.params import Parametric
from stratus.pricing.catalog import InstanceType
from stratus.pricing.prices import ON_DEMAND
from stratus.sim.model import Task
from stratus.sim.view import ClusterView

_REL_TIE = 1e-12


def _better(score: float, k: int, best_score: float, best_k: int) -> bool:
    """Higher score wins; equal scores (within float noise) go to the larger group."""
    return score > best_score * (1 + _REL_TIE) or (score >= best_score * (1 - _REL_TIE)
                                                    and k > best_k)


def normalized_used_constraining(group: Sequence[int], cap: Sequence[int],
                                 smallest: Sequence[int]) -> float:
    """The group's request in the dimension it uses most of on ``cap``, in units of the
    smallest type's amount of that dimension (§3.3)."""
    best_d, best_u = 0, -1.0
    for d, (g, c) in enumerate(zip(group, cap)):
        if not c:
            continue  # a dimension the type lacks (0 GPUs): the group needs none of it
        u = g / c
        if u > best_u:
            best_d, best_u = d, u
    return group[best_d] / smallest[best_d]


def best_group(tasks: Sequence[Task], caps: Sequence[Sequence[int]], prices: Sequence[float],
               smallest: Sequence[int], largest: Sequence[int]) -> tuple[float, int, int]:
    """Best (score, group size, type index) over the prefixes of ``tasks`` (longest first)
    and the types (``caps``, ascending in size, with ``prices``) each prefix fits."""
    dims = len(largest)
    agg = [0] * dims
    best = (-1.0, 0, -1)
    first = 0  # types below this no longer fit: the aggregate only grows
    ntypes = len(caps)
    for k, task in enumerate(tasks, 1):
        for d in range(dims):
            agg[d] += task.req[d]
        if any(a > m for a, m in zip(agg, largest)):
            break
        for ti in range(first, ntypes):
            cap = caps[ti]
            if any(a > c for a, c in zip(agg, cap)):
                if ti == first:
                    first += 1
                continue
            score = normalized_used_constraining(agg, cap, smallest) / prices[ti]
            if _better(score, k, best[0], best[1]):
                best = (score, k, ti)
    return best


def plan_options(view: ClusterView) -> list[tuple[InstanceType, str]]:
    """Under a savings plan, the (type, market) pairs to acquire: the replay's acquirable
    types in its market, then, unless that is on-demand, every type not known short of
    capacity on demand (what the plan covers)."""
    options = [(t, view.market) for t in view.acquirable_types()]
    if view.market != ON_DEMAND:
        short = view.unavailable_types()
        options += [(t, ON_DEMAND) for t in view.catalog if t.name not in short]
    return options


def plan_price(view: ClusterView, itype: InstanceType, market: str, headroom: float,
               discount: float) -> float:
    """The price an option is scored at under a savings plan: its marginal price
    (stratus.commitments.savings.marginal_price), a covered on-demand type's 0 floored at COVERED_FLOOR
    x its on-demand price."""
    p = view.price(itype, market)
    if market == ON_DEMAND:
        p = max(marginal_price(p, headroom, discount), COVERED_FLOOR * p)
    return p


class CostEfficiencyScaler(Parametric):
    """Stratus's scaler (§3.3); ``unit_s``: the runtime bins' unit, as the packer's."""

    label = "cost-efficiency"
    PARAMS = (UNIT_S,)

    def __init__(self, unit_s: float = 1.0) -> None:
        self.unit_s = unit_s
        self.check_init()

    def scale(self, view: ClusterView, plan: Plan, tasks: Sequence[Task]) -> None:
        sp = view.savings_plan
        if sp is None:
            types = view.acquirable_types()  # spot types above their bid: revoked at once
            if not types:
                return
            options = [(t, None) for t in types]
            prices = [view.price(t) for t in types]
            headroom = None
        else:  # the replay's market and on-demand, at their marginal prices
            offer = plan_options(view)
            if not offer:
                return
            headroom = plan.savings_headroom()
            options, prices = self._plan_offer(view, offer, headroom, sp.discount)
        caps = [t.capacity for t, _ in options]
        smallest = view.catalog.norm
        largest = tuple(max(c[d] for c in caps) for d in range(len(smallest)))
        est = view.estimate
        by_bin: dict[int, list[Task]] = {}
        # per bin, per job with flagged tasks there: its flagged tasks waiting for the one
        # in the candidate list to be grouped (anti-affinity)
        held: dict[int, dict[int, deque[Task]]] = {}
        for task in sorted(tasks, key=lambda t: (-est(t), t.tid)):
            if any(all(r <= c for r, c in zip(task.req, cap)) for cap in caps):
                b = bin_of(est(task), self.unit_s)
                if task.anti_affinity:
                    jobs = held.setdefault(b, {})
                    if task.job in jobs:
                        jobs[task.job].append(task)
                        continue
                    jobs[task.job] = deque()
                by_bin.setdefault(b, []).append(task)
            # else: every type it fits is above its bid right now; it waits
        cache: dict[int, tuple[float, int, int]] = {}
        while by_bin:
            choice = None
            for b in sorted(by_bin, reverse=True):
                if b not in cache:
                    cache[b] = best_group(by_bin[b], caps, prices, smallest, largest)
                score, k, ti = cache[b]
                if choice is None or _better(score, k, choice[0], choice[1]):
                    choice = (score, k, ti, b)
            _, k, ti, b = choice
            group = by_bin[b][:k]
            del by_bin[b][:k]
            if b in held:
                self._release_held(by_bin[b], held[b], group, est)
            if not by_bin[b]:
                del by_bin[b]
            del cache[b]
            itype, market = options[ti]
            plan.acquire(itype, group, market=market)
            if market == ON_DEMAND:  # it takes headroom: the on-demand prices may change
                headroom -= (1.0 - sp.discount) * view.price(itype, ON_DEMAND)
                new = self._plan_offer(view, offer, headroom, sp.discount)
                if new != (options, prices):
                    options, prices = new
                    caps = [t.capacity for t, _ in options]
                    cache.clear()

    @staticmethod
    def _plan_offer(view: ClusterView, offer, headroom: float, discount: float
                    ) -> tuple[list, list[float]]:
        """The options worth scoring and their prices (``plan_price``): an on-demand
        type priced at or above the same type in the replay's market can never score
        better (same capacity, ties to the earlier), so it is left out, and a plan whose
        headroom is spent costs no more scoring than no plan."""
        priced = [(o, plan_price(view, o[0], o[1], headroom, discount)) for o in offer]
        base = {t.name: p for (t, m), p in priced if m != ON_DEMAND}
        kept = [(o, p) for o, p in priced
                if o[1] != ON_DEMAND or p < base.get(o[0].name, math.inf)]
        return [o for o, _ in kept], [p for _, p in kept]

    @staticmethod
    def _release_held(cands: list[Task], jobs: dict[int, deque[Task]], group, est) -> None:
        """The next flagged task of each job just grouped becomes a candidate."""
        for t in group:
            if t.anti_affinity:
                q = jobs[t.job]
                if q:
                    insort(cands, q.popleft(), key=lambda u: (-est(u), u.tid))
                else:
                    del jobs[t.job]
