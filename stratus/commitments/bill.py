"""The commitments' part of a replay's bill (``stratus.sim.result.Bill``, amended by the
add-ons' ``bill`` hook): the savings plan's commitment and cover, the reserved instances'
rates in the lower bounds, and their summary keys."""

from __future__ import annotations

from stratus.pricing.prices import RESERVED, PriceBook
from stratus.sim.result import rounded


def reserved_utilization(ledger, names) -> dict:
    """Per dimension, the share of the reserved instances' capacity-time that tasks held
    (what the commitment bought and what of it was used)."""
    if RESERVED not in ledger.markets:
        return {d: None for d in names}
    code = ledger.markets.index(RESERVED)
    dims = len(names)
    cap = [0.0] * dims
    used = [0.0] * dims
    for row, m in enumerate(ledger.market_code):
        if m != code:
            continue
        life = ledger.released[row] - ledger.ready[row]
        itype = ledger.types[ledger.type_code[row]]
        for d in range(dims):
            cap[d] += itype.capacity[d] * life
            used[d] += ledger.used[row * dims + d]
    return {d: rounded(used[i] / cap[i], 4) if cap[i] > 0 else None for i, d in enumerate(names)}


def with_reserved(prices, catalog, markets, reserved):
    """The price book the lower bounds read under ``--reserved``: the allowed markets, and
    the reserved market for the reserved types only (a bound that could rent any type
    reserved would be valid too, only looser). A bound is still one: every instance, the
    reserved ones included, costs at least the cheapest unit price over these."""
    series = {(t.name, m): prices.series(t.name, m)
              for t in catalog for m in markets if prices.has(t.name, m)}
    for name, _ in reserved:
        series[(name, RESERVED)] = prices.series(name, RESERVED)
    return PriceBook(catalog, series, name=prices.name), (*markets, RESERVED)


def savings_plan_summary(plan, pbill) -> dict:
    """The summary's savings-plan keys (stratus.commitments.savings): the plan, its commitment over
    the replay's hours, the on-demand usage it covered (at on-demand rates) and what of the
    commitment bought nothing."""
    return {"savings_plan": plan.text(), "savings_plan_usd_per_hour": plan.hourly_usd,
            "savings_plan_discount": plan.discount,
            "savings_plan_commitment_usd": rounded(pbill.commitment),
            "savings_plan_covered_usd": rounded(pbill.covered),
            "savings_plan_unused_usd": rounded(pbill.unused)}


__all__ = ["reserved_utilization", "savings_plan_summary", "with_reserved"]
