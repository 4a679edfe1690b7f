"""SuperCloud-Spot's greedy acquisition, as Stratus §4.3 re-implements it for SCloud.

SuperCloud-Spot (Jia et al. [30]) packs nested VMs onto spot instances; Stratus uses its
greedy packing "on the most-constrained resource type" instead of its dynamic program
(§4.3), and observes that it "often bids for large VMs to reduce fragmentation and improve
cost-per-resource at the time of packing" (§5.1). Runtimes play no part.

One call, for the tasks the (absent) packer left:

1. The most-constrained resource of the batch is the dimension it asks most of relative to
   the largest allowed type (``argmax_d sum(req_d) / largest_d``).
2. Tasks are taken in decreasing order of their request in that dimension (first-fit
   decreasing; tasks of one request are handled as one group with a count).
3. While tasks remain, every acquirable type is filled greedily: walk the sorted tasks and
   put on one instance of that type each one that still fits. Each (type, fill) is scored
   by cost per resource used at packing time, the §3.3 normalized used constraining
   resource over the price (``stratus.scalers.cost_efficiency.normalized_used_constraining``); the
   best is acquired with its fill. Ties go to the larger type (SCloud favours large
   instances).

Under a savings plan the (type, market) pairs are scored at their marginal prices
(scalers.marginal): covered on-demand capacity costs nothing more.

Where this reading is a choice, docs/decisions.md says why.
"""

from __future__ import annotations

from collections.abc import Sequence

from stratus.base.resources import fits
from stratus.policy.compose import Plan
from stratus.policy.params import Parametric
from stratus.scalers.cost_efficiency import normalized_used_constraining
from stratus.scalers.marginal import Offer
from stratus.sim.model import Task
from stratus.sim.view import ClusterView

_REL_TIE = 1e-12


def constrained_dim(tasks: Sequence[Task], largest: Sequence[int]) -> int:
    """The dimension the batch asks most of, relative to the largest type (ties: first)."""
    dims = len(largest)
    agg = [0] * dims
    for t in tasks:
        for d, r in enumerate(t.req):
            agg[d] += r
    # a dimension no acquirable type has (GPUs, when GPU types are above their bid)
    return max(range(dims), key=lambda d: (agg[d] / largest[d] if largest[d] else 0.0, -d))


def greedy_fill(groups: Sequence[tuple[tuple[int, ...], int]], cap: Sequence[int],
                jobs: Sequence[int | None] | None = None) -> list[int]:
    """How many tasks of each (request, count) group, in order, go on one instance of
    capacity ``cap`` when each is put on while it fits (first fit decreasing, one bin).
    ``jobs``: per group, the job whose flagged tasks it holds (None: unflagged); at most one
    task of one such job goes on the instance (anti-affinity)."""
    free = list(cap)
    take = []
    taken: set[int] = set()
    for g, (req, n) in enumerate(groups):
        k = n
        job = jobs[g] if jobs is not None else None
        if job is not None:
            if job in taken:
                take.append(0)
                continue
            k = 1
        for r, f in zip(req, free):
            if r > 0:
                q = f // r
                if q < k:
                    k = q
        if k > 0:
            for d, r in enumerate(req):
                free[d] -= k * r
            if job is not None:
                taken.add(job)
        take.append(k)
    return take


class GreedyConstrainedScaler(Parametric):
    """SCloud's scaler (Stratus §4.3, SuperCloud-Spot's greedy packing)."""

    label = "scloud-greedy"
    PARAMS = ()

    def scale(self, view: ClusterView, plan: Plan, tasks: Sequence[Task]) -> None:
        types = view.acquirable_types()  # spot types above their bid would be revoked at once
        offer = None
        if view.savings_plan is not None:  # at the margin (scalers.marginal)
            offer = Offer(view, plan, types)
            pairs = offer.pairs
            types, markets = [t for t, _ in pairs], [m for _, m in pairs]
        if not types or not tasks:
            return
        caps = [t.capacity for t in types]
        prices = ([view.price(t) for t in types] if offer is None
                  else [offer.price(t, m) for t, m in pairs])
        smallest = view.catalog.norm
        largest = tuple(max(c[d] for c in caps) for d in range(len(smallest)))
        placeable = [t for t in tasks if any(fits(t.req, c) for c in caps)]  # others wait
        if not placeable:
            return
        d0 = constrained_dim(placeable, largest)
        # groups of one request; flagged tasks of a job form their own group, of which an
        # instance takes at most one (anti-affinity, docs/decisions.md)
        by_req: dict[tuple, list[Task]] = {}
        for t in sorted(placeable, key=lambda t: (-t.req[d0], tuple(-r for r in t.req), t.tid)):
            by_req.setdefault((t.req, t.job if t.anti_affinity else None), []).append(t)
        reqs = list(by_req)  # decreasing in the constrained dimension
        flagged = any(r[1] is not None for r in reqs)
        # larger types first, so that an equal score keeps the larger type
        order = sorted(range(len(types)), key=lambda i: (-caps[i][d0], -sum(caps[i]), i))
        while reqs:
            groups = [(r[0], len(by_req[r])) for r in reqs]
            jobs = [r[1] for r in reqs] if flagged else None
            best = None
            for ti in order:
                take = greedy_fill(groups, caps[ti], jobs)
                if not any(take):
                    continue
                used = [0] * len(smallest)
                for (req, _), k in zip(groups, take):
                    for d, r in enumerate(req):
                        used[d] += k * r
                score = normalized_used_constraining(used, caps[ti], smallest) / prices[ti]
                if best is None or score > best[0] * (1 + _REL_TIE):
                    best = (score, ti, take)
            if best is None:
                return  # cannot happen: every remaining task fits some type
            _, ti, take = best
            chosen: list[Task] = []
            for req, k in zip(list(reqs), take):
                if k:
                    lst = by_req[req]
                    chosen.extend(lst[:k])
                    del lst[:k]
                    if not lst:
                        del by_req[req]
            reqs = [r for r in reqs if r in by_req]
            if offer is None:
                plan.acquire(types[ti], chosen)
            else:
                plan.acquire(types[ti], chosen, markets[ti])
                offer.take(types[ti], markets[ti])
                prices = [offer.price(t, m) for t, m in pairs]
